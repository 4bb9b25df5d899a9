"""Tests of finepar.throttle: DBWP with K-D tiling and SPAC, the SJ-tree, the
schedules (Algorithm 3 against brute force, CF-Q queues) and the remappings.

Every partitioning is recounted here from its arrays with scipy / numpy,
independently of ``Partitioning.check``.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import generated_graph, shared_graph
from finepar.errors import FineParError, UsageError
from finepar.throttle import (SJTree, best_cover, brute_force_cover, capacity_from_cache, cover_chunks,
                              cover_segments, dbwp, dbwp_remap, degree_remap, profiling_passes,
                              queue_chunks, stime_from_passes)
from finepar.throttle import spac

# --------------------------------------------------------------------------- helpers


def gpu_share(g, max_row_nnz=None):
    """The rows with at most `max_row_nnz` nonzeros (FinePar's GPU share; all rows if None),
    as (global rows, compact indptr, indices)."""
    a = sp.csr_matrix(g.to_scipy())
    lengths = np.diff(a.indptr)
    rows = np.arange(a.shape[0]) if max_row_nnz is None else np.flatnonzero(lengths <= max_row_nnz)
    s = a[rows]
    s.sort_indices()
    return rows, s.indptr.astype(np.int64), s.indices.astype(np.int32)


def working_set(indptr, indices, positions):
    """Distinct columns and distinct rows touched by the given nonzero positions."""
    rows = np.searchsorted(indptr, positions, side="right") - 1
    return np.unique(indices[positions]).size, np.unique(rows).size


def assert_valid(part, indptr, indices, capacity, *, exact=True):
    """Every invariant of a Partitioning, recounted independently (``exact``: a node was
    split only when its exact working set did not fit; the grid tiling splits on a bound)."""
    nnz, k = indices.shape[0], indptr.shape[0] - 1
    order = part.positions()
    assert order.dtype == np.int64 and part.seg_ptr.dtype == np.int64 and part.seg_row.dtype == np.int32
    np.testing.assert_array_equal(np.sort(order), np.arange(nnz))  # each nonzero exactly once
    P, S = part.n_parts, part.n_segments
    assert part.part_seg[0] == 0 and part.part_seg[-1] == S and np.all(np.diff(part.part_seg) >= 1)
    assert part.seg_ptr[0] == 0 and part.seg_ptr[-1] == nnz and np.all(np.diff(part.seg_ptr) >= 1)
    row_of = np.searchsorted(indptr, order, side="right") - 1
    seg_of = np.repeat(np.arange(S), np.diff(part.seg_ptr))
    np.testing.assert_array_equal(row_of, part.seg_row[seg_of])  # segments hold their row only
    same = seg_of[1:] == seg_of[:-1]
    assert np.all(np.diff(order)[same] > 0), "original order inside a segment"
    # Each row's nonzeros are covered once: per row, the segments' sizes add up to its length.
    np.testing.assert_array_equal(np.bincount(part.seg_row, weights=np.diff(part.seg_ptr), minlength=k),
                                  np.diff(indptr))
    ptr = part.seg_ptr[part.part_seg]
    for p in range(P):
        segs = slice(part.part_seg[p], part.part_seg[p + 1])
        assert np.all(np.diff(part.seg_row[segs]) > 0), "rows ascend inside a partition"
        dx, dy = working_set(indptr, indices, order[ptr[p]:ptr[p + 1]])
        assert (part.nnz[p], part.distinct_x[p], part.distinct_y[p]) == (ptr[p + 1] - ptr[p], dx, dy)
        assert dx + dy <= capacity, f"partition {p} touches {dx + dy} > T = {capacity}"
    assert_tree(part.tree, P)
    # Algorithm 1 splits a node only if it does not fit.
    tree = part.tree
    for v in np.flatnonzero(tree.left >= 0) if exact else ():
        dx, dy = working_set(indptr, indices, order[ptr[tree.lo[v]]:ptr[tree.hi[v]]])
        assert dx + dy > capacity


def assert_tree(tree, P):
    assert tree.lo[0] == 0 and tree.hi[0] == P and tree.depth[0] == 0
    for v in range(tree.n_nodes):
        left, right = tree.left[v], tree.right[v]
        assert (left < 0) == (right < 0)
        if left < 0:
            assert tree.hi[v] == tree.lo[v] + 1
        else:
            assert left > v and right > v, "pre-order: children after their parent"
            assert tree.lo[left] == tree.lo[v] and tree.hi[left] == tree.lo[right] < tree.hi[v]
            assert tree.hi[right] == tree.hi[v]
            assert tree.depth[left] == tree.depth[right] == tree.depth[v] + 1
    leaves = tree.leaves()
    np.testing.assert_array_equal(tree.lo[leaves], np.arange(P))
    assert tree.n_nodes == 2 * P - 1
    assert tree.max_depth == tree.depth.max()


def total_distinct(indptr, indices):
    return np.unique(indices).size + np.count_nonzero(np.diff(indptr))


# --------------------------------------------------------------------------- DBWP

KD_CASES = [("USPowerGrid.mtx", None, 200), ("adder_dcop_05.mtx", 64, 300), ("ca-GrQc.mtx", None, 500),
            ("wiki-Vote.txt", 64, 1500), ("memplus.mtx", 32, 1000), ("rajat01.mtx", None, 400),
            ("luxembourg.mtx", None, 4000), ("graph500-11", 64, 800), ("graph500-12", None, 2000)]
SPAC_CASES = [("USPowerGrid.mtx", None, 200), ("adder_dcop_05.mtx", 64, 300), ("ca-GrQc.mtx", None, 500),
              ("rajat01.mtx", 32, 400), ("graph500-10", None, 600)]


def load(name):
    if name.startswith("graph500-"):
        return generated_graph(int(name.split("-")[1]))
    return shared_graph(name)


@pytest.mark.parametrize("bisect, name, max_row, capacity",
                         [("kd", *c) for c in KD_CASES] + [("spac", *c) for c in SPAC_CASES])
def test_partitions_are_cache_fit_and_cover_the_share(bisect, name, max_row, capacity):
    rows, indptr, indices = gpu_share(load(name), max_row)
    part = dbwp(indptr, indices, load(name).n, capacity, bisect=bisect)
    assert part.n_parts >= 8, "capacities are small enough for many partitions"
    assert part.method == bisect and part.capacity == capacity and part.seconds > 0
    assert_valid(part, indptr, indices, capacity)
    part.check(indptr, indices)  # the built-in check agrees


@pytest.mark.parametrize("name, max_row, capacity",
                         [("graph500-13", None, 3000), ("graph500-12", 64, 20000),
                          ("cnr-2000.mtx.gz", None, 1 << 16), ("luxembourg.mtx", None, 9000)])
def test_grid_kd_tiling_is_cache_fit_and_near_the_exact_count(name, max_row, capacity,
                                                               monkeypatch):
    """Large shares are tiled on a grid of row and column ranges: segments are runs of
    their rows (no permutation kept), every partition fits T, and the partitions are at
    most a few times as many as the exact bisection's."""
    from finepar.throttle import kdgrid
    g = load(name)
    _, indptr, indices = gpu_share(g, max_row)
    exact = dbwp(indptr, indices, g.n, capacity)
    monkeypatch.setattr(kdgrid, "GRID_MIN_NNZ", 0)
    monkeypatch.setattr(kdgrid, "MAX_BINS", 256)  # several rows and columns per bin
    part = dbwp(indptr, indices, g.n, capacity)
    assert part.order is None and "grid" in part.describe()
    assert_valid(part, indptr, indices, capacity, exact=False)
    part.check(indptr, indices)
    assert exact.n_parts <= 4 * part.n_parts and part.n_parts <= 8 * exact.n_parts
    back = type(part).from_arrays(*part.to_arrays())  # what the prepared-graph cache keeps
    np.testing.assert_array_equal(back.positions(), part.positions())
    if max_row is None and g.symmetric:  # a symmetric share's column counts are its rows'
        same = dbwp(indptr, indices, g.n, capacity, symmetric=True)
        np.testing.assert_array_equal(same.seg_start, part.seg_start)
        np.testing.assert_array_equal(same.distinct_x, part.distinct_x)


@pytest.mark.parametrize("name, hubs, capacity", [("graph500-13", 8, 3000),
                                                  ("luxembourg.mtx", 3, 9000)])
def test_share_of_a_symmetric_matrix_is_cut_with_the_whole_matrix_tree(name, hubs, capacity,
                                                                       monkeypatch):
    """The default split's GPU share (every row but a few hubs) of a symmetric matrix is cut
    by the whole matrix's grid tiling with the hubs' segments dropped: rows and positions
    renumbered to the share, every partition cache-fit by an exact recount, and the same
    tree as the whole matrix's."""
    from finepar.throttle import kdgrid
    from finepar.throttle.plan import of_whole
    g = load(name)
    assert g.symmetric
    monkeypatch.setattr(kdgrid, "GRID_MIN_NNZ", 0)
    monkeypatch.setattr(kdgrid, "MAX_BINS", 256)
    lengths = np.diff(g.indptr)
    rows = np.sort(np.argsort(lengths, kind="stable")[:g.n - hubs])
    a = sp.csr_matrix(g.to_scipy())[rows]
    a.sort_indices()
    indptr, indices = a.indptr.astype(np.int64), a.indices.astype(np.int32)
    part = of_whole(g, rows, capacity)
    assert part is not None and part.n_rows == rows.size and part.extra["rows_dropped"] == hubs
    assert_valid(part, indptr, indices, capacity, exact=False)
    part.check(indptr, indices)
    whole = dbwp(g.indptr, g.indices, g.n, capacity, symmetric=True)
    np.testing.assert_array_equal(part.tree.left, whole.tree.left)
    assert part.nnz.sum() == indices.size < whole.nnz.sum()
    assert of_whole(g, np.arange(g.n), capacity) is None  # every row: tiled as it is


def test_kd_on_cnr_2000_share():
    g = shared_graph("cnr-2000.mtx.gz")
    _, indptr, indices = gpu_share(g, 64)
    part = dbwp(indptr, indices, g.n, 1 << 16)
    assert part.n_parts >= 8
    part.check(indptr, indices)
    assert part.working_set.max() <= 1 << 16 and part.nnz.sum() == indices.size


def test_kd_splits_alternate_and_balance_by_nonzeros():
    # A dense 16 x 16 block: the root splits columns at the median, its children rows.
    a = sp.csr_matrix(np.ones((16, 16)))
    part = dbwp(a.indptr, a.indices, 16, 16)
    assert_valid(part, a.indptr, a.indices, 16)
    np.testing.assert_array_equal(part.nnz, np.full(part.n_parts, part.nnz[0]))
    first = part.order[:part.nnz[0]]
    rows, cols = first // 16, first % 16
    assert cols.max() < 8 and rows.max() < 8, "left-most leaf: low columns, then low rows"


def test_kd_may_cut_a_row():
    # One row of 100 nonzeros cannot fit T = 10: it is cut into several partitions.
    indptr = np.array([0, 100], dtype=np.int64)
    indices = np.arange(100, dtype=np.int32)
    part = dbwp(indptr, indices, 100, 10)
    assert_valid(part, indptr, indices, 10)
    assert part.n_segments == part.n_parts > 1 and np.all(part.seg_row == 0)


@pytest.mark.parametrize("bisect", ["kd", "spac"])
def test_small_and_degenerate_shares(bisect):
    # No nonzeros: one empty partition, a one-node tree.
    part = dbwp(np.zeros(4, np.int64), np.zeros(0, np.int32), 5, 2, bisect=bisect)
    assert part.n_parts == 1 and part.n_segments == 0 and part.tree.n_nodes == 1
    assert part.nnz.tolist() == [0]
    # T = 2: every partition is a single nonzero (x_j and y_i).
    a = sp.random(6, 7, density=0.5, random_state=3, format="csr")
    a.sort_indices()
    part = dbwp(a.indptr, a.indices, 7, 2, bisect=bisect)
    assert_valid(part, a.indptr, a.indices, 2)
    assert part.n_parts == a.nnz
    # A capacity that holds everything: one partition, no split.
    part = dbwp(a.indptr, a.indices, 7, 10**6, bisect=bisect)
    assert part.n_parts == 1 and part.tree.max_depth == 0
    np.testing.assert_array_equal(part.order, np.arange(a.nnz))


@pytest.mark.parametrize("bisect", ["kd", "spac"])
def test_min_nnz_stops_splitting(bisect):
    g = shared_graph("ca-GrQc.mtx")
    _, indptr, indices = gpu_share(g)
    part = dbwp(indptr, indices, g.n, 64, bisect=bisect, min_nnz=200)
    over = part.over_capacity()
    assert over.size > 0, "T = 64 is too small for partitions of >= 200 nonzeros"
    assert np.all(part.nnz[over] < 400) and np.all(part.nnz >= 200)
    part.check(indptr, indices)


@pytest.mark.parametrize("bisect", ["kd", "spac"])
def test_deterministic(bisect):
    g = shared_graph("USPowerGrid.mtx")
    a = dbwp(g.indptr, g.indices, g.n, 150, bisect=bisect, seed=4)
    b = dbwp(g.indptr, g.indices, g.n, 150, bisect=bisect, seed=4)
    for field in ("order", "seg_ptr", "seg_row", "part_seg"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    np.testing.assert_array_equal(a.tree.left, b.tree.left)


@pytest.mark.parametrize("levels", [0, 1, 6])
def test_spac_coarsening_levels(levels):
    g = shared_graph("adder_dcop_05.mtx")
    part = dbwp(g.indptr, g.indices, g.n, 300, bisect="spac", spac_levels=levels)
    assert_valid(part, g.indptr, g.indices, 300)
    assert part.describe()["spac_levels"] == levels


def test_spac_replicates_fewer_entries_than_kd():
    for name, capacity in (("USPowerGrid.mtx", 200), ("ca-GrQc.mtx", 500)):
        g = shared_graph(name)
        total = total_distinct(g.indptr, g.indices)
        kd = dbwp(g.indptr, g.indices, g.n, capacity, bisect="kd").replication(total)
        sc = dbwp(g.indptr, g.indices, g.n, capacity, bisect="spac").replication(total)
        assert 0 <= sc < 0.6 * kd, (name, sc, kd)


def test_describe_and_check_catch_a_broken_partitioning():
    g = shared_graph("USPowerGrid.mtx")
    part = dbwp(g.indptr, g.indices, g.n, 200)
    d = part.describe()
    assert d["partitions"] == part.n_parts and d["nnz"] == g.nnz and d["method"] == "kd"
    assert d["working_set"]["max"] <= 200 and d["over_capacity"] == 0
    part.order[[0, -1]] = part.order[[-1, 0]]  # move nonzeros across partitions
    with pytest.raises(UsageError, match="partitioning"):
        part.check(g.indptr, g.indices)


@pytest.mark.parametrize("args, kwargs, match", [
    ((np.array([0, 2]), np.array([1, 0]), 3, 4), {}, "sorted within each row"),
    ((np.array([0, 2]), np.array([0, 3]), 3, 4), {}, r"\[0, n = 3\)"),
    ((np.array([0, 1]), np.array([0, 1]), 3, 4), {}, "end at nnz"),
    ((np.array([0, 2]), np.array([0, 1]), 3, 1), {}, "capacity"),
    ((np.array([0, 2]), np.array([0, 1]), 3, 4.0), {}, "capacity"),
    ((np.array([0, 2]), np.array([0, 1]), 3, 4), {"bisect": "metis"}, "bisect"),
    ((np.array([0, 2]), np.array([0, 1]), 3, 4), {"min_nnz": 0}, "min_nnz"),
    ((np.array([0, 2]), np.array([0, 1]), 3, 4), {"spac_levels": -1}, "spac_levels"),
    ((np.array([0, 2]), np.array([0.0, 1.0]), 3, 4), {}, "indices"),
])
def test_bad_arguments_give_one_line_errors(args, kwargs, match):
    with pytest.raises(UsageError, match=match) as err:
        dbwp(*args, **kwargs)
    assert "\n" not in str(err.value)


def test_missing_pymetis_gives_the_one_line_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pymetis", None)  # import pymetis now raises ImportError
    g = shared_graph("USPowerGrid.mtx")
    with pytest.raises(FineParError) as err:
        dbwp(g.indptr, g.indices, g.n, 200, bisect="spac")
    assert str(err.value) == "SPAC bisection needs pymetis: pip install 'finepar[metis]'"
    assert dbwp(g.indptr, g.indices, g.n, 200).n_parts > 1, "K-D tiling needs no pymetis"


def test_capacity_from_cache():
    assert capacity_from_cache(50 * 10**6) == 6_250_000  # an H100's L2, half of it, 4-byte entries
    assert capacity_from_cache(4096, fraction=1.0, bytes_per_entry=8) == 512
    for kwargs in ({"cache_bytes": 0}, {"cache_bytes": 16, "fraction": 0.0}, {"cache_bytes": 4}):
        with pytest.raises(UsageError):
            capacity_from_cache(**kwargs)


# --------------------------------------------------------------------------- SPAC graphs


def test_split_and_connect_coarsens_to_the_entity_graph():
    g = shared_graph("USPowerGrid.mtx")
    psi = spac.split_and_connect(g.indptr, g.indices, g.n)
    nnz = g.nnz
    assert psi.shape == (2 * nnz, 2 * nnz) and (psi != psi.T).nnz == 0
    w = sp.triu(psi).tocoo()
    dominant = w.data == spac.DOMINANT_WEIGHT
    assert dominant.sum() == nnz and np.all(w.col[dominant] == w.row[dominant] + 1)
    # Auxiliary edges: each element's copies form a path (copies - 1 edges).
    rows_used, cols_used = np.count_nonzero(np.diff(g.indptr)), np.unique(g.indices).size
    assert (~dominant).sum() == (nnz - rows_used) + (nnz - cols_used)
    # One heavy-edge level matches exactly the dominant edges ...
    mate = spac.heavy_edge_matching(psi, np.random.default_rng(0))
    np.testing.assert_array_equal(mate, np.arange(2 * nnz) ^ 1)
    coarse, weight, cmap = spac.contract(psi, np.ones(2 * nnz, np.int64), mate)
    # ... and gives the entity graph, built independently here with scipy.
    entity = spac.entity_graph(g.indptr, g.indices, g.n)
    assert (coarse != entity).nnz == 0 and np.all(weight == 2)
    a = sp.csr_matrix(g.to_scipy())
    rows = np.repeat(np.arange(g.n), np.diff(a.indptr))
    pos_col = sp.csr_matrix((np.arange(nnz) + 1, a.indices, a.indptr)).tocsc()
    by_col = pos_col.data - 1
    same_row = np.flatnonzero(rows[1:] == rows[:-1])
    same_col = np.flatnonzero(a.indices[by_col][1:] == a.indices[by_col][:-1])
    src = np.concatenate([same_row, by_col[same_col]])
    dst = np.concatenate([same_row + 1, by_col[same_col + 1]])
    expected = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(nnz, nnz))
    assert ((expected + expected.T) != entity).nnz == 0


def test_heavy_edge_matching_is_a_matching_and_prefers_heavy_edges(rng):
    m = 400
    a = sp.random(m, m, density=0.02, random_state=5, format="csr")
    a = ((a + a.T) > 0).astype(np.int64).tolil()
    a.setdiag(0)
    heavy = rng.permutation(m).reshape(-1, 2)  # a perfect matching of weight 50
    a[heavy[:, 0], heavy[:, 1]] = 50
    a[heavy[:, 1], heavy[:, 0]] = 50
    a = a.tocsr()
    a.eliminate_zeros()
    mate = spac.heavy_edge_matching(a, rng)
    expected = np.empty(m, np.int64)
    expected[heavy[:, 0]], expected[heavy[:, 1]] = heavy[:, 1], heavy[:, 0]
    np.testing.assert_array_equal(mate, expected)
    b = sp.csr_matrix((a > 0).astype(np.int64))
    mate = spac.heavy_edge_matching(b, rng)
    matched = np.flatnonzero(mate >= 0)
    assert matched.size > m // 4
    np.testing.assert_array_equal(mate[mate[matched]], matched)
    assert np.all(np.asarray(b[matched, mate[matched]]).ravel() > 0), "mates are neighbours"
    coarse, weight, cmap = spac.contract(b, np.ones(m, np.int64), mate)
    assert weight.sum() == m and coarse.shape[0] == m - matched.size // 2
    assert coarse.sum() == b.sum() - matched.size  # each matched pair's own edge, both directions


# --------------------------------------------------------------------------- schedules


def random_tree(rng, P):
    """A random full binary tree over P leaves (random cut points), numbered in
    level order (not dbwp's pre-order)."""
    left, right, lo, hi, depth = [-1], [-1], [0], [P], [0]
    frontier = [0]
    while frontier:
        v = frontier.pop(0)
        if hi[v] - lo[v] > 1:
            cut = int(rng.integers(lo[v] + 1, hi[v]))
            for a, b in ((lo[v], cut), (cut, hi[v])):
                left.append(-1), right.append(-1), lo.append(a), hi.append(b), depth.append(depth[v] + 1)
                frontier.append(len(lo) - 1)
            left[v], right[v] = len(lo) - 2, len(lo) - 1
    arr = [np.array(x, dtype=np.int32) for x in (left, right, lo, hi, depth)]
    return SJTree(*arr)


def test_best_cover_equals_brute_force_on_random_trees(rng):
    for trial in range(300):
        tree = random_tree(rng, int(rng.integers(1, 9)))
        stime = rng.random(tree.n_nodes) * 3
        stime[rng.random(tree.n_nodes) < 0.2] = np.nan
        btime, cover = best_cover(tree, stime)
        brute, _ = brute_force_cover(tree, stime)
        assert (np.isinf(btime) and np.isinf(brute)) or np.isclose(btime, brute), trial
        assert tree.lo[cover[0]] == 0 and tree.hi[cover[-1]] == tree.n_parts
        assert all(tree.hi[a] == tree.lo[b] for a, b in zip(cover, cover[1:]))
        if np.isfinite(btime):
            assert np.isclose(np.nansum(stime[cover]), btime) and not np.isnan(stime[cover]).any()


def test_best_cover_on_a_dbwp_tree():
    g = shared_graph("ca-GrQc.mtx")
    part = dbwp(g.indptr, g.indices, g.n, 500)
    tree = part.tree
    leaves = tree.leaves()
    btime, cover = best_cover(tree, np.full(tree.n_nodes, np.nan))
    assert np.isinf(btime) and cover == leaves.tolist(), "nothing profiled: CF's leaves"
    stime = (tree.hi - tree.lo).astype(float)  # time proportional to partitions ...
    stime[0] = 0.5 * tree.n_parts              # ... but the whole in one launch is faster
    assert best_cover(tree, stime) == (0.5 * tree.n_parts, [0])
    stime[0] = np.nan  # every other cover costs P; ties go to the larger node
    assert best_cover(tree, stime) == (tree.n_parts, [int(tree.left[0]), int(tree.right[0])])
    with pytest.raises(UsageError, match="stime"):
        best_cover(tree, np.zeros(3))


def test_profiling_passes_traverse_all_work():
    g = shared_graph("adder_dcop_05.mtx")
    tree = dbwp(g.indptr, g.indices, g.n, 150).tree
    passes = profiling_passes(tree)
    assert len(passes) == tree.max_depth + 1 and passes[0] == [0]
    for d, ids in enumerate(passes):
        assert tree.lo[ids[0]] == 0 and tree.hi[ids[-1]] == tree.n_parts
        assert all(tree.hi[a] == tree.lo[b] for a, b in zip(ids, ids[1:])), "a full traversal, in order"
        assert set(tree.nodes_at_depth(d).tolist()) <= set(ids)
        assert all(tree.depth[v] == d or tree.left[v] < 0 for v in ids)
    seconds = [np.arange(len(ids), dtype=float) + d for d, ids in enumerate(passes)]
    stime = stime_from_passes(tree, passes[:3], seconds[:3])
    for d in range(3):
        for v in passes[d]:  # the fastest of a node's runs
            assert stime[v] == min(seconds[e][passes[e].index(v)] for e in range(3) if v in passes[e])
    assert np.isnan(stime[tree.depth > 2]).all()


@pytest.mark.parametrize("chunk_nnz", [1, 7, 64, 10**6])
def test_queue_chunks_respect_partitions(chunk_nnz):
    g = shared_graph("ca-GrQc.mtx")
    part = dbwp(g.indptr, g.indices, g.n, 500)
    lo, hi = queue_chunks(part, chunk_nnz)
    assert lo[0] == 0 and hi[-1] == part.n_segments and np.all(hi[:-1] == lo[1:]) and np.all(hi > lo)
    seg_part = np.repeat(np.arange(part.n_parts), np.diff(part.part_seg))
    assert np.all(seg_part[lo] == seg_part[hi - 1]), "no chunk crosses a partition boundary"
    starts = set(part.part_seg[:-1].tolist())
    assert starts <= set(lo.tolist()), "every partition starts a chunk"
    chunk_nnz_all = part.seg_ptr[hi] - part.seg_ptr[lo]
    last_seg = part.seg_ptr[hi] - part.seg_ptr[hi - 1]
    assert np.all(chunk_nnz_all - last_seg < chunk_nnz), "about chunk_nnz nonzeros"
    if chunk_nnz == 1:
        assert lo.size == part.n_segments
    if chunk_nnz == 10**6:
        assert lo.size == part.n_parts
    # SJ-Q: a queue per merged node; CF: one launch per partition.
    tree = part.tree
    cover = [int(tree.left[0]), int(tree.right[0])]
    ptr = cover_chunks(part, cover, lo)
    seg_lo, seg_hi = cover_segments(part, cover)
    assert ptr[0] == 0 and ptr[-1] == lo.size
    for i in range(len(cover)):
        assert lo[ptr[i]] == seg_lo[i] and hi[ptr[i + 1] - 1] == seg_hi[i]
    leaf_lo, leaf_hi = cover_segments(part, tree.leaves())
    np.testing.assert_array_equal(leaf_lo, part.part_seg[:-1])
    np.testing.assert_array_equal(leaf_hi, part.part_seg[1:])
    with pytest.raises(UsageError, match="cover"):
        cover_segments(part, [int(tree.right[0])])
    with pytest.raises(UsageError, match="chunk_nnz"):
        queue_chunks(part, 0)


# --------------------------------------------------------------------------- remapping


@pytest.mark.parametrize("name, max_row, capacity", [("ca-GrQc.mtx", 16, 400), ("graph500-10", 32, 500)])
def test_dbwp_remap_packs_private_vertices(name, max_row, capacity):
    g = load(name)
    rows, indptr, indices = gpu_share(g, max_row)
    part = dbwp(indptr, indices, g.n, capacity)
    perm = dbwp_remap(part, rows, indices, g.n)
    np.testing.assert_array_equal(np.sort(perm), np.arange(g.n))
    # Which partitions use each vertex, by plain Python sets.
    users = [set() for _ in range(g.n)]
    ptr = part.seg_ptr[part.part_seg]
    local_row = np.searchsorted(indptr, part.order, side="right") - 1
    for p in range(part.n_parts):
        pos = part.order[ptr[p]:ptr[p + 1]]
        for v in set(indices[pos].tolist()) | set(rows[local_row[ptr[p]:ptr[p + 1]]].tolist()):
            users[v].add(p)
    private = {p: sorted(perm[v] for v in range(g.n) if users[v] == {p}) for p in range(part.n_parts)}
    boundary = sorted(perm[v] for v in range(g.n) if len(users[v]) > 1)
    untouched = sorted(perm[v] for v in range(g.n) if not users[v])
    ranked = sorted(range(part.n_parts), key=lambda p: (len(private[p]), p))
    nxt = 0
    for p in ranked:  # contiguous blocks, fewest private vertices first
        assert private[p] == list(range(nxt, nxt + len(private[p])))
        nxt += len(private[p])
    assert boundary == list(range(nxt, nxt + len(boundary)))
    assert untouched == list(range(nxt + len(boundary), g.n))
    assert len(boundary) > 0 and nxt > 0


def test_degree_remap():
    degrees = np.array([3, 7, 3, 0, 7, 1])
    perm = degree_remap(degrees)
    np.testing.assert_array_equal(perm, [2, 0, 3, 5, 1, 4])
    g = generated_graph(10)
    perm = degree_remap(np.diff(g.indptr))
    np.testing.assert_array_equal(np.sort(perm), np.arange(g.n))
    new_degrees = np.empty(g.n, np.int64)
    new_degrees[perm] = np.diff(g.indptr)
    assert np.all(np.diff(new_degrees) <= 0)
    with pytest.raises(UsageError, match="degrees"):
        degree_remap(np.array([1, -1]))


@pytest.mark.parametrize("gaps", [0, 3, 5000])
def test_columns_seen_by_the_auto_decision(gaps, monkeypatch):
    """The working set auto counts: the share's columns with an entry, from slices of the
    matrix where the rows are a few runs, from the share's own indices otherwise."""
    from finepar import parallel
    from finepar.throttle import plan
    from finepar.throttle.plan import columns_seen
    monkeypatch.setattr(parallel, "CHUNK", 997)  # several slices a run
    monkeypatch.setattr(plan, "SLICED_RUNS", 100)
    g = generated_graph(13)
    rng = np.random.default_rng(gaps)
    rows = np.sort(rng.choice(g.n, g.n - gaps, replace=False))
    a = sp.csr_matrix(g.to_scipy())[rows]
    built = []
    seen = columns_seen(g, rows, lambda: built.append(1) or a.indices)
    want = np.zeros(g.n, dtype=bool)
    want[a.indices] = True
    np.testing.assert_array_equal(seen, want)
    assert bool(built) == (gaps > 100)
