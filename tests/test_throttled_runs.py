"""Throttled runs: every schedule x bisection x remapping x memory mode, for every app, equals
the app's independent reference; a small cache makes the partitions many. The schedule never
changes the answer."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from conftest import INPUT_PARAMS, SHARED_GRAPHS, generated_graph, graph_params, shared_graph
from finepar import api, apps
from finepar.errors import UsageError

SCHEDULES = ("cf", "cf-q", "sj", "sj-q")
BISECTIONS = ("kd", "spac")
REMAPS = ("none", "dbwp", "degree")
MODES = ("shared", "split")
#: Every combination: a run of each on one graph per app.
COMBOS = list(itertools.product(SCHEDULES, BISECTIONS, REMAPS, MODES))

_REFS: dict = {}


def checked_run(app, name, g, pair, **kw):
    params = app.reference_params(g, app.check_params(
        g, dict(INPUT_PARAMS.get((app.name, name), {}))))
    key = (app.name, name)
    if key not in _REFS:
        _REFS[key] = app.reference(g, params)
    res, rep = api.run(app.name, g, pair=pair, warmup=False, **params, **kw)
    problem = app.check(g, res, _REFS[key], params)
    return problem, rep


def small_cache(g) -> int:
    """A cache that holds about a sixth of the vector entries: several partitions."""
    return max(64, 8 * g.n // 6)


@pytest.mark.parametrize("app_name", apps.names())
def test_every_combination(app_name, pairs):
    g = generated_graph(11, 4)
    app = apps.get(app_name)
    for schedule, bisect, remap, mode in COMBOS:
        problem, rep = checked_run(app, "g11", g, pairs[mode], threshold=48, schedule=schedule,
                                   bisect=bisect, remap=remap, cache_bytes=small_cache(g))
        where = f"{schedule} {bisect} {remap} {mode}"
        assert not problem, f"{where}: {problem}"
        thr = rep.plan["throttle"]
        assert thr["schedule"] == schedule and thr["partitions"] > 1, where
        assert (rep.plan.get("remap") or {}).get("kind", "none") == remap, where


@pytest.mark.parametrize("name", graph_params(SHARED_GRAPHS))
@pytest.mark.parametrize("app_name", apps.names())
def test_throttled_on_every_graph(app_name, name, pairs):
    """One combination per graph (rotating through them), in both memory modes."""
    g = shared_graph(name)
    app = apps.get(app_name)
    k = SHARED_GRAPHS.index(name) + apps.names().index(app_name)
    schedule, bisect, remap = SCHEDULES[k % 4], BISECTIONS[k % 2], REMAPS[k % 3]
    for mode in MODES:
        problem, rep = checked_run(app, name, g, pairs[mode], threshold=32, schedule=schedule,
                                   bisect=bisect, remap=remap, cache_bytes=small_cache(g))
        assert not problem, f"{schedule} {bisect} {remap} {mode}: {problem}"


def test_partitions_respect_the_cache_and_cover_every_entry(pairs):
    g = shared_graph("cnr-2000.mtx.gz")
    res, rep = api.run("spmv", g, pair=pairs["split"], threshold=64, schedule="cf",
                       cache_bytes=40_000, warmup=False, repeat=1)
    thr = rep.plan["throttle"]
    assert thr["capacity"] == 40_000 // 2 // 4
    assert thr["working_set"]["max"] <= thr["capacity"] and thr["over_capacity"] == 0
    share_nnz = int(np.diff(g.indptr)[np.diff(g.indptr) <= 64].sum())
    assert thr["nnz"] == share_nnz == rep.plan["lowering"]["gpu"]["nnz"]
    assert rep.plan["lowering"]["gpu"]["launches"] >= thr["partitions"]  # CF: one each


def test_auto_throttles_only_beyond_the_cache(pairs, monkeypatch):
    from finepar.throttle import plan as tp
    monkeypatch.setattr(tp, "measured_rate", lambda: 1e-15)  # partitioning all but free
    g = shared_graph("wiki-Vote.txt")
    _, rep = api.run("pagerank", g, pair=pairs["split"], threshold=64, warmup=False,
                     cache_bytes=1 << 30)
    assert rep.plan["throttle"] is None  # the share fits a 1 GiB cache
    _, rep = api.run("pagerank", g, pair=pairs["split"], threshold=64, warmup=False,
                     cache_bytes=8 * 1024)
    thr = rep.plan["throttle"]
    assert thr["schedule"] == "sj" and thr["partitions"] > 1
    sj = thr["sj"]  # profiled, then the cheapest cover kept (maybe the root: unthrottled)
    assert sj["passes"] == thr["tree_depth"] + 1 and sj["cover"]


def test_auto_throttles_by_measured_cost(tmp_path, monkeypatch):
    """auto partitions a share when the run's steps save more than the partitioning costs
    (its measured seconds per nonzero): never where x and y fit the cache (nothing to
    save), not for a single step, yes for a long run, never past max_partition_seconds."""
    import dataclasses
    from finepar.throttle import plan as tp
    from finepar.throttle.plan import ThrottleOptions, throttle_share
    g = generated_graph(11, 2)
    assert (g.row_lengths() == 0).any()  # empty rows: not in the working set
    rows = np.arange(g.n)
    ws = np.unique(g.indices).size + int(np.count_nonzero(g.row_lengths()))
    fits = ThrottleOptions(schedule="auto", fraction=1.0, cache_bytes=4 * ws)
    seen: dict = {}
    assert throttle_share(g, rows, fits, 0, steps=1e12, decision=seen) is None
    assert seen["working_set"] == ws and seen["saving_seconds"] == 0.0
    roomy = ThrottleOptions(schedule="auto", fraction=1.0, cache_bytes=4 * 2 * g.n)
    assert throttle_share(g, rows, roomy, 0, steps=1e12, decision=seen) is None
    assert seen["working_set"] == -2  # n columns and n rows fit: no pass to count them
    tight = ThrottleOptions(schedule="auto", fraction=1.0, cache_bytes=4 * (ws - 1))
    assert throttle_share(g, rows, tight, 0, steps=1, decision=seen) is None
    assert not seen["throttle"] and seen["cost_seconds"] > seen["saving_seconds"] > 0
    spec = throttle_share(g, rows, tight, 0, steps=1e12, decision=seen)
    assert seen["throttle"] and spec.schedule == "sj" and spec.partitioning.n_parts > 1
    costly = dataclasses.replace(tight, max_partition_seconds=g.nnz * 1e-12)
    assert throttle_share(g, rows, costly, 0, steps=1e12) is None
    forced = dataclasses.replace(costly, schedule="cf")  # asked for: made whatever it costs
    assert throttle_share(g, rows, forced, 0).partitioning.n_parts > 1
    # the cost is this machine's measured rate once one was recorded
    monkeypatch.setenv("FINEPAR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("FINEPAR_NO_CACHE", raising=False)
    tp.record_rate(2.0, 1 << 21)
    assert tp.measured_rate() == pytest.approx(2.0 / (1 << 21))


def test_auto_decision_reaches_the_report(pairs):
    g = generated_graph(11, 4)
    _, rep = api.spmv(g, pair=pairs["split"], devices="gpu", cache_bytes=small_cache(g),
                      repeat=2, warmup=False)
    auto = rep.plan["throttle_auto"]
    assert auto["steps"] == 2 and auto["throttle"] == (rep.plan["throttle"] is not None)
    assert "auto       " in rep.text()


@pytest.mark.parametrize("kw,needle", [({"schedule": "fastest"}, "--schedule"),
                                        ({"bisect": "metis"}, "--bisect"),
                                        ({"remap": "random"}, "--remap"),
                                        ({"cache_bytes": 0}, "--cache-bytes"),
                                        ({"cache_bytes": -5}, "--cache-bytes")])
def test_bad_throttle_options(pairs, kw, needle):
    g = generated_graph(8)
    with pytest.raises(UsageError) as e:
        api.run("pagerank", g, pair=pairs["split"], threshold=8, warmup=False, **kw)
    assert needle in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("argv,needle", [(["--schedule", "x"], "--schedule"),
                                         (["--cache-bytes", "0"], "--cache-bytes"),
                                         (["--cache-bytes", "lots"], "--cache-bytes")])
def test_bad_throttle_flags_are_one_line(capsys, argv, needle):
    from finepar.cli import main
    rc = main(["run", "pagerank", "graph500:8", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and needle in err[0]


@pytest.mark.parametrize("schedule", ["sj", "sj-q", "cf-q"])
def test_throttled_device_steps(schedule, pairs):
    """On one device PageRank tests convergence on the device in batches of iterations; a
    split-join schedule re-covers the tree in the middle of a batch and the batch's sums
    must survive it."""
    g = generated_graph(11, 4)
    app = apps.get("pagerank")
    problem, rep = checked_run(app, "g11", g, pairs["split"], devices="gpu", schedule=schedule,
                               cache_bytes=small_cache(g), grouping="adaptive")
    assert not problem
    assert rep.result["iterations"] < 40


@pytest.mark.parametrize("mode", ["shared", "split"])
@pytest.mark.parametrize("app_name", ["spmv", "pagerank"])
def test_grid_tiled_shares_run_right(app_name, mode, pairs, monkeypatch):
    """Shares tiled on the grid (segments as runs of rows, no permutation) lower and run
    to the reference's answer under a per-partition and a split-join schedule."""
    from finepar.throttle import kdgrid
    monkeypatch.setattr(kdgrid, "GRID_MIN_NNZ", 0)
    monkeypatch.setattr(kdgrid, "MAX_BINS", 128)
    g = generated_graph(11, 4)
    app = apps.get(app_name)
    for schedule in ("cf", "sj"):
        problem, rep = checked_run(app, "g11", g, pairs[mode], threshold=48, schedule=schedule,
                                   cache_bytes=small_cache(g))
        assert not problem, f"{schedule} {mode}: {problem}"
        assert rep.plan["throttle"]["partitions"] > 1 and rep.plan["throttle"]["grid"]


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_share_without_hubs_cut_with_the_whole_tree_runs_right(mode, pairs, monkeypatch):
    """A fine split that leaves the CPU a few hub rows of a symmetric matrix: the GPU share
    is cut with the whole matrix's tiling, hubs dropped (reported), and SpMV still equals
    the reference under both schedules."""
    from finepar.throttle import kdgrid
    monkeypatch.setattr(kdgrid, "GRID_MIN_NNZ", 0)
    monkeypatch.setattr(kdgrid, "MAX_BINS", 128)
    g = generated_graph(11, 4)
    lengths = np.sort(np.diff(g.indptr))
    threshold = int(lengths[-4])  # at most three rows go to the CPU
    assert g.symmetric and lengths[lengths <= threshold].sum() >= 0.9 * g.nnz
    app = apps.get("spmv")
    for schedule in ("cf", "sj"):
        problem, rep = checked_run(app, "g11", g, pairs[mode], threshold=threshold,
                                   schedule=schedule, cache_bytes=small_cache(g))
        assert not problem, f"{schedule} {mode}: {problem}"
        assert rep.plan["throttle"]["rows_dropped"] >= 1
