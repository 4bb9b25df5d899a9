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
