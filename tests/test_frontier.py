"""Frontier loops with few host round trips (batches with the stop test on the device,
work-group-local launches), SSSP's near and far piles, Afforest, and the host syncs of
every iterative app, counted (never timed), on the emulated pair in both memory modes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import generated_graph, shared_graph
from finepar import api, apps
from finepar.engine import EngineOptions, frontier
from finepar.io import from_scipy
from finepar.apps.bfs import bfs_levels_fast
from finepar.apps.cc import reference_components
from finepar.apps.afforest import ROUNDS

MODES = ("shared", "split")
#: The push side's own launches, without the CPU's walk of small frontiers (test_walk.py)
NO_WALK = EngineOptions(walk="none")


def root_of(g) -> int:
    return int(np.argmax(np.diff(g.indptr)))


def bfs_ok(g, res, root):
    ref = bfs_levels_fast(g, root)
    np.testing.assert_array_equal(res.values, ref)
    assert not apps.get("bfs").check(g, res, ref, {"root": root})


@pytest.mark.parametrize("mode", MODES)
def test_luxembourg_bfs_reads_back_a_few_times(mode, pairs):
    """luxembourg (951 levels): every level top-down, at most levels / 8 + 10 blocking
    reads, most levels run by work-group-local launches; the answer is the reference's."""
    g = shared_graph("luxembourg.mtx")
    root = root_of(g)
    for t in (0, 4, 2**31 - 1):
        res, rep = api.run("bfs", g, pair=pairs[mode], threshold=t, warmup=False,
                           options=NO_WALK, root=root)
        bfs_ok(g, res, root)
        levels = res.iterations
        assert levels == 952 and rep.timings["host_syncs"] <= levels / 8 + 10, rep.timings
        assert rep.result["launches"] == res.extra["launches"]
        local = [x["levels"] for x in res.extra["launches"] if x["mode"] == "local"]
        assert sum(local) == levels and max(local) > 100


@pytest.mark.parametrize("mode", MODES)
def test_batched_levels_without_local_launches(mode, pairs, monkeypatch):
    """Without work-group-local launches (a device short of local memory), top-down levels
    run in batches of advance launches that grow while the frontier stays small: still at
    most levels / 8 + 10 reads on luxembourg, and a batch past the last level does nothing
    (its extra levels find no frontier)."""
    monkeypatch.setattr(frontier, "local_geometry", lambda *a: None)
    g = shared_graph("luxembourg.mtx")
    root = root_of(g)
    res, rep = api.run("bfs", g, pair=pairs[mode], threshold=4, warmup=False,
                       options=NO_WALK, root=root)
    bfs_ok(g, res, root)
    runs = res.extra["launches"]
    assert {x["mode"] for x in runs} == {"batch"}
    assert max(x["enqueued"] for x in runs) == frontier.MAX_BATCH
    assert rep.timings["host_syncs"] <= res.iterations / 8 + 10
    assert runs[-1]["stop"] == "empty" and runs[-1]["levels"] < runs[-1]["enqueued"]


@pytest.mark.parametrize("mode", MODES)
def test_device_stops_a_top_down_batch_at_beamers_switch(mode, pairs, monkeypatch):
    """On a Kronecker graph a batch of top-down levels stops on the device at the level
    where Beamer's rule switches to bottom-up, and the host pulls there; a local launch
    hands its list back when it outgrows local memory, and the levels take the same
    directions either way."""
    g = generated_graph(12, 3)
    deg, label = np.diff(g.indptr), reference_components(g)
    # a leaf of the giant component: top-down levels before the switch, in a batch of two
    root = int(np.flatnonzero((deg == 1) & (label == np.bincount(label).argmax()))[0])
    res, _ = api.run("bfs", g, pair=pairs[mode], threshold=32, warmup=False,
                     options=NO_WALK, root=root)
    bfs_ok(g, res, root)
    assert res.extra["launches"][0]["mode"] == "local"
    assert any(x["stop"] == "paused" for x in res.extra["launches"])
    directions = [s["direction"] for s in res.extra["trace"]]
    monkeypatch.setattr(frontier, "local_geometry", lambda *a: None)
    res, _ = api.run("bfs", g, pair=pairs[mode], threshold=32, warmup=False,
                     options=NO_WALK, root=root)
    bfs_ok(g, res, root)
    runs, steps = res.extra["launches"], res.extra["trace"]
    assert [s["direction"] for s in steps] == directions
    refused = [i for i, x in enumerate(runs) if x["stop"] == "refused"]
    assert refused, runs
    for i in refused:
        nxt = next(s for s in steps if s["launch"] == i + 1)
        assert nxt["direction"] == "bottom-up"


