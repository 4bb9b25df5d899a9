"""Every app against an independent reference, on every shared graph and on Graph500
graphs, at several thresholds, in both memory modes: the split never changes the answer."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import INPUT_PARAMS, SHARED_GRAPHS, generated_graph, graph_params, shared_graph
from finepar import api, apps, reference
from finepar.apps.bfs import bfs_levels_fast, validate_bfs
from finepar.apps.cc import reference_components
from finepar.apps.pagerank import reference_pagerank
from finepar.apps.spmv import reference_spmv, spmv_error_bound

#: T_f values: everything on the CPU (0), a real split (4 and 32), everything on the GPU.
THRESHOLDS = (0, 4, 32, 2**31 - 1)
MODES = ("shared", "split")

GRAPHS = [*SHARED_GRAPHS, "graph500:11", "graph500:12:7"]


def get_graph(name):
    if name.startswith("graph500:"):
        parts = name.split(":")
        return generated_graph(int(parts[1]), int(parts[2]) if len(parts) > 2 else 0)
    return shared_graph(name)


_REFS: dict = {}


#: The apps' float64 references these tests reuse, by name (beside each app).
REFERENCES = {"components": reference_components, "bfs_levels_fast": bfs_levels_fast,
              "pagerank": reference_pagerank}


def ref(kind, name, g, *args):
    key = (kind, name, args)
    if key not in _REFS:
        _REFS[key] = REFERENCES[kind](g, *args)
    return _REFS[key]


def pick_root(g):
    """The vertex of largest out-degree: reaches a large part of every test graph."""
    return int(np.argmax(np.diff(g.indptr)))


#: Per app, the parameters of the three runs of a case (frontier apps take each direction).
VARIANTS = {"bfs": ({"direction": "auto"}, {"direction": "bottom-up"}, {"direction": "top-down"}),
            "cc": ({}, {"static": True}, {"algorithm": "fastsv", "frontier_fraction": 0.6}),
            "sssp": ({}, {"static": True}, {"frontier_fraction": 1.0}),
            "coloring": ({}, {"seed": 1}, {"seed": 2, "algorithm": "jp"})}

def app_reference(app, name, g, params):
    key = ("app", app.name, name, tuple(sorted((k, v) for k, v in params.items()
                                               if not isinstance(v, np.ndarray))))
    if key not in _REFS:
        _REFS[key] = app.reference(g, params)
    return _REFS[key]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", graph_params(GRAPHS, slow=("cnr-2000.mtx.gz",)))
@pytest.mark.parametrize("app_name", apps.names())
def test_every_app_matches_its_reference(app_name, name, mode, pairs):
    """Every registered app, on every graph, at three thresholds (one device, a real split,
    the other device) with each lowering, in both memory modes, equals the app's
    independent reference."""
    g = get_graph(name)
    app = apps.get(app_name)
    given = dict(INPUT_PARAMS.get((app_name, name), {}))
    params = app.reference_params(g, app.check_params(g, given))
    expect = app_reference(app, name, g, params)
    last = THRESHOLDS[0] if mode == "split" else THRESHOLDS[3]
    for t, grouping, extra in zip((4, 32, last), ("pow4", "adaptive", "none"),
                                  VARIANTS.get(app_name, ({}, {}, {}))):
        res, rep = api.run(app_name, g, pair=pairs[mode], threshold=t, grouping=grouping,
                           warmup=False, **params, **extra)
        problem = app.check(g, res, expect, params)
        assert not problem, f"T_f={t} {grouping} {extra}: {problem}"
        assert rep.plan["threshold"] == t and rep.plan["grouping"] == grouping


@pytest.mark.parametrize("mode", MODES)
def test_bfs_switches_direction_and_says_where(mode, pairs):
    """Beamer's heuristic takes both directions on a Graph500 graph; the trace and the report
    say which levels ran top-down (one device, from a queue) and which bottom-up (co-run).
    The CPU's walk stays off (on the emulated pair its switch point takes levels Beamer's rule
    would pull: tests/test_walk.py covers it)."""
    from finepar.engine import EngineOptions
    off = EngineOptions(walk="none")
    g = generated_graph(13, 1)
    root = pick_root(g)
    level, parent, rep = api.bfs(g, root=root, pair=pairs[mode], threshold=32, warmup=False,
                                 options=off)
    np.testing.assert_array_equal(level, bfs_levels_fast(g, root))
    steps = rep.result["summary"]
    levels = dict(steps)["levels"]
    assert "top-down on" in levels and "bottom-up on both" in levels, levels
    res, _ = api.run("bfs", g, pair=pairs[mode], threshold=32, warmup=False, root=root,
                     options=off)
    dirs = [s["direction"] for s in res.extra["trace"]]
    assert dirs[0] == "top-down" and "bottom-up" in dirs
    assert all(s["where"] == "both" for s in res.extra["trace"] if s["direction"] == "bottom-up")


def test_cc_rounds_grow_with_log_n_not_the_diameter(pairs):
    """luxembourg is a road graph (diameter near 1,000 levels): FastSV needs at most 2 log2 n
    rounds where label propagation needed about the diameter."""
    g = shared_graph("luxembourg.mtx")
    labels, rep = api.connected_components(g, pair=pairs["split"], threshold=4, warmup=False,
                                           algorithm="fastsv")
    np.testing.assert_array_equal(labels, ref("components", "luxembourg.mtx", g))
    assert rep.result["iterations"] <= 2 * np.log2(g.n)
    level = ref("bfs_levels_fast", "luxembourg.mtx", g, 0)
    assert level.max() > 10 * rep.result["iterations"]  # far fewer rounds than BFS levels


@pytest.mark.parametrize("app", ["spmv", "pagerank", "bfs", "cc"])
@pytest.mark.parametrize("mode", MODES)
def test_grouped_plans_and_single_devices(app, mode, pairs):
    """§4.1 length groups (every thread mapping) and single-device runs give the same answer."""
    g = shared_graph("soc-Slashdot0902.txt.gz")
    root = pick_root(g)
    x = np.random.default_rng(3).uniform(-1, 1, g.n).astype(np.float32)
    outs = []
    for kw in ({"threshold": 64, "grouping": "pow4"}, {"threshold": 2048, "grouping": "pow4"},
               {"devices": "cpu", "grouping": "pow4"}, {"devices": "gpu", "grouping": "pow4"},
               {"devices": "gpu", "grouping": "none"}):
        params = ({"x": x, "repeat": 1} if app == "spmv" else {"root": root} if app == "bfs"
                  else {})
        res, rep = api.run(app, g, pair=pairs[mode], warmup=False, **kw, **params)
        if kw.get("grouping") == "pow4" and kw.get("devices") != "cpu":
            mappings = {gr["mapping"] for gr in rep.plan["stats"]["groups"]["gpu"]}
            assert {"item", "team"} <= mappings, mappings
        outs.append(res)
    if app == "spmv":
        expect = reference_spmv(g, x)
        bound = spmv_error_bound(g, x)
        for r in outs:
            assert np.all(np.abs(r.values - expect) <= bound)
    elif app == "pagerank":
        expect = ref("pagerank", "soc-Slashdot0902.txt.gz", g)
        for r in outs:
            assert np.abs(r.values - expect).sum() < 1e-4
    elif app == "bfs":
        for r in outs:
            assert not validate_bfs(g, root, r.values, r.extra["parent"])
            np.testing.assert_array_equal(r.values, outs[0].values)
    else:
        expect = ref("components", "soc-Slashdot0902.txt.gz", g)
        for r in outs:
            np.testing.assert_array_equal(r.values, expect)


def test_group_mapping_on_long_rows(pairs):
    """Rows of >= 1024 nonzeros on the GPU use the work-group-per-row mapping."""
    g = shared_graph("cnr-2000.mtx.gz")
    res, rep = api.run("pagerank", g, pair=pairs["split"], threshold=10**6, grouping="pow4",
                       warmup=False)
    mappings = {gr["mapping"] for gr in rep.plan["stats"]["groups"]["gpu"]}
    assert mappings == {"item", "team", "group"}
    expect = ref("pagerank", "cnr-2000.mtx.gz", g)
    assert np.abs(res.values - expect).sum() < 1e-4


def test_split_mode_moves_only_the_halo(pairs):
    """In split memory the halo is what the other side's rows read, not whole vectors."""
    g = shared_graph("wiki-Vote.txt")
    res, rep = api.run("pagerank", g, pair=pairs["split"], threshold=16, warmup=False)
    m = g.transpose()
    own_gpu = np.diff(m.indptr) <= 16
    halo = rep.timings["halo_entries"]
    rows = np.repeat(np.arange(m.n), np.diff(m.indptr))
    gpu_reads = np.unique(m.indices[own_gpu[rows]])
    cpu_reads = np.unique(m.indices[~own_gpu[rows]])
    assert halo["gpu"] == int(np.sum(~own_gpu[gpu_reads]))
    assert halo["cpu"] == int(np.sum(own_gpu[cpu_reads]))
    assert 0 < halo["gpu"] + halo["cpu"] < 2 * g.n
    assert rep.timings["exchange"] > 0


