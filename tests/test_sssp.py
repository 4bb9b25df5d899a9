"""SSSP beyond the generic test (tests/test_apps.py): its reference against networkx,
weighted and exact answers every way, the validation, unit lengths, magnitudes and negative
lengths."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import generated_graph, shared_graph
from finepar import api
from finepar.errors import InputError
from finepar.io import from_scipy
from finepar.apps.bfs import bfs_levels_fast
from finepar.apps.sssp import reference_sssp, validate_sssp

nx = pytest.importorskip("networkx")


def digraph(g, weighted=False):
    """The graph as a networkx DiGraph (edge weights the values, when asked)."""
    a = g.to_scipy() if weighted else sp.csr_array((np.ones(g.nnz), g.indices, g.indptr),
                                                   shape=g.shape)
    return nx.from_scipy_sparse_array(a, create_using=nx.DiGraph)


@pytest.fixture(scope="module")
def weighted():
    """A Graph500 graph (scale 10) whose two directions of an edge have their own lengths,
    spanning five decades, so that float32 sums round differently along different paths."""
    g = generated_graph(10, 3)
    w = (10.0 ** np.random.default_rng(7).uniform(-2, 3, g.nnz)).astype(np.float32)
    return from_scipy(sp.csr_array((w, g.indices, g.indptr), shape=g.shape), name="weighted")


def test_sssp_reference_matches_networkx(weighted):
    g = weighted
    root = int(np.argmax(g.out_degrees()))
    dist, hops = reference_sssp(g, root)
    want = nx.single_source_dijkstra_path_length(digraph(g, weighted=True), root)
    reach = np.array(sorted(want))
    np.testing.assert_allclose(dist[reach], [want[v] for v in reach], rtol=1e-12)
    assert np.isinf(np.delete(dist, reach)).all() and (np.delete(hops, reach) == -1).all()
    unit_hops = reference_sssp(generated_graph(11, 2), 5)[1]  # unit lengths: hops are levels
    np.testing.assert_array_equal(unit_hops, bfs_levels_fast(generated_graph(11, 2), 5))


def test_sssp_weighted_is_one_float32_answer_every_way(weighted, pairs):
    """Pull, push and mixed rounds, on either memory mode and split, give the one float32
    fixed point bit for bit; it passes the exact check and the bound to Dijkstra."""
    g = weighted
    root = int(np.argmax(g.out_degrees()))
    ref = reference_sssp(g, root)
    runs = []
    for mode in ("shared", "split"):
        for kw in ({"static": True}, {"frontier_fraction": 1.0}, {}):
            res, _ = api.run("sssp", g, pair=pairs[mode], threshold=8, warmup=False, root=root,
                             **kw)
            runs.append(res)
            assert not validate_sssp(g, root, res.values, "values", *ref), kw
    for res in runs[1:]:
        np.testing.assert_array_equal(res.values, runs[0].values)
    directions = {s["direction"] for r in runs for s in r.extra["trace"]}
    assert directions == {"push", "pull"}
    exact = runs[0].values.astype(np.float64) == ref[0]
    assert not exact.all()  # float32 rounding shows, within the bound


def test_sssp_validation_catches_broken_answers(weighted):
    g = weighted
    root = int(np.argmax(g.out_degrees()))
    ref = reference_sssp(g, root)
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    rounded = ref[0].astype(np.float32)  # Dijkstra's, rounded: some fall below every float32
    assert validate_sssp(g, root, rounded, "values", *ref)  # path sum, so refused
    fixed = np.full(g.n, np.inf, np.float32)
    fixed[root] = 0
    while True:  # Bellman-Ford on the host, float32: the fixed point
        before = fixed.copy()
        np.minimum.at(fixed, g.indices, fixed[rows] + g.data)
        if np.array_equal(before, fixed):
            break
    assert not validate_sssp(g, root, fixed, "values", *ref)
    off = validate_sssp(g, root, fixed, "values", ref[0] * 1.001, ref[1])
    assert "more than float32 rounding" in off[0]
    v = int(np.flatnonzero(np.isfinite(fixed) & (ref[1] >= 2))[0])
    for bad, rule in ((np.nextafter(fixed[v], np.float32(np.inf)), "shortens"),
                      (np.float32(fixed[v] * 0.999), "no path"),
                      (np.float32(np.inf), "reached set")):
        broken = fixed.copy()
        broken[v] = bad
        problems = validate_sssp(g, root, broken, "values", *ref)
        assert any(rule in p for p in problems), (rule, problems)


def test_sssp_unit_lengths_are_bfs_levels_and_teps(pairs):
    g = generated_graph(12, 5)
    root = int(np.argmax(g.out_degrees()))
    res, rep = api.run("sssp", g, pair=pairs["split"], threshold=16, warmup=False, root=root)
    level = bfs_levels_fast(g, root)
    np.testing.assert_array_equal(res.values, np.where(level >= 0, level, np.inf))
    reached = level >= 0
    assert res.work_edges == int(g.out_degrees()[reached].sum()) // 2  # undirected: once
    assert rep.throughput["teps"] > 0 and res.extra["reached"] == int(reached.sum())


def test_sssp_abs_weights_and_negative_ones(pairs):
    g = shared_graph("adder_dcop_05.mtx")
    with pytest.raises(InputError, match=r"adder_dcop_05.mtx: [\d,]+ negative edge weights"):
        api.run("sssp", g, pair=pairs["shared"], threshold=8, warmup=False)
    res, _ = api.run("sssp", g, pair=pairs["shared"], threshold=8, warmup=False, weights="abs",
                     root=3)
    ref = reference_sssp(g, 3, "abs")
    assert not validate_sssp(g, 3, res.values, "abs", *ref)
    assert np.isfinite(res.values).sum() > 1


# ---------------------------------------------------------------- the pull's bound


def breadth_first_lengths(g, root: int, w: float) -> np.ndarray:
    """The float32 fixed point where every edge has length ``w``: ``S_k`` at a vertex ``k``
    hops from the root, ``S_0 = 0``, ``S_k = fl(S_(k-1) + w)`` (non-decreasing in k, so the
    fewest hops give the least sum), from scipy's hop counts; ``inf`` unreached."""
    level = bfs_levels_fast(g, root)
    sums = np.zeros(max(int(level.max()), 0) + 1, np.float32)
    for k in range(1, sums.size):
        sums[k] = np.float32(sums[k - 1] + np.float32(w))
    return np.where(level >= 0, sums[np.maximum(level, 0)], np.float32(np.inf))