@pytest.mark.parametrize("mode", MODES)
def test_one_device_chains_its_bottom_up_steps(mode, pairs, monkeypatch):
    """On one device the bottom-up steps run in chains read once, the switch back to
    top-down tested on the device: levels, parents and directions are those of one pull
    at a time, whatever the chain's length (steps past the stop: none, an odd or an even
    count), in fewer host syncs."""
    from finepar.apps import bfs as bfs_app
    k = generated_graph(12, 3)
    root, n, tail = root_of(k), k.n, 40  # a path hanging off the root: top-down after the pulls
    a = sp.csr_array((np.ones(k.nnz), k.indices, k.indptr), shape=k.shape)
    path = np.arange(n, n + tail)
    u, v = np.concatenate(([root], path[:-1])), path
    extra = sp.csr_array((np.ones(2 * tail), (np.concatenate((u, v)), np.concatenate((v, u)))),
                         shape=(n + tail, n + tail))
    g = from_scipy(sp.block_diag((a, sp.csr_array((tail, tail)))).tocsr() + extra,
                   name="kron-tail", pattern=True)

    def run(**kw):
        res, rep = api.run("bfs", g, pair=pairs[mode], devices="gpu", warmup=False,
                           options=NO_WALK, root=root, **kw)
        bfs_ok(g, res, root)
        return res, rep.timings["host_syncs"]

    chained, syncs = run()
    chains = [x for x in chained.extra["launches"] if x["mode"] == "chain"]
    assert chains and chains[0]["levels"] >= 2 and chains[0]["stop"] == "switch", chains
    assert chained.extra["launches"][-1]["mode"] != "chain"  # the path's levels push
    with monkeypatch.context() as m:
        m.setattr(bfs_app.BFS, "pull_levels", frontier.FrontierApp.pull_levels)
        single, single_syncs = run()
    assert {x["mode"] for x in single.extra["launches"]} & {"chain"} == set()
    assert syncs < single_syncs
    for first in (1, 2, 3, 5):
        monkeypatch.setattr(bfs_app, "FIRST_CHAIN", first)
        res, _ = run()
        assert [s["direction"] for s in res.extra["trace"]] == \
            [s["direction"] for s in single.extra["trace"]]
        np.testing.assert_array_equal(res.extra["parent"], single.extra["parent"])
    with monkeypatch.context() as m:  # the path's levels after the chain: one long batch
        m.setattr(frontier, "local_geometry", lambda *a: None)
        runs = run()[0].extra["launches"]
    after = runs[next(i for i, x in enumerate(runs) if x["mode"] == "chain") + 1]
    assert after["mode"] == "batch" and after["enqueued"] == bfs_app.BFS.batch_after_pull > 1
    assert after["levels"] == after["enqueued"], runs
    res, _ = run(direction="bottom-up")  # no switch: one chain to the empty frontier
    assert [(x["mode"], x["stop"]) for x in res.extra["launches"]][-1] == ("chain", "empty")
    res, _ = api.run("bfs", g, pair=pairs[mode], devices="gpu", warmup=False, root=root,
                     options=NO_WALK, direction="bottom-up", max_iter=2)
    assert res.iterations == 2 and np.count_nonzero(res.values >= 0) > 1


@pytest.mark.parametrize("devices", ["gpu", "auto"])
@pytest.mark.parametrize("mode", MODES)
def test_a_bfs_start_is_one_launch_a_device(mode, devices, pairs, monkeypatch):
    """A run's start sets every level and parent and clears both bitmaps in one launch on
    each device (opencl/apps/bfs/start.cl) and makes the root the push side's list in one
    more (``load_one``), with no fill and no write; a run after another (every buffer
    dirty) from another root is still right."""
    import pyopencl as cl
    from finepar.apps import bfs as bfs_app
    g = generated_graph(10, 2)
    calls = {"fills": 0, "starts": 0, "runs": 0}
    real_fill = cl.enqueue_fill_buffer
    real_devices, real_start = bfs_app.BFS.start_devices, bfs_app.BFS.start_launch

    real_copy = cl.enqueue_copy

    def counting_devices(self, engine, st, *a, **k):
        calls["runs"] += 1
        with monkeypatch.context() as m:
            m.setattr(cl, "enqueue_fill_buffer",
                      lambda *a, **k: (calls.__setitem__("fills", calls["fills"] + 1),
                                       real_fill(*a, **k))[1])
            m.setattr(cl, "enqueue_copy",  # the root's list too is one launch (load_one)
                      lambda *a, **k: (calls.__setitem__("fills", calls["fills"] + 1),
                                       real_copy(*a, **k))[1])
            return real_devices(self, engine, st, *a, **k)

    def counting_start(self, *a, **k):
        calls["starts"] += 1
        return real_start(self, *a, **k)
    monkeypatch.setattr(bfs_app.BFS, "start_devices", counting_devices)
    monkeypatch.setattr(bfs_app.BFS, "start_launch", counting_start)
    for root in (root_of(g), 3):
        res, _ = api.run("bfs", g, pair=pairs[mode], devices=devices, threshold=None
                         if devices == "gpu" else 8, warmup=False, options=NO_WALK, root=root)
        bfs_ok(g, res, root)
        np.testing.assert_array_equal(res.extra["parent"] >= 0, res.values >= 0)
        assert res.extra["parent"][root] == root
    assert calls["runs"] == calls["starts"] == 2 and calls["fills"] == 0


