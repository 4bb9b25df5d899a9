"""Graphs built in memory: from CSR arrays (:func:`from_csr`), scipy matrices
(:func:`from_scipy`) and edge arrays (:func:`from_edges`), validated and made canonical
(sorted rows, no duplicates, float32 values)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only: scipy.sparse is imported where it is used
    import scipy.sparse as sp

from ..errors import InputError
from ..graph import Graph, as_indices, as_indptr, pattern_values
from .edges import pattern_csr
from .validate import check_int_array, first_unsorted, row_of, validate


# --------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------


def valued_csr(rows: np.ndarray, cols: np.ndarray, data: np.ndarray, n: int) -> tuple[sp.csr_array, int]:
    """CSR of COO triplets with duplicates summed; returns (matrix, duplicates merged)."""
    import scipy.sparse as sp
    coo = sp.coo_array((data, (rows, cols)), shape=(n, n))
    before = coo.nnz
    csr = coo.tocsr()
    del coo
    csr.sum_duplicates()
    return csr, before - csr.nnz


def finish_values(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, name, *,
                   drop_zeros: bool, notes: list[str], index_base: int = 0
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Final arrays of a canonical CSR: explicit zeros kept or dropped, values as float32.

    `data` None means a pattern graph (all ones). The inputs are not modified;
    they are returned (as :func:`~finepar.graph.as_indptr` /
    :func:`~finepar.graph.as_indices` / float32) without a copy where the
    dtypes already fit.
    """
    if data is None:
        return as_indptr(indptr), as_indices(indices), pattern_values(indices.shape[0])
    zeros = int(data.shape[0] - np.count_nonzero(data))
    if zeros and drop_zeros:
        gone = np.flatnonzero(data == 0)
        keep = np.ones(data.shape[0], dtype=bool)
        keep[gone] = False
        indices, data = indices[keep], data[keep]
        del keep
        indptr = indptr - np.searchsorted(gone, indptr)  # entries dropped before each row start
        notes.append(f"dropped {zeros:,} explicit zeros")
        validate(name=name, nnz=int(indices.shape[0]))
    elif zeros:
        notes.append(f"kept {zeros:,} explicit zeros as stored entries")
    with np.errstate(over="ignore"):
        values = data.astype(np.float32, copy=False)
    if data.dtype != np.float32 and not np.isfinite(values).all():
        pos = int(np.flatnonzero(~np.isfinite(values))[0])
        row = row_of(indptr, pos)
        raise InputError(name, f"value at row {row + index_base:,}, column "
                               f"{int(indices[pos]) + index_base:,} ({float(data[pos]):g}) "
                               f"is too large for float32")
    return as_indptr(indptr), as_indices(indices), values


# --------------------------------------------------------------------------
# in-memory constructors
# --------------------------------------------------------------------------


