"""Edge lists to pattern CSR, fast and in bounded memory.

Edges are gathered by row range as they arrive: :class:`RowBuckets` splits
each batch by the high bits of its rows (one radix pass) and appends each part
to the storage of its row range (a "bucket"), from many threads at once. Then
:meth:`RowBuckets.to_csr` turns every bucket into the CSR rows of its range on
its own, with scipy's COO to CSR conversion (a counting sort by row, a sort
within each row, duplicates removed: C++ that runs without the GIL), and
writes the buckets' rows in order into one ``indices`` array, releasing each
bucket's storage as soon as it is converted.

No array of all edges is ever sorted, and the peak memory is about 8 bytes per
gathered entry (an int32 row and column) plus one batch and one bucket of work
per thread; the result then takes 4 bytes per distinct entry plus ``indptr``.
Used by the edge-list loaders (:mod:`finepar.io`) and the Kronecker generator
(:mod:`finepar.io.graph500`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from ..errors import InputError
from ..graph import as_indptr
from ..parallel import n_workers, thread_map

__all__ = ["RowBuckets", "pattern_csr", "n_workers", "thread_map"]  # the last two from .parallel

# Edges per work item in pattern_csr.
_EDGE_CHUNK = 1 << 21
# Entries a bucket aims at (up to 4 times more to keep 8-bit bucket ids): its
# block is then 32 MiB or more, which the C allocator maps on its own and gives
# back to the system when it is freed.
_BUCKET_TARGET = 1 << 22
# Fewest entries worth a bucket of their own when splitting for more threads.
_BUCKET_MIN = 1 << 16
# A bucket's first block holds this much more than an even share of entries.
_SLACK = 1.15


class _Store:
    """The entries of one bucket: int32 (row, column) pairs appended into large blocks.

    A block is a ``(2, capacity)`` int32 array; pages past what has been
    written are never touched, so an unfilled block costs address space only.
    """

    __slots__ = ("lock", "blocks", "fill", "capacity", "size")

    def __init__(self, capacity: int):
        self.lock = threading.Lock()
        self.blocks: list[np.ndarray] = []
        self.fill = 0  # entries written in the last block
        self.capacity = capacity
        self.size = 0  # entries appended in all

    def append(self, rows: np.ndarray, cols: np.ndarray) -> None:
        k = rows.shape[0]
        with self.lock:
            done = 0
            while done < k:
                if not self.blocks or self.fill == self.blocks[-1].shape[1]:
                    grow = self.capacity if not self.blocks else max(k - done, self.size)
                    self.blocks.append(np.empty((2, grow), dtype=np.int32))
                    self.fill = 0
                block = self.blocks[-1]
                take = min(k - done, block.shape[1] - self.fill)
                block[0, self.fill:self.fill + take] = rows[done:done + take]
                block[1, self.fill:self.fill + take] = cols[done:done + take]
                self.fill += take
                done += take
            self.size += k

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """All entries as ``(rows, cols)`` int32 arrays; the store forgets them."""
        blocks, fill = self.blocks, self.fill
        self.blocks, self.fill, self.size = [], 0, 0
        if not blocks:
            return np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int32)
        blocks[-1] = blocks[-1][:, :fill]
        if len(blocks) == 1:
            return blocks[0][0], blocks[0][1]
        return (np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks]))


class _Starts:
    """Where each bucket's rows begin in ``indices``: running sums of the buckets'
    entry counts, in bucket order, published by threads that finish out of order."""

    def __init__(self, count: int):
        self._cond = threading.Condition()
        self._counts: list[int | None] = [None] * count
        self._starts = [0]  # starts of buckets 0 .. len - 1 (len - 1 = buckets summed)
        self.error: BaseException | None = None

    def start(self, bucket: int, count: int) -> int | None:
        """Publish `bucket`'s entry count; wait for and return its start (None after a failure)."""
        with self._cond:
            self._counts[bucket] = count
            summed = len(self._starts) - 1
            while summed < len(self._counts) and self._counts[summed] is not None:
                self._starts.append(self._starts[-1] + self._counts[summed])
                summed += 1
            self._cond.notify_all()
            self._cond.wait_for(lambda: self.error is not None or len(self._starts) > bucket)
            return None if self.error is not None else self._starts[bucket]

    def fail(self, error: BaseException) -> None:
        """Record the first failure and release every waiting thread."""
        with self._cond:
            if self.error is None:
                self.error = error
            self._cond.notify_all()

    @property
    def total(self) -> int:
        return self._starts[-1]


