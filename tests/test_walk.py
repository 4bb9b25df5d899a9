"""The CPU's walk of small BFS frontiers (finepar.engine.walk): levels handed over both
ways agree with scipy on every real graph, in both memory modes, at several switch
points, with either device pushing; levels per device and hand-overs asserted as counts,
never as times."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import SHARED_GRAPHS, generated_graph, graph_params, push_from, shared_graph
from finepar import api, apps
from finepar.engine import EngineOptions, frontier
from finepar.apps.bfs import bfs_levels_fast

MODES = ("shared", "split")
#: Fixed switch points (a frontier's out-edges): a handful, a few hundred, and past any
#: frontier of these graphs but the largest.
SWITCHES = (4, 300, 20_000)
WALK = "cpu (walk)"



def check_run(g, res, root, switch: int) -> None:
    """The answer is scipy's; every walked level's frontier is within the switch point;
    the hand-overs are the trace's changes of device; levels by device add up."""
    np.testing.assert_array_equal(res.values, bfs_levels_fast(g, root))
    assert not apps.get("bfs").check(g, res, res.values, {"root": root})
    steps = res.extra["trace"]
    walked = [s for s in steps if s["where"] == WALK]
    assert all(s["frontier_edges"] <= switch for s in walked)
    assert all(s["direction"] == "top-down" for s in walked)
    changes = [(a["where"] == WALK, b["where"] == WALK) for a, b in zip(steps, steps[1:])
               if (a["where"] == WALK) != (b["where"] == WALK)]
    moves = res.extra["handovers"]
    assert moves["from_walk"] == sum(1 for a, _ in changes if a)
    assert moves["to_walk"] == sum(1 for _, b in changes if b)
    assert sum(res.extra["by_device"].values()) == res.iterations == len(steps)
    assert res.extra["by_device"].get("cpu", 0) >= len(walked)


@pytest.mark.parametrize("name", graph_params(SHARED_GRAPHS))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("push", ("cpu", "gpu"))
def test_walk_hands_levels_over_both_ways(name, mode, push, pairs, monkeypatch):
    """Every real graph, both memory modes, either push side, three switch points: the
    levels are scipy's and the parents a valid BFS tree; on a graph whose frontiers grow
    past a switch point and shrink below it the walk hands over and takes back."""
    push_from(monkeypatch, push)
    g = shared_graph(name)
    root = int(np.argmax(np.diff(g.indptr)))
    both_ways = 0
    for switch in SWITCHES:
        res, _ = api.run("bfs", g, pair=pairs[mode], threshold=4, warmup=False, root=root,
                         options=EngineOptions(walk=switch))
        assert res.extra["push_role"] == push
        check_run(g, res, root, switch)
        both_ways += min(res.extra["handovers"]["from_walk"], res.extra["handovers"]["to_walk"])
    if name in ("luxembourg.mtx", "USPowerGrid.mtx", "ca-GrQc.mtx"):
        assert both_ways, "frontiers that grow and shrink past 4 edges were handed both ways"


@pytest.mark.parametrize("mode", MODES)
def test_walk_on_a_kronecker_graph_with_bottom_up_levels(mode, pairs, monkeypatch):
    """A Graph500 graph from a leaf: walked levels, then the push side's, bottom-up
    levels over both devices, and the tail back on the walk; exact answers."""
    push_from(monkeypatch, "gpu")
    g = generated_graph(12, 3)
    deg = np.diff(g.indptr)
    root = int(np.flatnonzero(deg == 1)[0])
    res, _ = api.run("bfs", g, pair=pairs[mode], threshold=4, warmup=False, root=root,
                     options=EngineOptions(walk=8))
    check_run(g, res, root, 8)
    where = {s["where"] for s in res.extra["trace"]}
    assert {WALK, "both"} <= where, where
    assert res.extra["handovers"]["from_walk"] >= 1