#: Runs of one graph: (what they force, the run's keywords): the plan split at T_f = 4 and
#: on one side, the walk off or handing over from a source of a few more out-edges, pulls
#: after few pushes (frontier_fraction 0.02), every round pulled.
ONE_LENGTH_RUNS = (("split, no walk", dict(threshold=4, options="none")),
                   ("split, walk, early pulls", dict(threshold=4, options="near",
                                                     frontier_fraction=0.02)),
                   ("one side, walk, early pulls", dict(threshold=2**31 - 1, options="near",
                                                        frontier_fraction=0.02)),
                   ("split, every round pulled", dict(threshold=4, static=True)))


def run_options(g, root: int, how: str | None):
    """``EngineOptions`` of a run: the walk off, or switching at the source's out-edges plus
    two (a hand-over after the first levels on most graphs)."""
    from finepar.engine import EngineOptions
    if how is None:
        return None
    return EngineOptions(walk="none" if how == "none" else int(np.diff(g.indptr)[root]) + 2)


@pytest.mark.parametrize("name", ("USPowerGrid.mtx", "ca-GrQc.mtx", "rajat01.mtx",
                                  "wiki-Vote.txt", "luxembourg.mtx", "soc-Slashdot0902.txt.gz",
                                  "cnr-2000.mtx.gz", "graph500:9", "graph500:11"))
@pytest.mark.parametrize("mode", ("shared", "split"))
def test_one_length_is_breadth_first_every_way(name, mode, pairs):
    """Every edge of length 1 (a pattern graph, or values all 1): near-far's delta is inf, a
    pull skips reached rows and stops an unreached row's scan at its first frontier
    in-neighbour; split or on one side, walked and handed over or not, pulled early or every
    round, the answer is the breadth-first table bit for bit and passes the exact check."""
    g = generated_graph(int(name.split(":")[1])) if ":" in name else shared_graph(name)
    root = int(np.argmax(g.out_degrees()))
    want = breadth_first_lengths(g, root, 1.0)
    ref = reference_sssp(g, root)
    directions = set()
    for label, kw in ONE_LENGTH_RUNS:
        kw = dict(kw)
        opts = run_options(g, root, kw.pop("options", None))
        res, _ = api.run("sssp", g, pair=pairs[mode], warmup=False, root=root, options=opts,
                         **kw)
        np.testing.assert_array_equal(res.values, want, err_msg=label)
        assert res.extra["delta"] == np.inf, label
        directions |= {s["direction"] for s in res.extra["trace"]}
    assert not validate_sssp(g, root, res.values, "values", *ref)
    if g.n > 1000:
        assert "pull" in directions


