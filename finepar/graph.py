"""The graph every part of FinePar works on: a square matrix in canonical CSR form.

A :class:`Graph` holds ``indptr`` / ``indices`` / ``data`` with column indices
sorted within each row and no duplicate entries; row ``i`` lists the
out-edges of vertex ``i`` (``A[i, j] != 0`` means an edge ``i -> j``).
Loaders and generators build graphs (:mod:`finepar.io`,
:mod:`finepar.io.graph500`); this module holds the type and the operations on
it: transpose, symmetrise, permute, and the nonzero positions of a row set.

Index types: ``indices`` are int32 (vertex ids below 2**31); ``indptr`` is
int32 while ``nnz`` fits int32 and int64 beyond (DESIGN.md §4, "64-bit
offsets").
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only: scipy.sparse is imported where it is used
    import scipy.sparse as sp

INT32_MAX = int(np.iinfo(np.int32).max)
"""Largest vertex count a :class:`Graph` can hold, and the largest ``nnz`` of an int32
``indptr`` (2,147,483,647)."""


def indptr_dtype(nnz: int) -> np.dtype:
    """The ``indptr`` dtype for ``nnz`` stored entries: int32 up to :data:`INT32_MAX`,
    else int64."""
    return np.dtype(np.int32) if nnz <= INT32_MAX else np.dtype(np.int64)


def as_indptr(a: np.ndarray) -> np.ndarray:
    """Row pointers in the narrowest dtype :func:`indptr_dtype` allows (no copy when
    already so)."""
    a = np.asarray(a)
    nnz = int(a[-1]) if a.size else 0
    return np.ascontiguousarray(a, dtype=indptr_dtype(nnz))


def as_indices(a: np.ndarray) -> np.ndarray:
    """Column indices as int32 (the values are known to fit)."""
    return np.ascontiguousarray(a, dtype=np.int32)


def pattern_values(nnz: int) -> np.ndarray:
    """The ``data`` of a pattern graph: ``nnz`` float32 ones as a read-only view of a single
    value, so a pattern graph's values take no memory (``np.ascontiguousarray`` makes the
    array where one is needed: an upload of an app that reads values)."""
    return np.broadcast_to(np.float32(1.0), (int(nnz),))


@dataclass(eq=False, repr=False)
class Graph:
    """A square sparse matrix / directed graph in canonical CSR form.

    Construct graphs with :func:`finepar.io.load`, :func:`~finepar.io.from_csr`,
    :func:`~finepar.io.from_scipy`, :func:`~finepar.io.from_edges` or the
    generators in :mod:`finepar.io.graph500`; they validate and canonicalise their
    input. The constructor itself trusts its arguments (use
    :func:`finepar.io.validate` to check a hand-made instance).

    Parameters
    ----------
    indptr : numpy.ndarray of int32 or int64, shape (n + 1,)
        Row pointers: starts at 0, non-decreasing, ends at ``nnz``; int64 only
        when ``nnz`` exceeds :data:`INT32_MAX`.
    indices : numpy.ndarray of int32, shape (nnz,)
        Column index of each stored entry, in ``[0, n)``, strictly increasing
        within each row (sorted, no duplicates).
    data : numpy.ndarray of float32, shape (nnz,)
        Value of each stored entry; all ones when `pattern` (then usually a read-only
        view of one value, :func:`pattern_values`).
    name : str
        Short name, e.g. the file name without its extensions (``"cnr-2000"``).
    source : str or None
        Path the graph was read from, if any.
    pattern : bool
        True if the input had no values (pattern Matrix Market, edge lists,
        generated graphs).
    ids : numpy.ndarray of int64, shape (n,), or None
        Original vertex id of each vertex when the loader compacted ids (edge
        lists with sparse ids); None when vertex ``i`` is id ``i``.
    notes : list of str
        One line per thing the loader did to the input (expanded symmetric
        storage, summed duplicates, kept explicit zeros, compacted ids, ...).
    symmetric : bool
        True when the structure and values are known to equal their transpose
        (symmetric Matrix Market storage, undirected generators, symmetrised
        graphs); :meth:`transpose` then returns the graph itself. False means
        "not known", not "asymmetric".
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    name: str
    source: str | None = None
    pattern: bool = False
    ids: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    symmetric: bool = False

    @property
    def n(self) -> int:
        """Number of rows (= vertices = columns)."""
        return int(self.indptr.shape[0]) - 1

    @property
    def nnz(self) -> int:
        """Number of stored entries (= directed edges)."""
        return int(self.indices.shape[0])

    @property
    def shape(self) -> tuple[int, int]:
        """``(n, n)``."""
        return (self.n, self.n)

    def __repr__(self) -> str:
        kind = "pattern" if self.pattern else "valued"
        return f"Graph(name={self.name!r}, n={self.n:,}, nnz={self.nnz:,}, {kind})"

    def vertex_index(self, vertex_id: int) -> int:
        """The row of the vertex the input called ``vertex_id``.

        Where the loader compacted sparse ids (:attr:`ids`), ``vertex_id`` is
        looked up among them; otherwise it is the row itself.

        Raises
        ------
        ValueError
            If no vertex has that id (the message gives the valid range).
        """
        v = int(vertex_id)
        if self.ids is None:
            if not 0 <= v < self.n:
                raise ValueError(f"{v} is not a vertex (ids are 0..{self.n - 1})")
            return v
        i = int(np.searchsorted(self.ids, v))  # loaders keep ids ascending
        if i >= self.n or int(self.ids[i]) != v:
            hits = np.flatnonzero(self.ids == v)  # a relabelled graph's ids are not sorted
            if hits.size:
                return int(hits[0])
            raise ValueError(f"{v} is not a vertex id of the input ({self.n:,} ids in use, "
                             f"from {int(self.ids.min())} to {int(self.ids.max())})")
        return i

    def vertex_label(self, index: int) -> str:
        """Vertex ``index`` as the user knows it: its input id, with the row when they differ."""
        if self.ids is None:
            return f"{int(index)}"
        return f"{int(self.ids[index])} (row {int(index)})"

    def row_lengths(self) -> np.ndarray:
        """Stored entries per row.

        Returns
        -------
        numpy.ndarray of int32, shape (n,)
            ``diff(indptr)`` (a row holds at most ``n`` < 2**31 entries), computed on
            the pool's threads once per ``indptr`` and read-only.
        """
        memo = self.__dict__.get("_row_lengths")
        if memo is not None and memo[0] is self.indptr:
            return memo[1]
        from .parallel import chunked
        ip = self.indptr
        out = np.empty(max(ip.shape[0] - 1, 0), dtype=np.int32)
        chunked(lambda lo, hi: np.subtract(ip[lo + 1:hi + 1], ip[lo:hi], out=out[lo:hi],
                                           casting="unsafe"), out.size)
        out.flags.writeable = False  # kept for the next caller: computed once per graph
        self.__dict__["_row_lengths"] = (ip, out)
        return out

    def lengths_of(self, rows: np.ndarray) -> np.ndarray:
        """Stored entries of each of ``rows`` (int, shape (k,)): int64, shape (k,),
        gathered from :meth:`row_lengths` on the pool's threads."""
        from .parallel import chunked
        rows = np.asarray(rows)
        lengths = self.row_lengths()
        out = np.empty(rows.shape[0], dtype=np.int64)

        def gather(lo: int, hi: int) -> None:
            out[lo:hi] = lengths[rows[lo:hi]]
        chunked(gather, out.size)
        return out

    def out_degrees(self) -> np.ndarray:
        """Out-degree of every vertex (row lengths of ``A``).

        Returns
        -------
        numpy.ndarray of int32, shape (n,)
        """
        return self.row_lengths()

    def to_scipy(self) -> sp.csr_array:
        """Return the matrix as a :class:`scipy.sparse.csr_array`.

        The result shares ``indptr``, ``indices`` and ``data`` with this graph
        where scipy allows it (scipy keeps one index dtype, so an int64
        ``indptr`` makes it copy ``indices`` to int64) and is flagged canonical,
        so scipy does not re-check it.

        Returns
        -------
        scipy.sparse.csr_array of float32, shape (n, n)
        """
        import scipy.sparse as sp
        matrix = sp.csr_array((self.data, self.indices, self.indptr), shape=self.shape, copy=False)
        matrix.has_sorted_indices = True
        matrix.has_canonical_format = True
        return matrix

    def transpose(self) -> Graph:
        """Return the CSR of ``A^T``: row ``i`` lists the in-edges of vertex ``i``.

        A graph known to be :attr:`symmetric` is its own transpose and is
        returned as it is.

        Returns
        -------
        Graph
            Same `name`, `pattern`, `ids` and invariants (int32 indices sorted
            within rows, float32 data); `notes` gain a line.
        """
        if self.symmetric:
            return self
        t = self.to_scipy().T.tocsr()
        return replace(self, indptr=as_indptr(t.indptr), indices=as_indices(t.indices),
                       data=t.data.astype(np.float32, copy=False),
                       notes=[*self.notes, "transposed (rows list in-edges)"])

    def symmetrized(self) -> Graph:
        """Return the pattern graph of the structure of ``A + A^T``.

        An entry ``(i, j)`` is present if ``(i, j)`` or ``(j, i)`` is stored in
        this graph; diagonal entries are kept.

        Returns
        -------
        Graph
            ``data`` all ones, ``pattern=True``, ``symmetric=True``; `name`,
            `ids` kept; same invariants.
        """
        if self.symmetric and self.pattern:
            return self
        import scipy.sparse as sp
        ones = np.ones(self.nnz, dtype=np.float32)
        a = sp.csr_array((ones, self.indices, self.indptr), shape=self.shape, copy=False)
        a.has_sorted_indices = True
        a.has_canonical_format = True
        t = a.T.tocsr()
        t.has_sorted_indices = True
        t.has_canonical_format = True
        s = a + t
        nnz = int(s.indptr[-1])
        s.sort_indices()
        note = f"symmetrized: structure of A + A^T ({self.nnz:,} -> {nnz:,} stored entries)"
        return Graph(as_indptr(s.indptr), as_indices(s.indices), pattern_values(nnz),
                     self.name, self.source, True, self.ids, [*self.notes, note], symmetric=True)

    def permuted(self, perm: np.ndarray, *, note: str = "") -> Graph:
        """The same graph with vertex ``v`` renamed ``perm[v]``: ``B[perm[i], perm[j]] =
        A[i, j]``.

        Parameters
        ----------
        perm : ndarray of int, shape (n,)
            A permutation of ``0 .. n-1``: the new id of every vertex.
        note : str
            Added to `notes` (e.g. which remapping made `perm`).

        Returns
        -------
        Graph
            Canonical CSR of the relabelled graph; `ids` follow their vertices;
            `symmetric` and `pattern` are kept.

        Raises
        ------
        ValueError
            If `perm` is not a permutation of ``0 .. n-1``.
        """
        import scipy.sparse as sp
        perm = np.asarray(perm)
        n = self.n
        if perm.shape != (n,) or not np.array_equal(np.bincount(perm, minlength=n), np.ones(n)):
            raise ValueError(f"perm must be a permutation of 0..{n - 1}")
        inv = np.empty(n, dtype=np.int64)
        inv[perm] = np.arange(n)
        lengths = np.diff(self.indptr)[inv]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        pos = row_positions(self.indptr, inv)
        cols = perm.astype(np.int32, copy=False)[self.indices[pos]]
        data = self.data[pos]
        del pos
        indptr = as_indptr(indptr)
        # columns sorted within each row: scipy's per-row sort, in place (O(nnz log d))
        m = sp.csr_array((data, cols, indptr), shape=self.shape, copy=False)
        m.has_sorted_indices = False
        m.sort_indices()
        ids = None if self.ids is None else self.ids[inv]
        notes = [*self.notes, note or "vertices relabelled"]
        return replace(self, indptr=as_indptr(m.indptr), indices=as_indices(m.indices),
                       data=np.ascontiguousarray(m.data, dtype=np.float32), ids=ids,
                       notes=notes)


