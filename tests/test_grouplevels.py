"""A small input's BFS and SSSP in one work-group's launch
(``finepar/engine/grouplevels.py``, ``opencl/skeleton/grouplevels.cl``): BFS's answers by
the Graph500 rules, SSSP's as the float32 fixed point, against the references and the
CPU's walks, and the rule that takes it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import generated_graph, shared_graph
from finepar import api, apps
from finepar.apps import bfs, sssp
from finepar.engine import EngineOptions, grouplevels
from finepar.io import from_scipy

MODES = ("shared", "split")


def chain_graph(n: int = 700):
    """A path of ``n`` vertices, both ways, with a leaf of its own at every tenth: ``n``
    levels from vertex 0, more than :data:`grouplevels.FIRST_LEVELS` (a second read)."""
    import scipy.sparse as sp
    src = np.arange(n - 1)
    twigs = np.arange(0, n - 1, 10)
    leaves = n + np.arange(twigs.size)
    rows = np.concatenate([src, src + 1, twigs, leaves])
    cols = np.concatenate([src + 1, src, leaves, twigs])
    m = n + twigs.size
    a = sp.csr_matrix((np.ones(rows.size, np.float32), (rows, cols)), shape=(m, m))
    return from_scipy(a, name="chain")


def test_the_chain_is_deeper_than_the_first_read():
    """The deep test graph needs the second read (else that path would go untested)."""
    from finepar.engine.levels import level_profile
    assert level_profile(chain_graph()).levels > grouplevels.FIRST_LEVELS


def graph(name: str):
    if name == "chain":
        return chain_graph()
    if name == "graph500:10":
        return generated_graph(10, 0)
    return shared_graph(name)


@pytest.mark.parametrize("width", [1, 64])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("role", ["gpu", "cpu"])
@pytest.mark.parametrize("name", ["USPowerGrid.mtx", "adder_dcop_05.mtx", "graph500:10",
                                  "wiki-Vote.txt", "chain"])
def test_bfs_in_one_work_group(name, role, mode, width, pairs, monkeypatch):
    """Levels equal the reference's and parents form a BFS tree (the app's check, by the
    Graph500 rules), on a power grid, a circuit with rows of a thousand entries (a hub's
    edges shared over the work-items), a Kronecker graph with isolated vertices, a
    directed graph and a path deeper than the first read; one work-item (a CPU's) and 64
    (barriers and the degrees' scan, on PoCL), either device, both memory modes: one
    launch a run, one wait (two past the first read's levels), and the same levels,
    vertices reached and edges traversed as the CPU's walk."""
    monkeypatch.setattr(grouplevels, "group_size", lambda side: width)
    g = graph(name)
    root = 0 if name == "chain" else None
    res, rep = api.run("bfs", g, pair=pairs[mode], devices=role, warmup=False, root=root,
                       options=EngineOptions(group_loop="always"))
    app = apps.get("bfs")
    params = app.check_params(g, {"root": root})
    assert app.check(g, res, app.reference(g, params), params) == ""
    assert res.extra["where"] == "group"
    assert res.extra["steps"] == {f"top-down on {role} (work-group)": res.iterations}
    assert rep.timings["launches"][role] == 1
    assert rep.timings["host_syncs"] == 1 + (res.iterations > grouplevels.FIRST_LEVELS)
    walk, _ = api.run("bfs", g, pair=pairs[mode], devices="cpu", warmup=False, root=root,
                      options=EngineOptions(group_loop="none"))
    assert walk.extra["where"] != "group"
    assert (res.iterations, res.extra["reached"], res.work_edges) == \
        (walk.iterations, walk.extra["reached"], walk.work_edges)
    np.testing.assert_array_equal(res.values, walk.values)


@pytest.mark.parametrize("width", [1, 64])
@pytest.mark.parametrize("room", ["one entry", "bitmap and 256 entries", "device"])
@pytest.mark.parametrize("app_name", ["bfs", "sssp"])
@pytest.mark.parametrize("name", ["graph500:10", "chain"])
def test_lists_past_local_memory_and_claims_without_a_bitmap(name, app_name, room, width,
                                                              pairs, monkeypatch):
    """The lists' entries past the local room go to the global lists at the same
    positions, and BFS claims by compare-and-swap where its bitmap does not fit: with room
    for one entry (every later entry spilled, no bitmap), for the bitmap and 256 entries
    (Graph500's frontiers of hundreds spill), and the device's own; answers equal the
    CPU's walk, levels and edges traversed included."""
    monkeypatch.setattr(grouplevels, "group_size", lambda side: width)
    g = graph(name)
    words = (g.n + 31) // 32
    rooms = {"one entry": 8, "bitmap and 256 entries": 4 * words + 8 * min(g.n, 256)}
    if room in rooms:
        monkeypatch.setattr(grouplevels, "local_room", lambda side, own, wg: rooms[room])
    made = []
    real_run = grouplevels.GroupLevels.run
    monkeypatch.setattr(grouplevels.GroupLevels, "run",
                        lambda self, *a, **k: made.append(self) or real_run(self, *a, **k))
    kw = {"root": 0 if name == "chain" else None}
    res, _ = api.run(app_name, g, pair=pairs["split"], devices="gpu", warmup=False,
                     options=EngineOptions(group_loop="always"), **kw)
    walk, _ = api.run(app_name, g, pair=pairs["split"], devices="cpu", warmup=False,
                      options=EngineOptions(group_loop="none"), **kw)
    assert res.extra["where"] == "group" and walk.extra["where"] != "group"
    np.testing.assert_array_equal(res.values, walk.values)
    assert res.extra["reached"] == walk.extra["reached"]
    if app_name == "bfs":  # SSSP's walk is Dijkstra's: its iterations are not levels
        app = apps.get("bfs")
        params = app.check_params(g, kw)
        assert app.check(g, res, app.reference(g, params), params) == ""
        assert (res.iterations, res.work_edges) == (walk.iterations, walk.work_edges)
    gl = made[-1]
    assert gl.bitmap == (app_name == "bfs" and room != "one entry")
    if room in rooms:
        left = rooms[room] - (4 * words if gl.bitmap else 0)
        assert gl.lq_cap == max(1, min(g.n, left // 8))
        assert gl.lq_cap == 1 or gl.lq_cap < 300  # Graph500's frontiers pass it


def test_the_rule_that_takes_one_work_group(pairs, monkeypatch):
    """Under ``auto`` only a GPU device alone takes it (the emulated pair's GPU role is a
    CPU: its usual path), up to :data:`bfs.GROUP_NNZ` entries, with the default
    direction and no iteration cap; ``none`` never; and the run's answer is right
    whichever path it took."""
    g = shared_graph("USPowerGrid.mtx")
    pair = pairs["split"]
    app = apps.get("bfs")
    ref = app.reference(g, app.check_params(g, {}))

    def where(**kw):
        opts = kw.pop("options", None)
        res, _ = api.run("bfs", g, pair=pair, devices="gpu", warmup=False,
                         **({"options": opts} if opts else {}), **kw)
        if "max_iter" not in kw:  # a capped run stops short of the answer
            np.testing.assert_array_equal(res.values, ref)
        return res.extra["where"]

    assert where() != "group"  # PoCL plays the GPU: left to the usual path
    monkeypatch.setattr(pair.gpu, "info", dataclasses.replace(pair.gpu.info, kind="gpu"))
    monkeypatch.setattr(grouplevels, "group_size", lambda side: 1)
    assert where() == "group"
    assert where(direction="top-down") != "group"
    assert where(max_iter=3) != "group"
    assert where(options=EngineOptions(group_loop="none")) != "group"
    monkeypatch.setattr(bfs, "GROUP_NNZ", g.nnz - 1)
    assert where() == "group"  # deep for its size: the deep rule's
    monkeypatch.setattr(bfs, "GROUP_DEEP_NNZ", 0)
    assert where() != "group"
    assert where(options=EngineOptions(group_loop="always")) == "group"


def test_a_deep_graph_past_the_size_rule_takes_the_loop(pairs, monkeypatch):
    """Past :data:`bfs.GROUP_NNZ` and up to :data:`bfs.GROUP_DEEP_NNZ` entries, a GPU alone
    takes the one work-group's levels on a graph whose BFS is deeper than ``nnz /
    LOOP_EDGES_PER_LEVEL`` levels (the chain) and not on a shallow one (Graph500), nor
    past the deep limit, nor under ``none``; SSSP has no deep rule. Answers right either
    way."""
    pair = pairs["split"]
    monkeypatch.setattr(pair.gpu, "info", dataclasses.replace(pair.gpu.info, kind="gpu"))
    monkeypatch.setattr(grouplevels, "group_size", lambda side: 1)
    monkeypatch.setattr(bfs, "GROUP_NNZ", 10)
    monkeypatch.setattr(grouplevels, "LOOP_EDGES_PER_LEVEL", 1000)

    def where(app_name, g, **kw):
        app = apps.get(app_name)
        params = app.check_params(g, {"root": 0})
        res, _ = api.run(app_name, g, pair=pair, devices="gpu", warmup=False, root=0, **kw)
        assert app.check(g, res, app.reference(g, params), params) == ""
        return res.extra["where"]

    deep, shallow = chain_graph(), generated_graph(10, 0)
    assert grouplevels.deep_for_loop(deep) and not grouplevels.deep_for_loop(shallow)
    assert where("bfs", deep) == "group"
    assert where("bfs", shallow) != "group"
    monkeypatch.setattr(sssp, "GROUP_NNZ", 10)
    assert where("sssp", deep) != "group"
    assert where("bfs", deep, options=EngineOptions(group_loop="none")) != "group"
    monkeypatch.setattr(bfs, "GROUP_DEEP_NNZ", deep.nnz - 1)
    assert where("bfs", deep) != "group"


def weighted_graph():
    """Graph500 scale 10 with lengths drawn from 1 to 100 (float32): rounds that relax a
    vertex again, unlike a BFS's."""
    g = generated_graph(10, 0)
    rng = np.random.default_rng(7)
    import scipy.sparse as sp
    a = sp.csr_matrix((rng.uniform(1, 100, g.nnz).astype(np.float32), g.indices, g.indptr),
                      shape=(g.n, g.n))
    return from_scipy(a, name="weighted")


@pytest.mark.parametrize("width", [1, 64])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("role", ["gpu", "cpu"])
@pytest.mark.parametrize("name,weights", [("USPowerGrid.mtx", "values"),
                                          ("adder_dcop_05.mtx", "abs"),
                                          ("weighted", "values"), ("chain", "values")])
def test_sssp_in_one_work_group(name, weights, role, mode, width, pairs, monkeypatch):
    """The float32 fixed point (the app's check, exact, and its bound to float64 Dijkstra)
    on a pattern graph (one length: no array read), a circuit's magnitudes, random lengths
    (vertices relaxed again) and a deep path; one work-item and 64, either device, both
    memory modes: one launch a run, and the same distances, bit for bit, as the CPU's
    Dijkstra walk."""
    monkeypatch.setattr(grouplevels, "group_size", lambda side: width)
    g = weighted_graph() if name == "weighted" else graph(name)
    root = 0 if name == "chain" else None
    res, rep = api.run("sssp", g, pair=pairs[mode], devices=role, warmup=False, root=root,
                       weights=weights, options=EngineOptions(group_loop="always"))
    app = apps.get("sssp")
    params = app.check_params(g, {"root": root, "weights": weights})
    assert app.check(g, res, app.reference(g, params), params) == ""
    assert res.extra["where"] == "group" and res.converged
    assert res.extra["steps"] == {f"push on {role} (work-group)": res.iterations}
    assert rep.timings["launches"][role] == 1
    walk, _ = api.run("sssp", g, pair=pairs[mode], devices="cpu", warmup=False, root=root,
                      weights=weights, options=EngineOptions(group_loop="none"))
    assert walk.extra["where"] != "group"
    np.testing.assert_array_equal(res.values, walk.values)
    assert res.extra["reached"] == walk.extra["reached"]


def test_sssp_asked_for_piles_keeps_its_usual_path(pairs, monkeypatch):
    """An SSSP run that asks for its own way (``static``, ``delta``, ``unbounded``,
    ``max_iter``) runs the usual frontier loop even under ``always``; the default takes
    the one launch."""
    g = weighted_graph()
    opts = EngineOptions(group_loop="always")
    for kw, group in (({}, True), ({"static": True}, False), ({"delta": 5.0}, False),
                      ({"unbounded": True}, False), ({"max_iter": 50}, False)):
        res, _ = api.run("sssp", g, pair=pairs["split"], devices="gpu", warmup=False,
                         options=opts, **kw)
        assert (res.extra["where"] == "group") is group, kw


def test_the_rule_that_plans_for_the_gpu_alone(pairs):
    """``one_device`` (nothing tuned or measured) takes the GPU for a small, shallow input
    of BFS or SSSP run the usual way on a real GPU: not a deep road graph (luxembourg's
    952 levels, left to the whole-run choice), not past the size rule, not under
    ``always`` or ``none``, not on an emulated pair; and a default run by the rule is
    right."""
    from types import SimpleNamespace
    info = dataclasses.replace(pairs["split"].gpu.info, kind="gpu")  # PoCL's, called a GPU
    real = SimpleNamespace(emulated=False, gpu=SimpleNamespace(info=info))
    grid, lux = shared_graph("USPowerGrid.mtx"), shared_graph("luxembourg.mtx")
    for name in ("bfs", "sssp"):
        app = apps.get(name)
        m = app.matrix(grid)
        assert app.one_device(real, m, {}) == "gpu"
        assert app.one_device(real, app.matrix(lux), {}) is None  # 952 levels
        assert app.one_device(pairs["split"], m, {}) is None  # emulated
        for opts in (EngineOptions(group_loop="always"), EngineOptions(group_loop="none")):
            assert app.one_device(real, m, {}, opts) is None
        assert app.one_device(real, m, {"max_iter": 3}) is None
    assert apps.get("bfs").one_device(real, grid, {"direction": "top-down"}) is None
    assert apps.get("sssp").one_device(real, grid, {"delta": 2.0}) is None
    assert grouplevels.by_rule(real, grid, grid.nnz - 1, True) is None
    assert grouplevels.by_rule(real, grid, grid.nnz, True) == "gpu"
    # a directed path of 300 levels from its vertex 0 (the most out-edges: a tie, the
    # first): deep along its out-edges, one level along the app's A^T from its own root
    import scipy.sparse as sp
    k = np.arange(299)
    path = from_scipy(sp.csr_matrix((np.ones(299, np.float32), (k, k + 1)), shape=(300, 300)),
                      name="path")
    for name in ("bfs", "sssp"):
        app = apps.get(name)
        assert app.one_device(real, app.matrix(path), {}) is None
        opts = EngineOptions(group_loop="none")  # early builds follow the run's options
        assert [p[1] for p in app.early_programs(real, app.matrix(grid), {}, opts)] != \
            [(f"apps/{name}/group.cl", grouplevels.SKELETON)]
        assert [p[1] for p in app.early_programs(real, app.matrix(grid), {})] == \
            [(f"apps/{name}/group.cl", grouplevels.SKELETON)]


@pytest.mark.parametrize("name,kw", [("bfs", {"direction": "top-down"}),
                                     ("sssp", {"static": True})])
def test_the_push_list_is_built_on_first_use(name, kw, pairs):
    """A small input's engine leaves the push side's list unbuilt while its runs take one
    work-group's launch, and builds it for the first run that needs it, on the same
    engine: both answers right."""
    from finepar.split.choose import plan_for
    g = shared_graph("USPowerGrid.mtx")
    wl = api.Workload(name, g)
    plan = plan_for(wl.matrix, threshold=None, devices="gpu", grouping="auto")
    eng = wl.engine(pairs["split"], plan, EngineOptions(group_loop="always"))
    assert eng.state[name]["queue"] is None
    app = apps.get(name)
    ref = app.reference(g, app.check_params(g, {}))
    for extra, group in (({}, True), (kw, False), ({}, True)):
        res, _ = wl.run(engine=eng, warmup=False, **extra)
        assert (res.extra["where"] == "group") is group
        assert app.check(g, res, ref, app.check_params(g, {})) == ""
    assert eng.state[name]["queue"] is not None


@pytest.mark.parametrize("name", ["USPowerGrid.mtx", "luxembourg.mtx", "wiki-Vote.txt",
                                  "graph500:10", "chain"])
def test_deeper_than_counts_the_host_bfs_levels(name):
    """The rule's depth test (numpy, stopping at the bound) agrees with the host BFS's
    level profile (scipy) at its boundary: deeper than one level fewer, not deeper than
    its own count."""
    from finepar.engine.levels import deeper_than, level_profile
    g = graph(name)
    levels = level_profile(g).levels
    assert deeper_than(g, levels - 1) and not deeper_than(g, levels)


@pytest.mark.parametrize("name", ["bfs", "sssp"])
def test_a_matrix_in_chunks_keeps_the_usual_path(name, pairs):
    """A matrix a budget cuts into chunks is not put whole on the device by the one
    work-group's launch, even under ``always``: the usual loop runs, and is right."""
    g = generated_graph(10, 0)
    opts = EngineOptions(group_loop="always", chunk_bytes=4 * g.nnz // 4)
    res, _ = api.run(name, g, pair=pairs["split"], devices="gpu", warmup=False, options=opts)
    assert res.extra["where"] != "group"
    app = apps.get(name)
    params = app.check_params(g, {})
    assert app.check(g, res, app.reference(g, params), params) == ""
    res, _ = api.run(name, g, pair=pairs["split"], devices="gpu", warmup=False,
                     options=EngineOptions(group_loop="always"))
    assert res.extra["where"] == "group"