def _range_csr(rows: np.ndarray, cols: np.ndarray, n_rows: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Canonical pattern CSR (sorted rows, no duplicates) of entries with local rows
    in ``[0, n_rows)`` and columns in ``[0, n)``: scipy's COO to CSR conversion."""
    import scipy.sparse as sp
    ones = np.ones(rows.shape[0], dtype=bool)
    a = sp.coo_array((ones, (rows, cols)), shape=(n_rows, n)).tocsr()
    a.sum_duplicates()  # tocsr already did: sorted columns, duplicates merged
    return a.indptr, a.indices


class RowBuckets:
    """Pattern-matrix entries gathered by row range, then built into one CSR.

    Parameters
    ----------
    n : int
        Rows and columns: entries have rows and columns in ``[0, n)``, ``n <= 2**31 - 1``.
    expected : int
        About how many entries will be added (sizes the buckets; any number
        may be added).
    workers : int, default 1
        Threads that will build the CSR (more buckets for more threads).

    Notes
    -----
    :meth:`add` and :meth:`add_edges` may be called from many threads at once.
    The CSR does not depend on the order of the additions, the number of
    buckets or the number of threads.
    """

    def __init__(self, n: int, expected: int, workers: int = 1):
        self.n = int(n)
        row_bits = max(1, (self.n - 1).bit_length())
        want = max(1, expected // _BUCKET_TARGET, min(4 * workers, expected // _BUCKET_MIN))
        if want > 256 and expected // 256 <= 4 * _BUCKET_TARGET:
            want = 256  # 8-bit bucket ids: one radix pass instead of two
        bucket_bits = min(row_bits, 16, (want - 1).bit_length())
        self.shift = row_bits - bucket_bits
        count = ((self.n - 1) >> self.shift) + 1
        capacity = max(16, int(_SLACK * expected / count))
        self._stores = [_Store(capacity) for _ in range(count)]
        self._id_dtype = np.uint8 if count <= 256 else np.uint16

    @property
    def n_buckets(self) -> int:
        """Number of row ranges."""
        return len(self._stores)

    def add(self, rows: np.ndarray, cols: np.ndarray) -> None:
        """Add entries ``(rows[k], cols[k])`` (int32 arrays of equal length, in range)."""
        if len(self._stores) == 1:
            self._stores[0].append(rows, cols)
            return
        ids = (rows >> self.shift).astype(self._id_dtype)
        ends = np.cumsum(np.bincount(ids, minlength=len(self._stores))).tolist()
        order = np.argsort(ids, kind="stable")  # a radix sort: one pass over 8 bits
        del ids
        rows, cols = rows[order], cols[order]
        del order
        start = 0
        for store, end in zip(self._stores, ends):
            if end > start:
                store.append(rows[start:end], cols[start:end])
            start = end

    def add_edges(self, src: np.ndarray, dst: np.ndarray, *, symmetric: bool,
                  drop_self_loops: bool) -> int:
        """Add the edges ``src[k] -> dst[k]`` (integer arrays, values in ``[0, n)``).

        Parameters
        ----------
        symmetric : bool
            Also add the reverse of every edge.
        drop_self_loops : bool
            Skip edges with ``src == dst``.

        Returns
        -------
        int
            Self-loop edges skipped (0 unless `drop_self_loops`).
        """
        src = np.asarray(src, dtype=np.int32)
        dst = np.asarray(dst, dtype=np.int32)
        loops = 0
        if drop_self_loops:
            keep = src != dst
            loops = int(keep.size - np.count_nonzero(keep))
            if loops:
                src, dst = src[keep], dst[keep]
            del keep
        self.add(src, dst)
        if symmetric:
            self.add(dst, src)
        return loops

    def to_csr(self, workers: int, *, name=None,
               on_done: Callable[[int, int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Build the pattern CSR of every entry added, duplicates removed.

        Each bucket's storage is released once its rows are built; the object
        is empty afterwards.

        Parameters
        ----------
        workers : int
            Threads.
        name : str, optional
            Named in the error for an empty graph.
        on_done : callable, optional
            ``on_done(buckets_done, n_buckets)``, called in this thread.

        Returns
        -------
        indptr : numpy.ndarray of int32 (int64 past the int32 limit), shape (n + 1,)
        indices : numpy.ndarray of int32, shape (nnz,)
            Columns sorted within each row, no duplicates.

        Raises
        ------
        InputError
            Naming `name`, if no entry was added.
        """
        total = sum(s.size for s in self._stores)
        if total == 0:
            raise InputError(name, "empty graph: 0 stored entries")
        n, shift, count = self.n, self.shift, len(self._stores)
        indptr = np.empty(n + 1, dtype=np.int64)
        indptr[0] = 0
        indices = np.empty(total, dtype=np.int32)  # pages past nnz are never touched
        starts = _Starts(count)

        def convert(b: int) -> None:
            if starts.error is not None:
                return
            try:
                lo, hi = b << shift, min(n, (b + 1) << shift)
                rows, cols = self._stores[b].take()
                rows -= lo
                local_indptr, local_indices = _range_csr(rows, cols, hi - lo, n)
                del rows, cols
                start = starts.start(b, local_indices.shape[0])
                if start is None:
                    return
                indices[start:start + local_indices.shape[0]] = local_indices
                np.add(local_indptr[1:], start, out=indptr[lo + 1:hi + 1], dtype=np.int64)
            except BaseException as exc:  # wake the threads waiting on this bucket
                starts.fail(exc)
                raise

        report = None if on_done is None else (lambda k: on_done(k, count))
        try:
            thread_map(convert, range(count), workers, on_done=report)
        except BaseException:
            if starts.error is not None:
                raise starts.error from None
            raise
        return as_indptr(indptr), indices[:starts.total]


def pattern_csr(src: np.ndarray, dst: np.ndarray, n: int, *, symmetric: bool = False,
                drop_self_loops: bool = False, workers: int | None = None, name=None
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """Pattern CSR (duplicates removed) of an edge list with endpoints in ``[0, n)``.

    Parameters
    ----------
    src, dst : numpy.ndarray of int, shape (m,)
        Edge endpoints, already checked to lie in ``[0, n)``.
    n : int
        Vertices.
    symmetric : bool
        Store the reverse of every edge too.
    drop_self_loops : bool
        Skip edges with ``src == dst``.
    workers : int, optional
        Threads (default: all CPUs available). Does not change the result.
    name : str, optional
        Named in errors.

    Returns
    -------
    indptr : numpy.ndarray of int32 (int64 past the int32 limit), shape (n + 1,)
    indices : numpy.ndarray of int32, shape (nnz,)
    self_loops : int
        Self-loop edges dropped (0 unless `drop_self_loops`).

    Raises
    ------
    InputError
        Naming `name`, if no entry is left.
    """
    workers = n_workers(workers)
    m = src.shape[0]
    buckets = RowBuckets(n, 2 * m if symmetric else m, workers)
    loops = thread_map(
        lambda s: buckets.add_edges(src[s:s + _EDGE_CHUNK], dst[s:s + _EDGE_CHUNK], symmetric=symmetric,
                                    drop_self_loops=drop_self_loops),
        range(0, m, _EDGE_CHUNK), workers)
    indptr, indices = buckets.to_csr(workers, name=name)
    return indptr, indices, sum(loops)
