"""The benchmark scripts (benchmarks/), each run at a tiny scale on the emulated pair: their
JSON records what ran, every answer was checked, peers that are missing are skipped with a
line, and --render rebuilds the section a run wrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, data_file, generated_graph
from finepar.apps.bfs import bfs_levels_fast, validate_bfs

#: Each script runs end to end in its own processes: in .ci/run's slow set.
pytestmark = pytest.mark.slow

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A fresh graph cache for the module (FINEPAR_CACHE), restored afterwards."""
    mp = pytest.MonkeyPatch()
    path = tmp_path_factory.mktemp("finepar-cache")
    mp.setenv("FINEPAR_CACHE", str(path))
    mp.setenv("FINEPAR_DATA", str(DATA))
    import inputs
    inputs._LAST.clear()
    yield path
    inputs._LAST.clear()
    mp.undo()


def run_script(module: str, tmp: Path, *argv: str) -> dict:
    """Run a benchmark script's main() in this process; its JSON document."""
    mod = __import__(module)
    out, md = tmp / f"{module}.json", tmp / "RESULTS.md"
    assert mod.main([*argv, "--json", str(out), "--md", str(md)]) == 0
    return json.loads(out.read_text())


def section(md: Path, name: str) -> str:
    text = md.read_text()
    return text[text.index(f"<!-- BEGIN {name} -->"):text.index(f"<!-- END {name} -->")]


def assert_stats(st: dict) -> None:
    assert st["n"] >= 1 and st["min"] <= st["median"] <= st["max"]
    assert st["min"] > 0 and len(st["values"]) == st["n"]


def assert_render(module: str, tmp: Path, name: str, *extra: str) -> None:
    """--render of the run's JSON writes the section the run wrote."""
    mod = __import__(module)
    md2 = tmp / "rendered.md"
    assert mod.main(["--render", str(tmp / f"{module}.json"), "--md", str(md2), *extra]) == 0
    assert section(md2, name) == section(tmp / "RESULTS.md", name)


# ------------------------------------------------------------------------- scripts


