"""Tests of the apps' float64 references (beside each app, on finepar.reference's shared
machinery) against networkx, scipy and plain float64 numpy.

The references are what every engine answer is checked against, so they are
checked here against independent implementations, on real graphs (symmetric and
directed) and generated ones, with the work cut into many thread-sized pieces.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

from conftest import generated_graph, shared_graph
from finepar import reference
from finepar.io.graph500 import kronecker
from finepar.io import from_edges
from finepar.apps.bfs import bfs_levels, bfs_levels_fast
from finepar.apps.cc import reference_components
from finepar.apps.pagerank import reference_pagerank

nx = pytest.importorskip("networkx")


def nx_graph(g, directed: bool):
    return nx.from_scipy_sparse_array(g.to_scipy(), create_using=nx.DiGraph if directed else nx.Graph)


def plain_pagerank(g, damping=0.85, tol=1e-12, max_iter=10000):
    """Power iteration written out in float64 with scipy's transpose (the definition)."""
    n = g.n
    at = sp.csr_array((np.ones(g.nnz), g.indices, g.indptr), shape=g.shape).T.tocsr()
    outdeg = np.diff(g.indptr).astype(np.float64)
    inv = np.divide(1.0, outdeg, out=np.zeros(n), where=outdeg > 0)
    x = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        xn = (1 - damping) / n + damping * (at @ (x * inv) + x[outdeg == 0].sum() / n)
        err = np.abs(xn - x).sum()
        x = xn
        if err < tol:
            break
    return x


@pytest.fixture
def small_pieces(monkeypatch):
    """Cut products and frontiers into pieces of 512 stored entries: many thread tasks."""
    monkeypatch.setattr(reference, "BLOCK_NNZ", 512)


@pytest.mark.parametrize("name, root", [("luxembourg.mtx", 0), ("wiki-Vote.txt", 3),
                                        ("ca-GrQc.mtx", 17)])
def test_bfs_levels_fast_matches_networkx(name, root, small_pieces):
    g = shared_graph(name)
    expect = np.full(g.n, -1, dtype=np.int64)
    for v, d in nx.single_source_shortest_path_length(nx_graph(g, directed=not g.symmetric), root).items():
        expect[v] = d
    for workers in (1, 3):
        level = bfs_levels_fast(g, root, workers=workers)
        assert level.dtype == np.int64
        np.testing.assert_array_equal(level, expect)
    np.testing.assert_array_equal(bfs_levels(g, root), expect)


def test_bfs_levels_fast_on_kronecker_graph_matches_scipy(small_pieces):
    """Kronecker levels are large (the new frontier is taken from a scan of the
    levels) and small (taken from the claim array): both against scipy's BFS."""
    for g in (generated_graph(12, 3), kronecker(11, seed=2, symmetric=False)):
        root = int(np.argmax(g.row_lengths()))
        level = bfs_levels_fast(g, root, workers=2)
        assert (level >= 0).sum() > g.n / 4
        order = csgraph.breadth_first_order(g.to_scipy(), root, directed=True,
                                            return_predecessors=False)
        np.testing.assert_array_equal(np.flatnonzero(level >= 0), np.sort(order))
        np.testing.assert_array_equal(level, bfs_levels(g, root))


def test_components_match_networkx_symmetric_and_directed():
    for name in ("ca-GrQc.mtx", "USPowerGrid.mtx", "wiki-Vote.txt", "rajat01.mtx"):
        g = shared_graph(name)
        labels = reference_components(g)
        assert labels.dtype == np.int64
        comps = (nx.connected_components(nx_graph(g, directed=False)) if g.symmetric
                 else nx.weakly_connected_components(nx_graph(g, directed=True)))
        count = 0
        for comp in comps:
            comp = np.fromiter(comp, dtype=np.int64)
            assert np.all(labels[comp] == comp.min())
            count += 1
        assert np.unique(labels).size == count


def test_components_of_symmetric_graph_equal_weak_components():
    """The symmetric flag takes scipy's strong components (no transpose): same labels
    as weak components of the same structure."""
    g = generated_graph(13, 4)
    assert g.symmetric
    _, weak = csgraph.connected_components(g.to_scipy(), directed=True, connection="weak")
    first = np.full(weak.max() + 1, g.n)
    np.minimum.at(first, weak, np.arange(g.n))
    np.testing.assert_array_equal(reference_components(g), first[weak])


def test_components_copy_no_values():
    """On a symmetric graph the reference allocates neither float64 values nor a
    transposed copy: well under 4 bytes per stored entry (one float64 copy is 8)."""
    g = generated_graph(14, 1)
    reference_components(g)  # warm scipy's imports
    tracemalloc.start()
    try:
        reference_components(g)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * g.nnz


@pytest.mark.parametrize("name", ["wiki-Vote.txt", "ca-GrQc.mtx"])
def test_pagerank_matches_networkx(name, small_pieces):
    g = shared_graph(name)
    p = nx.pagerank(nx_graph(g, directed=not g.symmetric), tol=1e-13, max_iter=1000, weight=None)
    expect = np.array([p[i] for i in range(g.n)])
    assert np.abs(reference_pagerank(g, workers=3) - expect).sum() < 1e-8


def test_pagerank_is_the_plain_power_iteration_whatever_the_pieces(monkeypatch):
    """One row block: bit for bit the written-out iteration. Many blocks: partial
    sums in block order, the same for any number of threads, and within rounding of
    the written-out iteration. Symmetric graph (no transpose) and directed."""
    for g in (generated_graph(12, 1), kronecker(11, seed=6, symmetric=False)):
        expect = plain_pagerank(g)
        np.testing.assert_array_equal(reference_pagerank(g, workers=2), expect)
        monkeypatch.setattr(reference, "BLOCK_NNZ", 1000)
        many = reference_pagerank(g, workers=1)
        np.testing.assert_array_equal(reference_pagerank(g, workers=4), many)
        assert np.abs(many - expect).sum() < 1e-13
        monkeypatch.undo()


def test_pagerank_with_dangling_vertices_sums_to_one():
    g = from_edges([0, 1, 2, 2], [1, 2, 0, 3], 5, name="dangling")  # 3 and 4 have no out-edges
    x = reference_pagerank(g)
    assert x.sum() == pytest.approx(1.0, abs=1e-12)
    p = nx.pagerank(nx_graph(g, directed=True), tol=1e-13, max_iter=1000, weight=None)
    np.testing.assert_allclose(x, [p[i] for i in range(5)], atol=1e-10)
