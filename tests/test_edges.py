"""Tests of finepar.io.edges: edge lists gathered by row range into one pattern CSR."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.sparse as sp

import finepar.graph
from finepar.io import edges
from finepar.io.edges import RowBuckets, pattern_csr
from finepar.errors import InputError


def scipy_pattern(src, dst, n):
    a = sp.coo_array((np.ones(len(src)), (src, dst)), shape=(n, n)).tocsr()
    a.sum_duplicates()
    return a.indptr, a.indices


@pytest.fixture
def tiny_buckets(monkeypatch):
    """Buckets of a few entries, first blocks of a tenth of a bucket: many of each."""
    monkeypatch.setattr(edges, "_BUCKET_TARGET", 16)
    monkeypatch.setattr(edges, "_BUCKET_MIN", 4)
    monkeypatch.setattr(edges, "_SLACK", 0.1)


def test_many_threads_many_buckets_growing_blocks(tiny_buckets):
    rng = np.random.default_rng(3)
    n = 3001  # not a power of two: the last bucket is partial
    src = rng.integers(0, n, 60_000).astype(np.int32)
    dst = (rng.zipf(1.5, 60_000) % n).astype(np.int32)  # skewed columns, many duplicates
    buckets = RowBuckets(n, src.size, workers=4)
    assert 256 < buckets.n_buckets <= 4096  # 16-bit bucket ids
    pieces = np.array_split(np.arange(src.size), 37)
    threads = [threading.Thread(target=lambda p=p: buckets.add(src[p], dst[p])) for p in pieces]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(len(s.blocks) > 1 for s in buckets._stores) > 10  # blocks grew
    done = []
    indptr, indices = buckets.to_csr(4, on_done=lambda k, total: done.append((k, total)))
    ref_indptr, ref_indices = scipy_pattern(src, dst, n)
    assert indptr.dtype == np.int32 and indices.dtype == np.int32
    np.testing.assert_array_equal(indptr, ref_indptr)
    np.testing.assert_array_equal(indices, ref_indices)
    assert done == [(k, buckets.n_buckets) for k in range(1, buckets.n_buckets + 1)]
    assert all(not s.blocks for s in buckets._stores)  # storage released
    with pytest.raises(InputError, match="empty graph"):  # and the entries consumed
        buckets.to_csr(1)


def test_empty_buckets_and_one_bucket_per_row(tiny_buckets):
    """All entries in two rows of a wide range: most buckets stay empty."""
    n = 1 << 12
    buckets = RowBuckets(n, 1 << 16, workers=2)
    buckets.add(np.array([5, 5, 4000, 5], np.int32), np.array([7, 1, 0, 7], np.int32))
    indptr, indices = buckets.to_csr(2)
    assert indptr[5] == 0 and indptr[6] == 2 and indptr[4000] == 2 and indptr[-1] == 3
    np.testing.assert_array_equal(indices, [1, 7, 0])


def test_pattern_csr_symmetric_and_self_loops(tiny_buckets):
    rng = np.random.default_rng(8)
    src = rng.integers(0, 500, 5000)
    dst = rng.integers(0, 500, 5000)
    dst[:100] = src[:100]  # self-loops
    for workers in (1, 3):
        indptr, indices, loops = pattern_csr(src, dst, 500, symmetric=True, drop_self_loops=True,
                                             workers=workers)
        keep = src != dst
        expect = scipy_pattern(np.concatenate((src[keep], dst[keep])),
                               np.concatenate((dst[keep], src[keep])), 500)
        assert loops == int((~keep).sum()) >= 100
        np.testing.assert_array_equal(indptr, expect[0])
        np.testing.assert_array_equal(indices, expect[1])


def test_int64_indptr_exactly_past_the_int32_limit(monkeypatch, tiny_buckets):
    """finepar.graph.indptr_dtype reads INT32_MAX when called: lowering it makes a
    small graph cross the limit."""
    src, dst = np.arange(100) % 37, (np.arange(100) * 7) % 41
    indptr, indices, _ = pattern_csr(src, dst, 50)
    nnz = int(indptr[-1])
    monkeypatch.setattr(finepar.graph, "INT32_MAX", nnz)
    at_limit, _, _ = pattern_csr(src, dst, 50, workers=2)
    assert at_limit.dtype == np.int32
    monkeypatch.setattr(finepar.graph, "INT32_MAX", nnz - 1)
    past, past_indices, _ = pattern_csr(src, dst, 50, workers=2)
    assert past.dtype == np.int64 and past_indices.dtype == np.int32
    np.testing.assert_array_equal(past, indptr)
    np.testing.assert_array_equal(past_indices, indices)


def test_no_entries_names_the_input():
    buckets = RowBuckets(10, 0)
    with pytest.raises(InputError, match="edges.txt: empty graph: 0 stored entries"):
        buckets.to_csr(1, name="edges.txt")


def test_a_failing_bucket_raises_its_error_and_releases_the_others(tiny_buckets, monkeypatch):
    """Threads waiting for an earlier bucket's count must not hang when it fails."""
    rng = np.random.default_rng(1)
    src = rng.integers(0, 2000, 20_000).astype(np.int32)
    dst = rng.integers(0, 2000, 20_000).astype(np.int32)
    buckets = RowBuckets(2000, src.size, workers=4)
    buckets.add(src, dst)
    convert = edges._range_csr
    calls = []

    def failing(rows, cols, n_rows, n):
        calls.append(1)
        if len(calls) == 3:
            raise MemoryError("bucket too large")
        return convert(rows, cols, n_rows, n)

    monkeypatch.setattr(edges, "_range_csr", failing)
    outcome = []

    def build():
        try:
            buckets.to_csr(4)
        except MemoryError as exc:
            outcome.append(str(exc))

    t = threading.Thread(target=build)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive()
    assert outcome == ["bucket too large"]


def test_workers_must_be_positive():
    assert edges.n_workers(3) == 3 and edges.n_workers(None) >= 1
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        edges.n_workers(0)