def test_reference_pagerank_matches_networkx():
    nx = pytest.importorskip("networkx")
    g = shared_graph("wiki-Vote.txt")
    G = nx.from_scipy_sparse_array(g.to_scipy(), create_using=nx.DiGraph)
    p = nx.pagerank(G, tol=1e-13, max_iter=1000, weight=None)
    expect = np.array([p[i] for i in range(g.n)])
    assert np.abs(reference_pagerank(g) - expect).sum() < 1e-8


def test_reference_components_match_networkx():
    nx = pytest.importorskip("networkx")
    g = shared_graph("ca-GrQc.mtx")
    G = nx.from_scipy_sparse_array(g.to_scipy())
    lab = reference_components(g)
    for comp in nx.connected_components(G):
        comp = np.fromiter(comp, dtype=np.int64)
        assert np.all(lab[comp] == comp.min())


def test_has_edges_matches_scipy(rng):
    g = generated_graph(11, 5)
    import scipy.sparse as sp
    a = sp.csr_matrix((np.ones(g.nnz), g.indices, g.indptr), shape=(g.n, g.n))
    src = rng.integers(0, g.n, 5000)
    dst = rng.integers(0, g.n, 5000)
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    pick = rng.integers(0, g.nnz, 5000)  # half the queries are real edges
    src = np.concatenate([src, rows[pick]])
    dst = np.concatenate([dst, g.indices[pick]])
    expect = np.asarray(a[src, dst]).ravel() != 0
    np.testing.assert_array_equal(reference.has_edges(g, src, dst), expect)
    assert expect.sum() >= 5000


