"""The preparation's fast paths: entry runs instead of gathers, the whole CSR on a GPU that
holds most of it, O(n) summaries. Each checked against the plain numpy it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from finepar import graph as graph_module
from finepar import parallel
from finepar.apps.base import component_sizes, top_vertices
from finepar.graph import RowEntries
from finepar.apps.spmv import reference_spmv, spmv_error_bound


@pytest.mark.parametrize("few_runs,piece", [(0, 8 << 20), (4096, 8 << 20), (4096, 3)])
def test_row_entries_equal_row_positions(few_runs, piece, monkeypatch):
    """Every slice of a row list's entries, by runs (views, slices joined by the threads
    piece by piece, threaded gathers), equals numpy's fancy indexing of the explicit
    positions."""
    monkeypatch.setattr(graph_module, "FEW_RUNS", few_runs)
    monkeypatch.setattr(parallel, "COPY_BYTES", piece)
    rng = np.random.default_rng(7)
    for trial in range(120):
        n = int(rng.integers(1, 60))
        lengths = rng.integers(0, 7, n)
        indptr = np.concatenate(([0], np.cumsum(lengths)))
        values = rng.integers(0, 1000, int(indptr[-1]))
        k = int(rng.integers(0, n + 1))
        rows = np.sort(rng.choice(n, k, replace=False)) if trial % 2 else rng.permutation(n)[:k]
        ref = (np.concatenate([np.arange(indptr[r], indptr[r + 1]) for r in rows])
               if k else np.zeros(0, np.int64))
        ent = RowEntries.of_rows(indptr, rows)
        assert ent.size == ref.size
        np.testing.assert_array_equal(ent.positions(), ref)
        for _ in range(4):
            lo = int(rng.integers(0, ref.size + 1))
            hi = int(rng.integers(lo, ref.size + 1))
            np.testing.assert_array_equal(ent.take(values, lo, hi), values[ref[lo:hi]])
        shuffled = ref[rng.permutation(ref.size)]
        np.testing.assert_array_equal(RowEntries.of_positions(shuffled).positions(), shuffled)


def test_row_entries_of_consecutive_rows_are_one_view():
    indptr = np.array([0, 2, 2, 5, 9])
    values = np.arange(9)
    ent = RowEntries.of_rows(indptr, np.arange(4))
    assert ent.runs == 1
    part = ent.take(values, 1, 7)
    assert np.shares_memory(part, values)
    np.testing.assert_array_equal(part, values[1:7])
    assert RowEntries.of_rows(indptr, [3, 2]).runs == 2  # rows out of order: two runs


def test_top_vertices_and_component_sizes_match_sorting():
    rng = np.random.default_rng(3)
    for _ in range(200):
        v = rng.integers(0, 4, int(rng.integers(1, 30))).astype(np.float32)  # many ties
        k = int(rng.integers(0, 8))
        np.testing.assert_array_equal(top_vertices(v, k), np.argsort(-v, kind="stable")[:k])
        labels = rng.integers(0, v.size, v.size)
        sizes = component_sizes(labels)
        uniq, counts = np.unique(labels, return_counts=True)
        np.testing.assert_array_equal(np.flatnonzero(sizes), uniq)
        np.testing.assert_array_equal(sizes[uniq], counts)


@pytest.mark.parametrize("threshold", [0, 8, 10**9])
def test_split_memory_gpu_reads_the_whole_csr_when_it_holds_most(pairs, threshold):
    """In split memory the GPU keeps a gathered copy of its rows only when they are under
    half the entries; either way every row's product is right."""
    from conftest import shared_graph
    from finepar.apps.spmv import SpMV
    from finepar.engine import Engine
    from finepar.partition import fine_grained
    g = shared_graph("memplus.mtx")
    plan = fine_grained(g.row_lengths(), threshold, grouping="pow4")
    eng = Engine(pairs["split"], g, plan, SpMV.ops)
    gpu_share = plan.shares["gpu"].nnz
    if "gpu" in eng.stores:
        assert eng.stores["gpu"].low.compact == (2 * gpu_share < g.nnz)
    x = np.random.default_rng(0).standard_normal(g.n).astype(np.float32)
    eng.vector("x", x)
    eng.vector("y", np.full(g.n, np.nan, dtype=np.float32))
    eng.rowop(x="x", y="y")
    y = eng.read("y")
    assert np.all(np.abs(y - reference_spmv(g, x)) <= spmv_error_bound(g, x))


def test_blocks_packed_by_pieces_keep_every_limit(monkeypatch):
    """Long segment lists are packed on threads, piece by piece: a block starts at every
    piece, and every block still fits local memory (or is one long segment), holds at most
    the work-group's segments and never crosses a partition bound."""
    from finepar.engine import launches
    monkeypatch.setattr(launches, "PACK_SEGMENTS", 37)
    rng = np.random.default_rng(5)
    seg_len = rng.integers(0, 300, 2000)
    bounds = np.sort(rng.choice(2000, 9, replace=False))
    blk = launches.pack_blocks(seg_len, 256, 16, bounds)
    assert blk[0] == 0 and blk[-1] == seg_len.size and np.all(np.diff(blk) > 0)
    assert set(range(0, 2000, 37)) | set(bounds.tolist()) <= set(blk.tolist())
    for a, b in zip(blk[:-1], blk[1:]):
        assert b - a <= 16 and (seg_len[a:b].sum() <= 256 or b - a == 1)