def from_csr(indptr, indices, data, n: int, *, name: str, source: str | None = None,
             pattern: bool = False, ids=None, notes: list[str] | None = None,
             drop_zeros: bool = False, sorted_rows: bool = False) -> Graph:
    """Validate CSR arrays and return a canonical :class:`Graph`.

    Column indices are sorted within rows and duplicate entries summed
    (collapsed to one when `pattern`); index arrays become int32 (``indptr``
    int64 past the int32 limit of ``nnz``), values float32. Input arrays are
    never modified; they are shared with the result when they already have
    the right dtype and form (canonical input is checked in bounded memory,
    without copies).

    Parameters
    ----------
    indptr : array_like of int, shape (n + 1,)
        Row pointers: start at 0, non-decreasing, end at ``len(indices)``.
    indices : array_like of int, shape (nnz,)
        Column indices in ``[0, n)``, in any order within a row.
    data : array_like of real, shape (nnz,), or None
        Values; None (or ignored) when `pattern`.
    n : int
        Number of rows and columns.
    name : str
        Name of the graph; also used in error messages when `source` is None.
    source : str, optional
        File the arrays came from.
    pattern : bool, default False
        Structure only: `data` becomes all ones.
    ids : array_like of int, shape (n,), optional
        Original vertex ids (stored as int64).
    notes : list of str, optional
        Notes to start from (copied).
    drop_zeros : bool, default False
        Drop stored entries whose value is zero instead of keeping them.
    sorted_rows : bool, default False
        The caller knows every row's columns are strictly increasing (an earlier load of
        the same unchanged file found them so): the scan for that is skipped. Every
        other check runs.

    Returns
    -------
    Graph

    Raises
    ------
    InputError
        If the arrays are malformed (see the module's *Checks*).
    """
    where = source if source is not None else name
    notes = list(notes or [])
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    validate(name=where, shape=(n, n), nnz=int(np.shape(indices)[0]))
    if pattern:
        data = None
    elif data is None:
        raise InputError(where, "data is missing (pass pattern=True for a structure-only graph)")
    validate(name=where, shape=(n, n), indptr=indptr, indices=indices, data=data)
    n = int(n)
    if ids is not None:
        ids = np.asarray(ids)
        check_int_array(ids, "ids", where)
        if ids.shape != (n,):
            raise InputError(where, f"ids has shape {ids.shape}, expected ({n:,},)")
        ids = ids.astype(np.int64, copy=False)
    indptr, indices = as_indptr(indptr), as_indices(indices)
    if data is not None:
        data = np.asarray(data)
        if data.dtype not in (np.float32, np.float64):
            data = data.astype(np.float64)
    if not sorted_rows and first_unsorted(indptr, indices) is not None:
        indptr, indices, data = _canonical(indptr, indices, data, n, notes, pattern=pattern)
    indptr, indices, values = finish_values(indptr, indices, data, where, drop_zeros=drop_zeros, notes=notes)
    return Graph(indptr, indices, values, name, source, bool(pattern), ids, notes)