@pytest.mark.parametrize("mode", ("shared", "split"))
@pytest.mark.parametrize("case", ("values 2.5", "magnitudes 0.3", "zeros"))
def test_one_length_of_any_value(case, mode, pairs):
    """One length that is not 1 (every value 2.5; signed values of magnitude 0.3 with
    ``weights='abs'``; every length 0): each vertex gets the float32 sum of its hop count's
    copies of the length, pulled early after a hand-over or not; delta is inf."""
    g0 = generated_graph(11, 4)
    w, weights = {"values 2.5": (2.5, "values"), "magnitudes 0.3": (0.3, "abs"),
                  "zeros": (0.0, "values")}[case]
    sign = np.where(np.random.default_rng(2).random(g0.nnz) < 0.5, -1, 1) if weights == "abs" \
        else 1
    vals = (sign * np.full(g0.nnz, w)).astype(np.float32)
    g = from_scipy(sp.csr_array((vals, g0.indices, g0.indptr), shape=g0.shape), name=case)
    assert g.nnz == g0.nnz and not g.pattern
    root = int(np.argmax(g.out_degrees()))
    want = breadth_first_lengths(g, root, w)
    for how in ("none", "near"):
        res, _ = api.run("sssp", g, pair=pairs[mode], threshold=4, warmup=False, root=root,
                         weights=weights, frontier_fraction=0.02,
                         options=run_options(g, root, how))
        np.testing.assert_array_equal(res.values, want)
        assert res.extra["delta"] == np.inf
    assert not validate_sssp(g, root, res.values, weights, *reference_sssp(g, root, weights))


@pytest.mark.parametrize("mode", ("shared", "split"))
def test_bounded_pulls_after_far_piles(mode, pairs):
    """Lengths in [1, 100) and a band of 0.5: the near pile empties every level or two and
    refills from the far pile, while the levels' count would lift the open vertices' bound
    past the far pile's distances (a pull bounded without the threshold's cap returns a
    wrong answer here); with early pulls, walked and handed over or not, the bounded pulls
    give the unbounded pulls' answer bit for bit, the float32 fixed point."""
    g0 = generated_graph(11, 3)
    w = np.random.default_rng(1).uniform(1, 100, g0.nnz).astype(np.float32)
    g = from_scipy(sp.csr_array((w, g0.indices, g0.indptr), shape=g0.shape), name="w")
    root = int(np.argmax(g.out_degrees()))
    ref = reference_sssp(g, root)
    for how in ("none", "near"):
        kw = dict(pair=pairs[mode], threshold=4, warmup=False, root=root, delta=0.5,
                  frontier_fraction=0.05, options=run_options(g, root, how))
        res, _ = api.run("sssp", g, **kw)
        plain, _ = api.run("sssp", g, unbounded=True, **kw)
        np.testing.assert_array_equal(res.values, plain.values)
        assert not validate_sssp(g, root, res.values, "values", *ref)
        assert {s["direction"] for s in res.extra["trace"]} == {"push", "pull"}


@pytest.mark.parametrize("mode", ("shared", "split"))
@pytest.mark.parametrize("role", ("cpu", "gpu"))
def test_pull_skips_rows_and_stops_scans_at_its_bound(role, mode, pairs):
    """The pull kernel itself, on distances that break the loop's invariant so that what it
    leaves unread shows: at bound 2 a row at 1.5 is not read (an in-neighbour at 0 would give
    it 1), a row's scan stops at its first term of 2 (the next would give 1), a row whose
    terms stay above the bound reads them all; at -inf every row reads every entry."""
    from finepar.partition import single_device
    edges = [(0, 3, 1.0), (1, 3, 1.0), (1, 4, 1.0), (0, 5, 3.0), (1, 5, 3.0)]
    u, v, w = (np.array(x) for x in zip(*edges))
    g = from_scipy(sp.csr_array((w.astype(np.float32), (u, v)), shape=(6, 6)), name="bound")
    wl = api.Workload("sssp", g)
    eng = wl.engine(pairs[mode], single_device(wl.matrix.row_lengths(), role))
    start = np.array([1, 0, np.inf, np.inf, 1.5, np.inf], np.float32)
    got = {}
    for bound in (2.0, -np.inf):
        eng.write("dist", start)
        eng.write("stamp", np.full(6, -1, np.int32))
        eng.scalars([bound])
        found, _ = eng.rowop(op="sssp", x="dist", y="dist", s0="stamp", aux="outdeg", ia=0)
        got[bound] = (eng.read("dist"), int(found))
    np.testing.assert_array_equal(got[2.0][0], [1, 0, np.inf, 2, 1.5, 3])
    np.testing.assert_array_equal(got[-np.inf][0], [1, 0, np.inf, 1, 1, 3])
    assert got[2.0][1] == 2 and got[-np.inf][1] == 3