@pytest.mark.parametrize("mode", MODES)
def test_auto_walk_runs_a_road_graph_on_the_cpu(mode, pairs):
    """By default (the measured costs) luxembourg's small frontiers all run on the walk,
    in a few launches; ``walk='none'`` leaves them to the push side; one answer."""
    g = shared_graph("USPowerGrid.mtx")
    root = int(np.argmax(np.diff(g.indptr)))
    res, rep = api.run("bfs", g, pair=pairs[mode], devices="cpu", warmup=False, root=root)
    check_run(g, res, root, 10**9)
    assert res.extra["by_device"] == {"cpu": res.iterations}
    walks = [x for x in res.extra["launches"] if x["mode"] == "walk"]
    assert sum(x["levels"] for x in walks) == res.iterations and len(walks) <= 2
    assert "walks on one CPU work-item" in dict(rep.result["summary"])["launches"]
    assert "cpu" in dict(rep.result["summary"])["by device"]
    res2, _ = api.run("bfs", g, pair=pairs[mode], devices="cpu", warmup=False, root=root,
                      options=EngineOptions(walk="none"))
    assert not any(x["mode"] == "walk" for x in res2.extra["launches"])
    np.testing.assert_array_equal(res.values, res2.values)


def test_no_walk_where_the_run_must_not(pairs):
    """The GPU alone (no CPU role) and BFS's every-level bottom-up never walk; a capped
    run stops at its cap on the walk too."""
    g = shared_graph("USPowerGrid.mtx")
    res, _ = api.run("bfs", g, pair=pairs["split"], devices="gpu", warmup=False)
    assert res.extra["handovers"] == {} and "cpu" not in res.extra["by_device"]
    res, _ = api.run("bfs", g, pair=pairs["split"], devices="cpu", warmup=False,
                     direction="bottom-up")
    assert all(s["where"] != WALK for s in res.extra["trace"])
    res, _ = api.run("bfs", g, pair=pairs["split"], devices="cpu", warmup=False, max_iter=5)
    assert res.iterations == 5 and res.extra["by_device"] == {"cpu": 5}


@pytest.mark.parametrize("mode", MODES)
def test_walk_where_the_split_gave_the_cpu_no_rows(mode, pairs):
    """A fine split whose T_f is past every row (the tuner's choice on a road network) still
    walks on the CPU: its copies of the vectors start as the GPU's do, and the hand-overs
    move the visited vertices; BFS and SSSP answer exactly."""
    g = shared_graph("USPowerGrid.mtx")
    root = int(np.argmax(np.diff(g.indptr)))
    for walk in ("auto", 300):
        res, rep = api.run("bfs", g, pair=pairs[mode], threshold=10**6, warmup=False,
                           root=root, options=EngineOptions(walk=walk))
        assert rep.plan["stats"]["cpu_rows"] == 0
        check_run(g, res, root, 10**9 if walk == "auto" else walk)
        assert res.extra["by_device"].get("cpu", 0) > 0
        if walk == 300:  # the walk takes the root, hands over past 300 edges
            assert res.extra["handovers"]["from_walk"] >= 1
        sssp = apps.get("sssp")
        res, _ = api.run("sssp", g, pair=pairs[mode], threshold=10**6, warmup=False,
                         root=root, options=EngineOptions(walk=walk))
        ref = sssp.reference(g, {"root": root, "weights": "values"})
        assert not sssp.check(g, res, ref, {"root": root, "weights": "values"})
        assert res.extra["by_device"].get("cpu", 0) > 0


def test_walks_learn_their_cost_on_the_pair(pairs):
    """A walk's measured seconds an edge stay with the pair: the next run's switch point
    starts from it, not from the prior."""
    from finepar.engine.walk import WALK_EDGE_SECONDS, measured_rates
    g = shared_graph("luxembourg.mtx")
    pair = pairs["split"]
    api.run("bfs", g, pair=pair, devices="cpu", warmup=False)
    learned = measured_rates(pair)["levels"]
    assert learned > 0 and learned != WALK_EDGE_SECONDS
    seen = {}
    real = frontier.make_walker

    def spy(*a, **k):
        seen["walker"] = real(*a, **k)
        seen["start"] = seen["walker"].edge_seconds
        return seen["walker"]
    import unittest.mock as mock
    with mock.patch.object(frontier, "make_walker", spy):
        api.run("bfs", g, pair=pair, devices="cpu", warmup=False)
    assert seen["start"] == learned


