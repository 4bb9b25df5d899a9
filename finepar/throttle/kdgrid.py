"""K-D tiling of a large share on a grid of row and column ranges (throttling-atc18 §4.1,
"K-D Tiling", at the scale of a GPU's L2).

:func:`finepar.throttle.dbwp.dbwp` bisects the exact tuple list: every level of its tree
is a few passes of fancy indexing over all ``nnz`` positions in both orders, minutes of
one host core at Graph500 scale 24 (5.2e8 entries). For a cache of tens of megabytes the
partitions hold millions of rows and columns, so the same alternating median splits are
made here on a histogram instead:

1. one parallel pass counts the share's nonzeros per cell of a ``G_r x G_c`` grid of row
   ranges and column ranges (at most :data:`MAX_BINS` each, one bin per row or column on
   small shares) and marks the columns that hold an entry;
2. the tree is cut on the grid alone, from its 2-D prefix sums: a node (a rectangle of
   cells) at even depth is split at its median column range, at odd depth at its median
   row range, counted in nonzeros (the other dimension when one cannot be split), until
   its rows with entries plus its columns with entries fit the capacity ``T`` (an upper
   bound of the node's distinct y and x entries, so every leaf is cache-fit);
3. a second parallel pass cuts every row at its leaves' column ranges: each leaf's part of
   a row is one contiguous *segment* of the row's (sorted) entries, so the partitioning is
   a table of segments (row, first position, length), ordered by partition then row, and
   never a permutation of all ``nnz`` positions; the same pass marks each partition's
   columns, so the partitions' exact distinct x and y counts come with it.

The passes are numpy calls on the shared thread pool. The host histogram is bound by
memory bandwidth and by numpy's ``bincount``, which holds the GIL (1.7 s for Graph500
scale 24 on 16 threads; scipy's GIL-free sparse product counted no faster there), so where
the GPU has memory of its own it counts instead (:mod:`.kdcount`).

Used by :func:`~finepar.throttle.dbwp.dbwp` for shares of at least :data:`GRID_MIN_NNZ`
entries whose grid can resolve ``T``; smaller shares keep the exact bisection.
"""

from __future__ import annotations

import threading

import numpy as np

from ..parallel import CHUNK, chunked, pool

#: Shares with at least this many entries are tiled on the grid.
GRID_MIN_NNZ = 1 << 20
#: Most bins per dimension (the histogram is at most MAX_BINS**2 int64 cells).
MAX_BINS = 1024