def _canonical(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, n: int,
               notes: list[str], *, pattern: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sort columns within rows and merge duplicates, on copies (scipy's sum_duplicates)."""
    import scipy.sparse as sp
    values = np.ones(indices.shape[0], dtype=np.float32) if data is None else data
    csr = sp.csr_array((values, indices, indptr), shape=(n, n), copy=True)
    before = csr.nnz
    csr.sum_duplicates()
    merged = before - csr.nnz
    if merged:
        notes.append(f"removed {merged:,} duplicate entries" if pattern else f"summed {merged:,} duplicate entries")
    else:
        notes.append("sorted column indices within rows")
    return csr.indptr, csr.indices, None if data is None else csr.data


def from_scipy(matrix, name: str = "matrix", *, pattern: bool | None = None, source: str | None = None,
               drop_zeros: bool = False) -> Graph:
    """Validate a scipy sparse matrix or array and return a canonical :class:`Graph`.

    Parameters
    ----------
    matrix : scipy.sparse matrix or array, any format
        Square, real-valued.
    name : str, default "matrix"
        Name of the graph (and of the object in error messages).
    pattern : bool, optional
        Keep only the structure. Default: True only for boolean matrices.
    source : str, optional
        File the matrix came from (named in errors instead of `name`).
    drop_zeros : bool, default False
        Drop explicitly stored zeros instead of keeping them.

    Returns
    -------
    Graph

    Raises
    ------
    InputError
        If `matrix` is not a scipy sparse matrix, not square, complex, empty,
        holds NaN/Inf, or has more vertices than the int32 limit.
    """
    import scipy.sparse as sp
    where = source if source is not None else name
    if not sp.issparse(matrix):
        raise InputError(where, f"not a scipy sparse matrix (got {type(matrix).__name__})")
    if matrix.ndim != 2:
        raise InputError(where, f"expected a 2-D matrix, got shape {matrix.shape}")
    if matrix.dtype.kind == "c":
        raise InputError(where, "complex values are not supported")
    validate(name=where, shape=matrix.shape, nnz=int(matrix.nnz))
    if pattern is None:
        pattern = matrix.dtype == np.bool_
    notes: list[str] = []
    if matrix.format != "csr":
        if matrix.format == "coo":
            rows, cols = matrix.coords
            validate(name=where, shape=matrix.shape, rows=rows, indices=cols,
                     data=None if pattern else matrix.data)
        before = matrix.nnz
        matrix = matrix.tocsr()
        merged = before - matrix.nnz
        if merged:
            notes.append(f"{'removed' if pattern else 'summed'} {merged:,} duplicate entries")
    return from_csr(matrix.indptr, matrix.indices, None if pattern else matrix.data, matrix.shape[0],
                    name=name, source=source, pattern=bool(pattern), notes=notes, drop_zeros=drop_zeros)


def from_edges(src, dst, n: int | None = None, *, name: str = "edges", source: str | None = None,
               symmetric: bool = False, drop_self_loops: bool = False, ids=None,
               notes: list[str] | None = None, workers: int | None = None) -> Graph:
    """Build a pattern :class:`Graph` from an edge list.

    Duplicate edges are removed; with `symmetric`, every edge also appears
    reversed. The CSR is built by sorting packed int64 ``(row, col)`` keys on
    a thread pool (:func:`finepar.edges.pattern_csr`), with int32 indices and
    an int32 ``indptr`` (int64 past the int32 limit of ``nnz``).

    Parameters
    ----------
    src, dst : array_like of int, shape (m,)
        Edge endpoints (edge ``src[k] -> dst[k]``), in ``[0, n)``.
    n : int, optional
        Number of vertices; default ``max(src, dst) + 1``.
    name : str, default "edges"
    source : str, optional
        File the edges came from (named in errors).
    symmetric : bool, default False
        Store the structure of ``A + A^T`` (undirected graph); the graph is
        flagged :attr:`Graph.symmetric`.
    drop_self_loops : bool, default False
        Leave out edges ``i -> i``.
    ids : array_like of int, shape (n,), optional
        Original vertex ids, stored as int64 in :attr:`Graph.ids`.
    notes : list of str, optional
        Notes to start from (copied); a line is added for each removal.
    workers : int, optional
        Threads to use (default: all available CPUs).

    Returns
    -------
    Graph
        ``pattern=True``, data all ones.

    Raises
    ------
    InputError
        For mismatched lengths, non-integer ids, ids out of ``[0, n)``, no
        edges, or more vertices than the int32 limit.
    """
    where = source if source is not None else name
    src = np.asarray(src)
    dst = np.asarray(dst)
    notes = list(notes or [])
    if src.ndim != 1 or src.shape != dst.shape:
        raise InputError(where, f"src and dst must be 1-D of equal length, got {src.shape} and {dst.shape}")
    if src.size == 0:
        raise InputError(where, "empty graph: no edges")
    check_int_array(src, "source vertex ids", where)
    check_int_array(dst, "destination vertex ids", where)
    if n is None:
        n = max(int(src.max()), int(dst.max())) + 1
    validate(name=where, shape=(n, n))
    validate(name=where, shape=(n, n), rows=src, indices=dst)
    indptr, indices, loops = pattern_csr(src, dst, n, symmetric=symmetric, drop_self_loops=drop_self_loops,
                                          workers=workers, name=where)
    nnz = indices.shape[0]
    if loops:
        notes.append(f"removed {loops:,} self-loops")
    if symmetric:
        notes.append("symmetrized: added the reverse of every edge")
        expected = 2 * (src.size - loops)
        if expected - nnz:
            notes.append(f"removed {expected - nnz:,} duplicate entries")
    elif src.size - loops - nnz:
        notes.append(f"removed {src.size - loops - nnz:,} duplicate edges")
    validate(name=where, shape=(n, n), nnz=nnz)
    if ids is not None:
        ids = np.asarray(ids, dtype=np.int64)
        if ids.shape != (n,):
            raise InputError(where, f"ids has shape {ids.shape}, expected ({n:,},)")
    return Graph(indptr, indices, pattern_values(nnz), name, source, True, ids, notes,
                 symmetric=symmetric)