@pytest.mark.parametrize("mode", MODES)
def test_walk_declines_a_start_it_would_hand_over_at_once(mode, pairs, monkeypatch):
    """With measured costs the walk takes a run's start only where the next level stays
    within the switch point too (counted on the host): from a hub of wiki-Vote, whose
    neighbours have tens of thousands of out-edges, the push side starts (a push level's
    cost set to 8 us: a switch point of 1,600 edges, past the hub's 893); a fixed switch
    point past the hub's own edges starts on the walk and hands over after it."""
    from finepar.engine.walk import next_edges
    monkeypatch.setattr(frontier, "round_trip_seconds", lambda engine, role: 8e-6)
    g = shared_graph("wiki-Vote.txt")
    root = int(np.argmax(np.diff(g.indptr)))
    res, _ = api.run("bfs", g, pair=pairs[mode], threshold=4, warmup=False, root=root)
    check_run(g, res, root, 10**9)
    switch = int(np.diff(g.indptr)[root]) + 1
    assert next_edges(g, np.array([root])) > 10 * switch
    assert res.extra["trace"][0]["where"] != WALK
    res, _ = api.run("bfs", g, pair=pairs[mode], threshold=4, warmup=False, root=root,
                     options=EngineOptions(walk=switch))
    check_run(g, res, root, switch)
    assert res.extra["trace"][0]["where"] == WALK and res.extra["handovers"]["from_walk"] >= 1


@pytest.mark.parametrize("mode", MODES)
def test_push_side_starts_only_at_the_first_hand_over(mode, pairs, monkeypatch):
    """A run the walk takes from its start writes nothing to the other sides until it hands
    over: a run the walk finishes never starts them; a run that hands over starts them once,
    not the CPU's copies (the walk's levels), and answers exactly."""
    from finepar.apps.bfs import BFS
    push_from(monkeypatch, "gpu")
    calls = []
    real = BFS.start_devices

    def spy(self, engine, st, roles=None, queue=True):
        calls.append((roles, queue))
        return real(self, engine, st, roles, queue)
    monkeypatch.setattr(BFS, "start_devices", spy)
    g = shared_graph("USPowerGrid.mtx")
    root = int(np.argmax(np.diff(g.indptr)))
    res, _ = api.run("bfs", g, pair=pairs[mode], threshold=4, warmup=False, root=root,
                     options=EngineOptions(walk=10**6))
    check_run(g, res, root, 10**6)
    assert calls == [] and res.extra["by_device"] == {"cpu": res.iterations}
    res, _ = api.run("bfs", g, pair=pairs[mode], threshold=4, warmup=False, root=root,
                     options=EngineOptions(walk=40))
    check_run(g, res, root, 40)
    assert res.extra["handovers"]["from_walk"] >= 1
    assert len(calls) == 1 and calls[0][1] is False and "cpu" not in (calls[0][0] or ())


@pytest.mark.parametrize("mode", ["shared", "split"])
@pytest.mark.parametrize("app", ["bfs", "sssp"])
def test_a_run_the_walk_ends_reads_its_answer_with_the_walk(app, mode, pairs, monkeypatch):
    """On a small input a run the CPU's walk ends takes its answer from the copies the walk
    read with its own results (one wait, not two): no vector is read again, and the answer
    is the run's without the walk."""
    from finepar.apps import bfs
    from finepar.engine import core
    g = shared_graph("USPowerGrid.mtx")
    ref, _ = api.run(app, g, pair=pairs[mode], devices="cpu", warmup=False,
                     options=EngineOptions(walk="none"), root=2553)

    def no_read(*a, **k):
        raise AssertionError("read again")
    monkeypatch.setattr(core.Engine, "read", no_read)
    monkeypatch.setattr(bfs, "read_many", no_read)
    res, _ = api.run(app, g, pair=pairs[mode], devices="cpu", warmup=False,
                     options=EngineOptions(walk=10**9), root=2553)
    assert res.extra["where"] == "walk"
    assert np.array_equal(res.values, ref.values)
    if app == "bfs":
        assert bfs_levels_fast(g, 2553).tolist() == res.values.tolist()
        assert (res.extra["parent"] >= 0).sum() == (ref.extra["parent"] >= 0).sum()