@pytest.mark.parametrize("with_reference", [False, True])
def test_bfs_validation_catches_broken_answers(with_reference):
    g = generated_graph(10, 2)
    root = int(np.argmax(np.diff(g.indptr)))
    level = bfs_levels_fast(g, root)
    # a valid parent array: for each reached vertex, an in-neighbour one level up
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    parent = np.full(g.n, -1, dtype=np.int64)
    ok = (level[rows] >= 0) & (level[g.indices] == level[rows] + 1)
    parent[g.indices[ok]] = rows[ok]
    parent[root] = root
    refs = {"reference_levels": level} if with_reference else {}
    assert not validate_bfs(g, root, level, parent, **refs)
    v = int(np.flatnonzero(level == 2)[0])
    bad = parent.copy()
    bad[v] = root  # root is two levels up, not one
    assert validate_bfs(g, root, level, bad, **refs)
    non_edge = parent.copy()
    same_level = np.flatnonzero(level == 1)
    u = next(int(x) for x in same_level if not reference.has_edges(g, [x], [v])[0])
    non_edge[v] = u  # one level up, but (u, v) is not an edge
    errs = validate_bfs(g, root, level, non_edge, **refs)
    assert any("not an edge" in e for e in errs)
    wrong = level.copy()
    wrong[v] = 3
    assert validate_bfs(g, root, wrong, parent, **refs)


