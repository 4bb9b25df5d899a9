"""The prepared-graph cache: entries written atomically and checked, damaged or stale ones
rebuilt, a capped size, and a second run that reuses the first one's preparation (asserted
by what ran, never by time)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import generated_graph, shared_graph
from finepar import api, prepcache
from finepar.split import tuner
from finepar.cli import main
from finepar.prepcache import PrepCache
from finepar.apps.bfs import bfs_levels


@pytest.fixture(autouse=True)
def _no_kept_engines(monkeypatch):
    """These tests are about the cache on disk: a rerun restores its entry rather than
    taking the engine the thread kept (``test_a_thread_keeps_...`` covers that)."""
    from finepar import prepare
    monkeypatch.setattr(prepare, "KEEP_NNZ", -1)


def entry_dir(cache: PrepCache):
    (only,) = [p for p in cache.dir.iterdir() if not p.name.startswith(".")]
    return only


def test_entries_round_trip_and_damage_is_rebuilt(tmp_path):
    cache = PrepCache(tmp_path)
    key = cache.key({"input": "abc", "app": "bfs"})
    assert key != cache.key({"input": "abd", "app": "bfs"})
    arrays = {"perm": np.arange(10)[::-1].copy(), "part_order": np.arange(5, dtype=np.int64)}
    cache.put(key, {"threshold": 7, "tuning": {"x": [1, 2]}}, arrays)
    e = cache.get(key)
    assert e.meta["threshold"] == 7 and e.meta["tuning"] == {"x": [1, 2]}
    np.testing.assert_array_equal(e.arrays["perm"], arrays["perm"])
    # a flipped byte in an array: the entry is removed and the next run rebuilds it
    f = entry_dir(cache) / "perm.npy"
    raw = bytearray(f.read_bytes())
    raw[-1] ^= 0xFF
    f.write_bytes(bytes(raw))
    assert cache.get(key) is None and "damaged entry removed" in cache.events[-1]
    assert not (cache.dir / key).exists()
    # a manifest edited by hand (its checksum no longer matches) is not trusted either
    cache.put(key, {"threshold": 7}, arrays)
    mf = entry_dir(cache) / "manifest.json"
    doc = json.loads(mf.read_text())
    doc["meta"]["threshold"] = 8
    mf.write_text(json.dumps(doc))
    assert cache.get(key) is None
    # equal arrays share one file, and each name reads back its own array
    same = {"rows": np.arange(7), "low_rows": np.arange(7), "other": np.arange(7.0)}
    cache.put(key, {}, same)
    assert sorted(p.name for p in entry_dir(cache).glob("*.npy")) == ["other.npy", "rows.npy"]
    e = cache.get(key)
    assert set(e.arrays) == set(same) and e.arrays["other"].dtype == np.float64
    np.testing.assert_array_equal(e.arrays["low_rows"], same["low_rows"])
    # an entry of another format is stale
    cache.put(key, {"threshold": 7}, arrays)
    doc = json.loads(mf.read_text())
    doc["format"] = "finepar-prepared/0"
    body = {k: v for k, v in doc.items() if k != "checksum"}
    doc["checksum"] = prepcache._text_digest(body)
    mf.write_text(json.dumps(doc))
    assert cache.get(key) is None


def test_digests_of_many_arrays_equal_each_digest(monkeypatch):
    monkeypatch.setattr(prepcache, "DIGEST_CHUNK", 1000)  # many pieces per array
    arrays = [np.arange(10_007, dtype=np.int32), np.zeros(0), np.arange(5.0),
              np.arange(3000, dtype=np.uint8)]
    each = [prepcache.digest(a) for a in arrays]
    assert prepcache.digests(arrays) == each and len(set(each)) == len(each)
    flipped = arrays[0].copy()
    flipped[5000] += 1
    assert prepcache.digests([flipped])[0] != each[0]


def test_cache_is_capped_least_recently_used_first(tmp_path):
    import os
    cache = PrepCache(tmp_path, max_bytes=3 * 80_000 + 20_000)
    keys = [cache.key({"i": i}) for i in range(4)]
    for i, k in enumerate(keys):
        cache.put(k, {"i": i}, {"a": np.zeros(10_000, np.int64)})
        os.utime(cache.dir / k / "manifest.json", (1000 + i, 1000 + i))
    left = {e.key for e in cache.entries()}
    assert keys[0] not in left and set(keys[1:]) == left  # the oldest went
    assert sum(e.nbytes for e in cache.entries()) <= cache.max_bytes
    count, freed = cache.clear()
    assert count == 3 and freed > 0 and cache.entries() == []


def test_input_digest_follows_content_and_file(tmp_path):
    from finepar.io import load, save
    g = shared_graph("USPowerGrid.mtx")
    d = prepcache.input_digest(g, tmp_path)
    other = generated_graph(8)
    assert prepcache.input_digest(other, tmp_path) != d
    path = tmp_path / "g.npz"
    save(g, path)
    loaded = load(path)
    before = len(list((tmp_path / "inputs").iterdir()))
    assert prepcache.input_digest(loaded, tmp_path) == d  # same content, from a file
    memos = list((tmp_path / "inputs").iterdir())
    assert len(memos) == before + 1  # remembered by the file's identity
    assert prepcache.input_digest(loaded, tmp_path) == d
    assert len(list((tmp_path / "inputs").iterdir())) == len(memos)


def test_file_facts_are_read_from_disk_once_a_process(tmp_path, monkeypatch):
    """An input file's facts are read from their file once in a process and kept with it
    (a repeated call read them each time): the same unchanged input finds them without
    the disk, a changed input (another size and time) starts with none, and facts set in
    the process are seen by the next reader; the cache's default root follows
    ``XDG_CACHE_HOME`` though platformdirs is asked once for each value."""
    path = tmp_path / "g.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n")
    root = tmp_path / "cache"
    prepcache.FileFacts(path, root).set(answer="one")
    reads = []
    real = type(path).read_text
    monkeypatch.setattr(type(path), "read_text",
                        lambda self, *a, **k: reads.append(self) or real(self, *a, **k))
    assert prepcache.FileFacts(path, root).get("answer") == "one"
    assert not any(r.parent.name == "inputs" for r in reads)  # kept, not read again
    for f in (root / "inputs").iterdir():
        f.unlink()
    assert prepcache.FileFacts(path, root).get("answer") == "one"  # the input is unchanged
    path.write_text(path.read_text() + "\n")  # another size and modification time
    assert prepcache.FileFacts(path, root).get("answer") is None
    monkeypatch.delenv("FINEPAR_CACHE_DIR", raising=False)
    monkeypatch.delenv("FINEPAR_HOME", raising=False)
    for where in ("a", "b", "a"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / where))
        assert prepcache.cache_root() == tmp_path / where / "finepar"


def test_a_sorted_file_is_scanned_for_order_once(tmp_path, monkeypatch):
    import os
    import scipy.sparse as sp
    from finepar.io import construct, save
    scans = []
    real = construct.first_unsorted
    monkeypatch.setattr(construct, "first_unsorted", lambda *a: scans.append(1) or real(*a))
    g = generated_graph(8)
    path = tmp_path / "g.npz"
    save(g, path)
    cache = PrepCache(tmp_path / "cache")
    first = api.load_graph(str(path), cache=cache)
    assert len(scans) == 1
    again = api.load_graph(str(path), cache=cache)
    assert len(scans) == 1  # the unchanged file's rows are known sorted
    for a in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(again, a), getattr(first, a))
    api.load_graph(str(path), cache=False)
    assert len(scans) == 2  # no cache: nothing is remembered
    # a file with rows out of order is sorted every time, and never remembered as sorted
    m = sp.csr_matrix(g.to_scipy(), copy=True)
    r = int(np.argmax(np.diff(m.indptr)))  # a row of several entries, reversed
    m.indices[m.indptr[r]:m.indptr[r + 1]] = m.indices[m.indptr[r]:m.indptr[r + 1]][::-1].copy()
    m.has_sorted_indices = False
    bad = tmp_path / "unsorted.npz"
    sp.save_npz(bad, m, compressed=False)
    for _ in range(2):
        got = api.load_graph(str(bad), cache=cache)
        np.testing.assert_array_equal(got.indices, g.indices)
        assert any("sorted" in n for n in got.notes)
    assert len(scans) == 4
    # a rewritten file is another file: scanned again (and its disorder found)
    st = os.stat(path)
    sp.save_npz(path, m, compressed=False)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    got = api.load_graph(str(path), cache=cache)
    assert len(scans) == 5 and any("sorted" in n for n in got.notes)
    np.testing.assert_array_equal(got.indices, g.indices)


def test_a_generated_graph_is_kept_and_read_back(tmp_path, monkeypatch):
    from finepar.io import graph500
    cache = PrepCache(tmp_path)
    first = api.load_graph("graph500:9:3", cache=cache)
    (kept,) = (tmp_path / "inputs").glob("graph500-s9-ef16-seed3-*.npz")

    def no_generation(*a, **k):
        raise AssertionError("generated again")
    monkeypatch.setattr(graph500, "kronecker", no_generation)
    again = api.load_graph("graph500:9:3", cache=cache)
    assert again.name == first.name and again.source == str(kept)
    assert again.symmetric == first.symmetric and again.pattern == first.pattern
    for a in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(again, a), getattr(first, a))
    with pytest.raises(AssertionError, match="generated again"):
        api.load_graph("graph500:9:3", cache=False)  # no cache: generated every time
    with pytest.raises(AssertionError, match="generated again"):  # another seed
        api.load_graph("graph500:9:4", cache=cache)
    kept.write_bytes(b"not an npz")  # a damaged copy is generated again, not used
    monkeypatch.undo()
    damaged = api.load_graph("graph500:9:3", cache=cache)
    np.testing.assert_array_equal(damaged.indices, first.indices)
    assert "regenerated" in cache.events[-1]
    small = PrepCache(tmp_path / "small", max_bytes=1000)  # past an eighth of the cap
    api.load_graph("graph500:9:3", cache=small)
    assert not list((tmp_path / "small").glob("inputs/*.npz"))


def test_second_run_reuses_the_plan_without_tuning(tmp_path, monkeypatch, pairs):
    g = shared_graph("cnr-2000.mtx.gz")
    first_vals, first = api.pagerank(g, pair=pairs["shared"], cache=tmp_path, devices="both")
    assert first.cache["hit"] is False and first.threshold_source == "tuner"
    # other options are another entry: a given T_f does not use the tuned one
    _, other = api.pagerank(g, pair=pairs["shared"], cache=tmp_path, threshold=64)
    assert other.cache["hit"] is False and other.plan["threshold"] == 64

    def no_tuning(*a, **k):
        raise AssertionError("the tuner ran (or the plan was lowered) on a cached input")
    monkeypatch.setattr(tuner, "tune", no_tuning)
    from finepar.engine import Engine
    monkeypatch.setattr(Engine, "lower", no_tuning)  # the stored lowering is used
    vals, second = api.pagerank(g, pair=pairs["shared"], cache=tmp_path, devices="both")
    assert second.cache["hit"] is True
    assert second.plan["threshold"] == first.plan["threshold"]
    assert second.tuning["trajectory"] == first.tuning["trajectory"]
    np.testing.assert_allclose(vals, first_vals, atol=1e-6)


def test_a_new_shape_misses_without_hashing_and_equal_shapes_never_share(tmp_path,
                                                                           monkeypatch, pairs):
    """A run whose input shape no entry has knows it misses before hashing: the input is
    hashed on a thread while the run prepares and the entry stored under the full key. An
    input of the same shape and other content is hashed first, misses, and gets its own
    entry: an entry is never used for another input of the same shape."""
    g = generated_graph(12, 3)
    other = g.permuted(np.random.default_rng(1).permutation(g.n))
    assert other.n == g.n and other.nnz == g.nnz
    calls = []
    real = prepcache.input_digest
    monkeypatch.setattr(prepcache, "input_digest",
                        lambda graph, root=None: calls.append(graph) or real(graph, root))
    *_, r1 = api.bfs(g, pair=pairs["shared"], cache=tmp_path, root=0)
    cache = PrepCache(tmp_path)
    assert r1.cache["hit"] is False and "miss (no entry for an input of this shape)" in \
        r1.cache["events"]
    assert len(calls) == 1 and len(cache.entries()) == 1  # hashed once, on the thread
    *_, r2 = api.bfs(g, pair=pairs["shared"], cache=tmp_path, root=0)
    assert r2.cache["hit"] is True
    levels, _, r3 = api.bfs(other, pair=pairs["shared"], cache=tmp_path, root=0)
    assert r3.cache["hit"] is False and "miss" in r3.cache["events"]
    assert len(cache.entries()) == 2 and r3.cache["key"] != r1.cache["key"]
    assert r3.cache["key"][:16] == r1.cache["key"][:16]  # one shape, one prefix
    np.testing.assert_array_equal(levels, bfs_levels(other, 0))


def test_throttled_run_reuses_partitions_and_the_measured_cover(tmp_path, pairs):
    g = shared_graph("wiki-Vote.txt")
    kw = dict(pair=pairs["split"], devices="gpu", schedule="sj", cache_bytes=4096,
              cache=tmp_path)
    y1, r1 = api.spmv(g, **kw)
    assert r1.cache["hit"] is False and r1.plan["throttle"]["partitions"] > 1
    cover = PrepCache(tmp_path).entries()[0].meta["sj_cover"]
    assert cover  # the run's split-join decision was stored
    y2, r2 = api.spmv(g, **kw)
    assert r2.cache["hit"] is True
    assert r2.plan["throttle"]["partitions"] == r1.plan["throttle"]["partitions"]
    assert r2.plan["throttle"]["sj"]["cover"] == cover  # no profiling passes this time
    np.testing.assert_array_equal(y1, y2)


def test_cli_cache_list_clear_and_no_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("FINEPAR_NO_CACHE", raising=False)
    monkeypatch.setenv("FINEPAR_CACHE_DIR", str(tmp_path / "c"))
    for k in (1, 2):
        assert main(["run", "bfs", "graph500:9", "--gpu", "emulate", "--json",
                     str(tmp_path / f"r{k}.json"), "-q"]) == 0
    hits = [json.loads((tmp_path / f"r{k}.json").read_text())["cache"]["hit"] for k in (1, 2)]
    assert hits == [False, True]
    assert main(["run", "bfs", "graph500:9", "--gpu", "emulate", "--no-cache", "--json",
                 str(tmp_path / "r3.json"), "-q"]) == 0
    assert json.loads((tmp_path / "r3.json").read_text())["cache"] is None
    capsys.readouterr()
    assert main(["cache", "list", "--json", "-"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [e["app"] for e in listing["entries"]] == ["bfs"]
    assert main(["cache", "clear"]) == 0
    assert "removed 1 prepared entries" in capsys.readouterr().out
    assert main(["cache", "list"]) == 0
    assert "0 entries" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["max_bytes = -1", "size = 3"])
def test_bad_prepared_cache_config_is_one_line(tmp_path, bad, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[prepared_cache]\n{bad}\n")
    assert main(["run", "bfs", "graph500:6", "--config", str(cfg), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "c.toml" in err and "prepared_cache" in err


def test_program_binaries_kept_for_drivers_without_a_build_cache(tmp_path, monkeypatch, pairs):
    """Where a driver keeps no builds of its own, FinePar keeps each program's binary,
    keyed by source, options and device, and a later build loads it (same kernels)."""
    from finepar.device import pair as runtime
    monkeypatch.delenv("FINEPAR_NO_CACHE", raising=False)
    monkeypatch.setenv("FINEPAR_CACHE_DIR", str(tmp_path))
    side = pairs["split"].gpu
    assert runtime.driver_caches_builds(side)  # PoCL does: nothing kept by default
    assert runtime._binary_path(side, "x", ()) is None
    monkeypatch.setattr(runtime, "driver_caches_builds", lambda side: False)
    defines = {"T": "float", "FINEPAR_TEST_KEY": 7}
    pairs["split"]._programs.clear()
    first = pairs["split"].program(side, ("skeleton/vector.cl",), defines)
    kept = list((tmp_path / "programs").iterdir())
    assert len(kept) == 1 and kept[0].stat().st_size > 0
    pairs["split"]._programs.clear()
    built = []  # a build from source stores its binary: a load from the binary does not
    monkeypatch.setattr(runtime, "_store_binary", lambda *a: built.append(a))
    again = pairs["split"].program(side, ("skeleton/vector.cl",), defines)
    assert built == [] and again.get_info(runtime.cl().program_info.NUM_KERNELS) \
        == first.get_info(runtime.cl().program_info.NUM_KERNELS)
    monkeypatch.undo()
    monkeypatch.delenv("FINEPAR_NO_CACHE", raising=False)
    monkeypatch.setenv("FINEPAR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(runtime, "driver_caches_builds", lambda side: False)
    other = dict(defines, T="int")  # other options: another binary
    pairs["split"].program(side, ("skeleton/vector.cl",), other)
    assert len(list((tmp_path / "programs").iterdir())) == 2


def test_the_key_covers_every_module_whose_choice_an_entry_keeps():
    """An entry keeps the tuner's figures and the whole-run choice, measured runs included:
    the modules that decide them (and the work-group loop that the measured runs of a
    small PageRank time) are in the code digest, so a change to them makes new keys (a
    cache filled by older code once fed a new run the old choice)."""
    import inspect
    from pathlib import Path
    import finepar
    from finepar import prepcache
    from finepar.apps import powerloop
    from finepar.split import answer, choose, tuner
    root = Path(finepar.__file__).resolve().parent
    for mod in (answer, choose, tuner, powerloop):
        rel = Path(inspect.getfile(mod)).resolve().relative_to(root).as_posix()
        assert rel in prepcache.CODE_FILES, rel
    assert all((root / rel).is_file() for rel in prepcache.CODE_FILES)


def test_a_thread_keeps_a_small_inputs_engine_and_never_for_other_content(tmp_path):
    """A second call on the same small input, devices and options takes the workload and
    the engine the thread kept (no matrix built, no set-up, no warm-up, the same answer);
    an input changed in place is another key; :func:`finepar.api.release` drops the
    engines; an input past ``KEEP_NNZ`` is not kept."""
    from finepar import prepare
    g = generated_graph(10, 3)
    m = g.to_scipy().tocsr().copy()  # writable
    prepare.KEEP_NNZ = m.nnz  # kept (this file's fixture turns keeping off)
    kw = dict(cache=tmp_path, devices="gpu", memory="split")
    y1, first = api.spmv(m, **kw)
    y2, again = api.spmv(m, **kw)
    assert first.cache["resident"] is False and again.cache["resident"] is True
    assert again.timings["setup"] == 0.0 and again.timings["warmup"] < first.timings["warmup"]
    np.testing.assert_array_equal(y1, y2)
    kept = api._workload("spmv", m, tmp_path)
    assert api._workload("spmv", m, tmp_path) is kept  # its matrix built once
    assert api._workload("spmv", m, False) is not kept  # no cache: nothing kept
    m.data[:] = 2.0  # changed in place: the same object, other content
    assert api._workload("spmv", m, tmp_path) is not kept
    y3, changed = api.spmv(m, **kw)
    assert changed.cache["resident"] is False
    np.testing.assert_allclose(y3, 2 * y1, rtol=1e-6)
    assert api.release()["engines"] == 2
    _, after = api.spmv(m, **kw)
    assert after.cache["resident"] is False and after.cache["hit"] is True
    prepare.KEEP_NNZ = m.nnz - 1
    _, big = api.spmv(m, **kw)
    assert big.cache["resident"] is False


def test_a_rerun_restored_from_the_cache_guesses_no_programs(tmp_path, monkeypatch, pairs):
    """A run whose entry is restored builds what its stored lowerings name: no row
    operation is guessed (each guess in flight cost a warm PageRank call at Graph500 scale
    20 145-170 ms on one H200)."""
    from finepar.apps import powerloop
    from finepar.device.pair import DevicePair
    from finepar.engine import memory
    monkeypatch.setattr(powerloop, "GROUP_LOOP_NNZ", 0)  # no work-group loop: row operations
    monkeypatch.setattr(powerloop, "GPU_LOOP_NNZ", 0)
    one = {"COMPACT": 0, "DEVICE_STEP": True, "HAS_DATA": 0, "HAS_SLOTS": 0, "MAPPING": 0,
           "OFFSET_T": "int", "STOP_FLAG": 1, "WG": 64}  # what a GPU's guess list holds
    monkeypatch.setattr(memory, "likely_programs", lambda *a, **k: [
        ("gpu", ("apps/pagerank/rowop.cl", "skeleton/rowop.cl"), one)])
    guessed = []
    real = DevicePair.guess_build
    monkeypatch.setattr(DevicePair, "guess_build",
                        lambda self, fn, *a: guessed.append(a) or real(self, fn, *a))
    g = generated_graph(11, 2)
    _, first = api.pagerank(g, pair=pairs["split"], cache=tmp_path, devices="both")
    ahead = len(guessed)
    vals, again = api.pagerank(g, pair=pairs["split"], cache=tmp_path, devices="both")
    assert first.cache["hit"] is False and again.cache["hit"] is True
    assert ahead > 0 and len(guessed) == ahead


def test_a_kept_engine_reads_a_given_vector_changed_in_place(tmp_path, monkeypatch):
    """A repeated call with the same array object as SpMV's ``x`` or RWR's ``restart``,
    its entries changed in between (or a new array at a freed one's address), reads the
    new entries: the kept engine compares the content, not the object, once a call, before
    the timed run (the report's ``inputs``)."""
    from finepar import prepare
    monkeypatch.setattr(prepare, "KEEP_NNZ", 1 << 23)
    g = generated_graph(9, 3)
    kw = dict(cache=tmp_path, devices="gpu", memory="split")
    x = np.ones(g.n, dtype=np.float32)
    y1, _ = api.spmv(g, x=x, **kw)
    x *= 2.0
    y2, again = api.spmv(g, x=x, **kw)
    assert again.cache["resident"] is True
    np.testing.assert_allclose(y2, 2 * y1, rtol=1e-6)
    from finepar.apps import spmv
    compared = []
    monkeypatch.setattr(spmv, "equal",
                        lambda a, b: compared.append(a.size) or np.array_equal(a, b))
    y3, same = api.spmv(g, x=x, **kw)  # compared once, in the inputs phase before the run
    assert compared == [g.n] and same.timings["inputs"] > 0
    np.testing.assert_array_equal(y3, y2)
    p = np.zeros(g.n, dtype=np.float32)
    p[0] = 1.0
    r1, _ = api.rwr(g, restart=p, **kw)
    p[:] = 0.0
    p[1] = 1.0
    r2, again = api.rwr(g, restart=p, **kw)
    r3, _ = api.rwr(g, restart=p.copy(), cache=False, devices="gpu", memory="split")
    assert again.cache["resident"] is True
    np.testing.assert_allclose(r2, r3, atol=1e-6)
    assert not np.allclose(r1, r2)
