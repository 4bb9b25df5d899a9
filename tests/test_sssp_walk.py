"""SSSP's CPU walk (finepar.engine.heapwalk): Dijkstra on one CPU work-item from the
source, handing a grown heap to the push side, gives the push side's float32 fixed point bit
for bit on every real graph, in both memory modes, with either device pushing, at several
switch points; levels by device and hand-overs asserted as counts, never as times."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import (INPUT_PARAMS, SHARED_GRAPHS, generated_graph, graph_params, push_from,
                      shared_graph)
from finepar import api, apps
from finepar.engine import EngineOptions
from finepar.io import from_scipy

MODES = ("shared", "split")
WALK = "cpu (walk)"
NO_WALK = EngineOptions(walk="none")
#: Fixed switch points past the source's out-edges (a heap's out-edges): a handful more, a
#: few hundred, and past any heap of these graphs.
EXTRA = (2, 300, 10**9)



def lengths(g, name: str):
    """``g`` with lengths spanning five decades (so float32 sums round differently along
    different paths), or, where SSSP needs them (signed matrices), its own values' magnitudes
    and the parameters saying so."""
    given = dict(INPUT_PARAMS.get(("sssp", name), {}))
    if given:
        return g, given
    w = (10.0 ** np.random.default_rng(3).uniform(-2, 3, g.nnz)).astype(np.float32)
    return from_scipy(sp.csr_array((w, g.indices, g.indptr), shape=g.shape),
                      name=g.name + "-w"), given


def check_run(g, res, params: dict, switch: int, want: np.ndarray) -> None:
    """The answer is the no-walk run's bit for bit and passes the app's check; the walk ran
    at most once, first, from a source within the switch point; hand-overs are counted; levels
    by device add up."""
    app = apps.get("sssp")
    np.testing.assert_array_equal(res.values, want)
    ref = app.reference(g, {**params, "root": res.extra["root"]})
    assert not app.check(g, res, ref, {**params, "root": res.extra["root"]})
    steps = res.extra["trace"]
    walked = [i for i, s in enumerate(steps) if s["where"] == WALK]
    assert walked in ([], [0])
    moves = res.extra["handovers"]
    assert moves["to_walk"] == 0
    if walked:
        assert steps[0]["frontier_edges"] <= switch
        assert moves["from_walk"] == (len(steps) > 1)
        assert steps[0]["found"] == 0 or steps[0]["found_edges"] > switch
    else:
        assert moves["from_walk"] == 0
    assert sum(res.extra["by_device"].values()) == res.iterations == len(steps)
    assert res.converged


@pytest.mark.parametrize("name", graph_params(SHARED_GRAPHS))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("push", ("cpu", "gpu"))
def test_walk_hands_the_heap_over(name, mode, push, pairs, monkeypatch):
    """Every real graph, both memory modes, either push side, switch points at and past the
    source's out-edges: the lengths are the push side's float32 fixed point, bit for bit;
    some switch point hands a heap over and the largest runs the whole graph on the walk."""
    push_from(monkeypatch, push)
    g, given = lengths(shared_graph(name), name)
    root = int(np.argmax(np.diff(g.indptr)))
    kw = dict(pair=pairs[mode], threshold=4, warmup=False, root=root, **given)
    want = api.run("sssp", g, options=NO_WALK, **kw)[0].values
    deg = int(np.diff(g.indptr)[root])
    handed = 0
    for switch in (deg + e for e in EXTRA):
        res, _ = api.run("sssp", g, options=EngineOptions(walk=switch), **kw)
        assert res.extra["push_role"] == push
        check_run(g, res, given, switch, want)
        handed += res.extra["handovers"]["from_walk"]
    assert res.extra["by_device"] == {"cpu": 1} and res.extra["where"] == "walk"
    if name in ("luxembourg.mtx", "USPowerGrid.mtx", "ca-GrQc.mtx", "wiki-Vote.txt"):
        assert handed, "a heap that grows past the source's out-edges is handed over"


@pytest.mark.parametrize("mode", MODES)
def test_hand_over_then_pull_rounds(mode, pairs, monkeypatch):
    """A Kronecker graph from a leaf: the walk, then the GPU's pushes and pulls over both
    devices (the walk's lengths moved first); the float32 fixed point."""
    push_from(monkeypatch, "gpu")
    g, _ = lengths(generated_graph(12, 3), "kronecker")
    deg = np.diff(g.indptr)
    root = int(np.flatnonzero(deg == 1)[0])
    kw = dict(pair=pairs[mode], threshold=4, warmup=False, root=root)
    want = api.run("sssp", g, options=NO_WALK, **kw)[0].values
    res, _ = api.run("sssp", g, options=EngineOptions(walk=8), **kw)
    check_run(g, res, {}, 8, want)
    where = {s["where"] for s in res.extra["trace"]}
    assert {WALK, "both"} <= where, where
    assert res.extra["handovers"]["from_walk"] == 1


@pytest.mark.parametrize("mode", MODES)
def test_auto_walk_runs_a_road_graph_on_the_cpu(mode, pairs):
    """By default (the measured costs) a road graph's SSSP runs whole on the walk, in one
    launch; ``walk='none'`` leaves it to the push side; one answer, bit for bit."""
    g, _ = lengths(shared_graph("USPowerGrid.mtx"), "USPowerGrid.mtx")
    res, rep = api.run("sssp", g, pair=pairs[mode], devices="cpu", warmup=False)
    res2, _ = api.run("sssp", g, pair=pairs[mode], devices="cpu", warmup=False,
                      options=NO_WALK)
    check_run(g, res, {}, 10**9, res2.values)
    assert res.extra["by_device"] == {"cpu": 1} and res.iterations == 1
    assert [x["mode"] for x in res.extra["launches"]] == ["walk"]
    summary = dict(rep.result["summary"])
    assert "walks on one CPU work-item" in summary["launches"]
    assert "cpu 1 levels" in summary["by device"]
    assert not any(x["mode"] == "walk" for x in res2.extra["launches"])


def test_no_walk_where_the_run_must_not(pairs):
    """The GPU alone (no CPU role) and every-round pulls (static) never walk; a capped run
    that walks takes one level for the walk."""
    g = shared_graph("USPowerGrid.mtx")
    res, _ = api.run("sssp", g, pair=pairs["split"], devices="gpu", warmup=False)
    assert res.extra["handovers"] == {} and "cpu" not in res.extra["by_device"]
    res, _ = api.run("sssp", g, pair=pairs["split"], devices="cpu", warmup=False, static=True)
    assert all(s["where"] != WALK for s in res.extra["trace"])
    res, _ = api.run("sssp", g, pair=pairs["split"], devices="cpu", warmup=False, max_iter=5)
    assert res.iterations == 1 and res.extra["by_device"] == {"cpu": 1} and res.converged


def bucket_lengths(g, kind: str):
    """``g`` with lengths the bucket queue takes: all 1 (BFS's case), integers 1-100, or
    floats in [0.5, 50) (100 buckets of width 0.5, sums that round)."""
    rng = np.random.default_rng(5)
    w = {"unit": np.ones(g.nnz),
         "integers": rng.integers(1, 101, g.nnz),
         "floats": rng.uniform(0.5, 50.0, g.nnz)}[kind].astype(np.float32)
    return from_scipy(sp.csr_array((w, g.indices, g.indptr), shape=g.shape), name=g.name + kind)


@pytest.mark.parametrize("name", ("USPowerGrid.mtx", "ca-GrQc.mtx", "rajat01.mtx"))
@pytest.mark.parametrize("kind", ("unit", "integers", "floats"))
@pytest.mark.parametrize("mode", MODES)
def test_bucket_queue_gives_the_fixed_point(name, kind, mode, pairs, monkeypatch):
    """Lengths whose longest is at most 4,094 times the least walk with Dinitz's buckets
    (width: the least length), one length for all with a FIFO, whole or handed over at a
    switch point: the push side's float32 fixed point, bit for bit; five-decade lengths take
    the heap."""
    push_from(monkeypatch, "gpu")
    g = bucket_lengths(shared_graph(name), kind)
    root = int(np.argmax(np.diff(g.indptr)))
    kw = dict(pair=pairs[mode], threshold=4, warmup=False, root=root)
    want = api.run("sssp", g, options=NO_WALK, **kw)[0].values
    deg = int(np.diff(g.indptr)[root])
    for switch in (deg + 40, 10**9):
        res, _ = api.run("sssp", g, options=EngineOptions(walk=switch), **kw)
        check_run(g, res, {}, switch, want)
        assert res.extra["walk_queue"] == ("fifo" if kind == "unit" else "buckets")
    wide, _ = lengths(shared_graph(name), name)
    res, _ = api.run("sssp", wide, options=EngineOptions(walk=10**9), **kw)
    assert res.extra["walk_queue"] == "heap"


def test_hub_source_is_declined_without_counting_its_neighbours(monkeypatch):
    """A source whose own out-edges pass the switch point is declined at once: its
    neighbours' out-edges (``next_edges``, O(its neighbours) on the host) are counted only
    for a source within the switch point."""
    from finepar.engine import heapwalk

    class Walk(heapwalk.HeapWalk):
        switch_edges = 10  # a fixed switch point, no engine needed

    calls = []
    monkeypatch.setattr(heapwalk, "next_edges",
                        lambda graph, start: calls.append(int(start[0])) or 0)
    hub, small = object.__new__(Walk), object.__new__(Walk)
    for w in (hub, small):
        w.open, w.fixed, w.graph = True, None, None
    assert not hub.starts(11, np.array([0], np.int32))
    assert calls == []
    assert small.starts(10, np.array([3], np.int32))
    assert calls == [3]


@pytest.mark.parametrize("mode", MODES)
def test_push_levels_after_a_hand_over_set_the_next_runs_switch(mode, pairs):
    """With no hand-back, a hand-over gives the push side every level left: the steps after
    it are measured (wall time a level, pulls included) and become the pair's cost of a push
    level, so the next run's switch point follows them (never below an empty level's round
    trip). A run that hands over (at a fixed switch point) records it; with a measured level
    of a second, the next run walks the whole graph on the CPU; both answers are the no-walk
    run's."""
    from finepar.engine import heapwalk, walk
    g = shared_graph("ca-GrQc.mtx")
    pair = pairs[mode]
    params = {"root": 4233}
    ref, _ = api.run("sssp", g, pair=pair, devices="cpu", warmup=False, options=NO_WALK,
                     **params)
    rates = walk.measured_rates(pair)
    rates.pop(heapwalk.PUSH_LEVEL, None)
    res, _ = api.run("sssp", g, pair=pair, devices="cpu", warmup=False,
                     options=EngineOptions(walk=100), **params)  # the root: 81 out-edges
    assert res.extra["handovers"]["from_walk"] == 1
    assert rates.get(heapwalk.PUSH_LEVEL, 0.0) > 0.0
    assert np.array_equal(res.values, ref.values)
    rates[heapwalk.PUSH_LEVEL] = 1.0  # a push level of a second: walk everything
    res, _ = api.run("sssp", g, pair=pair, devices="cpu", warmup=False, **params)
    assert res.extra["where"] == "walk"
    assert res.extra["handovers"]["from_walk"] == 0
    assert np.array_equal(res.values, ref.values)