@pytest.fixture(scope="module")
def peers_doc(cache, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("peers")
    return tmp, run_script("peers", tmp, "--real", "none", "--scales", "10", "--repeats", "2",
                           "--products", "3")


def test_peers_records_finepar_default_and_checked_peers(peers_doc):
    tmp, doc = peers_doc
    rows = {r["app"]: r for r in doc["rows"]}
    assert set(rows) == {"spmv", "pagerank", "bfs", "cc"}
    for app, r in rows.items():
        fp = r["systems"]["finepar default"]
        assert fp["correct"], fp["problem"]
        assert fp["config"] == {}  # FinePar's default: no plan option forced
        if app == "cc":  # Afforest runs on one device holding the CSR: no split to tune
            assert fp["threshold_source"] == "the app's one-device algorithm (on the gpu)"
            assert fp["plan"]["method"] == "single"
        else:
            assert fp["threshold_source"] == "tuner" and fp["tuning"]["model"]
            assert fp["ran"]["T_f"] == fp["plan"]["threshold"] and fp["ran"]["grouping"]
            assert fp["ran"]["model"] == fp["tuning"]["model"]
        assert len(fp["iterations"]) == 2 and all(i >= 1 for i in fp["iterations"])
        assert len(fp["timings"]) == 2 and all("kernel" in t for t in fp["timings"])
        assert_stats(fp["seconds"])
        assert r["systems"]["finepar gpu-only"]["config"] == {"devices": "gpu"}
        scipy = r["systems"]["scipy"]
        assert scipy["correct"], scipy["problem"]
        assert_stats(scipy["seconds"])
    assert rows["spmv"]["systems"]["scipy"]["iterations"] == [3, 3]  # products per run
    assert any("cusparse" in n for n in doc["notes"])  # no CuPy here: said, and skipped
    assert "cusparse" not in rows["spmv"]["systems"]
    assert_render("peers", tmp, "peers")


@pytest.fixture(scope="module")
def throttle_doc(cache, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("throttle")
    return tmp, run_script("throttle", tmp, "--scales", "10", "--real", "none",
                           "--cache-bytes", "8192", "--array-peers", "numpy", "--schedules",
                           "cf,sj-q", "--bisect", "kd,spac", "--remaps", "none,dbwp",
                           "--spac-max-nnz", "1000", "--repeats", "1", "--products", "2")


def test_throttle_runs_every_configuration_and_its_peers(throttle_doc):
    tmp, doc = throttle_doc
    assert [r["app"] for r in doc["rows"]] == ["spmv", "pagerank"]
    assert any("SPAC not run" in n and "--spac-max-nnz" in n for n in doc["notes"])
    for r in doc["rows"]:
        fp = r["finepar"]
        # the default last: its auto decision weighs the partitionings measured before it
        assert r["order"]["finepar"] == ["unthrottled", "hot columns", "auto", "cf kd",
                                         "sj-q kd", "none+dbwp", "cf kd+dbwp", "sj-q kd+dbwp",
                                         "default, columns none", "default",
                                         "default, 1000-step job"]
        assert fp["default, 1000-step job"]["config"] == {"steps": 1000.0}
        for label, rec in fp.items():
            assert rec["correct"], (label, rec["problem"])
        assert fp["unthrottled"]["config"] == {"devices": "gpu", "schedule": "none",
                                               "columns": "none"}
        assert fp["hot columns"]["config"] == {"devices": "gpu", "schedule": "none",
                                               "columns": "hot"}
        assert fp["cf kd"]["ran"]["schedule"] == "cf" and fp["cf kd"]["ran"]["partitions"] > 1
        assert fp["sj-q kd+dbwp"]["ran"]["remap"] == "dbwp"
        assert fp["cf kd+dbwp"]["prepare"]["remap_s"] > 0
        assert r["partitionings"]["kd"]["partitions"] > 1
        if r["app"] == "spmv":
            assert set(r["peers"]) == {"scipy", "scipy dbwp-kd"}
            assert all(p["correct"] for p in r["peers"].values())
        else:
            assert r["peers"]["scipy"]["correct"] and r["peers"]["scipy"]["iterations"][0] > 1
    # SpMV and PageRank on a symmetric graph share one partitioning
    assert doc["rows"][1]["partitionings"]["kd"]["shared_with_previous_app"]
    texts = [t["target"] for t in doc["targets"]]
    assert any("auto loses at most 5%" in t for t in texts)  # x fits 4 KiB of 8 KiB
    assert any("K-D tiling plus remapping" in t for t in texts)
    assert any(t["met"] is None and "scale 24" in t["detail"] for t in doc["targets"])
    assert_render("throttle", tmp, "throttle")


@pytest.fixture(scope="module")
def apps_doc(cache, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("apps")
    import hostpeers
    mp = pytest.MonkeyPatch()
    mp.setattr(hostpeers, "PREV_DIR", tmp / "no-prev")  # the previous FinePar is absent
    try:
        return tmp, run_script("apps", tmp, "--scales", "10", "--real", "none",
                               "--array-peers", "numpy", "--repeats", "1",
                               "--copy-bytes", str(1 << 22))
    finally:
        mp.undo()


def test_apps_runs_every_registered_app_beside_its_peers(apps_doc):
    from finepar import apps
    tmp, doc = apps_doc
    rows = {r["app"]: r for r in doc["rows"]}
    assert tuple(rows) == apps.names()
    for name, r in rows.items():
        fp = r["systems"]["finepar default"]
        assert fp["correct"], (name, fp["problem"])
        for system, rec in r["systems"].items():
            assert rec["correct"], (name, system, rec["problem"])
    assert {"scipy"} <= set(rows["bfs"]["systems"]) and {"scipy"} <= set(rows["cc"]["systems"])
    assert rows["bfs"]["edges"] == rows["bfs"]["nnz"] // 2  # undirected Graph500
    assert rows["pagerank"]["systems"]["scipy"]["iterations"][0] > 1
    pr = rows["pagerank"]["systems"]["finepar default"]
    if all(t.get("profile") == "none" for t in pr["timings"]):  # the GPU's plain queue:
        assert pr["host_per_iteration"] is None  # no device time to take from the wall
    else:
        assert_stats(pr["host_per_iteration"])
    assert any("previous FinePar is not in" in n for n in doc["notes"])
    # FinePar's other algorithms beside its default, host syncs counted per timed run
    assert rows["cc"]["systems"]["finepar fastsv"]["app_params"] == {"algorithm": "fastsv"}
    assert rows["coloring"]["systems"]["finepar jp"]["correct"]
    assert rows["coloring"]["greedy_colors"] >= 2
    assert apps_module().colours(rows["coloring"]["systems"]["finepar default"]) >= 2
    assert rows["pagerank"]["systems"]["finepar default"]["host_syncs"]["median"] >= 1
    assert apps_module().levels_per_round_trip(rows["bfs"]["systems"]["finepar default"]) >= 1
    assert not doc["targets"]  # issue 18's targets are set on scales 22 and 24 and real graphs
    assert_render("apps", tmp, "apps")


def test_apps_puts_the_bandwidth_floor_beside_every_finepar_figure(apps_doc):
    """Issue 31 item 5: bytes floor, its seconds at the copy bandwidth measured in the run and
    their share of the median time, on every FinePar record, and a column of the table."""
    tmp, doc = apps_doc
    bw = doc["copy_bandwidth"]
    assert bw["bytes_per_s"] > 0 and not bw["problem"], bw
    assert bw["buffer_bytes"] == 1 << 22 and len(bw["seconds"]) == 5
    for r in doc["rows"]:
        for label, rec in r["systems"].items():
            if not label.startswith("finepar"):
                continue
            assert rec["bytes_floor"] > 0 and rec["floor_seconds"] > 0, (r["app"], label)
            assert rec["floor_share"] > 0, (r["app"], label)
            assert rec["floor_seconds"] == pytest.approx(rec["bytes_floor"] / bw["bytes_per_s"])
            assert rec["floor_share"] == pytest.approx(rec["floor_seconds"]
                                                       / rec["seconds"]["median"])
    text = section(tmp / "RESULTS.md", "apps")
    assert "| floor (share of copy BW) |" in text and "a lower bound" in text
    assert "GB/s" in text


def test_floor_byte_model_on_a_tiny_csr():
    """benchmarks/floor.py's byte counts, exactly, on a hand-made 3-vertex CSR."""
    import floor
    from finepar.graph import Graph
    # 0 -> 1, 0 -> 2, 1 -> 2, 2 -> 0: n = 3, nnz = 4, int32 indptr and indices, fp32 values
    g = Graph(name="tiny", indptr=np.array([0, 2, 3, 4], np.int32),
              indices=np.array([1, 2, 2, 0], np.int32),
              data=np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    csr = 4 * 4 + 4 * 4  # indptr (n + 1) * 4, indices nnz * 4
    assert floor.csr_bytes(3, 4) == csr and floor.csr_bytes(3, 4, value=4) == csr + 16
    assert floor.csr_bytes(3, 4, indptr=8) == 4 * 8 + 16
    assert floor.graph_floor("spmv", g, 10) == 10 * (csr + 16 + 12 + 12)  # values, x, y
    assert floor.bytes_floor("spmv", 3, 4, 10, pattern=True) == 10 * (csr + 12 + 12)
    assert floor.graph_floor("pagerank", g, 7) == 7 * (csr + 3 * 12)  # x, y, 1/outdeg
    assert floor.graph_floor("rwr", g, 7) == 7 * (csr + 3 * 12)
    assert floor.graph_floor("hits", g, 2) == 2 * (7 * 4 + 8 * 4 + 24 + 24)  # B: 2n, 2 nnz
    assert floor.graph_floor("bfs", g, 99) == csr + 12 + 12  # levels, parents: not per level
    assert floor.graph_floor("sssp", g, 5) == csr + 16 + 12  # lengths, distances
    assert floor.bytes_floor("sssp", 3, 4, pattern=True) == csr + 12
    assert floor.graph_floor("cc", g) == floor.graph_floor("coloring", g) == csr + 12
    # ../shared/ANCHORS.md's bandwidth floor: n = 2^24, nnz = 521 M, one product
    n, nnz = 1 << 24, 521_000_000
    assert floor.bytes_floor("spmv", n, nnz, pattern=True) / 1e9 == pytest.approx(2.29, abs=5e-3)
    assert floor.bytes_floor("spmv", n, nnz) / 1e9 == pytest.approx(4.37, abs=5e-3)
    assert floor.bytes_floor("spmv", n, 3 << 30, pattern=True) == (
        (n + 1) * 8 + (3 << 30) * 4 + 8 * n)  # int64 indptr past 2**31 - 1 entries
    rec = {"correct": True, "iterations": [10, 10], "seconds": {"median": 1e-3}}
    got = floor.floor_record("spmv", g, rec, 1e9)
    assert got["bytes_floor"] == 10 * (csr + 40)
    assert got["floor_seconds"] == pytest.approx(got["bytes_floor"] / 1e9)
    assert got["floor_share"] == pytest.approx(got["floor_seconds"] / 1e-3)
    assert floor.floor_record("spmv", g, {"correct": False}, 1e9) == {
        "bytes_floor": None, "floor_seconds": None, "floor_share": None}
    with pytest.raises(ValueError, match="no byte model"):
        floor.bytes_floor("nope", 3, 4)


def apps_module():
    import apps
    return apps


@pytest.fixture(scope="module")
def pipeline_doc(cache, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipeline")
    return tmp, run_script("pipeline", tmp, "--scale", "10", "--large-scales", "11",
                           "--copy-bytes", str(1 << 22), "--repeats", "1")


def test_pipeline_chunks_streaming_and_a_larger_graph(pipeline_doc):
    tmp, doc = pipeline_doc
    assert_stats(doc["plain_copy"])
    chunks = [r for r in doc["rows"] if r["part"] == "chunks"]
    large = [r for r in doc["rows"] if r["part"] == "large"]
    assert [r["app"] for r in chunks] == ["pagerank", "bfs"] == [r["app"] for r in large]
    for r in chunks:
        sy = r["systems"]
        for label, rec in sy.items():
            assert rec["correct"], (r["app"], label, rec["problem"])
        assert sy["one buffer"]["ran"]["gpu_chunks"] == 1
        assert sy["resident chunks"]["ran"]["gpu_chunks"] >= 8
        assert sy["resident chunks"]["ran"]["gpu_streamed_nnz"] == 0
        assert sy["streaming"]["ran"]["gpu_streamed_nnz"] > 0
        assert_stats(sy["streaming"]["streaming"]["bandwidth"])
        assert sy["streaming + cpu"]["ran"]["cpu_nnz"] > 0
        assert sy["streaming + cpu"]["config"]["threshold"] == r["cpu_threshold"]
    for r in large:
        assert r["systems"]["default"]["correct"]
    gen = large[0]["input"]["generated"]  # a fresh cache: generated in a child process
    assert gen["generate_s"] > 0 and gen["peak_rss_bytes"] > 0
    assert sum("correct" in t["target"] and t["met"] for t in doc["targets"]) == 2
    assert any("plain copy" in t["target"] for t in doc["targets"])
    assert_render("pipeline", tmp, "pipeline")


def test_best_device_sets_the_default_beside_each_device_and_scipy(cache, tmp_path):
    """benchmarks/best_device.py: every app's default, cpu and gpu calls and scipy, each
    answer checked, FinePar's two times and its choice kept; the default's losses listed."""
    import importlib.util
    import best_device
    doc = run_script("best_device", tmp_path, "--real", "none", "--scales", "10",
                     "--repeats", "1")
    assert [r["app"] for r in doc["rows"]] == list(best_device.APPS)
    for r in doc["rows"]:
        sy = r["systems"]
        assert r["order"]["systems"][:4] == ["finepar default", "finepar cpu", "finepar gpu",
                                             "scipy"]
        for label, rec in sy.items():
            assert rec["correct"], (r["app"], label, rec["problem"])
            assert_stats(rec["seconds"])
        for label, devices in best_device.DEVICES:
            rec = sy[label]
            assert rec["config"] == {"devices": devices}
            assert_stats(rec["call_seconds"])  # the whole call holds the report's run
            assert rec["call_seconds"]["min"] >= rec["seconds"]["min"]
            assert rec["choice"]["reason"] and rec["choice"]["plan"]["label"]
        assert r["best"]["system"] in set(sy) - {"finepar default"}
        assert r["best"]["ratio"] > 0 and isinstance(r["best"]["below"], bool)
        assert isinstance(r["best"]["overlap"], bool)
    assert doc["graphs"][0]["load_s"] >= 0 and doc["graphs"][0]["spec"] == "graph500:10"
    assert isinstance(doc["below_best"], list)
    assert all(b["reason"] and b["app"] in best_device.APPS for b in doc["below_best"])
    assert {b["app"] for b in doc["below_best"]} == {r["app"] for r in doc["rows"]
                                                     if r["best"]["below"]}
    assert any("0.95x the best" in t["target"] for t in doc["targets"])
    if importlib.util.find_spec("cupy") is None:  # each CuPy peer skipped with a line
        assert sum("skip" in n and "CuPy is not usable" in n for n in doc["notes"]) == 3
    assert_render("best_device", tmp_path, "best_device")


def test_best_device_says_where_a_loss_is_within_the_runs_spread():
    import best_device
    st = lambda lo, hi: {"min": lo, "max": hi}  # noqa: E731
    assert best_device._overlap(st(1.5, 2.1), st(1.6, 2.2))
    assert not best_device._overlap(st(0.4, 0.5), st(0.14, 0.16))
    assert not best_device._overlap(None, st(1, 2))
    line = best_device.below_lines([{"app": "bfs", "graph": "g", "default_s": 2e-3,
                                     "system": "finepar gpu", "best_s": 1.7e-3,
                                     "ratio": 0.85, "overlap": True, "reason": "ran x"}])[-1]
    assert "0.85x, the ranges overlap" in line


def test_a_spent_budget_stops_before_the_next_graph(cache, tmp_path):
    doc = run_script("peers", tmp_path, "--real", "none", "--scales", "10,11",
                     "--budget-s", "1e-9", "--apps", "spmv")
    assert doc["rows"] == [] and any("budget spent" in n for n in doc["notes"])


# ------------------------------------------------------------------------- helpers


def test_graph_cache_generates_once_and_reads_back(cache):
    import inputs
    from finepar.io import load
    inputs._LAST.clear()
    g, info = inputs.load_input("graph500:9")
    assert info["generated"] and Path(info["file"]).exists()
    inputs._LAST.clear()
    g2, info2 = inputs.load_input("graph500:9")
    assert info2["generated"] is None and g2.name == g.name == "graph500-s9-ef16-seed0"
    ref = generated_graph(9)
    assert np.array_equal(g2.indptr, ref.indptr) and np.array_equal(g2.indices, ref.indices)
    assert g2.symmetric and load(info2["file"]).nnz == ref.nnz


def test_reference_cache_round_trips(cache):
    import inputs
    from finepar import apps
    from measure import app_params
    g = generated_graph(9)
    for name in ("pagerank", "spmv", "bfs"):
        app = apps.get(name)
        params = app_params(app, g)
        first, info = inputs.reference(app, g, params)
        again, info2 = inputs.reference(app, g, params)
        assert not info["cached"] and info2["cached"]
        for a, b in zip(first if isinstance(first, tuple) else (first,),
                        again if isinstance(again, tuple) else (again,)):
            assert np.array_equal(a, b)


def test_array_peers_match_networkx():
    import networkx as nx
    import arraypeers
    g = generated_graph(8)
    nxg = nx.from_scipy_sparse_array(g.to_scipy(), create_using=nx.DiGraph)
    ag = arraypeers.ArrayGraph(arraypeers.Backend("numpy"), g)
    x, it, ok = arraypeers.power_iteration(ag, tol=1e-12, max_iter=1000, dtype=np.float64)
    want = nx.pagerank(nxg, alpha=0.85, tol=1e-13, max_iter=1000)
    assert ok and np.abs(x - np.array([want[v] for v in range(g.n)])).sum() < 1e-8
    p = np.zeros(g.n)
    p[3] = 1.0
    x, _, _ = arraypeers.power_iteration(ag, tol=1e-12, max_iter=1000, restart=p,
                                         dtype=np.float64)
    want = nx.pagerank(nxg, alpha=0.85, personalization={3: 1.0}, tol=1e-13, max_iter=1000)
    assert np.abs(x - np.array([want[v] for v in range(g.n)])).sum() < 1e-8
    h, a, _, ok = arraypeers.hits(ag, tol=1e-12, max_iter=1000)
    hubs, auths = nx.hits(nxg, max_iter=1000, tol=1e-12)
    assert ok and np.abs(h - np.array([hubs[v] for v in range(g.n)])).sum() < 1e-6
    assert np.abs(a - np.array([auths[v] for v in range(g.n)])).sum() < 1e-6


def test_host_peer_helpers():
    import hostpeers
    g = generated_graph(9)
    root = int(np.argmax(np.diff(g.indptr)))
    ans = hostpeers.scipy_bfs(g, {"root": root})
    assert np.array_equal(ans.values, bfs_levels_fast(g, root))
    assert not validate_bfs(g, root, ans.values, ans.extra["parent"])
    lab = np.array([5, 5, 2, 7, 2, 5])
    assert hostpeers.smallest_id_labels(lab).tolist() == [0, 0, 2, 3, 2, 0]


def test_wrong_answers_keep_no_time():
    from finepar import apps
    from hostpeers import Answer
    from measure import answer_problem, peer_runs
    g = generated_graph(8)
    app = apps.get("pagerank")
    ref = app.reference(g, {})
    good = ref.astype(np.float32)
    assert answer_problem(app, g, good, ref, {}) == ""
    bad = good.copy()
    bad[:10] += 1e-3
    rec = peer_runs("bad", lambda: Answer(bad, 0.1, 5),
                    lambda a: answer_problem(app, g, a.values, ref, {}), repeats=2)
    assert not rec["correct"] and "L1" in rec["problem"] and rec["seconds"] is None
    levels = apps.get("bfs")
    lv = np.array([0, 1, -1])
    assert answer_problem(levels, g, lv, np.array([0, 1, 1]), {"root": 0}) != ""


def test_cpu_threshold_gives_the_long_rows_their_share():
    from pipeline import cpu_threshold
    lengths = np.array([1, 2, 3, 100, 50, 4])
    assert lengths[lengths > cpu_threshold(lengths, 0.5)].tolist() == [100]
    assert lengths[lengths > cpu_threshold(lengths, 0.7)].tolist() == [100, 50]
    assert cpu_threshold(lengths, 1.0) == 0


def test_previous_finepar_runs_through_its_cli(cache, tmp_path):
    import hostpeers
    from finepar import apps
    from measure import answer_problem
    if hostpeers.prev_available():
        pytest.skip("the previous FinePar is not unpacked in .prev/")
    g = generated_graph(9)
    app = apps.get("bfs")
    root = int(np.argmax(np.diff(g.indptr)))
    ans = hostpeers.prev_run("bfs", hostpeers.scipy_npz(g, tmp_path), {"root": root})
    assert ans.seconds > 0 and ans.iterations >= 1 and ans.detail["plan"]
    assert answer_problem(app, g, ans.values, app.reference(g, {"root": root}),
                          {"root": root}) == ""


@pytest.mark.parametrize("module, argv, words", [
    ("throttle", ["--schedules", "cf,xx"], "--schedules: xx"),
    ("apps", ["--apps", "bfs,nope"], "--apps: nope"),
    ("peers", ["--real", "not-a-graph"], "--real: no input 'not-a-graph'"),
    ("pipeline", ["--resident", "2"], "--resident 2.0 is out of range"),
    ("pipeline", ["--large-scales", "26,x"], "--large-scales: 'x'"),
    ("probe_host", ["--app", "nope"], "--app: 'nope'"),
    ("probe_group", ["--configs", "default,nope"], "--configs: nope not among"),
    ("probe_group", ["--real", "not-a-graph"], "--real: no input 'not-a-graph'"),
    ("probe_builds", ["--graph", "not-a-graph"], "--real: no input 'not-a-graph'"),
    ("probe_calls", ["--repeats", "0"], "--repeats must be at least 1"),
    ("probe_calls", ["--apps", "bfs,nope"], "--apps: nope not among"),
    ("probe_queues", ["--every-argument", "--plain-loads"], "one third setting at a time"),
    ("probe_rowblocks", ["--variants", "1024:256"], "--variants: BLOCK_NNZ:WG:SPLIT"),
    ("probe_rowblocks", ["--products", "0"], "--products and --repeats must be at least 1"),
    ("probe_spmv_bound", ["--lanes", "3"], "--lanes: a power of two up to 32, got 3"),
    ("probe_spmv_bound", ["--reps", "0"], "--long and --reps must be at least 1"),
    ("probe_spmv_bound", ["--hot", "16,x"], "--hot: a comma list of positive integers"),
    ("probe_pinned", ["--sizes-mb", "4,x"], "--sizes-mb: '4,x'"),
    ("probe_p2p", ["--repeats", "0"], "--repeats must be at least 1"),
    ("probe_ccgroup", ["--repeats", "0"], "--repeats must be at least 1"),
    ("main_job", ["--runs", "0"], "--runs: 0 is not a run count"),
    ("dist_range", ["--apps", "bfs,cc"], "--apps: cc not among"),
    ("dist_range", ["--scale", "40"], "--scale: 40 is not a Graph500 scale"),
])
def test_bad_options_are_one_line_before_any_work(module, argv, words, tmp_path, capsys,
                                                  monkeypatch):
    from common import main_of
    mod = __import__(module)
    out = tmp_path / "out.json"
    monkeypatch.setattr(sys, "argv", [f"{module}.py"])
    assert main_of(lambda: mod.main([*argv, "--json", str(out)])) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err and err.startswith(f"{module}.py: error:")
    assert not out.exists()


def _rec(per_it: float, run: float | None = None, remap: str = "none") -> dict:
    return {"correct": True, "per_iteration": {"median": per_it},
            "seconds": {"median": run if run is not None else 10 * per_it},
            "remap": {"kind": remap}}


def test_throttle_targets_at_scale_24():
    import throttle
    spmv = {"spec": "graph500:24", "graph": "g24", "app": "spmv", "x_fits_cache": False,
            "partitionings": {},
            "finepar": {"default": _rec(1.0), "unthrottled": _rec(1.2),
                        "cf kd+dbwp": _rec(0.7, remap="dbwp")},
            "peers": {"cusparse": _rec(1.0), "cusparse dbwp-kd": _rec(0.8)},
            "order": {"peers": ["cusparse", "cusparse dbwp-kd"]}}
    pr = {"spec": "graph500:24", "graph": "g24", "app": "pagerank", "x_fits_cache": True,
          "partitionings": {"kd+dbwp": {"partition_s": 0.5, "remap_s": 0.5}},
          "finepar": {"default": _rec(0.1, 2.0), "unthrottled": _rec(0.2, 4.0),
                      "auto": _rec(0.205, 4.1)},
          "peers": {"cupy": _rec(0.2, 2.5)}}
    got = {t["target"]: t for t in throttle.targets({"rows": [spmv, pr]}, None)}
    assert got["scale 24: FinePar spmv (default) >= 1.3x plain cusparse"]["met"] is False
    best = got["scale 24: FinePar spmv (best configuration) >= 1.3x plain cusparse"]
    assert best["met"] is True and "cf kd+dbwp" in best["detail"] and "1.43x" in best["detail"]
    same = got["scale 24: FinePar SpMV >= 1.0x cusparse dbwp-kd (the same relabelled matrix)"]
    assert same["met"] is True and "1.14x" in same["detail"]
    assert got["scale 24: FinePar pagerank (default) >= 1.3x plain cupy"]["met"] is False
    assert got["g24 pagerank (x fits the L2): auto loses at most 5% against unthrottled"][
        "met"] is True
    cost = got["g24: K-D tiling plus remapping costs at most 10 PageRank iterations"]
    assert cost["met"] is True and "5.0 unthrottled iterations" in cost["detail"]


def test_apps_targets():
    """Issue 18's targets from rows of known times."""
    import apps

    def row(graph, app, spec, systems, **kw):
        return {"spec": spec, "graph": graph, "app": app, "edges": 260_000_000,
                "systems": systems, **kw}
    launches = {"launches": [{"levels": 950}, {"levels": 2}]}
    rows = [row("g22", "bfs", "graph500:22", {"finepar default": _rec(0.001, 0.005)}),
            row("g22", "cc", "graph500:22", {"finepar default": _rec(0.001, 0.012),
                                             "finepar fastsv": _rec(0.001, 0.06)}),
            row("g24", "bfs", "graph500:24", {"finepar default": _rec(0.001, 0.004)}),
            row("luxembourg", "bfs", "lux.mtx",
                {"finepar default": {**_rec(0.001, 0.004), "iterations": [952],
                                     "result": launches},
                 "scipy": _rec(0.001, 0.0039)}),
            row("luxembourg", "sssp", "lux.mtx", {"finepar default": _rec(0.001, 0.02),
                                                  "scipy": _rec(0.001, 0.018)}),
            row("g22", "pagerank", "graph500:22",
                {"finepar default": {**_rec(0.001, 0.02), "host_per_iteration":
                                     {"median": 25e-6, "min": 20e-6, "max": 31e-6}}}),
            row("g24", "pagerank", "graph500:24", {"finepar default": _rec(0.01, 0.1),
                                                   "cupy": _rec(0.01, 0.12)}),
            row("g22", "coloring", "graph500:22",
                {"finepar default": {**_rec(0.01, 0.8), "result": {"summary": [
                    ["colours", "140 (no greedy count above 4,194,304 entries)"]]}}},
                greedy_colors=100)]
    got = {t["target"]: t for t in apps.targets({"rows": rows}, None)}
    assert got["scale 24: FinePar BFS >= 50 GTEPS"]["met"] is True  # 260e6 / 4 ms = 65
    assert got["g22: CC time <= 2.0x BFS time"]["met"] is False  # 12 ms against 5 ms
    assert "FastSV 60.000 ms" in got["g22: CC time <= 2.0x BFS time"]["detail"]
    assert got["luxembourg: BFS <= 6 ms"]["met"] is True
    assert got["luxembourg: BFS <= 1.5x scipy"]["met"] is True
    per_level = got["luxembourg: BFS <= 10 us per level"]
    assert per_level["met"] is True and "476.0 levels per host round trip" in per_level["detail"]
    assert got["luxembourg: SSSP <= scipy's Dijkstra"]["met"] is False
    assert got["g22: PageRank host time per iteration <= 30 us"]["met"] is True
    assert got["g24: FinePar PageRank >= 1.3x cupy"]["met"] is False  # 1.2x
    assert got["scale 22: colouring <= 1 s"]["met"] is True
    assert got["scale 22: colours <= 1.3x greedy largest-first"]["met"] is False  # 1.4x


def test_tiling_times_each_stage_per_thread_count(cache, tmp_path):
    """benchmarks/tiling.py: each share tiled in a process per thread count and place of the
    counts, every partitioning valid; the default share cut with the whole matrix's tree."""
    doc = run_script("tiling", tmp_path, "--scales", "16", "--threads", "1,all", "--counts",
                     "device,scipy,numpy", "--repeats", "2", "--cache-bytes", "16000",
                     "--hubs", "4")
    rows = doc["rows"]
    assert len(rows) == 2 * 2 * 3 and not any("error" in r for r in rows)
    for r in rows:
        assert r["valid"] and r["partitions"] > 1 and r["threads"] >= 1
        assert_stats(r["seconds"])
        assert {"histogram", "tree", "segments"} <= set(r["stages"])
    assert {r["how"] for r in rows if r["share"] == "default"} == {
        "whole matrix's tree, hubs dropped"}
    assert all(r["nnz"] < doc["rows"][0]["nnz"] for r in rows if r["share"] == "default")
    assert_render("tiling", tmp_path, "tiling")


def test_tiling_rejects_a_bad_thread_count(capsys):
    import tiling
    with pytest.raises(SystemExit) as exc:
        tiling.main(["--threads", "0"])
    assert exc.value.code == 2 and "--threads" in capsys.readouterr().err


def test_e2e_reports_the_results_rate_and_its_target(cache, tmp_path):
    """A warm FinePar process and scipy's job on a small graph: FinePar's rows carry the
    answer's bytes over its results phase; the 5 GB/s target reads CC's warm row at scale
    24 (renamed here), met or missed by the median."""
    import e2e
    doc = run_script("e2e", tmp_path, "--scales", "10", "--real", "none", "--apps", "cc",
                     "--repeats", "1", "--systems", "finepar-warm,scipy")
    recs = {r["system"]: r for r in doc["rows"][0]["apps"]["cc"]}
    assert recs["finepar-warm"]["correct"] and recs["scipy"]["correct"]
    assert_stats(recs["finepar-warm"]["results_gb_per_s"])
    assert recs["scipy"].get("results_gb_per_s") is None  # no results phase of its own
    assert "GB/s results" in (tmp_path / "RESULTS.md").read_text()
    for rate, met in ((6.0, True), (4.0, False)):
        row = dict(doc["rows"][0], graph="graph500-s24-ef16-seed0")
        warm = dict(recs["finepar-warm"], results_gb_per_s={"median": rate})
        row["apps"] = {"cc": [warm]}
        got = {t["target"]: t for t in e2e.targets({**doc, "rows": [row]})}
        t = next(v for k, v in got.items() if k.startswith("results to the host"))
        assert t["met"] is met and f"{rate:.2f} GB/s" in t["detail"]


def test_probe_pinned_times_every_host_memory(tmp_path):
    """benchmarks/probe_pinned.py: each size's copies both ways for every host memory, a
    rate per case, and the page-locking through the CUDA driver reported as skipped where
    there is no driver (PoCL here), never timed as if it had happened."""
    import probe_pinned
    out = tmp_path / "pinned.json"
    assert probe_pinned.main(["--sizes-mb", "0.5", "--repeats", "2", "--json", str(out)]) == 0
    cases = {c["memory"]: c for c in json.loads(out.read_text())["cases"]}
    assert set(cases) == {"pageable", "pinned", "shared", "shared+registered",
                          "host copy (copy_spans)"}
    for name in ("pageable", "pinned", "shared"):
        for way in ("d2h", "h2d"):
            r = cases[name][way]
            assert 0 < r["gbps_min"] <= r["gbps_median"] <= r["gbps_max"]
    reg = cases["shared+registered"]
    assert ("skipped" in reg) != ("d2h" in reg)
    assert cases["host copy (copy_spans)"]["copy"]["gbps_median"] > 0


def test_probe_p2p_moves_and_checks_every_way(tmp_path):
    """benchmarks/probe_p2p.py: each way of moving a buffer from one queue's device to the
    other's (a copy, a kernel's read, through pinned host memory) timed and checked word by
    word; on PoCL's one device both queues share it, and the document says so."""
    import probe_p2p
    out = tmp_path / "p2p.json"
    assert probe_p2p.main(["--sizes-mb", "0.5", "--repeats", "2", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["two_devices"] is False and "one device" in doc["devices"]
    (case,) = doc["cases"]
    for way in probe_p2p.WAYS:
        assert case[way]["right"] is True
        assert 0 < case[way]["gbps_min"] <= case[way]["gbps_median"] <= case[way]["gbps_max"]


def test_probe_host_counts_a_bfs_runs_commands(tmp_path):
    """benchmarks/probe_host.py: every OpenCL command of a BFS run on the GPU alone counted
    and stamped. Graph500 scale 14 on the emulated pair takes 22 (the start one launch a
    device, the root's list one, the chain armed in one; 40 before those), the same count
    every run, and the timeline names the FinePar function behind each call, between the
    marks of where the app's run begins and returns."""
    import probe_host
    out = tmp_path / "host.json"
    assert probe_host.main(["--scale", "14", "--repeats", "2", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [r["commands"] for r in doc["runs"]] == [22, 22]
    assert doc["runs"][0]["calls"] == doc["runs"][1]["calls"]
    marks = [c["call"] for c in doc["timeline"] if c["call"].startswith("(")]
    assert marks == ["(app.run begins)", "(app.run returns)"]
    commands = [c for c in doc["timeline"] if not c["call"].startswith("(")]
    assert len(commands) == 22
    assert "start_launch" in commands[0]["from"]
    assert doc["timeline"][0]["call"] == "(app.run begins)"
    assert all(c["at_ms"] >= 0 and c["took_ms"] >= 0 for c in doc["timeline"])
    assert doc["runs"][0]["calls"].get("kernel call", 0) == 0  # every launch bound
    timed = [c for c in doc["timeline"] if "dev_ms" in c]  # the device's own times
    assert timed and all(c["dev_at_ms"] >= 0 and c["dev_ms"] >= 0 for c in timed)


def test_probe_group_times_each_configuration_beside_scipy(tmp_path):
    """benchmarks/probe_group.py on a small real graph: FinePar's default, the GPU's loop
    forced and ``devices='gpu'`` in turn with scipy's call, every answer checked; the
    forced loop runs the one work-group's levels and PageRank's loop."""
    import probe_group
    data_file("USPowerGrid.mtx")  # skipped where ../shared/data is absent
    out = tmp_path / "group.json"
    assert probe_group.main(["--real", "USPowerGrid", "--apps", "bfs,pagerank", "--configs",
                             "default,loop,gpu", "--repeats", "2", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["app"] for r in rows] == ["bfs", "pagerank"]
    for r in rows:
        for c in ("default", "loop", "gpu"):
            assert r[c]["correct"] and r[c]["run"]["n"] == 2
            assert 0 < r[c]["run"]["min"] <= r[c]["run"]["median"] <= r[c]["run"]["max"]
    assert rows[0]["loop"]["where"] == "group" and rows[0]["scipy"]["n"] == 2
    assert rows[1]["scipy"] is None  # no scipy peer for PageRank here


def test_probe_calls_times_a_users_repeated_calls(tmp_path, monkeypatch):
    """benchmarks/probe_calls.py: the first call and the later ones of ``finepar.run`` with
    nothing passed, every answer checked; the later calls take the engine kept by the one
    before, and scipy's call runs beside where scipy has the app."""
    import probe_calls
    data_file("USPowerGrid.mtx")
    monkeypatch.delenv("FINEPAR_NO_CACHE", raising=False)  # a user's default: the cache on
    monkeypatch.setenv("FINEPAR_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "calls.json"
    assert probe_calls.main(["--real", "USPowerGrid", "--apps", "bfs,pagerank", "--as",
                             "scipy", "--repeats", "2", "--profile", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["app"] for r in rows] == ["bfs", "pagerank"]
    for r in rows:
        assert r["correct"] and r["call"]["n"] == 2 and r["kept"][1:] == [True, True]
        assert r["phases"]["setup"]["max"] == 0.0 and r["phases_first"]["setup"] > 0
    assert rows[0]["scipy"]["n"] == 2 and rows[1]["scipy"] is None
    assert any("finepar/api.py" in line for line in rows[0]["profile"]["cumulative"])


def test_probe_rowblocks_times_each_geometry_and_checks_every_product(tmp_path):
    """benchmarks/probe_rowblocks.py: one engine per geometry, rows cut where the split
    asks (one launch a step, the cut rows folded inside it) and none where it is 0, every
    y checked; no cuSPARSE on the emulated pair."""
    import probe_rowblocks
    out = tmp_path / "rb.json"
    assert probe_rowblocks.main(["--graphs", "graph500:10", "--variants", "256:64:1,256:64:0",
                                 "--products", "3", "--repeats", "2", "--ptx",
                                 "--json", str(out)]) == 0
    g = json.loads(out.read_text())["graphs"][0]
    cut, whole = g["variants"]
    assert g["cusparse"] is None and g["longest_row"] > 256
    assert cut["lowering"]["cut_rows"] > 0 and whole["lowering"]["cut_rows"] == 0
    for v in (cut, whole):
        assert v["wrong_rows"] == 0 and v["launches"] == 1
        assert 0 < v["span_per_product"]["min"] <= v["span_per_product"]["max"]


def test_probe_builds_stamps_each_calls_build_jobs(tmp_path):
    """benchmarks/probe_builds.py: each call's build jobs and settles recorded; the
    first call builds, later warm calls on the same pair build nothing."""
    import probe_builds
    data_file("USPowerGrid.mtx")
    out = tmp_path / "builds.json"
    assert probe_builds.main(["--app", "bfs", "--calls", "2", "--devices", "gpu,auto",
                              "--json", str(out)]) == 0
    calls = json.loads(out.read_text())["calls"]
    assert [c["devices"] for c in calls] == ["gpu", "auto", "gpu", "auto"]
    assert all(c["warmup_s"] >= 0 and c["run_s"] > 0 for c in calls)
    assert not any(j.get("built") for c in calls[2:] for j in c["jobs"])


def test_probe_ccgroup_times_both_runs_against_scipy(tmp_path):
    """benchmarks/probe_ccgroup.py on two small inputs: the sampled run (seven launches)
    and the unsampled one (the emulated pair's: one launch) timed beside scipy, every
    answer checked."""
    import probe_ccgroup
    out = tmp_path / "ccgroup.json"
    grid = data_file("USPowerGrid.mtx")  # skipped where ../shared/data is absent
    assert probe_ccgroup.main(["graph500:9", str(grid), "--repeats", "2",
                               "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [r["nnz"] for r in doc["graphs"]][1] == 13188
    for r in doc["graphs"]:
        assert r["sampled"]["launches"] == [7] and r["sampled"]["phases"][0] == "link"
        assert r["unsampled"]["launches"] == [1] and r["unsampled"]["phases"] == ["unsampled"]
        for k in ("sampled", "unsampled", "scipy"):
            assert 0 < r[k]["min"] <= r[k]["median"] <= r[k]["max"]
            assert len(r[k]["runs_ms"]) == 2
        for k in ("sampled", "unsampled"):  # the whole call holds its warm-up and run
            assert r[k]["call"]["min"] > r[k]["min"] and len(r[k]["call"]["runs_ms"]) == 2


def test_main_job_compares_finepar_with_the_best_other_row(tmp_path):
    doc = run_script("main_job", tmp_path, "--graph", "graph500:10", "--runs", "2")
    runs = doc["rows"][0]["runs"]
    assert len(runs) == 2 and doc["rows"][0]["graph"].startswith("graph500-s10")
    for r in runs:
        assert {"finepar", "cpu-only", "coarse-oracle"} <= set(r["seconds"])
        best = min(v for m, v in r["seconds"].items() if m != "finepar")
        assert r["ratio"] == pytest.approx(best / r["seconds"]["finepar"])
        assert r["wall_s"] > max(r["seconds"].values())
    assert "FinePar against the best other row" in section(tmp_path / "RESULTS.md", "main_job")
    assert_render("main_job", tmp_path, "main_job")


def test_probe_spmv_bound_declares_a_short_and_a_long_kernel_for_each_gather():
    """benchmarks/probe_spmv_bound.py: every variant's two kernels are in the CUDA source
    under the names ncu's filter takes, each with its own gather."""
    import probe_spmv_bound
    src = probe_spmv_bound.source()
    for name, (load, idx) in probe_spmv_bound.LOADS.items():
        for kind in ("short", "long"):
            assert f"__global__ void {probe_spmv_bound.kernel_name(kind, name)}(" in src
        assert src.count(load) >= 2 and f"#define IDX {idx}\n" in src
    assert src.count("__global__") == 2 * len(probe_spmv_bound.LOADS)


def test_probe_queues_plain_loads_is_a_third_setting_with_checked_answers(tmp_path):
    """benchmarks/probe_queues.py --plain-loads: each run of the third setting is timed and
    checked beside the other two, and the flag it turns off is back on afterwards."""
    import probe_queues
    from finepar.engine import memory
    out = tmp_path / "q.json"
    assert probe_queues.main(["--real", "none", "--scales", "8", "--apps", "spmv",
                              "--repeats", "1", "--plain-loads", "--json", str(out)]) == 0
    row = json.loads(out.read_text())["rows"][0]
    assert row["correct"] and row["third"] == probe_queues.PLAIN_LOADS
    assert set(row["runs"]) == {"batch", "auto", probe_queues.PLAIN_LOADS}
    assert all(r["n"] == 1 for r in row["runs"].values()) and row["ratio_third"] > 0
    assert memory.PTX_LOADS is True