@pytest.mark.parametrize("mode", MODES)
def test_a_one_vertex_list_is_one_launch_over_dirty_tallies(mode, pairs):
    """``FrontierQueue.load`` of one vertex (``load_one``) makes it the current list (its
    offset 0, its tally from the CSR) and zeroes every later list's tally, so the next
    run's levels skip their fill; a list built from a bitmap zeroes them too."""
    import pyopencl as cl
    from finepar.partition import single_device
    g = generated_graph(9, 2)
    wl = api.Workload("bfs", g)
    eng = wl.engine(pairs[mode], single_device(wl.matrix.row_lengths(), "gpu"))
    q = frontier.FrontierQueue(eng, "gpu", g, ("apps/bfs/frontier.cl", "skeleton/frontier.cl"))
    size = q.tallies.size // 8
    cl.enqueue_copy(q.side.queue, q.tallies, np.full(size, 7, np.uint64), is_blocking=True)
    v = int(np.argmax(np.diff(g.indptr)))
    q.load(np.array([v], np.int32))
    assert q.zeroed and (q.size, q.edges) == (1, int(g.indptr[v + 1] - g.indptr[v]))
    got = np.empty(size, np.uint64)
    cl.enqueue_copy(q.side.queue, got, q.tallies, is_blocking=True)
    assert int(got[frontier.STATE]) == (1 << q.edge_bits) | q.edges
    assert not got[frontier.STATE + 1:].any() and (got[:frontier.STATE] == 7).all()
    assert q.vertices().tolist() == [v]
    q.load(np.array([1, 2], np.int32))  # a longer list: written, and the flag dropped
    assert not q.zeroed


def _first_read_after(monkeypatch, engine_cls) -> list:
    """Record the order of row operations and blocking reads of the runs that follow."""
    events = []
    real_rowop, real_read = engine_cls.rowop, engine_cls.read_buffer

    def rowop(self, *a, **k):
        events.append("rowop")
        return real_rowop(self, *a, **k)

    def read(self, *a, **k):
        events.append("read")
        return real_read(self, *a, **k)
    monkeypatch.setattr(engine_cls, "rowop", rowop)
    monkeypatch.setattr(engine_cls, "read_buffer", read)
    return events


@pytest.mark.parametrize("mode", MODES)
def test_the_first_level_enqueues_its_chain_before_the_host_reads_it(mode, pairs, monkeypatch):
    """Where the root's level likely switches (its neighbours' sampled out-degrees), the
    chain of bottom-up steps is enqueued behind it, armed by the device's own test, before
    the host's first read: levels, parents and every level's direction are those of the
    run that waits for the read."""
    from finepar.apps import bfs as bfs_app
    from finepar.engine import Engine
    g = generated_graph(16, 16)
    root = root_of(g)

    def run():
        events = _first_read_after(monkeypatch, Engine)
        res, rep = api.run("bfs", g, pair=pairs[mode], devices="gpu", warmup=False,
                           options=NO_WALK, root=root)
        bfs_ok(g, res, root)
        monkeypatch.undo()
        return res, events
    spec, events = run()
    assert events.index("rowop") < events.index("read")
    monkeypatch.setattr(bfs_app, "SPECULATE", False)
    plain, events = run()
    assert events.index("read") < events.index("rowop")
    assert [s["direction"] for s in spec.extra["trace"]] == \
        [s["direction"] for s in plain.extra["trace"]]
    assert [(x["mode"], x["levels"]) for x in spec.extra["launches"]] == \
        [(x["mode"], x["levels"]) for x in plain.extra["launches"]]
    np.testing.assert_array_equal(spec.extra["parent"], plain.extra["parent"])


