"""Distributed runs (finepar.mpi) under ``mpiexec -n P`` on the emulated pair.

One ``mpiexec`` per rank count (1, 2, 3) runs every case of :data:`CASES`
(``tests/mpi_cases.py``): every app in both memory modes on a small directed, valued
graph read rank by rank from an uncompressed ``.npz``, and a few apps on a Graph500
graph generated rank by rank, a deflated ``.npz``, a Matrix Market file read by rank 0
and METIS partitions. Each answer is compared with a one-process run on the same pair
(identical for the integer apps, within the app's own check for the float ones) and
checked against the app's independent reference; each report must account for every
row, entry and halo byte.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mpi4py")

HERE = Path(__file__).resolve().parent
WORKER = HERE / "mpi_cases.py"
RANKS = (1, 2, 3, 4)
APPS = ("spmv", "pagerank", "rwr", "hits", "bfs", "cc", "sssp", "coloring")


def _cases() -> list[dict]:
    # colouring: across ranks only Jones-Plassmann runs (the speculative rounds need one
    # device holding the whole CSR), so the one-process run it is compared with uses it too
    # the shared-memory cases move every halo, gather and merge through the ranks' shared
    # window (finepar.mpi.window), the split ones through MPI's own collectives
    out = [{"id": f"{app}-{mem}", "app": app, "graph": "directed.npz", "memory": mem,
            "window": mem == "shared",
            **({"params": {"algorithm": "jp"}} if app == "coloring" else {})}
           for app in APPS for mem in ("shared", "split")]
    out += [{"id": f"{app}-g500", "app": app, "graph": "graph500:9", "memory": "split",
             "window": True} for app in ("pagerank", "bfs", "cc")]
    # halos GPU to GPU (finepar.mpi.peers), emulated through host memory on PoCL
    out += [{"id": f"{app}-{mem}-gpu-exchange", "app": app, "graph": "directed.npz",
             "memory": mem, "exchange": "gpu"}
            for app in ("spmv", "pagerank", "hits", "bfs") for mem in ("shared", "split")]
    out += [{"id": f"{app}-g500-gpu-exchange", "app": app, "graph": "graph500:9",
             "memory": "split", "exchange": "gpu"} for app in ("pagerank", "bfs")]
    # the GPU alone on each rank: a row operation's halo packed behind its kernels
    out += [{"id": f"{app}-{mem}-gpu-alone-exchange", "app": app, "graph": "directed.npz",
             "memory": mem, "exchange": "gpu", "devices": "gpu"}
            for app, mem in (("pagerank", "split"), ("hits", "shared"))]
    out += [{"id": "pagerank-deflated", "app": "pagerank", "graph": "deflated.npz",
             "memory": "shared"},
            {"id": "bfs-metis-mtx", "app": "bfs", "graph": "directed.mtx", "memory": "split",
             "partition": "metis", "params": {"root": 7}},
            {"id": "cc-metis-g500", "app": "cc", "graph": "graph500:9", "memory": "shared",
             "partition": "metis"},
            {"id": "spmv-in-memory", "app": "spmv", "graph": "directed.npz", "memory": "split",
             "in_memory": True},
            {"id": "rwr-in-memory-metis", "app": "rwr", "graph": "directed.npz",
             "memory": "shared", "partition": "metis", "in_memory": True, "params": {"seed": 9}}]
    return out


CASES = _cases()

#: ``finepar run`` command lines run on every rank: BFS and SSSP from vertex 0 (owned by
#: rank 0), from the last vertex (owned by the last rank) and from the default root.
ROOTS = {"root-0": 0, "root-last": 511, "root-default": None}
CLI_CASES = [{"id": f"cli-{app}-{name}", "app": app, "root": root,
              "argv": [app, "graph500:9", "-T", "64", "--memory", "split",
                       *(["--root", str(root)] if root is not None else [])]}
             for app in ("bfs", "sssp") for name, root in ROOTS.items()]


def mpiexec() -> str:
    """The launcher beside this Python (the mpich wheel's), else on PATH."""
    local = Path(sys.executable).parent / "mpiexec"
    if local.exists():
        return str(local)
    import shutil
    found = shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec (pip install 'finepar[mpi]')")
    return found


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The input files, and the graphs a one-process run reads."""
    from finepar.io.graph500 import kronecker
    from finepar.io import from_csr, load, save
    d = tmp_path_factory.mktemp("dist-inputs")
    g = kronecker(9, seed=2, symmetric=False)
    w = np.random.default_rng(7).uniform(0.5, 2.0, g.nnz).astype(np.float32)
    valued = from_csr(g.indptr, g.indices, w, g.n, name="directed")
    save(valued, d / "directed.npz", compressed=False)
    save(valued, d / "deflated.npz", compressed=True)
    save(valued, d / "directed.mtx")
    graphs = {"directed.npz": valued, "deflated.npz": valued,
              "directed.mtx": load(d / "directed.mtx"), "graph500:9": kronecker(9)}
    return d, graphs


_RUNS: dict = {}


def launch(worker: Path, d: Path, ranks: int, cases: list, extra: list = (),
           timeout: int = 900) -> Path:
    """Every case on ``ranks`` ranks, one mpiexec of ``worker`` (its answers and reports
    written to ``d / ranks-P``, returned): a case's ``graph`` is a generator spec
    (``graph500:...``) or a file under ``d``; ``extra`` cases go as they are."""
    out = d / f"ranks-{ranks}"
    out.mkdir()
    cases = [dict(c, graph=c["graph"] if c["graph"].startswith("graph500:")
                  else str(d / c["graph"])) for c in cases] + list(extra)
    (out / "cases.json").write_text(json.dumps(cases))
    proc = subprocess.run([mpiexec(), "-n", str(ranks), sys.executable, str(worker),
                           str(out), str(out / "cases.json")], capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def distributed(ranks: int, inputs) -> Path:
    """Run every case on ``ranks`` ranks once (one mpiexec); the folder of answers."""
    if ranks not in _RUNS:
        _RUNS[ranks] = launch(WORKER, inputs[0], ranks, CASES,
                              CLI_CASES + [{"id": "share-fds", "share": True}])
    return _RUNS[ranks]


_PLAIN: dict = {}


def one_process(case: dict, graphs: dict, pairs):
    """The answer of a plain run (one process, the same pair and T_f)."""
    from finepar.api import run
    key = (case["app"], case["graph"], case["memory"], json.dumps(case.get("params", {})))
    if key not in _PLAIN:
        _PLAIN[key] = run(case["app"], graphs[case["graph"]], pair=pairs[case["memory"]],
                          threshold=64, **case.get("params", {}))[0]
    return _PLAIN[key]


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")  # one worker keeps each P's run (_RUNS)
@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_answer_matches_one_process(ranks, case, inputs, pairs):
    """Integer answers (levels, labels, colours, float32 path lengths: a unique fixed
    point) are identical; float answers are within 1e-5 in L1 of one process's; both
    pass the app's check against its reference."""
    from dataclasses import replace

    from finepar import apps
    out = distributed(ranks, inputs)
    err = out / f"{case['id']}.error"
    assert not err.exists(), err.read_text()
    got = np.load(out / f"{case['id']}.npz")
    graph = inputs[1][case["graph"]]
    app = apps.get(case["app"])
    plain = one_process(case, inputs[1], pairs)
    extra = {k: got[k] for k in got.files if k != "values"}
    if plain.values.dtype.kind in "iu" or case["app"] == "sssp":
        np.testing.assert_array_equal(got["values"], plain.values)
    else:
        for key, mine in (("values", got["values"]), *extra.items()):
            theirs = plain.values if key == "values" else plain.extra[key]
            assert np.abs(mine.astype(np.float64) - theirs).sum() < 1e-5, key
    mine = replace(plain, values=got["values"], extra={**plain.extra, **extra})
    params = app.reference_params(graph, case.get("params", {}))
    assert app.check(graph, mine, app.reference(graph, params), params) == ""


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")  # one worker keeps each P's run (_RUNS)
@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("case", CLI_CASES, ids=[c["id"] for c in CLI_CASES])
def test_command_line_root_reaches_every_rank(ranks, case, inputs):
    """``--root`` (0 included) reaches every rank unchanged: the answer is the reference
    traversal from that root, and the report names it."""
    from finepar import apps
    out = distributed(ranks, inputs)
    err = out / f"{case['id']}.error"
    assert not err.exists(), err.read_text()
    graph = inputs[1]["graph500:9"]
    app = apps.get(case["app"])
    root = case["root"]
    if root is None:
        root = int(np.argmax(np.diff(graph.indptr)))
    want = app.reference(graph, app.reference_params(graph, {"root": root}))
    want = want[0] if isinstance(want, tuple) else want  # SSSP: (lengths, hops)
    got = np.load(out / f"{case['id']}.npy")
    # BFS levels (-1 unreached) and SSSP's unit lengths (inf unreached) are exact
    np.testing.assert_array_equal(np.asarray(got, np.float64), np.asarray(want, np.float64))
    rep = json.loads((out / f"{case['id']}.json").read_text())
    assert rep["partition"]["ranks"] == ranks
    assert dict(rep["result"]["summary"])["root"] == str(root)


#: Apps whose steps exchange a halo, and how many exchanges one iteration makes.
EXCHANGES_PER_ITERATION = {"pagerank": 1, "rwr": 1, "hits": 2}


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")  # one worker keeps each P's run (_RUNS)
@pytest.mark.parametrize("ranks", RANKS)
def test_reports_account_for_every_row_entry_and_halo_byte(ranks, inputs):
    from finepar import apps
    out = distributed(ranks, inputs)
    for case in CASES:
        rep = json.loads((out / f"{case['id']}.json").read_text())
        graph, app = inputs[1][case["graph"]], apps.get(case["app"])
        per = rep["ranks"]
        assert rep["partition"]["ranks"] == len(per) == ranks
        assert rep["partition"]["method"] == case.get("partition", "nnz")
        assert sum(r["rows"] for r in per) == app.matrix(graph).n, case["id"]
        assert sum(r["input_nnz"] for r in per) == rep["graph"]["nnz"] == graph.nnz
        assert sum(r["nnz"] for r in per) == rep["graph"]["matrix_nnz"] == app.matrix(graph).nnz
        sent = sum(r["halo"]["sent"] for r in per)
        assert sent == sum(r["halo"]["received"] for r in per), case["id"]
        frontier = sum(r["frontier"]["merges"] for r in per)
        if ranks == 1:
            assert sent == 0 and frontier == 0
            continue
        k = EXCHANGES_PER_ITERATION.get(case["app"])
        for r in per:
            if k is not None:  # every iteration moved the halo, and the bytes are counted
                assert r["halo"]["exchanges"] == k * rep["result"]["iterations"], case["id"]
                assert r["halo"]["bytes_sent_per_iteration"] == 4 * k * r["halo"]["sent"]
                # packed behind the step's kernels where the GPU alone runs the rank's rows
                if case.get("devices") == "gpu" and ranks > 1:
                    assert r["halo"]["pipelined"] == r["halo"]["exchanges"], case["id"]
                else:  # agreed by every rank: all of them or none
                    assert r["halo"]["pipelined"] in (0, r["halo"]["exchanges"]), case["id"]
                if r["halo"]["sent"]:  # the packing kernels' device time, from their events
                    assert r["halo"]["pack_kernel_seconds"] > 0, case["id"]
                if r["halo"]["received"]:
                    assert r["halo"]["unpack_kernel_seconds"] > 0, case["id"]
            if case["app"] == "bfs":  # each level merged once: bottom-up bits in one form,
                f = r["frontier"]     # or top-down claims
                assert f["merges"] + f["claims"] == rep["result"]["iterations"]
                assert f["merges"] == f["as_list"] + f["as_pairs"] + f["as_words"]
                # the merges GPU to GPU only where asked for (emulated on PoCL)
                assert f["path"] == ("emulated" if case.get("exchange") == "gpu" else "host")
            if case["app"] == "cc":  # each round gathers the neighbour minima
                assert r["gathers"]["count"] >= rep["result"]["iterations"]
            assert 0 <= r["timings"]["exchange"] <= r["timings"]["run"]
            if k is not None:  # the halo's path: asked for, else PoCL cannot share memory
                assert (r["halo"]["path"] == "emulated") if case.get("exchange") == "gpu" \
                    else (r["halo"]["path"] == "host"
                          and "cl_khr_external_memory_opaque_fd" in r["halo"]["path_reason"])
            # every collective of a window case went through the window, none of the others
            moved = (r["halo"]["exchanges"] + r["frontier"]["merges"] + r["gathers"]["count"])
            assert (r["window_moves"] >= moved) if case.get("window") else \
                (r["window_moves"] == 0), case["id"]
        if k is not None:
            assert sent > 0


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")  # one worker keeps each P's run (_RUNS)
@pytest.mark.parametrize("ranks", RANKS)
def test_ranks_share_descriptors(ranks, inputs):
    """Every rank receives every other rank's descriptor, with its size, and reads that
    rank's own memory file through it (what the GPUs' exchange sends its memory by)."""
    every = json.loads((distributed(ranks, inputs) / "share-fds.json").read_text())
    assert len(every) == ranks
    for rank, got in enumerate(every):
        want = {str(p): [str(p), 1000 + p] for p in range(ranks) if p != rank}
        assert got == want


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")  # one worker keeps each P's run (_RUNS)
def test_cli_under_mpiexec(inputs, tmp_path, pairs):
    """``mpiexec -n 2 python -m finepar run``: rank 0 alone prints and writes; the answer
    is one process's."""
    from finepar.api import run
    d, graphs = inputs
    out, report = tmp_path / "levels.npy", tmp_path / "report.json"
    proc = subprocess.run([mpiexec(), "-n", "2", sys.executable, "-m", "finepar", "run", "bfs",
                           str(d / "directed.npz"), "--gpu", "emulate", "-T", "64", "--root",
                           "3", "--memory", "split", "--json", str(report), "-o", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("finepar run bfs") == 1
    assert "transport  MPI's collectives" in proc.stdout  # a small graph's messages
    rep = json.loads(report.read_text())
    assert [r["rank"] for r in rep["ranks"]] == [0, 1]
    plain = run("bfs", graphs["directed.npz"], pair=pairs["split"], threshold=64, root=3)[0]
    np.testing.assert_array_equal(np.load(out), plain.values)


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")  # one worker keeps each P's run (_RUNS)
def test_cli_exchange_option_reaches_the_halo(inputs, tmp_path, pairs):
    """``--exchange gpu`` on the emulated pair: the halo takes the GPU path's layout
    (emulated), the summary says so, and the answer is one process's."""
    from finepar.api import run
    d, graphs = inputs
    out, report = tmp_path / "scores.npy", tmp_path / "report.json"
    proc = subprocess.run([mpiexec(), "-n", "2", sys.executable, "-m", "finepar", "run",
                           "pagerank", str(d / "directed.npz"), "--gpu", "emulate", "-T", "64",
                           "--memory", "split", "--exchange", "gpu", "--json", str(report),
                           "-o", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "halo       GPU to GPU's layout, emulated through host memory" in proc.stdout
    rep = json.loads(report.read_text())
    assert {r["halo"]["path"] for r in rep["ranks"]} == {"emulated"}
    plain = run("pagerank", graphs["directed.npz"], pair=pairs["split"], threshold=64)[0]
    assert np.abs(np.load(out).astype(np.float64) - plain.values).sum() < 1e-5


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")  # one worker keeps each P's run (_RUNS)
def test_cli_error_under_mpiexec_is_one_line(tmp_path):
    out = tmp_path / "scores.npy"
    proc = subprocess.run([mpiexec(), "-n", "2", sys.executable, "-m", "finepar", "run",
                           "pagerank", str(tmp_path / "missing.npz"), "--gpu", "emulate",
                           "-o", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("finepar: error:")]
    assert len(errors) == 1 and "missing.npz: file not found" in errors[0], proc.stderr
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")  # one worker keeps each P's run (_RUNS)
def test_distributed_flag_runs_one_rank_without_mpiexec(tmp_path):
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "finepar", "run", "cc", "graph500:8",
                           "--distributed", "--gpu", "emulate", "-T", "64", "-q", "--json",
                           str(report)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rep = json.loads(report.read_text())
    assert rep["partition"]["ranks"] == 1 and rep["ranks"][0]["rows"] == 256


# ------------------------------------------------------------ parts without MPI


def test_nnz_bounds_balance_entries_and_give_every_rank_a_row():
    from finepar.mpi.partition import by_nnz
    lengths = np.array([1000, 1, 1, 1, 1, 1, 1, 1, 1, 1])
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    b = by_nnz(indptr, 4)
    assert b[0] == 0 and b[-1] == 10 and np.all(np.diff(b) >= 1)
    even = np.concatenate(([0], np.cumsum(np.full(100, 3))))
    np.testing.assert_array_equal(by_nnz(even, 4), [0, 25, 50, 75, 100])
    from finepar.errors import UsageError
    with pytest.raises(UsageError, match="3 ranks for 2 vertices"):
        by_nnz(np.array([0, 1, 2]), 3)


def test_stacked_partition_owns_both_blocks_of_a_vertex():
    from finepar.mpi.partition import RowPartition
    p = RowPartition(np.array([0, 3, 10]), 10).stacked(2)
    assert p.ranges(1) == [(3, 10), (13, 20)]
    np.testing.assert_array_equal(p.owner(np.array([0, 2, 3, 12, 13, 19])), [0, 0, 1, 0, 1, 1])
    assert p.mask(0).sum() == p.count(0) == 6 and list(p.counts()) == [6, 14]


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_member_reads_element_ranges(tmp_path, compressed):
    import zipfile

    from finepar.mpi.load import NpzMember
    from finepar.io.npz import stored_members
    a = np.arange(100_000, dtype=np.int32) * 7
    path = tmp_path / "a.npz"
    (np.savez_compressed if compressed else np.savez)(path, indices=a)
    with zipfile.ZipFile(path) as z:
        m = NpzMember(z, str(path), "indices", stored_members(path, min_bytes=0))
        assert m.stored is not compressed and m.size == a.size
        np.testing.assert_array_equal(m.read(12_345, 54_321), a[12_345:54_321])
        assert m.read(5, 5).size == 0


def test_launcher_size_read_from_the_environment(monkeypatch):
    from finepar.mpi import launched_size
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    assert launched_size() == 1
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    assert launched_size() == 4


def test_exchange_path_chosen_alike_and_explained():
    """:func:`finepar.mpi.peers.choose` from every rank's answer (a stub communicator): GPU
    to GPU only where every rank can, emulated only where asked for on PoCL pairs."""
    from types import SimpleNamespace
    from finepar.mpi.comm import RankFailure
    from finepar.mpi.peers import choose

    # a device without the extension (asked, but the stub's allgather answers for every rank)
    gpu = SimpleNamespace(host_memory=False, queue=SimpleNamespace(
        device=SimpleNamespace(extensions="", name="stub")))

    def agree(error):  # as Communicator.agree where every rank failed alike
        if error is not None:
            raise RankFailure(str(error), 0)

    def comm(mode, every, size=2, node=True):
        return SimpleNamespace(exchange=mode, size=size, node=object() if node else None,
                               allgather=lambda mine: every, agree=agree)
    # (reason, the pair is emulated) from each rank
    ok, pocl, nvidia = (None, False), ("PoCL has no cl_khr_external_memory", True), \
        ("cuMemCreate: CUDA_ERROR_NOT_SUPPORTED", False)
    assert choose(comm("host", [ok, ok]), gpu) == ("host", "asked for")
    assert choose(comm("auto", [ok], size=1), gpu) == ("host", "one rank")
    assert choose(comm("auto", [ok, ok], node=False), gpu)[0] == "host"
    with pytest.raises(RankFailure, match="more than one host"):
        choose(comm("gpu", [ok, ok], node=False), gpu)
    assert choose(comm("auto", [ok, ok]), gpu)[0] == "gpu"
    assert choose(comm("auto", [ok, nvidia]), gpu) == ("host", f"rank 1: {nvidia[0]}")
    assert choose(comm("gpu", [pocl, pocl]), gpu)[0] == "emulated"
    with pytest.raises(RankFailure, match="--exchange gpu: rank 1: cuMemCreate"):
        choose(comm("gpu", [ok, nvidia]), gpu)
    with pytest.raises(RankFailure, match="--exchange gpu: rank 0"):
        choose(comm("gpu", [pocl, nvidia]), gpu)


def test_each_local_rank_takes_its_gpu_from_a_list():
    from finepar.mpi.setup import local_gpu
    assert [local_gpu(k, "0:0, 1:0") for k in range(3)] == ["0:0", "1:0", "0:0"]
    assert local_gpu(5, "emulate") == "emulate"


def test_generator_spec_parsed_once_for_every_path():
    from finepar.api import load_graph
    from finepar.errors import InputError
    from finepar.io.graph500 import parse_spec
    assert parse_spec("graph500:9:3") == (9, 3)
    for bad, why in (("graph500:x", "graph500:SCALE"), ("graph500:31", "scale must be from 1")):
        with pytest.raises(ValueError, match=why):
            parse_spec(bad)
        with pytest.raises(InputError, match=why):
            load_graph(bad)


@pytest.mark.parametrize("workers", [1, 3])
def test_generated_rows_equal_the_whole_generator(monkeypatch, workers):
    # scale 18: four chunks of edges, moved in rounds of `workers` chunks (the last short)
    from finepar.io.graph500 import kronecker
    from finepar.mpi import kronecker as by_range
    from finepar.mpi.comm import Communicator
    monkeypatch.setattr(by_range, "n_workers", lambda _: workers)
    rows = by_range.graph500_rows("graph500:18", Communicator())
    whole = kronecker(18)
    assert rows.nnz == whole.nnz and set(rows.stages) == set(by_range.STAGES)
    assert np.array_equal(rows.indptr, whole.indptr)
    assert np.array_equal(rows.indices, whole.indices)


def test_generation_shows_its_stages_on_rank_0(capsys):
    from finepar.mpi.comm import Communicator
    from finepar.mpi.load import load_rows
    load_rows("graph500:12", Communicator(), progress=True)
    lines = [ln for ln in capsys.readouterr().err.splitlines()
             if ln.startswith("generating graph500:12 on 1 rank(s): ")]
    assert [ln.split(": ", 1)[1].split(" ")[0] for ln in lines] == [
        "draw", "count", "route", "route:", "route:", "route:", "finish"]
    load_rows("graph500:12", Communicator())
    assert "generating" not in capsys.readouterr().err


@pytest.mark.parametrize("density,clustered", [(0.0, False), (1e-4, False), (0.01, False),
                                               (0.06, False), (0.5, False), (0.05, True)])
def test_frontier_part_round_trips_in_its_form(density, clustered):
    """A rank's words of a frontier bitmap, encoded (ids, word pairs or words, by their
    bytes) and OR-ed into a merged bitmap, give back exactly its bits; clustered bits
    (few words, many bits each) take the pairs."""
    from finepar.mpi.engine import _encode, _or_segment
    from finepar.throttle.kdcount import popcount
    rng = np.random.default_rng(int(density * 1e6))
    if clustered:
        bits = np.repeat(rng.random(40_000) < density, 32)
    else:
        bits = rng.random(40_000 * 32) < density
    own = np.packbits(bits, bitorder="little").view(np.uint32)
    w0 = 17
    part = _encode(own, w0)
    nz, ones = int(np.count_nonzero(own)), int(popcount(own).sum())
    want = (0 if ones <= 2 * nz and 16 * nz <= own.size else 2 if 4 * nz <= own.size else 1)
    assert part[0] == want and part[1] == w0
    assert part.size - 2 == {0: ones, 2: 2 * nz, 1: own.size}[want]
    merged = np.zeros(w0 + own.size + 5, np.uint32)
    merged[0] = 5  # other ranks' bits stay
    _or_segment(merged, part)
    np.testing.assert_array_equal(merged[w0:w0 + own.size], own)
    assert merged[0] == 5 and not merged[w0 + own.size:].any()


# ------------------------------------------------------------ PageRank's hot columns


def _pagerank_cli(tmp_path, ranks: int, devices: str, columns: str) -> tuple:
    """``mpiexec -n RANKS python -m finepar run pagerank graph500:12`` in split memory on
    the emulated pair: the scores, the report and what rank 0 printed."""
    out, report = tmp_path / f"pr-{ranks}-{devices}-{columns}.npy", tmp_path / "report.json"
    proc = subprocess.run([mpiexec(), "-n", str(ranks), sys.executable, "-m", "finepar", "run",
                           "pagerank", "graph500:12", "--distributed", "--gpu", "emulate",
                           "--memory", "split", "--devices", devices, "-T", "64",
                           "--columns", columns, "-o", str(out), "--json", str(report)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return np.load(out), json.loads(report.read_text()), proc.stdout


def _row_split_reference(matrix, bounds, rank: int) -> dict:
    """:func:`finepar.mpi.halo.row_split` of rank ``rank``'s rows, from scipy."""
    import scipy.sparse as sp
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    a = sp.csr_matrix((np.ones(matrix.nnz), matrix.indices, matrix.indptr),
                      shape=(matrix.n, matrix.n))[lo:hi]
    remote = a.copy()
    remote.data = ((remote.indices < lo) | (remote.indices >= hi)).astype(float)
    per_row_remote, lens = np.asarray(remote.sum(axis=1)).ravel(), np.diff(a.indptr)
    inner = (lens > 0) & (per_row_remote == 0)
    return {"interior_rows": int(inner.sum()), "interior_nnz": int(lens[inner].sum()),
            "boundary_rows": int(((lens > 0) & ~inner).sum()),
            "boundary_nnz": int(lens[~inner].sum()), "remote_nnz": int(remote.data.sum()),
            "local_nnz": int(a.nnz - remote.data.sum())}


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")
@pytest.mark.parametrize("ranks,devices", [(2, "gpu"), (3, "both")])
def test_pagerank_hot_columns_across_ranks(tmp_path, ranks, devices):
    """Each rank renumbers its devices' columns (``--columns hot``) and its halo packs and
    unpacks the contributions at the renumbered positions: the scores pass the reference
    check and equal, bit for bit, a run in the input's columns; the report says per rank
    and role that the columns were renumbered and the halo moved at them, and counts the
    rows and entries that read no other rank's column as scipy does."""
    from finepar import apps
    from finepar.apps.base import AppResult
    from finepar.io.graph500 import kronecker
    hot, rep, text = _pagerank_cli(tmp_path, ranks, devices, "hot")
    kept, rep_kept, _ = _pagerank_cli(tmp_path, ranks, devices, "none")
    graph, app = kronecker(12), apps.get("pagerank")
    result = AppResult(values=hot, iterations=rep["result"]["iterations"], converged=True)
    assert app.check(graph, result, app.reference(graph, {}), {}) == ""
    np.testing.assert_array_equal(hot, kept)
    roles = ("gpu",) if devices == "gpu" else ("cpu", "gpu")
    matrix, bounds = app.matrix(graph), rep["partition"]["bounds"]
    for r, r_kept in zip(rep["ranks"], rep_kept["ranks"]):
        assert sorted(r["columns"]) == sorted(roles)
        assert all(r["columns"][x]["renumbered"] for x in roles), r["columns"]
        assert not any(r_kept["columns"][x]["renumbered"] for x in roles)
        assert r_kept["columns"]["gpu"]["reason"] == "not asked for"
        assert r["halo"]["renumbered"] == {x: True for x in roles}
        assert r_kept["halo"]["renumbered"] == {x: False for x in roles}
        # what a rank receives comes in its GPU's renumbered order (ascending unpacking)
        assert (r["halo"]["order"], r_kept["halo"]["order"]) == ("gpu columns", "ids")
        assert r["halo"]["exchanges"] == rep["result"]["iterations"]
        assert r["halo"]["bytes_sent_per_iteration"] == 4 * r["halo"]["sent"]
        assert r["halo"]["split"] == _row_split_reference(matrix, bounds, r["rank"])
    assert "columns    rank 0: " + ", ".join(f"{x} renumbered" for x in roles) in text


def test_row_split_counts_rows_and_entries_before_the_halo():
    """:func:`finepar.mpi.halo.row_split` on a hand-made graph: rows reading only the
    rank's own columns, the others, and entries by their column's owner."""
    from finepar.io import from_csr
    from finepar.mpi.halo import row_split
    # rank owns vertices 2..4; rows 0, 1 and 5 belong to other ranks (empty here)
    indptr = np.array([0, 0, 0, 2, 5, 5, 5])
    indices = np.array([2, 3, 0, 4, 5])  # row 2 interior, row 3 reads 0 and 5, row 4 empty
    g = from_csr(indptr, indices, None, 6, name="split", pattern=True)
    own = np.zeros(6, bool)
    own[2:5] = True
    assert row_split(g, own) == {"interior_rows": 1, "interior_nnz": 2, "boundary_rows": 1,
                                 "boundary_nnz": 3, "local_nnz": 3, "remote_nnz": 2}
