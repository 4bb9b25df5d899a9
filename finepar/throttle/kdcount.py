"""The K-D grid tiling's passes over every entry, on the GPU (``opencl/skeleton/kdgrid.cl``).

The host passes of :mod:`finepar.throttle.kdgrid` read every column index a few times and
are bound by the host's memory bandwidth: at Graph500 scale 24 (5.2e8 entries) on the
H100 machine's 16 cores the histogram took 1.5 s and the distinct counts 2 s, more than
the rest of the tiling. The GPU reads the same entries at terabytes a second, so a
symmetric share (whose column counts are its row counts transposed, the only counts the
histogram kernel makes) is counted there: the rows go up once, in chunks that fit one
allocation, and stay for both kernels; one work-item a row adds its entries to the
grid's counters (``kd_histogram``), then marks each entry's column in its partition's
bitmap (``kd_distinct``); only the small count grids and the bitmaps come back.
"""

from __future__ import annotations

import numpy as np

from ..device import alloc, cl
from ..engine.binding import call

SOURCES = ("skeleton/kdgrid.cl",)
#: Work-items per work-group of the kernels.
GROUP = 256


class DeviceCounter:
    """The grid tiling's counts on ``pair``'s GPU side (what :func:`kdgrid.grid_tiling`
    takes as ``counter``); the share's rows stay uploaded between the two passes until
    :meth:`release`.

    Parameters
    ----------
    pair : finepar.device.DevicePair
    """

    def __init__(self, pair):
        self.pair, self.side = pair, pair.gpu
        self._chunks: list | None = None
        self._of = None

    def _upload(self, indptr: np.ndarray, indices: np.ndarray) -> list:
        """The share's rows on the device, in chunks ``(a, b, lo, ptr, idx)``."""
        if self._chunks is not None and self._of is indices:
            return self._chunks
        self.release()
        side, k = self.side, indptr.shape[0] - 1
        chunks = []
        for a, b in row_chunks(indptr, max(1 << 20, side.info.max_alloc_bytes // 4 // 2), k):
            lo, hi = int(indptr[a]), int(indptr[b])
            chunks.append((a, b, lo,
                           alloc(side, indptr[a:b + 1].astype(np.int64, copy=False),
                                 read_only=True),
                           alloc(side, indices[lo:hi].astype(np.int32, copy=False),
                                 read_only=True)))
        self._chunks, self._of = chunks, indices
        return chunks

    def _run(self, name: str, chunks: list, *args) -> None:
        kern = self.pair.kernel(self.side, SOURCES, {}, name)
        for a, b, lo, ptr, idx in chunks:
            rows = b - a
            call(kern, self.side.queue, (-(-rows // GROUP) * GROUP,), (GROUP,), np.int32(rows),
                 np.int32(a), np.int64(lo), ptr, idx, *args)
        self.side.queue.finish()

    def histogram(self, indptr: np.ndarray, indices: np.ndarray, rs: int, cs: int,
                  gr: int, gc: int) -> tuple[np.ndarray, np.ndarray]:
        """Nonzeros ``H`` and rows with an entry ``R`` per grid cell (int64, (gr, gc)):
        row ``r`` is in row range ``r >> rs``, column ``c`` in column range ``c >> cs``;
        ``indices`` (int32, sorted within each row) of the CSR ``indptr`` (int64)."""
        chunks = self._upload(indptr, indices)
        hist, rows_in = (alloc(self.side, np.zeros(gr * gc, dtype=np.uint32)) for _ in range(2))
        self._run("kd_histogram", chunks, np.int32(rs), np.int32(cs), np.int32(gc), hist,
                  rows_in)
        return tuple(self._read(buf, gr * gc).astype(np.int64).reshape(gr, gc)
                     for buf in (hist, rows_in))

    def distinct(self, indptr: np.ndarray, indices: np.ndarray, rects: np.ndarray,
                 strips: np.ndarray, cover: dict, drop: np.ndarray | None) -> np.ndarray:
        """Distinct columns of each leaf (int64, (P,)): leaf ``p`` holds the entries of
        rows ``rects[p, 0] .. rects[p, 1]`` in columns ``rects[p, 2] .. rects[p, 3]``;
        ``strips`` (row starts) and ``cover`` (per strip: its leaves' first columns and
        ids, by column) as :func:`kdgrid.strip_cover` makes them; rows in ``drop`` skipped."""
        chunks = self._upload(indptr, indices)
        starts = [int(s) for s in strips[:-1]]
        cover_ptr = np.zeros(len(starts) + 1, dtype=np.int32)
        np.cumsum([cover[s][1].size for s in starts], out=cover_ptr[1:])
        cut = np.concatenate([cover[s][0] for s in starts]).astype(np.int32)
        leaf = np.concatenate([cover[s][1] for s in starts]).astype(np.int32)
        words = -(-(rects[:, 3] - rects[:, 2]) // 32)
        word0 = np.zeros(words.size + 1, dtype=np.int64)
        np.cumsum(words, out=word0[1:])
        bits = alloc(self.side, np.zeros(int(word0[-1]), dtype=np.uint32))
        up = [alloc(self.side, a, read_only=True) for a in (
            strips.astype(np.int32), cover_ptr, cut, leaf, rects[:, 2].astype(np.int32),
            word0[:-1], np.zeros(1, np.uint8) if drop is None else drop.astype(np.uint8))]
        self._run("kd_distinct", chunks, np.int32(len(starts)), *up[:6],
                  np.int32(drop is not None), up[6], bits)
        for buf in up:
            buf.release()
        marked = popcount(self._read(bits, int(word0[-1])))
        return np.add.reduceat(marked, word0[:-1]) if words.size else np.zeros(0, np.int64)

    def _read(self, buf, count: int) -> np.ndarray:
        host = np.empty(count, dtype=np.uint32)
        cl().enqueue_copy(self.side.queue, host, buf, is_blocking=True)
        buf.release()
        return host

    def release(self) -> None:
        """Free the uploaded rows."""
        for *_, ptr, idx in self._chunks or ():
            ptr.release()
            idx.release()
        self._chunks = self._of = None


def popcount(words: np.ndarray) -> np.ndarray:
    """Set bits of each uint32 (int64)."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(words).astype(np.int64)
    return np.unpackbits(words.view(np.uint8)).reshape(-1, 32).sum(axis=1, dtype=np.int64)


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