@pytest.mark.parametrize("mode", MODES)
def test_a_mispredicted_first_chain_is_dropped(mode, pairs, monkeypatch):
    """A root whose level stays top-down (a star whose leaves lead into a long path), with
    the prediction forced: the device's test stops the chain, the host drops it, and the
    run goes on top-down as the run without the chain does, every answer right."""
    from finepar.apps import bfs as bfs_app
    leaves, path = 5000, 40000
    n = 1 + leaves + path
    u = np.concatenate((np.zeros(leaves, int), [1], np.arange(leaves + 1, n - 1)))
    v = np.concatenate((np.arange(1, leaves + 1), [leaves + 1], np.arange(leaves + 2, n)))
    a = sp.csr_array((np.ones(2 * u.size), (np.concatenate((u, v)), np.concatenate((v, u)))),
                     shape=(n, n))
    g = from_scipy(a, name="star-path", pattern=True)
    dropped = []
    real_drop = bfs_app.BFS.drop_speculation
    monkeypatch.setattr(bfs_app.BFS, "first_level_edges", lambda self, st: (leaves, 1e15))
    monkeypatch.setattr(bfs_app.BFS, "drop_speculation",
                        lambda self, e, st: (dropped.append(st["spec"]["k"]),
                                             real_drop(self, e, st)))

    def run():
        res, _ = api.run("bfs", g, pair=pairs[mode], devices="gpu", warmup=False,
                         options=NO_WALK, root=0)
        bfs_ok(g, res, 0)
        return res
    forced = []
    for first in (1, 2):  # an odd and an even count of stopped steps to undo
        monkeypatch.setattr(bfs_app, "FIRST_CHAIN", first)
        forced.append(run())
    assert dropped == [1, 2], "the forced chains were not enqueued"
    monkeypatch.setattr(bfs_app, "SPECULATE", False)
    plain = run()
    for res in forced:
        assert [s["direction"] for s in res.extra["trace"]] == \
            [s["direction"] for s in plain.extra["trace"]]
        assert res.extra["trace"][1]["direction"] == "top-down"
        np.testing.assert_array_equal(res.extra["parent"], plain.extra["parent"])


def test_a_bottom_up_step_picks_its_team_size_by_its_expected_scan():
    """Few entries to a row's first hit (a frontier holding most entries' columns): narrow
    teams; many: the plan's own (None); each an op of BFS's."""
    from finepar.apps.bfs import BFS, bottom_up_lanes, op_name
    names = {op.name: op.max_lanes for op in BFS.ops}
    assert bottom_up_lanes(520_755_510, 323_787_794) == 2  # Graph500 scale 24's first pull
    assert bottom_up_lanes(520_755_510, 195_509_757) == 2  # its second
    assert bottom_up_lanes(3_216_152, 727_508, 1_254_299) is None  # cnr-2000's most, 4.4
    # scale 26's third pull: 444 entries expected, but 0.2% of the edges unexplored
    assert bottom_up_lanes(2_103_842_600, 4_736_934, 4_838_000) == 2
    assert bottom_up_lanes(2_103_842_600, 4_736_934) is None
    assert bottom_up_lanes(100, 0) is None
    for kind in ("bfs", "bfs-chain"):
        for lanes in (2, None):
            assert names[op_name(kind, lanes)] == lanes
    assert BFS.ops[0].max_lanes is None  # the tuner's full scan keeps the plan's teams


def test_a_chains_stopped_steps_keep_their_time_and_launches():
    """The records of a chain's steps past its stop fold into the last step that ran."""
    from finepar.apps.bfs import fold_records
    from finepar.engine.timing import StepRecord
    recs = [StepRecord("rowop", ("gpu",), wall=1.0, kernel={"gpu": 0.5}, span={"gpu": 0.5},
                       launches={"gpu": 6}) for _ in range(4)]
    fold_records(recs, 0)
    assert len(recs) == 4
    fold_records(recs, 2)
    assert len(recs) == 2 and recs[-1].wall == 3.0
    assert recs[-1].kernel == {"gpu": 1.5} and recs[-1].launches == {"gpu": 18}
    assert recs[0].kernel == {"gpu": 0.5}


@pytest.mark.parametrize("mode", MODES)
def test_a_chain_without_a_push_side_pulls_to_the_end(mode, pairs):
    """Chunked shares leave no push side: every level pulls, so a chain stops only at an
    empty frontier, also where n / beta passes an int32 (beta tiny)."""
    from finepar.engine import EngineOptions
    g = generated_graph(10, 5)
    root = root_of(g)
    res, _ = api.run("bfs", g, pair=pairs[mode], devices="gpu", warmup=False, root=root,
                     beta=1e-7, options=EngineOptions(walk="none", chunk_bytes=20_000))
    bfs_ok(g, res, root)
    assert res.extra["push_role"] is None
    assert {x["stop"] for x in res.extra["launches"]} <= {"batch", "empty"}
    res, _ = api.run("bfs", g, pair=pairs[mode], devices="gpu", warmup=False, root=root,
                     beta=1e-7, direction="bottom-up", options=NO_WALK)
    bfs_ok(g, res, root)


def test_chain_levels_apply_the_devices_test():
    """The host reads where a chain stopped from its sums, by the device's integer test."""
    from finepar.apps.bfs import chain_levels
    sums = np.array([[50, 500], [80, 700], [30, 90], [30, 90]])
    levels, stop = chain_levels(sums, 10, 100, limit=40)
    assert stop == "switch" and [lv[2] for lv in levels] == [50, 80, 30]
    assert levels[1] == (50, 500, 80, 700)
    assert chain_levels(sums, 10, 100, limit=0) == (chain_levels(sums, 10, 100, 0)[0], "batch")
    assert chain_levels(np.array([[5, 9], [0, 0]]), 10, 100, 0)[1] == "empty"
    # fewer than the limit but more than the frontier it read: the chain goes on
    assert chain_levels(np.array([[20, 9], [0, 0]]), 10, 100, 40)[1] == "empty"


