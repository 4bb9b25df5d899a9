"""Checks of a graph's CSR arrays and sizes: one-line
:class:`~finepar.errors.InputError` messages naming the input and the first bad position
(:func:`validate`)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import numpy as np

from ..errors import InputError
from ..graph import INT32_MAX, Graph, indptr_dtype
from ..parallel import chunked, first_true


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------


def fmt_value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    return repr(float(v))


def row_of(indptr: np.ndarray, pos: int) -> int:
    return int(np.searchsorted(indptr, pos, side="right")) - 1


def validate(graph: Graph | None = None, /, *, name: str | os.PathLike | None = None,
             shape: Sequence[int] | None = None, nnz: int | None = None,
             indptr: np.ndarray | None = None, rows: np.ndarray | None = None,
             indices: np.ndarray | None = None, data: np.ndarray | None = None,
             index_base: int = 0) -> None:
    """Check a graph, or the parts of one, and raise on the first problem.

    This is the single validation entry point used by :func:`load`,
    :func:`from_scipy`, :func:`from_csr` and :func:`from_edges`. It checks only
    what it is given, so a loader can call it early (with the declared `shape`
    and `nnz`, before reading a body) and again on the arrays.

    Parameters
    ----------
    graph : Graph, optional
        Check every invariant of a finished graph (dtypes, shapes, index
        ranges, sorted and duplicate-free rows, finite values, ``ids``).
        The keyword arguments other than `name` are then ignored.
    name : str or os.PathLike, optional
        File or object named in the error (default: the graph's source or name).
    shape : (int, int), optional
        Must be square, non-empty and within the int32 limit.
    nnz : int, optional
        Number of stored entries; must be at least 1 (there is no upper
        limit: ``indptr`` is int64 past :data:`INT32_MAX`). Defaults to
        ``len(indices)`` when `indices` is given.
    indptr : array_like of int, shape (n + 1,), optional
        CSR row pointers (requires `shape` and `indices`).
    rows : array_like of int, shape (nnz,), optional
        COO row indices (instead of `indptr`).
    indices : array_like of int, shape (nnz,), optional
        Column indices, checked against ``[0, n)``.
    data : array_like, shape (nnz,), optional
        Values: must be real numbers, finite.
    index_base : {0, 1}
        Added to row/column positions in messages (1 for Matrix Market).

    Raises
    ------
    InputError
        With a one-line message naming `name` and the first problem found.
    """
    if graph is not None:
        _validate_graph(graph, name if name is not None else (graph.source or graph.name))
        return
    n = None
    if shape is not None:
        if len(shape) != 2:
            raise InputError(name, f"expected a 2-D matrix, got shape {tuple(shape)}")
        r, c = int(shape[0]), int(shape[1])
        if r != c:
            raise InputError(name, f"matrix is not square ({r:,} x {c:,})")
        if r <= 0:
            raise InputError(name, "empty graph: 0 vertices")
        if r > INT32_MAX:
            raise InputError(name, f"{r:,} vertices exceed the int32 limit of {INT32_MAX:,}")
        n = r
    if nnz is None and indices is not None:
        nnz = int(np.shape(indices)[0])
    if nnz is not None and nnz <= 0:
        where = f"{n:,} vertices but " if n is not None else ""
        raise InputError(name, f"empty graph: {where}0 stored entries")
    if indices is None:
        if indptr is not None or rows is not None or data is not None:
            raise TypeError("validate(): indptr, rows and data need indices")
        return
    if n is None:
        raise TypeError("validate(): arrays need shape")
    indices = np.asarray(indices)
    check_int_array(indices, "indices", name)
    if indices.ndim != 1:
        raise InputError(name, f"indices must be 1-D, got shape {indices.shape}")
    if indptr is not None:
        indptr = np.asarray(indptr)
        check_indptr(indptr, n, nnz, name)
    elif rows is not None:
        rows = np.asarray(rows)
        check_int_array(rows, "row indices", name)
        if rows.shape != indices.shape:
            raise InputError(name, f"{rows.shape[0]:,} row indices but {indices.shape[0]:,} column indices")
        check_range(rows, n, "row index", name, index_base)
    if indptr is not None:
        bad = _first_out_of_range(indices, n)
        if bad is not None:
            raise InputError(name, f"indices[{bad:,}] = {int(indices[bad]):,} is out of range for {n:,} "
                                   f"vertices (row {row_of(indptr, bad) + index_base:,})")
    else:
        check_range(indices, n, "column index", name, index_base)
    if data is not None:
        data = np.asarray(data)
        if data.shape != indices.shape:
            raise InputError(name, f"data has {data.shape[0] if data.ndim else 0:,} values but there are "
                                   f"{indices.shape[0]:,} indices")
        _check_values(data, name, indptr, rows, indices, index_base)


def check_int_array(a: np.ndarray, what: str, name) -> None:
    if a.dtype.kind not in "iu":
        raise InputError(name, f"{what} must be integers, got dtype {a.dtype}")


def _first_out_of_range(a: np.ndarray, n: int) -> int | None:
    if a.size == 0:
        return None
    ends = chunked(lambda lo, hi: (int(a[lo:hi].min()), int(a[lo:hi].max())), a.shape[0])
    if min(e[0] for e in ends) >= 0 and max(e[1] for e in ends) < n:
        return None
    return first_true(lambda lo, hi: (a[lo:hi] < 0) | (a[lo:hi] >= n), a.shape[0])


def check_range(a: np.ndarray, n: int, what: str, name, base: int) -> None:
    bad = _first_out_of_range(a, n)
    if bad is not None:
        raise InputError(name, f"entry {bad + base:,} has {what} {int(a[bad]) + base:,}, outside "
                               f"{base}..{n - 1 + base:,}")


def check_indptr(indptr: np.ndarray, n: int, nnz: int, name) -> None:
    check_int_array(indptr, "indptr", name)
    if indptr.ndim != 1 or indptr.shape[0] != n + 1:
        raise InputError(name, f"indptr has shape {indptr.shape}, expected ({n + 1:,},) for {n:,} rows")
    if int(indptr[0]) != 0:
        raise InputError(name, f"indptr[0] is {int(indptr[0]):,}, expected 0")
    steps = np.diff(indptr)
    if steps.size and int(steps.min()) < 0:
        k = int(np.flatnonzero(steps < 0)[0])
        raise InputError(name, f"indptr decreases at position {k + 1:,} "
                               f"({int(indptr[k]):,} > {int(indptr[k + 1]):,})")
    if int(indptr[-1]) != nnz:
        raise InputError(name, f"indptr[-1] is {int(indptr[-1]):,} but there are {nnz:,} indices")


def _check_values(data: np.ndarray, name, indptr, rows, indices, base: int) -> None:
    if data.dtype.kind == "c":
        raise InputError(name, "complex values are not supported")
    if data.dtype.kind not in "biuf":
        raise InputError(name, f"values must be real numbers, got dtype {data.dtype}")
    if data.dtype.kind != "f":
        return
    pos = first_true(lambda lo, hi: ~np.isfinite(data[lo:hi]), data.shape[0])
    if pos is None:
        return
    row = row_of(indptr, pos) if indptr is not None else int(rows[pos]) if rows is not None else None
    col = int(indices[pos])
    where = f"value at row {row + base:,}, column {col + base:,}" if row is not None else f"value {pos:,}"
    raise InputError(name, f"{where} is {fmt_value(float(data[pos]))}")


def first_unsorted(indptr: np.ndarray, indices: np.ndarray) -> int | None:
    """Position of the first column index not above its predecessor in the same row.

    Chunks of :data:`finepar.parallel.CHUNK` entries are scanned by the pool's threads,
    so the temporaries stay small whatever ``nnz`` is. None when every row is strictly
    increasing.
    """
    starts = indptr[1:-1]  # a new row may start lower than the last one ended

    def test(a: int, b: int) -> np.ndarray:
        lo, hi = a + 1, b + 1  # position p is compared with p - 1
        bad = indices[lo:hi] <= indices[lo - 1:hi - 1]
        if bad.any():
            first, last = np.searchsorted(starts, (lo, hi))
            bad[starts[first:last] - lo] = False
        return bad
    hit = first_true(test, indices.shape[0] - 1)
    return None if hit is None else hit + 1


def _validate_graph(g: Graph, name) -> None:
    if not isinstance(g, Graph):
        raise TypeError(f"validate() expects a Graph, got {type(g).__name__}")
    nnz = g.indices.shape[0] if isinstance(g.indices, np.ndarray) else 0
    for attr, dtype in (("indptr", indptr_dtype(nnz)), ("indices", np.int32), ("data", np.float32)):
        a = getattr(g, attr)
        if not isinstance(a, np.ndarray) or a.dtype != dtype or a.ndim != 1:
            got = f"{a.dtype} {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
            raise InputError(name, f"{attr} must be a 1-D {np.dtype(dtype).name} array, got {got}")
    n = g.n
    validate(name=name, shape=(n, n), indptr=g.indptr, indices=g.indices, data=g.data)
    k = first_unsorted(g.indptr, g.indices)
    if k is not None:
        row = row_of(g.indptr, k)
        col = int(g.indices[k])
        what = "duplicate column" if col == int(g.indices[k - 1]) else "unsorted column"
        raise InputError(name, f"row {row:,} has a {what} index {col:,} at position {k:,}")
    if g.pattern and nnz and first_true(lambda lo, hi: g.data[lo:hi] != 1, nnz) is not None:
        raise InputError(name, "pattern graph has data values other than 1")
    if g.ids is not None:
        if not isinstance(g.ids, np.ndarray) or g.ids.dtype != np.int64 or g.ids.shape != (n,):
            raise InputError(name, f"ids must be an int64 array of shape ({n:,},)")
