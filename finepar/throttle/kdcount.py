"""The K-D grid tiling's histogram on the GPU (``opencl/kdgrid.cl``).

The host pass of :func:`finepar.throttle.kdgrid._histogram` reads every column index a
few times and is bound by the host's memory bandwidth: 1.7 s for Graph500 scale 24's
5.2e8 entries on the H100 machine's 16 cores, more than the rest of the tiling. The GPU
reads them at terabytes a second, so a symmetric share (whose column counts are its row
counts transposed, the only counts the kernel makes) is counted there: the rows go up in
chunks that fit one allocation, one work-item a row adds its entries to the grid's
counters with atomics, and the two small count grids come back.
"""

from __future__ import annotations

import numpy as np

from ..runtime import alloc, cl

SOURCES = ("kdgrid.cl",)
#: Work-items per work-group of the histogram kernel.
GROUP = 256


def device_histogram(pair, indptr: np.ndarray, indices: np.ndarray, rs: int, cs: int,
                     gr: int, gc: int) -> tuple[np.ndarray, np.ndarray]:
    """Nonzeros and rows with an entry per grid cell, counted on ``pair``'s GPU side.

    Parameters
    ----------
    pair : finepar.runtime.DevicePair
    indptr : ndarray of int64, shape (k+1,)
    indices : ndarray of int32, shape (nnz,)
        Sorted within each row.
    rs, cs : int
        Row ``r`` is in row range ``r >> rs``, column ``c`` in column range ``c >> cs``.
    gr, gc : int
        The grid's row and column ranges.

    Returns
    -------
    (ndarray, ndarray)
        ``H`` and ``R``, int64, shape (gr, gc): what the host pass counts.
    """
    mod, side = cl(), pair.gpu
    kern = pair.kernel(side, SOURCES, {}, "kd_histogram")
    hist = alloc(side, np.zeros(gr * gc, dtype=np.uint32))
    rows_in = alloc(side, np.zeros(gr * gc, dtype=np.uint32))
    k = indptr.shape[0] - 1
    for a, b in row_chunks(indptr, max(1 << 20, side.info.max_alloc_bytes // 4 // 2), k):
        lo, hi = int(indptr[a]), int(indptr[b])
        ptr = alloc(side, indptr[a:b + 1].astype(np.int64, copy=False), read_only=True)
        idx = alloc(side, indices[lo:hi].astype(np.int32, copy=False), read_only=True)
        rows = b - a
        kern(side.queue, (-(-rows // GROUP) * GROUP,), (GROUP,), np.int32(rows), np.int32(a),
             np.int64(lo), ptr, idx, np.int32(rs), np.int32(cs), np.int32(gc), hist, rows_in)
        side.queue.finish()
        ptr.release()
        idx.release()
    out = [np.empty(gr * gc, dtype=np.uint32) for _ in range(2)]
    for host, buf in zip(out, (hist, rows_in)):
        mod.enqueue_copy(side.queue, host, buf, is_blocking=True)
        buf.release()
    return tuple(o.astype(np.int64).reshape(gr, gc) for o in out)


def row_chunks(indptr: np.ndarray, max_entries: int, k: int) -> list[tuple[int, int]]:
    """Consecutive row ranges ``(a, b)`` of at most ``max_entries`` entries each (a row
    longer than that is a range of its own)."""
    out, a = [], 0
    while a < k:
        b = int(np.searchsorted(indptr, int(indptr[a]) + int(max_entries), side="right")) - 1
        b = min(max(b, a + 1), k)
        out.append((a, b))
        a = b
    return out