def test_frontier_run_parses_marks_and_empty_levels(pairs):
    """A batch on a path graph: the levels that ran, the empty list that ends it, and the
    current list's tally moved to the front for the next run."""
    n = 40
    rows = np.arange(n - 1)
    a = sp.csr_array((np.ones(2 * (n - 1), np.float32),
                      (np.r_[rows, rows + 1], np.r_[rows + 1, rows])), shape=(n, n))
    g = from_scipy(a, name="path")
    res, _ = api.run("bfs", g, pair=pairs["split"], devices="gpu", warmup=False, root=0,
                     direction="top-down")
    assert res.iterations == n and np.array_equal(res.values, np.arange(n))
    assert all(s["frontier"] == 1 for s in res.extra["trace"])
    assert sum(x["levels"] for x in res.extra["launches"]) == n


def weighted(g, seed=1):
    """``g`` with uniform random lengths in [1, 100)."""
    w = np.random.default_rng(seed).uniform(1, 100, g.nnz).astype(np.float32)
    return from_scipy(sp.csr_array((w, g.indices, g.indptr), shape=g.shape), name=g.name + "-w")


@pytest.mark.parametrize("mode", MODES)
def test_sssp_near_far_piles(mode, pairs):
    """Weighted luxembourg: near-far SSSP equals the float32 fixed point (checked against
    Dijkstra) for every band width, relaxes fewer edges than plain frontier Bellman-Ford
    (delta = inf), and reads back a few times however many waves it takes."""
    g = weighted(shared_graph("luxembourg.mtx"))
    app = apps.get("sssp")
    params = app.reference_params(g, app.check_params(g, {}))
    ref = app.reference(g, params)
    work = {}
    for delta in (None, float("inf"), 5.0):
        res, rep = api.run("sssp", g, pair=pairs[mode], threshold=4, warmup=False,
                           options=NO_WALK, **params, delta=delta)
        assert not app.check(g, res, ref, params), delta
        assert res.converged and rep.timings["host_syncs"] <= 20, rep.timings["host_syncs"]
        work[delta] = sum(s["frontier_edges"] for s in res.extra["trace"])
    assert work[None] < 0.75 * work[float("inf")], work


@pytest.mark.slow
def test_sssp_pull_starts_a_new_far_epoch(pairs):
    """cnr-2000 with lengths over five decades: pull rounds empty far piles between push
    batches; a vertex of a discarded far pile improved again later joins the new far pile
    (the pull starts a new epoch), so the answer is the float32 fixed point."""
    g0 = shared_graph("cnr-2000.mtx.gz")
    w = (10.0 ** np.random.default_rng(3).uniform(-2, 3, g0.nnz)).astype(np.float32)
    g = from_scipy(sp.csr_array((w, g0.indices, g0.indptr), shape=g0.shape), name="cnr-w")
    app = apps.get("sssp")
    params = app.reference_params(g, app.check_params(g, {}))
    res, _ = api.run("sssp", g, pair=pairs["shared"], threshold=4, warmup=False,
                     options=NO_WALK, **params)
    assert not app.check(g, res, app.reference(g, params), params)
    assert {s["direction"] for s in res.extra["trace"]} == {"push", "pull"}


def test_sssp_far_pile_without_local_launches(pairs, monkeypatch):
    """The far pile refills an empty near pile before batch levels too (far_refill)."""
    monkeypatch.setattr(frontier, "local_geometry", lambda *a: None)
    g = weighted(generated_graph(10, 2))
    app = apps.get("sssp")
    params = app.reference_params(g, app.check_params(g, {}))
    res, _ = api.run("sssp", g, pair=pairs["split"], threshold=32, warmup=False, **params,
                     delta=2.0, frontier_fraction=1.0, options=NO_WALK)
    assert not app.check(g, res, app.reference(g, params), params)
    assert {x["mode"] for x in res.extra["launches"]} == {"batch"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["wiki-Vote.txt", "luxembourg.mtx", "graph500:11"])