def test_cpu_side_too_small_for_the_whole_csr(pairs, monkeypatch):
    """Split memory with a CPU whose allocations cannot hold the whole CSR: its side
    holds only its own rows, and frontier steps run on the GPU; answers unchanged."""
    import dataclasses
    from finepar.partition import fine_grained
    g = shared_graph("cnr-2000.mtx.gz") if SHARED_GRAPHS else generated_graph(14, 2)
    pair = pairs["split"]
    small = dataclasses.replace(pair.cpu.info, max_alloc_bytes=g.indices.nbytes // 2)
    monkeypatch.setattr(pair.cpu, "info", small)

    def third(app):
        """The smallest T_f whose CPU share holds under a third of the app's nonzeros."""
        lengths = api.Workload(app, g).matrix.row_lengths()
        srt = np.sort(lengths)
        t = int(srt[np.searchsorted(np.cumsum(srt[::-1])[::-1] < g.nnz / 3, True)])
        assert (lengths > t).any()
        return t

    root = pick_root(g)
    level, parent, _ = api.bfs(g, root=root, pair=pair, threshold=third("bfs"), warmup=False)
    np.testing.assert_array_equal(level, bfs_levels_fast(g, root))
    assert not validate_bfs(g, root, level, parent)
    labels, _ = api.connected_components(g, pair=pair, threshold=third("cc"), warmup=False)
    np.testing.assert_array_equal(labels, reference_components(g))
    pr, _ = api.pagerank(g, pair=pair, threshold=third("pagerank"), warmup=False)
    assert np.abs(pr.astype(np.float64) - reference_pagerank(g)).sum() < 1e-4
    wl = api.Workload("bfs", g)
    eng = wl.engine(pair, fine_grained(wl.matrix.row_lengths(), third("bfs")))
    assert eng.stores["cpu"].low.compact and eng.push_role() == "gpu"


@pytest.mark.parametrize("mode", MODES)
def test_frontier_list_carries_its_offsets(mode, pairs):
    """Appends to a frontier list make its out-edge offsets in list order (one 64-bit
    tally: vertices in the high bits, out-degrees in the low): the list from a bitmap holds
    exactly the set vertices, and its offsets are the prefix sums of their degrees."""
    from finepar.engine.frontier import FrontierQueue, tally_bits
    from finepar.partition import single_device
    from finepar.device import alloc, cl
    g = generated_graph(12, 4)
    wl = api.Workload("bfs", g)
    eng = wl.engine(pairs[mode], single_device(wl.matrix.row_lengths(), "gpu"))
    q = FrontierQueue(eng, "gpu", g, ("apps/bfs/frontier.cl", "skeleton/frontier.cl"))
    assert q.edge_bits == tally_bits(g.n, g.nnz) == 64 - g.n.bit_length()
    chosen = np.flatnonzero(np.random.default_rng(3).random(g.n) < 0.3)
    bm = np.zeros((g.n + 31) // 32, np.uint32)
    np.bitwise_or.at(bm, chosen >> 5, (np.uint32(1) << (chosen & 31).astype(np.uint32)))
    q.from_bitmap(alloc(q.side, bm), 0, 0)
    size, edges = q.read_tally()  # what the appends tallied on the device
    front = np.empty(g.n, np.int32)
    offs = np.empty(g.n, q.offset_dtype)
    cl().enqueue_copy(q.side.queue, front, q.front, is_blocking=True)
    cl().enqueue_copy(q.side.queue, offs, q.offs, is_blocking=True)
    front, offs = front[:size], offs[:size]
    deg = np.diff(g.indptr)[front]
    assert size == chosen.size and np.array_equal(np.sort(front), chosen)
    np.testing.assert_array_equal(offs, np.concatenate([[0], np.cumsum(deg)[:-1]]))
    assert edges == q.edges == deg.sum()
    with pytest.raises(Exception, match="64-bit tally"):
        tally_bits(2**31 - 1, 2**33)


def test_devices_without_64bit_atomics_pull_every_level(pairs, monkeypatch):
    """A device without cl_khr_int64_base_atomics holds no frontier list: BFS and CC pull
    every level, and their answers stay exact."""
    import dataclasses
    pair = pairs["split"]
    for side in (pair.cpu, pair.gpu):
        monkeypatch.setattr(side, "info", dataclasses.replace(side.info, int64_atomics=False))
    g = generated_graph(12, 5)
    root = pick_root(g)
    res, _ = api.run("bfs", g, pair=pair, threshold=32, warmup=False, root=root)
    np.testing.assert_array_equal(res.values, bfs_levels_fast(g, root))
    assert {s["direction"] for s in res.extra["trace"]} == {"bottom-up"}
    labels, _ = api.connected_components(g, pair=pair, threshold=32, warmup=False)
    np.testing.assert_array_equal(labels, reference_components(g))


def test_registry_loads_every_app_whichever_is_imported_first():
    """Importing one app module before asking the registry still lists them all."""
    import subprocess
    import sys
    code = ("import finepar.apps.bfs; from finepar import apps; "
            "print(','.join(apps.names()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    import pkgutil
    modules = {m.name for m in pkgutil.iter_modules(apps.__path__)} - set(apps.HELPERS)
    assert out.split(",") == list(apps.names())
    assert set(out.split(",")) == modules  # each module registers the app it names


def test_component_count_on_the_device_matches_scipy(pairs):
    """CC's component count (the vertices that label themselves, counted on the device that
    holds the labels) agrees with scipy's count and with the histogram of the labels
    returned, for both algorithms, on a graph of many components."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components
    from finepar.api import run
    from finepar.apps.base import component_sizes
    from finepar.io import from_csr
    rng = np.random.default_rng(3)
    n = 3000
    a = sp.random(n, n, density=0.0004, random_state=rng, format="csr")
    a = ((a + a.T) > 0).astype(np.float32).tocsr()
    g = from_csr(a.indptr, a.indices, a.data, n, name="islands")
    want = connected_components(a, directed=False)[0]
    for mem in ("shared", "split"):
        for how in ({"devices": "gpu", "algorithm": "afforest"},
                    {"threshold": 64, "algorithm": "fastsv"}):
            result, _ = run("cc", g, pair=pairs[mem], **how)
            assert result.extra["algorithm"] == how["algorithm"]
            assert result.extra["components"] == want
            assert np.count_nonzero(component_sizes(result.values)) == want