def row_positions(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Positions in ``indices`` / ``data`` of every nonzero of ``rows``, row by row.

    Parameters
    ----------
    indptr : ndarray of int, shape (n+1,)
    rows : ndarray of int, shape (k,)

    Returns
    -------
    ndarray of int64, shape (sum of the rows' lengths,)
        ``indices[row_positions(indptr, rows)]`` are the rows' column ids in order.
    """
    return RowEntries.of_rows(indptr, rows).positions()


#: Runs a :meth:`RowEntries.take` copies slice by slice; with more it gathers.
FEW_RUNS = 4096


class RowEntries:
    """Positions of a list of entries in a CSR's ``indices`` / ``data``, kept as runs of
    consecutive positions: the nonzeros of rows taken in ascending order are one run, so
    a share of every row (or of all rows but a few) costs two small arrays, not an int64
    per entry, and its arrays are slices of the matrix's, not gathers.

    Parameters
    ----------
    starts : ndarray of int64, shape (k,)
        Matrix position of each run's first entry.
    ptr : ndarray of int64, shape (k+1,)
        Run ``r`` holds entries ``ptr[r] .. ptr[r+1]`` of the list.
    """

    def __init__(self, starts: np.ndarray, ptr: np.ndarray):
        self.starts, self.ptr = starts, ptr

    @classmethod
    def of_rows(cls, indptr: np.ndarray, rows: np.ndarray) -> "RowEntries":
        """The nonzeros of ``rows`` (int, shape (k,)), row by row: one run per stretch of
        consecutive rows (found on the pool's threads), so the rows of a share that holds
        all but a few rows cost a few runs and no per-row gather."""
        from .parallel import chunked
        rows = np.asarray(rows)
        indptr = np.asarray(indptr)
        k = int(rows.shape[0])
        if k == 0:
            return cls(np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64))
        parts = chunked(lambda lo, hi: np.flatnonzero(rows[lo + 1:hi + 1] != rows[lo:hi] + 1)
                        + (lo + 1), k - 1)
        breaks = np.concatenate([np.zeros(0, dtype=np.int64)] + parts)
        first = rows[np.concatenate(([0], breaks))].astype(np.int64)
        last = rows[np.concatenate((breaks, [k])) - 1].astype(np.int64)
        return cls._merged(indptr[first].astype(np.int64), indptr[last + 1].astype(np.int64))

    @classmethod
    def of_runs(cls, starts: np.ndarray, lengths: np.ndarray) -> "RowEntries":
        """Runs of ``lengths`` positions from ``starts`` (int, shape (k,)), in order."""
        starts = np.asarray(starts, dtype=np.int64)
        return cls._merged(starts, starts + np.asarray(lengths, dtype=np.int64))

    @classmethod
    def of_positions(cls, positions: np.ndarray) -> "RowEntries":
        """Any list of matrix positions (int, shape (m,)), in its order."""
        positions = np.asarray(positions, dtype=np.int64)
        return cls._merged(positions, positions + 1)

    @classmethod
    def _merged(cls, starts: np.ndarray, ends: np.ndarray) -> "RowEntries":
        keep = ends > starts  # empty runs hold nothing
        starts, ends = starts[keep], ends[keep]
        first = np.ones(starts.size, dtype=bool)  # a run starts where the last did not end
        first[1:] = starts[1:] != ends[:-1]
        begin = np.flatnonzero(first)
        lengths = np.add.reduceat(ends - starts, begin) if begin.size else begin
        ptr = np.zeros(begin.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        return cls(starts[begin], ptr)

    @property
    def size(self) -> int:
        """Entries in the list."""
        return int(self.ptr[-1])

    @property
    def runs(self) -> int:
        return int(self.starts.size)

    def _span(self, lo: int, hi: int):
        """Runs ``j0 .. j1`` holding list entries ``lo .. hi``, with their offsets into
        the matrix and their lengths clipped to ``lo .. hi``."""
        j0 = int(np.searchsorted(self.ptr, lo, side="right")) - 1
        j1 = int(np.searchsorted(self.ptr, hi, side="left"))
        edges = self.ptr[j0:j1 + 1].copy()
        edges[0], edges[-1] = lo, hi
        return self.starts[j0:j1] - self.ptr[j0:j1], edges

    def positions(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Matrix positions of list entries ``lo .. hi`` (int64)."""
        hi = self.size if hi is None else hi
        if hi <= lo:
            return np.zeros(0, dtype=np.int64)
        offset, edges = self._span(lo, hi)
        pos = np.repeat(offset, np.diff(edges))
        pos += np.arange(lo, hi, dtype=np.int64)
        return pos

    def take(self, array: np.ndarray, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """``array[positions(lo, hi)]``: a view when the entries are one run, slices joined
        when they are few, else a gather spread over the threads of
        :func:`finepar.parallel.pool`.

        Parameters
        ----------
        array : ndarray, shape (nnz,)
            ``indices`` or ``data`` of the matrix the positions index.
        """
        from .parallel import chunked, copy_spans
        hi = self.size if hi is None else hi
        if hi <= lo:
            return array[:0]
        offset, edges = self._span(lo, hi)
        if offset.size == 1:
            a = int(offset[0]) + lo
            return array[a:a + hi - lo]
        out = np.empty(hi - lo, dtype=array.dtype)
        if offset.size <= FEW_RUNS:  # long runs: slices copied by the threads, piece by piece
            copy_spans([(out[a - lo:b - lo], array[int(o) + a:int(o) + b])
                        for o, a, b in zip(offset, edges[:-1], edges[1:])])
            return out
        chunked(lambda a, b: np.take(array, self.positions(lo + a, lo + b), out=out[a:b]),
                hi - lo)
        return out