def test_afforest_matches_scipy(name, mode, pairs):
    """Afforest's labels equal scipy's components (named by their smallest vertex) on a
    directed graph (weak components), a road graph and a Kronecker graph with isolated
    vertices, at every threshold; one wait in a run, at its end (the giant is found on
    the device); FastSV agrees. The sampled run even where the input is small enough for
    one work-group's (``group_loop='none'``)."""
    g = generated_graph(11, 0) if name.startswith("graph500") else shared_graph(name)
    ref = reference_components(g)
    for t in (0, 4, 32, 2**31 - 1):
        res, rep = api.run("cc", g, pair=pairs[mode], threshold=t, warmup=False,
                           algorithm="afforest", options=EngineOptions(group_loop="none"))
        np.testing.assert_array_equal(res.values, ref)
        # at most one wait, at the run's end (none where its kernels were done by then)
        assert rep.timings["host_syncs"] <= 1 and res.extra["algorithm"] == "afforest"
        sample = next(p for p in res.extra["trace"] if p["phase"] == "sample")
        giant = np.bincount(ref).argmax()
        assert sample["giant"] == giant
        # the final hooking visits every vertex outside the giant component with an edge
        # left after the sampling rounds, and the few of it the rounds left in other trees
        deg = np.diff(api.Workload("cc", g).matrix.indptr)
        outside = int(np.count_nonzero((ref != giant) & (deg > ROUNDS)))
        assert outside <= res.extra["hooked"] <= outside + g.n // 8
    res, _ = api.run("cc", g, pair=pairs[mode], threshold=32, warmup=False, algorithm="fastsv")
    np.testing.assert_array_equal(res.values, ref)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("role", ["gpu", "cpu"])
@pytest.mark.parametrize("name,group_loop", [("USPowerGrid.mtx", "auto"),
                                             ("adder_dcop_05.mtx", "auto"),
                                             ("graph500:10", "auto"),
                                             ("wiki-Vote.txt", "always")])
def test_afforest_unsampled_on_a_small_input(name, group_loop, role, mode, pairs):
    """A small input's CC with no sampling (every edge linked): labels equal scipy's on a
    power grid, a circuit with rows of a thousand entries, a Kronecker graph with isolated
    vertices and (``always``, past the size rule) a directed graph's weak components; on
    either device alone (one work-item's loop on a CPU device, which both of the emulated
    pair's are), in both memory modes: one launch and one wait a run, and the summary
    says so."""
    from finepar.apps.cc import ConnectedComponents
    g = generated_graph(10, 0) if name.startswith("graph500") else shared_graph(name)
    res, rep = api.run("cc", g, pair=pairs[mode], devices=role, warmup=False,
                       options=EngineOptions(group_loop=group_loop))
    np.testing.assert_array_equal(res.values, reference_components(g))
    (phase,) = res.extra["trace"]
    assert phase["phase"] == "unsampled" and phase["entries"] == api.Workload("cc", g).matrix.nnz
    assert phase["shape"] == "loop"  # the emulated pair's devices are CPUs
    assert rep.timings["launches"][role] == 1 and rep.timings["host_syncs"] <= 1
    assert res.extra["hooked"] == 0 and res.iterations == 1
    lines = dict(ConnectedComponents().summary(res, g))
    assert "one work-item's loop" in lines["algorithm"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["USPowerGrid.mtx", "adder_dcop_05.mtx", "graph500:10"])
def test_afforest_unsampled_wide_as_on_a_gpu(name, mode, pairs, monkeypatch):
    """The GPU's shape of the unsampled run (a work-item an entry, then a vertex: three
    launches), forced on the emulated pair's GPU role: labels equal scipy's, also with
    the entries' links racing across work-items, and the summary names the shape."""
    from finepar.apps import afforest
    from finepar.apps.cc import ConnectedComponents
    monkeypatch.setattr(afforest, "unsampled_shape", lambda side: "wide")
    g = generated_graph(10, 0) if name.startswith("graph500") else shared_graph(name)
    for _ in range(3):  # each run starts the labels anew
        res, rep = api.run("cc", g, pair=pairs[mode], devices="gpu", warmup=False)
        np.testing.assert_array_equal(res.values, reference_components(g))
    (phase,) = res.extra["trace"]
    assert phase["shape"] == "wide" and phase["launches"] == 3
    assert rep.timings["launches"]["gpu"] == 3 and rep.timings["host_syncs"] <= 1
    lines = dict(ConnectedComponents().summary(res, g))
    assert "a work-item an entry, three launches" in lines["algorithm"]


def test_afforest_size_rule_by_shape(pairs, monkeypatch):
    """The unsampled run's size rule follows its shape: wiki-Vote (103,689 entries, past
    the loop's 65,536) is sampled by a CPU's loop and linked whole by a GPU's three
    launches; ``none`` samples it anyway; every answer is scipy's."""
    from finepar.apps import afforest
    g = shared_graph("wiki-Vote.txt")
    ref = reference_components(g)
    phases = {}
    for shape, mode in (("loop", "auto"), ("wide", "auto"), ("wide", "none")):
        monkeypatch.setattr(afforest, "unsampled_shape", lambda side, s=shape: s)
        res, _ = api.run("cc", g, pair=pairs["shared"], devices="gpu", warmup=False,
                         options=EngineOptions(group_loop=mode))
        np.testing.assert_array_equal(res.values, ref)
        phases[shape, mode] = res.extra["trace"][0]["phase"]
    assert phases == {("loop", "auto"): "link", ("wide", "auto"): "unsampled",
                      ("wide", "none"): "link"}