def bin_shift(count: int, capacity: int) -> int | None:
    """log2 of the width of a bin of ``count`` rows or columns: the narrowest power of two
    that makes at most :data:`MAX_BINS` bins (item ``i`` is in bin ``i >> shift``); None
    when a bin would hold more than a quarter of ``capacity`` (the grid cannot resolve
    ``T``: the exact bisection is used)."""
    shift = max(0, (-(-int(count) // MAX_BINS) - 1).bit_length())
    return shift if (1 << shift) * 4 <= capacity or shift == 0 else None


def edges(count: int, shift: int) -> np.ndarray:
    """Bin ``b`` holds items ``edges[b] .. edges[b+1]`` (int64)."""
    g = -(-int(count) // (1 << shift))
    return np.minimum(np.arange(g + 1, dtype=np.int64) << shift, count)


def grid_tiling(indptr: np.ndarray, indices: np.ndarray, n: int, capacity: int,
                min_nnz: int, symmetric: bool = False,
                drop: np.ndarray | None = None, counter=None) -> dict | None:
    """Cache-fit partitions of a CSR share by K-D tiling on a grid.

    Parameters
    ----------
    indptr : ndarray of int64, shape (k+1,)
    indices : ndarray of int, shape (nnz,)
        Sorted within each row, in ``[0, n)``.
    n : int
    capacity : int
        ``T``, distinct x plus y entries a partition may touch.
    min_nnz : int
        A node with fewer than ``2 * min_nnz`` nonzeros is not split.
    symmetric : bool
        The share is a whole symmetric matrix (``k == n``): a cell's columns with an entry
        are the transposed cell's rows with one, so they are not counted again.
    drop : ndarray of bool, shape (k,), optional
        Rows left out of the segments: the tree is cut for every row, the segments (and
        the distinct counts) are those of the other rows, renumbered as the CSR without
        the dropped rows numbers its rows and positions (a subset of a cache-fit
        partition's entries fits too).
    counter : finepar.throttle.kdcount.DeviceCounter, optional
        Counts on the GPU: the histogram of a symmetric share, and every share's distinct
        columns per partition (its buffers are released before this returns).

    Returns
    -------
    dict or None
        What :class:`~finepar.throttle.dbwp.Partitioning` needs (``seg_row``,
        ``seg_start``, ``seg_ptr``, ``part_seg``, ``tree`` arrays, ``nnz``, ``dx``,
        ``dy``, ``grid``, ``stage_seconds``), or None when the grid cannot resolve
        ``capacity`` or a partition holds only dropped rows.
    """
    import time
    k = indptr.shape[0] - 1
    rs, cs = bin_shift(k, capacity), bin_shift(n, capacity)
    if rs is None or cs is None:
        return None
    symmetric = symmetric and k == n
    redge, cedge = edges(k, rs), edges(n, cs)
    gr, gc = redge.size - 1, cedge.size - 1
    clock = [time.perf_counter()]

    def lap() -> float:
        clock.append(time.perf_counter())
        return clock[-1] - clock[-2]
    if counter is not None and int(indptr[-1]) >= 1 << 32:
        counter = None  # the device counts in uint32
    try:
        if counter is not None and symmetric:
            hist, rows_in = counter.histogram(indptr, indices, rs, cs, gr, gc)
            cols_in, col_seen = rows_in.T.copy(), np.diff(indptr) > 0
        else:
            hist, rows_in, cols_in, col_seen = _histogram(indptr, indices, n, redge, cs, gc,
                                                          symmetric)
        row_full = (np.diff(indptr) > 0).astype(np.int64)
        rows_ne = np.add.reduceat(row_full, redge[:-1])  # rows with an entry, per row bin
        cols_ne = np.add.reduceat(col_seen.astype(np.int64), cedge[:-1])
        stages = {"histogram": lap()}
        tree = _Tiler(hist, rows_in, cols_in, rows_ne, cols_ne, capacity, min_nnz).run()
        rects = np.array([(redge[a], redge[b], cedge[c], cedge[d])
                          for a, b, c, d in tree["rects"]], dtype=np.int64)
        stages["tree"] = lap()
        strips, cover = strip_cover(rects, k)
        dx = None
        if counter is not None:
            dx = counter.distinct(indptr, indices, rects, strips, cover, drop)
            stages["distinct"] = lap()
    finally:
        if counter is not None:
            counter.release()
    segs = _segments(indptr, indices, rects, drop, strips, cover, mark=dx is None)
    stages["segments"] = lap()
    if (np.diff(segs["part_seg"]) == 0).any():
        return None  # a partition of dropped rows alone
    dx, dy = segs.pop("dx", dx), np.diff(segs["part_seg"])  # a row has one segment a partition
    return {**segs, "tree": tree, "dx": dx, "dy": dy, "grid": [gr, gc],
            "stage_seconds": stages}


def _histogram(indptr, indices, n, redge, cs, gc, symmetric=False):
    """Per grid cell (int64, (gr, gc) each): the nonzeros ``H``, the rows of the row bin
    with an entry in the cell ``R``, the columns of the column bin with an entry in the
    cell ``C`` (``R`` transposed for a ``symmetric`` share); and the columns holding any
    entry (bool, n). One task per row bin on the pool's threads; column ``c`` is in bin
    ``c >> cs``.

    ``H`` and ``R`` come from one count of ``2 * bin + first`` (one pass over the entries
    instead of two); the columns seen are marked in a table per thread (no two threads
    write one cache line) and or-ed at the end."""
    gr = redge.size - 1
    hist, rows_in, cols_in = (np.zeros((gr, gc), dtype=np.int64) for _ in range(3))
    seen_by_thread: dict[int, np.ndarray] = {}  # this call's table of each thread

    def one(i: int) -> None:
        a, b = int(redge[i]), int(redge[i + 1])
        lo, hi = int(indptr[a]), int(indptr[b])
        if hi == lo:
            return
        cols = indices[lo:hi]
        key = (cols >> cs).astype(np.int32)
        first = np.ones(hi - lo, dtype=bool)  # a row's first entry in a column bin
        np.not_equal(key[1:], key[:-1], out=first[1:])
        first[indptr[a:b][indptr[a:b] < hi] - lo] = True
        key <<= 1
        key += first
        counts = _bincount(key, 2 * gc).reshape(gc, 2)
        rows_in[i] = counts[:, 1]
        hist[i] = counts[:, 0] + counts[:, 1]
        if symmetric:
            return
        u = cols[_first_of_each(cols, n)]
        cols_in[i] = _bincount(u >> cs, gc)
        me = threading.get_ident()
        if me not in seen_by_thread:
            seen_by_thread[me] = np.zeros(n, dtype=bool)
        seen_by_thread[me][u] = True
    list(pool().map(one, range(gr)))
    if symmetric:  # entry (r, c) is entry (c, r): a column is seen where its row has entries
        return hist, rows_in, rows_in.T.copy(), np.diff(indptr) > 0
    col_seen = np.zeros(n, dtype=bool)
    for seen in seen_by_thread.values():
        chunked(lambda lo, hi, s=seen: np.logical_or(col_seen[lo:hi], s[lo:hi],
                                                     out=col_seen[lo:hi]), n)
    return hist, rows_in, cols_in, col_seen


_LOCAL = threading.local()


def _bincount(keys: np.ndarray, size: int) -> np.ndarray:
    """``np.bincount(keys, minlength=size)``: the histogram's one counting call
    (``benchmarks/tiling.py`` swaps it to compare other counts)."""
    return np.bincount(keys, minlength=size)


def _first_of_each(values: np.ndarray, n: int) -> np.ndarray:
    """A mask keeping one position of each distinct value (ints in ``[0, n)``), in O(m)
    with no sort: every position writes itself to a per-thread table at its value, and a
    position is kept where it reads itself back (whichever write won, exactly one does;
    the table needs no clearing, as only this call's values are read)."""
    table = getattr(_LOCAL, "table", None)
    wide = values.size >= 1 << 31
    if table is None or table.size < n or (wide and table.dtype != np.int64):
        table = _LOCAL.table = np.empty(n, dtype=np.int64 if wide else np.int32)
    pos = np.arange(values.size, dtype=table.dtype)
    table[values] = pos
    return table[values] == pos


def _rows_per_chunk(indptr: np.ndarray) -> int:
    """Rows per chunk of a pass over a share (about :data:`CHUNK` entries each)."""
    k = indptr.shape[0] - 1
    return max(1, int(k * CHUNK // max(int(indptr[-1]), 1)))


class _Tiler:
    """The tree, cut on the grid's prefix sums; nodes numbered in pre-order.

    A node's working set is bounded per bin: its rows with an entry in its column range
    are, in each of its row bins, at most the bin's rows with an entry anywhere and at
    most the sum of the bin's per-cell row counts ``R`` over the range (and the same for
    columns with ``C``)."""

    def __init__(self, hist, rows_in, cols_in, rows_ne, cols_ne, capacity, min_nnz):
        def prefix2(a):
            p = np.zeros((a.shape[0] + 1, a.shape[1] + 1), dtype=np.int64)
            np.cumsum(np.cumsum(a, axis=0), axis=1, out=p[1:, 1:])
            return p
        self.p = prefix2(hist)
        self.rp = np.zeros((rows_in.shape[0], rows_in.shape[1] + 1), dtype=np.int64)
        np.cumsum(rows_in, axis=1, out=self.rp[:, 1:])  # along columns, per row bin
        self.cp = np.zeros((cols_in.shape[0] + 1, cols_in.shape[1]), dtype=np.int64)
        np.cumsum(cols_in, axis=0, out=self.cp[1:])  # along rows, per column bin
        self.rn, self.cn = rows_ne, cols_ne
        self.cap, self.min = capacity, min_nnz
        self.left, self.right, self.depth, self.rects, self.leaf = [], [], [], [], []

    def nnz(self, r0, r1, c0, c1) -> int:
        p = self.p
        return int(p[r1, c1] - p[r0, c1] - p[r1, c0] + p[r0, c0])

    def bound(self, r0, r1, c0, c1) -> int:
        """Distinct y plus distinct x entries of the node, at most."""
        rows = np.minimum(self.rn[r0:r1], self.rp[r0:r1, c1] - self.rp[r0:r1, c0]).sum()
        cols = np.minimum(self.cn[c0:c1], self.cp[r1, c0:c1] - self.cp[r0, c0:c1]).sum()
        return int(rows + cols)

    def cut(self, r0, r1, c0, c1, on_cols: bool) -> int | None:
        """The median range boundary of the node along one dimension (both sides keep a
        nonzero), or None."""
        p = self.p
        if on_cols:
            m = np.diff(p[r1, c0:c1 + 1] - p[r0, c0:c1 + 1])
        else:
            m = np.diff(p[r0:r1 + 1, c1] - p[r0:r1 + 1, c0])
        nz = np.flatnonzero(m)
        if nz.size < 2:
            return None
        cum = np.cumsum(m)
        j = int(np.searchsorted(cum, cum[-1] / 2.0))
        return (c0 if on_cols else r0) + int(np.clip(j + 1, nz[0] + 1, nz[-1]))

    def node(self, rect, depth) -> int:
        me = len(self.depth)
        self.left.append(-1)
        self.right.append(-1)
        self.depth.append(depth)
        self.rects.append(rect)
        r0, r1, c0, c1 = rect
        at = None
        if self.nnz(*rect) >= 2 * self.min and self.bound(*rect) > self.cap:
            first = depth % 2 == 0  # even depth: columns, as the exact K-D tiling
            for on_cols in (first, not first):
                at = self.cut(*rect, on_cols)
                if at is not None:
                    break
        if at is None:
            self.leaf.append(me)
            return me
        a, b = (((r0, r1, c0, at), (r0, r1, at, c1)) if on_cols
                else ((r0, at, c0, c1), (at, r1, c0, c1)))
        self.left[me] = self.node(a, depth + 1)
        self.right[me] = self.node(b, depth + 1)
        return me

    def run(self) -> dict:
        gr, gc = self.p.shape[0] - 1, self.p.shape[1] - 1
        self.node((0, gr, 0, gc), 0)
        left, right = np.array(self.left), np.array(self.right)
        leaves = np.array(self.leaf)  # pre-order: left to right
        count = left.size
        size = np.ones(count, np.int64)
        for v in range(count - 1, -1, -1):  # children come after their parent
            if left[v] >= 0:
                size[v] += size[left[v]] + size[right[v]]
        lo = np.searchsorted(leaves, np.arange(count))  # leaves at or after each node
        hi = lo + (size + 1) // 2
        return {"left": left.astype(np.int32), "right": right.astype(np.int32),
                "lo": lo.astype(np.int32), "hi": hi.astype(np.int32),
                "depth": np.array(self.depth, np.int32),
                "rects": [self.rects[v] for v in leaves]}


def strip_cover(rects: np.ndarray, k: int) -> tuple[np.ndarray, dict]:
    """The strips of rows the leaves ``rects`` (``(row0, row1, col0, col1)`` each, tiling
    ``k`` rows) cut the rows into (their starts and ``k``, int64), and per strip start the
    leaves crossing it, by first column: ``{start: (first columns, leaf ids)}``."""
    strips = np.unique(np.concatenate((rects[:, 0], rects[:, 1], [0, k])))
    cover = {}
    for s0 in strips[:-1]:
        ids = np.flatnonzero((rects[:, 0] <= s0) & (rects[:, 1] > s0))
        ids = ids[np.argsort(rects[ids, 2])]
        cover[int(s0)] = (rects[ids, 2], ids)
    return strips, cover


def _segments(indptr: np.ndarray, indices: np.ndarray, rects: np.ndarray,
              drop: np.ndarray | None, strips: np.ndarray, cover: dict,
              mark: bool = True) -> dict:
    """Every row cut at its leaves' column ranges: segments ordered by partition, then row.

    ``rects[p]`` is leaf ``p``'s ``(row0, row1, col0, col1)``; the leaves tile the share.
    Two parallel passes over chunks of rows (each inside one strip of leaves): the first
    cuts the chunk's rows, groups its segments by leaf and marks the leaves' columns seen
    (a table per leaf over its own column range; the distinct columns ``dx`` are counted
    from them), the second copies each group to its place (leaf-major, chunks in row
    order), so no pass over all segments runs on one thread. Rows marked in ``drop`` are
    left out, and rows and positions renumbered without them. Without ``mark`` the
    columns are not marked (they were counted on the GPU) and no ``dx`` is returned."""
    k = indptr.shape[0] - 1
    step = _rows_per_chunk(indptr)
    bounds = np.unique(np.concatenate((strips, np.arange(0, k, step), [k])))
    # chunks of one strip write its leaves' tables at once: True over False, no other value
    seen = [np.zeros(int(r[3] - r[2]) if mark else 0, dtype=bool) for r in rects]
    renumber = None
    if drop is not None and drop.any():  # rows and entries dropped before each row
        rows_before = np.cumsum(drop, dtype=np.int64) - drop
        entries = np.where(drop, np.diff(indptr), 0)
        renumber = (rows_before, np.cumsum(entries, dtype=np.int64) - entries, drop)

    def cut(i: int) -> dict:
        s0 = int(strips[np.searchsorted(strips, bounds[i], side="right") - 1])
        return _cut_chunk(indptr, indices, int(bounds[i]), int(bounds[i + 1]), cover[s0],
                          rects, seen if mark else None, renumber)
    chunks = list(pool().map(cut, range(bounds.size - 1)))
    dx = np.array(list(pool().map(np.count_nonzero, seen)), dtype=np.int64) if mark else None
    out = _placed(chunks, rects.shape[0])
    return out if dx is None else {**out, "dx": dx}


def _placed(chunks: list, n_parts: int) -> dict:
    """The chunks' segments in one table, partition by partition (each partition's
    chunks in row order): every chunk copies its groups to their places on the pool."""
    counts = np.zeros((len(chunks), n_parts), dtype=np.int64)
    for j, c in enumerate(chunks):
        counts[j, c["leaves"]] = [g.size for g in c["groups"]]
    at = np.zeros(counts.size + 1, dtype=np.int64)  # leaf-major: leaf p's chunks in row order
    np.cumsum(counts.T.ravel(), out=at[1:])
    total = int(at[-1])
    seg_row = np.empty(total, dtype=np.int32)
    seg_start, length = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)

    def place(j: int) -> None:
        c = chunks[j]
        for leaf, g in zip(c["leaves"], c["groups"]):
            o = int(at[int(leaf) * len(chunks) + j])
            for out, src in ((seg_row, c["row"]), (seg_start, c["start"]), (length, c["len"])):
                np.take(src, g, out=out[o:o + g.size])
    list(pool().map(place, range(len(chunks))))
    seg_ptr = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(length, out=seg_ptr[1:])
    part_seg = at[::len(chunks)].copy() if chunks else np.zeros(n_parts + 1, np.int64)
    return {"seg_row": seg_row, "seg_start": seg_start, "seg_ptr": seg_ptr,
            "part_seg": part_seg, "nnz": np.diff(seg_ptr[part_seg])}


def _cut_chunk(indptr, indices, a: int, b: int, cover, rects, seen, renumber=None) -> dict:
    """Rows ``a .. b`` (inside one strip, whose leaves ``cover`` lists by first column) cut
    at the leaves' column ranges: each segment's row, first position and length, and the
    segments of each leaf (``groups``, positions into those, in row order); each leaf's
    columns are marked in ``seen[leaf]`` (its column ``c`` at ``c - rects[leaf, 2]``;
    None: not marked).
    ``renumber``: rows and entries dropped before each row, and the dropped rows (their
    segments are in no group, their columns not marked)."""
    cuts, ids = cover
    lo, hi = int(indptr[a]), int(indptr[b])
    if hi == lo:
        return {"leaves": [], "groups": []}
    cols = indices[lo:hi]
    bucket = np.zeros(hi - lo, dtype=np.int16)  # the leaf's place among the strip's cuts
    for c in cuts[1:]:  # a few cuts: a compare-and-add each beats a binary search
        bucket += cols >= c
    new = np.ones(hi - lo, dtype=bool)
    np.not_equal(bucket[1:], bucket[:-1], out=new[1:])
    starts = indptr[a:b + 1] - lo
    new[starts[:-1][starts[:-1] < hi - lo]] = True  # every row starts a segment
    at = np.flatnonzero(new)
    row = a - 1 + np.searchsorted(starts, at, side="right")
    length = np.diff(np.append(at, hi - lo))
    start = at + lo
    b_at = bucket[at]
    keep_seg = keep = None
    if renumber is not None and renumber[2][a:b].any():
        dropped = renumber[2]
        keep_seg = ~dropped[row]
        gone = a + np.flatnonzero(dropped[a:b])
        if gone.size > 64:
            keep = np.repeat(~dropped[a:b], np.diff(indptr[a:b + 1]))
        else:  # a few hubs: their entries are a range each
            keep = np.ones(hi - lo, dtype=bool)
            for r in gone:
                keep[int(indptr[r]) - lo:int(indptr[r + 1]) - lo] = False
    if renumber is not None:
        start = start - renumber[1][row]
        row = row - renumber[0][row]
    leaves, groups = [], []
    for j in range(ids.size):
        in_leaf = b_at == j
        g = np.flatnonzero(in_leaf if keep_seg is None else in_leaf & keep_seg)
        if g.size:
            leaf = int(ids[j])
            leaves.append(leaf)
            groups.append(g)
            if seen is None:
                continue
            mask = None if ids.size == 1 else bucket == j
            if keep is not None:
                mask = keep if mask is None else mask & keep
            mine = cols if mask is None else cols[mask]
            seen[leaf][mine - int(rects[leaf, 2])] = True
    return {"row": row.astype(np.int32), "start": start, "len": length, "leaves": leaves,
            "groups": groups}
