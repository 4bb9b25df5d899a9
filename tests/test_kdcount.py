"""The K-D grid tiling's histogram kernel (opencl/skeleton/kdgrid.cl, finepar.throttle.kdcount) on
the emulated pair's GPU side, against the host pass of finepar.throttle.kdgrid: the same
counts on every graph and grid, in one chunk of rows or many, and the same partitions when
a throttled share is cut with it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import generated_graph, shared_graph
from finepar.throttle import kdcount, kdgrid
from finepar.throttle.dbwp import dbwp


def host_counts(g, rs, cs):
    redge, cedge = kdgrid.edges(g.n, rs), kdgrid.edges(g.n, cs)
    hist, rows_in, _, _ = kdgrid._histogram(g.indptr, g.indices, g.n, redge, cs,
                                            cedge.size - 1)
    return hist, rows_in


def numpy_counts(g, rs, cs):
    """H and R recounted plainly: every entry's cell, and every (row, cell) once."""
    a = sp.coo_matrix(g.to_scipy())
    gr, gc = kdgrid.edges(g.n, rs).size - 1, kdgrid.edges(g.n, cs).size - 1
    cell = (a.row.astype(np.int64) >> rs) * gc + (a.col >> cs)
    hist = np.bincount(cell, minlength=gr * gc).reshape(gr, gc)
    pairs = np.unique(a.row.astype(np.int64) * gc + (a.col >> cs))
    rows_in = np.bincount((pairs // gc >> rs) * gc + pairs % gc, minlength=gr * gc)
    return hist, rows_in.reshape(gr, gc)


@pytest.mark.parametrize("name", ["graph500-11", "luxembourg.mtx", "wiki-Vote.txt",
                                  "cnr-2000.mtx.gz"])
@pytest.mark.parametrize("rs, cs", [(0, 0), (4, 6), (7, 3)])
@pytest.mark.parametrize("mode", ["shared", "split"])
def test_device_histogram_counts_as_the_host(name, rs, cs, mode, pairs, monkeypatch):
    g = generated_graph(11) if name.startswith("graph500") else shared_graph(name)
    if (g.n >> rs) > 4096 or (g.n >> cs) > 4096:  # keep the grids small
        rs, cs = max(rs, (g.n >> 12).bit_length()), max(cs, (g.n >> 12).bit_length())
    gr, gc = kdgrid.edges(g.n, rs).size - 1, kdgrid.edges(g.n, cs).size - 1
    if name == "graph500-11":  # many chunks of rows
        monkeypatch.setattr(kdcount, "row_chunks",
                            lambda indptr, m, k, f=kdcount.row_chunks: f(indptr, 1000, k))
    counter = kdcount.DeviceCounter(pairs[mode])
    hist, rows_in = counter.histogram(g.indptr, g.indices, rs, cs, gr, gc)
    counter.release()
    want = numpy_counts(g, rs, cs)
    np.testing.assert_array_equal(hist, want[0])
    np.testing.assert_array_equal(rows_in, want[1])
    host = host_counts(g, rs, cs)
    np.testing.assert_array_equal(hist, host[0])
    np.testing.assert_array_equal(rows_in, host[1])


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_row_chunks_cover_every_row_within_the_limit(dtype):
    indptr = np.array([0, 5, 5, 9, 30, 31, 40], dtype=dtype)
    assert kdcount.row_chunks(indptr, 1 << 33, 6) == [(0, 6)]  # a limit past int32's range
    chunks = kdcount.row_chunks(indptr, 10, 6)
    assert chunks[0][0] == 0 and chunks[-1][1] == 6
    assert all(b == c for (_, b), (c, _) in zip(chunks, chunks[1:]))
    for a, b in chunks:  # within the limit, or one long row alone
        assert indptr[b] - indptr[a] <= 10 or b == a + 1


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_partitions_counted_on_the_device_equal_the_host_ones(mode, pairs, monkeypatch):
    monkeypatch.setattr(kdgrid, "GRID_MIN_NNZ", 0)
    monkeypatch.setattr(kdgrid, "MAX_BINS", 128)
    g = generated_graph(12)
    assert g.symmetric
    counter = kdcount.DeviceCounter(pairs[mode])
    host = dbwp(g.indptr, g.indices, g.n, 2000, symmetric=True)
    dev = dbwp(g.indptr, g.indices, g.n, 2000, symmetric=True, counter=counter)
    assert "distinct" in dev.extra["stage_seconds"]  # counted on the device
    for key in ("seg_start", "seg_row", "seg_ptr", "part_seg", "distinct_x", "distinct_y"):
        np.testing.assert_array_equal(getattr(dev, key), getattr(host, key))
    dev.check(g.indptr, g.indices)
    assert counter._chunks is None  # released
    # a share without hubs, cut with the whole tree: the dropped rows are not counted
    from finepar.throttle.plan import of_whole
    rows = np.sort(np.argsort(np.diff(g.indptr), kind="stable")[:g.n - 5])
    host = of_whole(g, rows, 2000)
    dev = of_whole(g, rows, 2000, counter)
    np.testing.assert_array_equal(dev.distinct_x, host.distinct_x)
    np.testing.assert_array_equal(dev.seg_start, host.seg_start)


@pytest.mark.parametrize("name", ["wiki-Vote.txt", "cnr-2000.mtx.gz"])
def test_distinct_counted_on_the_device_for_an_asymmetric_share(name, pairs, monkeypatch):
    """An asymmetric share's histogram is counted on the host, its partitions' distinct
    columns on the device: the same partitions, checked by recount."""
    monkeypatch.setattr(kdgrid, "GRID_MIN_NNZ", 0)
    monkeypatch.setattr(kdgrid, "MAX_BINS", 256)
    g = shared_graph(name)
    cap = max(64, g.n // 3)
    host = dbwp(g.indptr, g.indices, g.n, cap)
    dev = dbwp(g.indptr, g.indices, g.n, cap, counter=kdcount.DeviceCounter(pairs["split"]))
    assert dev.n_parts > 1 and "distinct" in dev.extra["stage_seconds"]
    np.testing.assert_array_equal(dev.distinct_x, host.distinct_x)
    dev.check(g.indptr, g.indices)


def test_popcount_counts_set_bits():
    words = np.array([0, 1, 3, 0xFFFFFFFF, 0x80000000], dtype=np.uint32)
    np.testing.assert_array_equal(kdcount.popcount(words), [0, 1, 2, 32, 1])


def test_device_counter_only_where_the_gpu_has_its_own_memory(pairs, monkeypatch):
    from finepar.throttle.plan import device_counter
    assert device_counter(None) is None
    assert device_counter(pairs["split"]) is None  # emulated: the GPU side is host memory
    monkeypatch.setattr(pairs["split"].gpu, "host_memory", False)
    assert device_counter(pairs["split"]) is not None


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_throttled_run_counted_on_the_device_answers_right(mode, pairs, monkeypatch):
    """SpMV and PageRank throttled with the histogram counted by the kernel equal their
    references (the whole matrix, and a share without hubs cut with the whole tree)."""
    from finepar import api, apps
    from finepar.split import choose
    monkeypatch.setattr(kdgrid, "GRID_MIN_NNZ", 0)
    monkeypatch.setattr(kdgrid, "MAX_BINS", 128)
    calls = []

    class Counting(kdcount.DeviceCounter):
        def distinct(self, *a):
            calls.append(len(a[2]))
            return super().distinct(*a)

    def counter(pair):
        return Counting(pair)
    monkeypatch.setattr(choose, "device_counter", counter)
    g = generated_graph(11, 4)
    threshold = int(np.sort(np.diff(g.indptr))[-4])
    for name, kw in (("spmv", {"devices": "gpu"}), ("spmv", {"threshold": threshold}),
                     ("pagerank", {"devices": "gpu"})):
        app = apps.get(name)
        params = app.reference_params(g, app.check_params(g, {}))
        res, rep = api.run(name, g, pair=pairs[mode], warmup=False, schedule="cf",
                           cache_bytes=max(64, 8 * g.n // 6), **params, **kw)
        assert not app.check(g, res, app.reference(g, params), params), (name, kw)
        assert rep.plan["throttle"]["partitions"] > 1
    assert calls, "the kernel counted"