def test_cc_algorithm_choice(pairs, monkeypatch):
    """auto is Afforest where a device holds the CSR, FastSV where none does (and for
    static runs); asking for Afforest there is a one-line error."""
    import dataclasses
    from finepar.errors import UsageError
    g = generated_graph(10, 1)
    res, _ = api.run("cc", g, pair=pairs["split"], threshold=32, warmup=False)
    assert res.extra["algorithm"] == "afforest"
    res, _ = api.run("cc", g, pair=pairs["split"], threshold=32, warmup=False, static=True)
    assert res.extra["algorithm"] == "fastsv"
    pair = pairs["split"]
    for side in (pair.cpu, pair.gpu):
        monkeypatch.setattr(side, "info", dataclasses.replace(side.info, int64_atomics=False))
    res, _ = api.run("cc", g, pair=pair, threshold=32, warmup=False)
    assert res.extra["algorithm"] == "fastsv"
    np.testing.assert_array_equal(res.values, reference_components(g))
    with pytest.raises(UsageError, match="afforest needs one device"):
        api.run("cc", g, pair=pair, threshold=32, warmup=False, algorithm="afforest")


def batches(iterations: int) -> int:
    """Batches of 1, 2, 4, ... 64 iterations that cover ``iterations`` (HITS's)."""
    done, b, k = 0, 1, 0
    while done < iterations:
        done, b, k = done + b, min(2 * b, 64), k + 1
    return k


def predicted_batches(trace: list, tol: float) -> int:
    """The batches PageRank's :func:`~finepar.apps.pagerank.next_batch` makes over the L1
    changes ``trace`` of a run that converged."""
    from finepar.apps.pagerank import next_batch
    done, k = 0, 0
    while done < len(trace):
        done, k = done + next_batch(trace[:done], tol, 10 ** 6), k + 1
    return k


@pytest.mark.parametrize("app_name", ["pagerank", "rwr", "hits"])
@pytest.mark.parametrize("mode", MODES)
def test_power_iterations_read_once_per_batch(app_name, mode, pairs):
    """On one device PageRank, RWR and HITS read back once per batch of iterations and
    nothing else (their scalars go out without waiting; PageRank's and RWR's run may end
    waiting for the iteration enqueued behind their last read); on two devices once per
    iteration and its halo (the work-group loop of a small input: one read, in
    test_pagerank.py)."""
    g = generated_graph(11, 2)
    app = apps.get(app_name)
    params = app.reference_params(g, app.check_params(g, {}))
    ref = app.reference(g, params)
    batched = EngineOptions(group_loop="none")  # the batches, not one work-group's loop
    res, rep = api.run(app_name, g, pair=pairs[mode], devices="gpu", warmup=True,
                       options=batched)
    assert not app.check(g, res, ref, params)
    expected = (batches(res.iterations) if app_name == "hits" else
                predicted_batches(res.extra["l1_change"], params.get("tol") or 1e-6))
    # PageRank's and RWR's look-ahead iteration may still run when the last read returns:
    # the run's end then waits for it once more
    late = 0 if app_name == "hits" else 1
    assert expected <= rep.timings["host_syncs"] <= expected + late
    res, rep = api.run(app_name, g, pair=pairs[mode], threshold=32, warmup=True)
    assert not app.check(g, res, ref, params)
    per = (2 if app_name == "hits" else 1) * res.iterations
    assert per <= rep.timings["host_syncs"] <= 4 * per


def test_batch_kernel_times_read_two_events(pairs):
    """Kernel times of a batch come from its first and last events (profile='batch');
    per-launch profiles only when asked (profile='launch'): both give positive times."""
    from finepar.engine import EngineOptions
    from finepar.partition import single_device
    g = generated_graph(11, 2)
    for profile in ("batch", "launch"):
        wl = api.Workload("pagerank", g)
        eng = wl.engine(pairs["split"], single_device(wl.matrix.row_lengths(), "gpu"),
                        EngineOptions(profile=profile, group_loop="none"))
        res, rep = wl.run(engine=eng, warmup=False)
        assert rep.timings["kernel"]["gpu"] > 0 and rep.timings["steps"] >= res.iterations


@pytest.mark.parametrize("mode", MODES)
def test_push_role_is_taken_where_it_pays(mode, pairs, monkeypatch):
    """The push role is the candidate whose measured level round trip (and, in split
    memory, the moves of a switch: the rows the other role owns) costs least; another
    role must beat the CPU by a quarter. With a slow CPU the GPU pushes; with equal round
    trips the CPU keeps it in shared memory (nothing moves), and in split memory the
    cheaper moves decide. The report names the costs; the answers stay exact."""
    g = generated_graph(12, 3)
    root = root_of(g)
    for cpu_s in (0.06, 0.0):
        monkeypatch.setattr(frontier, "round_trip_seconds",
                            lambda engine, role, cpu_s=cpu_s: cpu_s if role == "cpu" else 0.0)
        res, rep = api.run("bfs", g, pair=pairs[mode], threshold=32, warmup=False,
                           options=NO_WALK, root=root)
        bfs_ok(g, res, root)
        cost = res.extra["push_costs"]
        assert set(cost) == {"cpu", "gpu"}
        if mode == "shared":
            assert cost["gpu"] == 0.0 and cost["cpu"] == cpu_s
        want = "gpu" if cost["gpu"] < 0.75 * cost["cpu"] else "cpu"
        assert res.extra["push_role"] == want == ("gpu" if cpu_s else want)
        if mode == "shared" and not cpu_s:
            assert want == "cpu"
        assert f"top-down on {want}" in dict(rep.result["summary"])["levels"]
        assert "push role" in dict(rep.result["summary"])


def test_trace_counts_and_sums_match_its_steps():
    """A frontier trace's counts, levels by device and sums, kept as launches are added,
    equal the same figures taken over its steps."""
    from finepar.engine.trace import FrontierTrace
    rng = np.random.default_rng(4)
    t = FrontierTrace()
    it = 0
    for mode, direction, where in (("walk", "top-down", "cpu (walk)"),
                                   ("pull", "bottom-up", "both"), ("batch", "top-down", "gpu"),
                                   ("walk", "top-down", "cpu (walk)")):
        levels = [tuple(int(v) for v in rng.integers(0, 50, 4)) for _ in range(rng.integers(1, 6))]
        t.add(mode, levels, len(levels), 0.001, "batch", first=it, direction=direction, where=where)
        it += len(levels)
    steps = t.steps
    counts: dict = {}
    for s in steps:
        key = f"{s['direction']} on {s['where']}"
        counts[key] = counts.get(key, 0) + 1
    assert t.counts() == counts
    assert t.by_device() == {"cpu": sum(s["where"].startswith("cpu") for s in steps),
                             "both": sum(s["where"] == "both" for s in steps),
                             "gpu": sum(s["where"] == "gpu" for s in steps)}
    assert t.totals() == {"found": sum(s["found"] for s in steps),
                          "found_edges": sum(s["found_edges"] for s in steps),
                          "frontier_edges": sum(s["frontier_edges"] for s in steps),
                          "depth": sum(1 for s in steps if s["found"])}


def test_appends_aggregate_on_the_gpu_role_where_an_app_appends(pairs):
    """AGG_APPENDS in the GPU role's queue programs of an app that appends (BFS); not on the
    CPU role, nor in CC's, whose advance appends nothing (its early builds agree)."""
    from finepar.engine.frontier import queue_defines
    g = generated_graph(10, 1)
    pair = pairs["split"]
    assert queue_defines(pair.gpu.info, g, role="gpu")["AGG_APPENDS"] == 1
    assert "AGG_APPENDS" not in queue_defines(pair.cpu.info, g, role="cpu")
    assert "AGG_APPENDS" not in queue_defines(pair.gpu.info, g, role="gpu", aggregate=False)
    bfs = apps.get("bfs").early_programs(pair, g, {})
    assert bfs and all(d.get("AGG_APPENDS") == 1 for _, src, d in bfs
                       if "skeleton/frontier.cl" in src)
    assert ("gpu", ("apps/bfs/start.cl",), {}) in bfs  # and the run's start
    cc = apps.get("cc").early_programs(pair, g.symmetrized(), {})
    assert cc and all(role == "gpu" and "AGG_APPENDS" not in d for role, _, d in cc)


def test_trace_builds_its_step_dicts_only_when_read():
    import copy
    import json
    from finepar.engine.trace import FrontierTrace
    from finepar.files import jsonable
    t = FrontierTrace()
    assert t.last() is None and len(t.step_view()) == 0
    t.add("walk", [(1, 3, 3, 9), (3, 9, 0, 0)], 1, 0.002, direction="push", where="cpu")
    t.add("pull", [(5, 20, 2, 4)], 1, 0.001, first=2, direction="pull", where="both")
    view = t.step_view()
    assert len(view) == 3 and not t._steps  # counted, no dict built yet
    assert t.last() == {"iteration": 2, "direction": "pull", "where": "both", "frontier": 5,
                        "frontier_edges": 20, "found": 2, "found_edges": 4, "launch": 1,
                        "seconds": 0.001}
    assert t.per_launch()["levels_per_round_trip"] == 1.5
    assert [s["iteration"] for s in view] == [0, 1, 2] and view[1]["seconds"] == 0.001
    assert view == t.steps and view[-1] == t.last()
    assert json.loads(json.dumps(jsonable({"trace": view})))["trace"] == t.steps
    assert copy.deepcopy({"trace": view})["trace"] == t.steps
    t.add("walk", [(2, 4, 0, 0)], 1, 0.0, first=3, where="cpu")  # after a read: appended
    assert [s["iteration"] for s in t.steps] == [0, 1, 2, 3] and len(view) == 4
