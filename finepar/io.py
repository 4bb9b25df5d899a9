"""Load, validate, convert and save graphs and sparse matrices.

Every graph FinePar runs on is a :class:`Graph`: a square matrix in CSR form
with int32 ``indices``, float32 ``data`` and an ``indptr`` that is int32 up to
2,147,483,647 stored entries and int64 beyond (:func:`finepar.graph.as_indptr`),
column indices sorted within each row and no duplicate entries. Row ``i`` lists
the out-edges of vertex ``i`` (``A[i, j] != 0`` means an edge ``i -> j``).

Input formats (chosen by file name, case-insensitive)
-----------------------------------------------------
``.mtx``, ``.mtx.gz``
    Matrix Market coordinate files: ``general``, ``symmetric`` and
    ``skew-symmetric`` storage; ``real``, ``integer`` and ``pattern`` fields.
    Read with ``fast_matrix_market``. Symmetric storage is expanded (the
    diagonal once; skew-symmetric mirrors are negated). Duplicate entries are
    summed (collapsed to one entry for ``pattern``).
``.txt``, ``.tsv``, ``.edges``, ``.el`` (each optionally ``.gz``)
    SNAP-style edge lists: ``src dst`` integer vertex ids per line, separated
    by blanks or tabs, optionally followed by a numeric edge weight (a third
    column makes a valued graph; further columns are ignored with a note); every
    line has the same number of columns. Blank lines are skipped and ``#`` or
    ``%`` starts a comment that runs to the end of the line. Ids are compacted
    to ``0 .. n-1`` in increasing order (the original ids are kept in
    :attr:`Graph.ids` when that changed anything); duplicate edges are removed
    (weights summed); self-loops are kept.
``out.NAME``, ``out.NAME.gz``
    KONECT edge lists: ``%`` header lines (``% sym|asym WEIGHTS`` then,
    optionally, ``% EDGES N N``), then 1-based ``src dst [weight [timestamp]]``
    lines. Vertex ``k`` is row ``k - 1``; ``n`` is the header's vertex count
    (else the largest id). ``% sym`` means undirected, each edge listed once:
    both directions are stored (noted). ``unweighted`` networks are pattern
    graphs whatever columns follow the ids; otherwise the third column is the
    weight. Timestamps and other extra columns are ignored with a note.
``.edgelist``, ``.edgelist.gz``
    networkx edge lists: :func:`networkx.write_edgelist` (``u v {'weight': 2.0}``,
    ``u v {}``, or ``u v`` with ``data=False``) and
    :func:`networkx.write_weighted_edgelist` (``u v 2.0``) output, ``#``
    comments. Node labels must be integers (negative ones too); they are
    compacted like SNAP ids. A ``weight`` attribute gives the values (edges
    without one weigh 1); other attributes are ignored with a note. The
    attribute dicts are read by a small parser (no ``eval``). Each line is one
    directed edge ``u -> v``.
``.graph``, ``.graph.gz``
    METIS graphs: a header ``n m [fmt [ncon]]`` (``fmt`` up to three 0/1 digits:
    vertex sizes, vertex weights, edge weights), ``%`` comment lines, then one
    line per vertex (blank for a vertex with no neighbours) with its 1-based
    neighbours, each followed by its weight when ``fmt`` ends in 1. Edge
    weights become the values; vertex sizes and weights are skipped with a note.
    The graph is undirected: the adjacency must be symmetric (with equal
    weights both ways), hold no self-loops or repeated neighbours, and list
    ``2 m`` neighbours in all.
``.mat``
    MATLAB files (version 4 to 7.2, read with :func:`scipy.io.loadmat`): the
    ``A`` of a SuiteSparse ``Problem`` struct (its ``Zeros`` pattern, when
    present, added back as explicit zeros, as in the collection's Matrix Market
    files), or else the only sparse matrix in the file. Logical sparse
    matrices are pattern graphs. Where the OS can fork, the file is read in a
    child process: scipy's reader crashes the interpreter on some damaged
    files, and such a crash becomes an InputError.
``.npz``
    A sparse matrix written by :func:`save` or by
    :func:`scipy.sparse.save_npz` (any format).

Values: Matrix Market ``real``/``integer`` values, edge-list and METIS weights
become float32. Pattern inputs (pattern Matrix Market, unweighted edge lists,
METIS graphs without edge weights, logical ``.mat`` matrices) get ``data`` all
ones and ``pattern=True``. Explicit zeros are kept as stored entries unless
``drop_zeros=True``; either way a note says how many there were. Every
transformation the loader applies is recorded, one line each, in
:attr:`Graph.notes`.

Sizes and memory
----------------
:func:`load` learns the vertex count ``n`` and an upper bound on the stored
entries ``nnz`` as early as the format allows (the Matrix Market size line,
the METIS header, the ``.npz`` array headers; ``.mat`` files once read; edge
lists once parsed), before it builds any CSR array. It then calls the caller's
``check_size(n, nnz)`` and estimates the host memory the load needs (about 24
bytes per vertex plus, per entry, the format's parse and sort buffers: see
:func:`load_memory`), refusing to start when that exceeds the memory
available (:func:`available_memory`).

Checks
------
Every problem below raises :class:`~finepar.errors.InputError` whose message is
a single line naming the file (or the in-memory object) and the problem;
nothing is written anywhere.

* file missing, a directory, or unreadable;
* unknown file name (the message lists the supported ones);
* malformed Matrix Market: bad banner, bad size line (also a negative or
  overflowing size), too few or too many entries, a non-numeric token, an
  entry index outside the declared size or too large to be read
  (``fast_matrix_market``'s message, prefixed ``malformed Matrix Market:``),
  more entries declared than the file can hold, a NUL byte; dense ``array``
  files and ``vector`` objects;
* corrupt gzip stream;
* complex-valued Matrix Market or sparse matrix (unsupported);
* a matrix that is not square (``matrix is not square (R x C)``);
* an index out of range: negative or ``>= n`` in :func:`from_csr`, or outside
  the declared size in a Matrix Market file; the first bad position is named;
* a NaN or infinite value (``value at row i, column j is NaN``; ``line N:
  weight ...`` in edge lists), or a finite value too large for float32; Matrix
  Market positions are 1-based as in the file, in-memory positions 0-based;
* more vertices than int32 column indices can address (2,147,483,647); there
  is no limit on stored entries (``indptr`` becomes int64 past the int32 limit);
* a load that needs more memory than is available (``loading needs about
  X GiB ... but Y GiB is available``); whatever ``check_size`` raises;
* an empty graph: 0 vertices, or 0 stored entries (also after
  ``drop_zeros``);
* edge lists (``line N: ...``): a line with one field, lines with different
  numbers of columns (``line N has 3 columns but line M has 2``), an id that
  is not an integer, a negative or overflowing id, a weight that is not a
  number, a file with no edges; KONECT: a missing or bipartite header, id 0
  or above the header's vertex count, an edge count that differs from the
  header's; networkx: a non-integer node label, an unclosed or misplaced
  attribute dict, a ``weight`` that is not a number;
* METIS (``line N: ...``): a header that is not ``n m [fmt [ncon]]``, more
  edges declared than the file can hold, a vertex line whose field count does
  not fit ``fmt``, too few or too many vertex lines, a neighbour outside
  ``1..n``, a self-loop, a repeated neighbour, an edge listed on one endpoint's
  line only, different weights on the two lines, ``2 m`` not matching the
  neighbours listed;
* ``.mat``: not a MAT-file, MATLAB v7.3 (HDF5) files, no sparse matrix, several
  sparse matrices and no ``Problem`` struct, a ``Problem`` whose ``A`` is
  missing or not sparse;
* a ``.npz`` file that is not a zip archive or not a scipy sparse matrix;
* in :func:`from_csr`: ``indptr`` of the wrong length, not starting at 0,
  decreasing, or not ending at ``len(indices)``; ``data`` of the wrong length.

All conversions are vectorised (no Python loop over rows or edges) and keep
int32 index arrays wherever the values fit.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import mmap
import os
import re
import signal
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # annotations only: scipy.sparse is imported where it is used
    import scipy.sparse as sp

from .edges import pattern_csr
from .errors import InputError
from .files import atomic_open
from .graph import INT32_MAX, Graph, as_indices, as_indptr, indptr_dtype, pattern_values
from .parallel import chunked, first_true

__all__ = [
    "Graph",
    "load",
    "save",
    "validate",
    "from_scipy",
    "from_csr",
    "from_edges",
    "available_memory",
    "load_memory",
    "INT32_MAX",
    "SUPPORTED_SUFFIXES",
]


_MM_SUFFIXES = (".mtx", ".mtx.gz")
_EDGE_SUFFIXES = tuple(s + z for s in (".txt", ".tsv", ".edges", ".el") for z in ("", ".gz"))
_NX_SUFFIXES = (".edgelist", ".edgelist.gz")
_METIS_SUFFIXES = (".graph", ".graph.gz")
_MAT_SUFFIXES = (".mat",)
_NPZ_SUFFIXES = (".npz",)
SUPPORTED_SUFFIXES = (_MM_SUFFIXES + _EDGE_SUFFIXES + _NX_SUFFIXES + _METIS_SUFFIXES + _MAT_SUFFIXES
                      + _NPZ_SUFFIXES)
"""File name endings :func:`load` understands (besides KONECT's ``out.NAME``)."""
_KIND_OF_SUFFIX = {suffix: kind for kind, suffixes in (
    ("mtx", _MM_SUFFIXES), ("edges", _EDGE_SUFFIXES), ("edgelist", _NX_SUFFIXES), ("metis", _METIS_SUFFIXES),
    ("mat", _MAT_SUFFIXES), ("npz", _NPZ_SUFFIXES)) for suffix in suffixes}
_KONECT_PREFIX = "out."
_SAVE_SUFFIXES = (".npz", ".mtx", ".mtx.gz")

# Keys of the .npz layout written by scipy.sparse.save_npz for CSR, plus ours.
_NPZ_PATTERN_KEY = "finepar_pattern"
_NPZ_SYMMETRIC_KEY = "finepar_symmetric"
_NPZ_IDS_KEY = "finepar_ids"
# save(compressed=None) deflates graphs with fewer stored entries than this.
_COMPRESS_BELOW = 100_000_000
# Largest expansion of a deflate stream (RFC 1951 allows about 1032:1).
_GZIP_MAX_RATIO = 1032


# --------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------


def _fmt_value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    return repr(float(v))


def _row_of(indptr: np.ndarray, pos: int) -> int:
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
    _check_int_array(indices, "indices", name)
    if indices.ndim != 1:
        raise InputError(name, f"indices must be 1-D, got shape {indices.shape}")
    if indptr is not None:
        indptr = np.asarray(indptr)
        _check_indptr(indptr, n, nnz, name)
    elif rows is not None:
        rows = np.asarray(rows)
        _check_int_array(rows, "row indices", name)
        if rows.shape != indices.shape:
            raise InputError(name, f"{rows.shape[0]:,} row indices but {indices.shape[0]:,} column indices")
        _check_range(rows, n, "row index", name, index_base)
    if indptr is not None:
        bad = _first_out_of_range(indices, n)
        if bad is not None:
            raise InputError(name, f"indices[{bad:,}] = {int(indices[bad]):,} is out of range for {n:,} "
                                   f"vertices (row {_row_of(indptr, bad) + index_base:,})")
    else:
        _check_range(indices, n, "column index", name, index_base)
    if data is not None:
        data = np.asarray(data)
        if data.shape != indices.shape:
            raise InputError(name, f"data has {data.shape[0] if data.ndim else 0:,} values but there are "
                                   f"{indices.shape[0]:,} indices")
        _check_values(data, name, indptr, rows, indices, index_base)


def _check_int_array(a: np.ndarray, what: str, name) -> None:
    if a.dtype.kind not in "iu":
        raise InputError(name, f"{what} must be integers, got dtype {a.dtype}")


def _first_out_of_range(a: np.ndarray, n: int) -> int | None:
    if a.size == 0:
        return None
    ends = chunked(lambda lo, hi: (int(a[lo:hi].min()), int(a[lo:hi].max())), a.shape[0])
    if min(e[0] for e in ends) >= 0 and max(e[1] for e in ends) < n:
        return None
    return first_true(lambda lo, hi: (a[lo:hi] < 0) | (a[lo:hi] >= n), a.shape[0])


def _check_range(a: np.ndarray, n: int, what: str, name, base: int) -> None:
    bad = _first_out_of_range(a, n)
    if bad is not None:
        raise InputError(name, f"entry {bad + base:,} has {what} {int(a[bad]) + base:,}, outside "
                               f"{base}..{n - 1 + base:,}")


def _check_indptr(indptr: np.ndarray, n: int, nnz: int, name) -> None:
    _check_int_array(indptr, "indptr", name)
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
    row = _row_of(indptr, pos) if indptr is not None else int(rows[pos]) if rows is not None else None
    col = int(indices[pos])
    where = f"value at row {row + base:,}, column {col + base:,}" if row is not None else f"value {pos:,}"
    raise InputError(name, f"{where} is {_fmt_value(float(data[pos]))}")


def _first_unsorted(indptr: np.ndarray, indices: np.ndarray) -> int | None:
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
    k = _first_unsorted(g.indptr, g.indices)
    if k is not None:
        row = _row_of(g.indptr, k)
        col = int(g.indices[k])
        what = "duplicate column" if col == int(g.indices[k - 1]) else "unsorted column"
        raise InputError(name, f"row {row:,} has a {what} index {col:,} at position {k:,}")
    if g.pattern and nnz and first_true(lambda lo, hi: g.data[lo:hi] != 1, nnz) is not None:
        raise InputError(name, "pattern graph has data values other than 1")
    if g.ids is not None:
        if not isinstance(g.ids, np.ndarray) or g.ids.dtype != np.int64 or g.ids.shape != (n,):
            raise InputError(name, f"ids must be an int64 array of shape ({n:,},)")


# --------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------


def _valued_csr(rows: np.ndarray, cols: np.ndarray, data: np.ndarray, n: int) -> tuple[sp.csr_array, int]:
    """CSR of COO triplets with duplicates summed; returns (matrix, duplicates merged)."""
    import scipy.sparse as sp
    coo = sp.coo_array((data, (rows, cols)), shape=(n, n))
    before = coo.nnz
    csr = coo.tocsr()
    del coo
    csr.sum_duplicates()
    return csr, before - csr.nnz


def _finish_values(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, name, *,
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
        row = _row_of(indptr, pos)
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
        _check_int_array(ids, "ids", where)
        if ids.shape != (n,):
            raise InputError(where, f"ids has shape {ids.shape}, expected ({n:,},)")
        ids = ids.astype(np.int64, copy=False)
    indptr, indices = as_indptr(indptr), as_indices(indices)
    if data is not None:
        data = np.asarray(data)
        if data.dtype not in (np.float32, np.float64):
            data = data.astype(np.float64)
    if not sorted_rows and _first_unsorted(indptr, indices) is not None:
        indptr, indices, data = _canonical(indptr, indices, data, n, notes, pattern=pattern)
    indptr, indices, values = _finish_values(indptr, indices, data, where, drop_zeros=drop_zeros, notes=notes)
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
    _check_int_array(src, "source vertex ids", where)
    _check_int_array(dst, "destination vertex ids", where)
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


# --------------------------------------------------------------------------
# file loading
# --------------------------------------------------------------------------

# Host memory a load needs, in bytes: per vertex (indptr and the row counts
# built beside it) and, per stored entry, by format (the parsed COO arrays, the
# sort keys and the finished CSR arrays, measured with tracemalloc on the shared
# graphs and rounded up). Text formats also hold the file and a few per-byte
# masks while parsing: _TEXT_BYTES per byte of text.
_VERTEX_BYTES = 24
_ENTRY_BYTES = {"mtx": 32, "edges": 48, "konect": 48, "edgelist": 48, "metis": 72, "mat": 40, "npz": 16}
_TEXT_BYTES = 14
_GIB = float(1 << 30)


def available_memory() -> int | None:
    """Host memory a new allocation can get now, in bytes.

    ``MemAvailable`` of ``/proc/meminfo`` where there is one, else
    ``os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")``.

    Returns
    -------
    int or None
        Bytes; None when neither source answers.

    Notes
    -----
    Some virtual machines (the multi-GPU Firecracker hosts of DESIGN.md §6) start
    with a small ``MemTotal`` that grows as memory is used, so this reads low
    there; pass ``memory_limit`` to :func:`load` on such machines.
    """
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def load_memory(kind: str, n: int, nnz: int, text_bytes: int = 0) -> int:
    """Estimated peak host memory of loading a graph, in bytes.

    Parameters
    ----------
    kind : {"mtx", "edges", "konect", "edgelist", "metis", "mat", "npz"}
        The loader.
    n : int
        Vertices.
    nnz : int
        Stored entries (an upper bound is fine).
    text_bytes : int, default 0
        Bytes of text to parse (text formats).

    Returns
    -------
    int
        ``24 n + c nnz + 14 text_bytes`` with ``c`` the loader's bytes per
        entry: 16 for ``.npz`` (the final arrays and a chunk of
        temporaries), 32 to 72 for the others (parsed COO arrays, sort keys,
        final arrays). Measured peaks (tracemalloc) on the shared graphs: 6 to
        10 bytes per entry for ``.npz``, 20 to 25 for Matrix Market, 27 for
        ``.mat``, 45 to build edge lists, 11 to 12.3 per byte of text.
    """
    return _VERTEX_BYTES * int(n) + _ENTRY_BYTES[kind] * int(nnz) + _TEXT_BYTES * int(text_bytes)


def _gib(b: int) -> str:
    return f"{b / _GIB:,.1f} GiB"


@dataclass
class _Load:
    """One call of :func:`load`: the file, the caller's options, the size checks."""

    path: str
    name: str
    kind: str
    gz: bool
    drop_zeros: bool
    check_size: Callable[[int, int], Any] | None
    memory_limit: int | None
    facts: Any = None  # finepar.prepcache.FileFacts of the file, or None

    def declare(self, n: int, nnz: int) -> None:
        """Vertex count and stored-entry bound are known: check them before building arrays."""
        validate(name=self.path, shape=(n, n), nnz=nnz)
        if self.check_size is not None:
            self.check_size(int(n), int(nnz))
        self.need(load_memory(self.kind, n, nnz), f"{int(n):,} vertices, {int(nnz):,} stored entries")

    def need(self, need: int, what: str) -> None:
        limit = available_memory() if self.memory_limit is None else int(self.memory_limit)
        if limit is not None and need > limit:
            raise InputError(self.path, f"loading needs about {_gib(need)} of memory ({what}) but "
                                        f"{_gib(limit)} is available")

    def text(self) -> bytes:
        """The whole file (decompressed), after checking there is memory to parse it."""
        if not self.gz:
            size = os.path.getsize(self.path)
            self.need(load_memory(self.kind, 0, 0, size), f"{size:,} bytes of text")
        raw = _read_bytes(self.path, self.gz)
        if self.gz:
            self.need(load_memory(self.kind, 0, 0, len(raw)), f"{len(raw):,} bytes of text")
        return raw

    def check_declared(self, count: int, min_bytes: int, what: str) -> None:
        """Refuse a header that declares more entries than the file can hold."""
        size = os.path.getsize(self.path)
        room = size * (_GZIP_MAX_RATIO if self.gz else 1)
        if count > room // min_bytes + 1:
            kind = "gzip file" if self.gz else "file"
            raise InputError(self.path, f"{what} declares {count:,} entries but the {kind} has only "
                                        f"{size:,} bytes")


def _format_of(path: str) -> tuple[str, str, bool] | None:
    """(loader kind, graph name, gzipped) for a file name, or None."""
    base = os.path.basename(path)
    lower = base.lower()
    for suffix in sorted(_KIND_OF_SUFFIX, key=len, reverse=True):
        if lower.endswith(suffix) and len(lower) > len(suffix):
            return _KIND_OF_SUFFIX[suffix], base[: len(base) - len(suffix)], suffix.endswith(".gz")
    if lower.startswith(_KONECT_PREFIX) and len(lower) > len(_KONECT_PREFIX):
        gz = lower.endswith(".gz") and len(lower) > len(_KONECT_PREFIX) + 3
        name = base[len(_KONECT_PREFIX): len(base) - 3 if gz else len(base)]
        return "konect", name, gz
    return None


def _check_readable(path: str) -> None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as e:
        raise InputError(path, f"cannot access file: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(path, "is a directory, not a graph file")
    if not os.access(path, os.R_OK):
        raise InputError(path, "cannot read file: permission denied")


def load(path: str | os.PathLike, *, drop_zeros: bool = False,
         check_size: Callable[[int, int], Any] | None = None, memory_limit: int | None = None,
         facts=None) -> Graph:
    """Read a graph or sparse matrix file.

    Parameters
    ----------
    path : str or os.PathLike
        A Matrix Market (``.mtx``, ``.mtx.gz``), edge-list (``.txt``,
        ``.tsv``, ``.edges``, ``.el``, each optionally ``.gz``), KONECT
        (``out.NAME``, ``out.NAME.gz``), networkx (``.edgelist``,
        ``.edgelist.gz``), METIS (``.graph``, ``.graph.gz``), MATLAB (``.mat``)
        or scipy sparse / FinePar (``.npz``) file; the format is chosen by the
        name (see the module docstring).
    drop_zeros : bool, default False
        Drop explicitly stored zeros. By default they are kept as stored
        entries (they are edges of the graph); a note gives their count either
        way.
    check_size : callable, optional
        ``check_size(n, nnz)``, called once with the vertex count and an upper
        bound on the stored entries (the declared entries, doubled where
        symmetric storage will be expanded) as soon as the file reveals them
        (Matrix Market size line, METIS header, ``.npz`` array headers;
        ``.mat`` files once read; edge lists once parsed) and before any CSR
        array is built. Whatever it raises propagates unchanged.
    memory_limit : int, optional
        Bytes of host memory the load may use; default
        :func:`available_memory`.
    facts : finepar.prepcache.FileFacts, optional
        What earlier loads learnt about this unchanged file. A ``.npz`` CSR whose rows an
        earlier load found sorted and duplicate-free (``sorted_rows``) is not scanned for
        that again; one found so now is remembered. Every other check still runs.

    Returns
    -------
    Graph
        Canonical CSR, named after the file without its extensions (KONECT:
        without ``out.``); `source` is `path`; `notes` lists what the loader did.

    Raises
    ------
    InputError
        For every problem listed in the module's *Checks* section, including a
        load whose estimated memory (:func:`load_memory`) exceeds
        `memory_limit`; the message is one line and names `path`.
    """
    path = os.fspath(path)
    _check_readable(path)
    found = _format_of(path)
    if found is None:
        raise InputError(path, "unknown file type; supported: " + ", ".join(SUPPORTED_SUFFIXES)
                         + " and KONECT out.NAME")
    kind, name, gz = found
    ctx = _Load(path, name, kind, gz, drop_zeros, check_size, memory_limit, facts)
    return _LOADERS[kind](ctx)


# Matrix Market ---------------------------------------------------------------


class _GuardedText:
    """A buffered binary stream for fast_matrix_market that refuses NUL bytes and ends in a newline.

    fast_matrix_market 1.7 crashes the interpreter (SIGSEGV) on a NUL byte after
    an entry and on a last line that ends in junk with no newline after it;
    every stream it reads from a file that is not known to be clean goes
    through this wrapper. It reads the underlying stream in 4 MiB chunks
    (checked once each) and serves fast_matrix_market's small reads from them.
    """

    _CHUNK = 1 << 22

    def __init__(self, raw, path: str):
        self._raw = raw
        self._path = path
        self._buf = b""
        self._pos = 0
        self._line = 1  # line number at the start of the next chunk
        self._last = b"\n"

    def _more(self) -> bool:
        """Append the next checked chunk to the buffer; False at the end of the stream."""
        chunk = self._raw.read(self._CHUNK)
        if not chunk:
            if self._last == b"\n":
                return False
            chunk = b"\n"
        nul = chunk.find(b"\0")
        if nul >= 0:
            line = self._line + chunk.count(b"\n", 0, nul)
            raise InputError(self._path, f"line {line:,}: NUL byte: not a text file")
        self._line += chunk.count(b"\n")
        self._last = chunk[-1:]
        self._buf = self._buf[self._pos:] + chunk
        self._pos = 0
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = None if size is None or size < 0 else size
        while (want is None or len(self._buf) - self._pos < want) and self._more():
            pass
        end = len(self._buf) if want is None else min(len(self._buf), self._pos + want)
        out = self._buf[self._pos:end]
        self._pos = end
        return out

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._raw.close()


def _mm_needs_guard(ctx: _Load) -> bool:
    """Whether fast_matrix_market must read the file through :class:`_GuardedText`.

    Always for gzip streams; for a plain file only when it does not end in a
    newline (a NUL byte anywhere is refused here, with its line).
    """
    if ctx.gz:
        return True
    if os.path.getsize(ctx.path) == 0:
        return False
    with open(ctx.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        nul = m.find(b"\0")
        if nul >= 0:
            line = m[:nul].count(b"\n") + 1
            raise InputError(ctx.path, f"line {line:,}: NUL byte: not a text file")
        return m[-1:] != b"\n"


def _mm_call(ctx: _Load, fn: Callable[[Any], Any], *, guard: bool, header: bool) -> Any:
    """Run a fast_matrix_market reader on the file (through the guard), translating its exceptions."""
    path = ctx.path
    stream = None
    try:
        if guard:
            stream = _GuardedText(gzip.open(path, "rb") if ctx.gz else open(path, "rb"), path)
        return fn(path if stream is None else stream)
    except InputError:
        raise
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise InputError(path, f"corrupt gzip file: {e}") from None
    except OSError as e:
        if ctx.gz:
            raise InputError(path, f"corrupt gzip file: {e}") from None
        raise InputError(path, f"cannot read file: {e.strerror or e}") from None
    except (ValueError, RuntimeError, OverflowError, UnicodeError) as e:
        msg = " ".join(str(e).split()) or type(e).__name__
        if header and not msg.startswith("Line"):
            msg = f"bad size line: {msg}"
        raise InputError(path, f"malformed Matrix Market: {msg}") from None
    except MemoryError:
        raise InputError(path, "malformed Matrix Market: not enough memory for the declared size") from None
    finally:
        if stream is not None:
            stream.close()


def _load_mm(ctx: _Load) -> Graph:
    import fast_matrix_market as fmm  # imported here: only Matrix Market files need it

    path = ctx.path
    guard = _mm_needs_guard(ctx)
    header = _mm_call(ctx, fmm.read_header, guard=guard, header=True)
    if header.object != "matrix":
        raise InputError(path, f"malformed Matrix Market: object is '{header.object}', expected 'matrix'")
    if header.format != "coordinate":
        raise InputError(path, f"dense '{header.format}' Matrix Market files are not supported "
                               "(expected 'coordinate')")
    if header.field == "complex" or header.symmetry == "hermitian":
        raise InputError(path, "complex-valued Matrix Market matrices are not supported")
    declared = int(header.nnz)
    validate(name=path, shape=header.shape, nnz=declared)
    ctx.check_declared(declared, 4, "size line")  # every entry line holds at least "i j\n"
    symmetry = header.symmetry
    n = int(header.shape[0])
    ctx.declare(n, declared if symmetry == "general" else 2 * declared)
    pattern = header.field == "pattern"

    def body(source):
        return fmm.read_coo(source, generalize_symmetry=False)

    (data, (rows, cols)), shape = _mm_call(ctx, body, guard=guard, header=False)
    notes: list[str] = []
    if pattern:
        data = None
    validate(name=path, shape=shape, rows=rows, indices=cols, data=data, index_base=1)
    if symmetry != "general":
        rows, cols, data = _mirror(path, rows, cols, data, symmetry, notes)
    if pattern:
        total = rows.size
        indptr, indices, _ = pattern_csr(rows, cols, n, name=path)
        del rows, cols
        if total - indices.size:
            notes.append(f"removed {total - indices.size:,} duplicate entries")
        return Graph(indptr, indices, pattern_values(indices.size), ctx.name, path, True, None, notes,
                     symmetric=symmetry == "symmetric")
    csr, merged = _valued_csr(rows, cols, data, n)
    del rows, cols, data
    if merged:
        notes.append(f"summed {merged:,} duplicate entries")
    indptr, indices, values = _finish_values(csr.indptr, csr.indices, csr.data, path, drop_zeros=ctx.drop_zeros,
                                             notes=notes, index_base=1)
    return Graph(indptr, indices, values, ctx.name, path, False, None, notes, symmetric=symmetry == "symmetric")


def _mirror(path: str, rows: np.ndarray, cols: np.ndarray, data: np.ndarray | None, symmetry: str,
            notes: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Expand symmetric / skew-symmetric storage: add the mirror of every off-diagonal entry."""
    off = rows != cols
    if symmetry == "skew-symmetric" and data is not None:
        diag = np.flatnonzero(~off & (data != 0))
        if diag.size:
            i = int(rows[diag[0]]) + 1
            raise InputError(path, f"skew-symmetric matrix has a nonzero diagonal entry at row {i:,}, "
                                   f"column {i:,}")
    stored = rows.size
    mirror_rows, mirror_cols = cols[off], rows[off]
    rows = np.concatenate((rows, mirror_rows))
    cols = np.concatenate((cols, mirror_cols))
    del mirror_rows, mirror_cols
    if data is not None:
        mirror = data[off]
        if symmetry == "skew-symmetric":
            np.negative(mirror, out=mirror)
        data = np.concatenate((data, mirror))
    notes.append(f"expanded {symmetry} storage ({stored:,} -> {rows.size:,} stored entries)")
    return rows, cols, data


# .npz ------------------------------------------------------------------------


def _clean_message(e: BaseException) -> str:
    """``e``'s message on one line; numpy's advice to pass ``allow_pickle=True`` (a
    keyword no command-line user has, and a security hole for a file's stored
    objects) becomes what it means."""
    text = " ".join(str(e).split()) or type(e).__name__
    if "allow_pickle" in text:
        return "an array holds Python objects (pickled), which FinePar never loads"
    return text


def _load_npz(ctx: _Load) -> Graph:
    path = ctx.path
    try:
        # Open the file ourselves: np.load leaks its handle when the zip is bad.
        with open(path, "rb") as handle:
            try:
                archive = np.load(handle, allow_pickle=False)
            except (zipfile.BadZipFile, EOFError, zlib.error, ValueError, OSError) as e:
                raise InputError(path, f"not a valid .npz archive: {_clean_message(e)}") from None
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise InputError(path, "not a scipy sparse matrix: the file holds a single .npy array, "
                                       "not an .npz archive")
            with archive:
                return _read_npz(ctx, archive, _NpzArrays(path, archive))
    except InputError:
        raise
    except (zipfile.BadZipFile, EOFError, zlib.error, OSError) as e:
        raise InputError(path, f"corrupt .npz archive: {_clean_message(e)}") from None
    except NotImplementedError as e:  # zipfile: a compression method it does not know
        raise InputError(path, f"corrupt .npz archive: {_clean_message(e)}") from None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
        raise InputError(path, f"not a valid scipy sparse matrix: {_clean_message(e)}") from None
    except MemoryError:
        raise InputError(path, "corrupt .npz archive: an array header declares more than memory holds") from None


def _npy_shape(archive, key: str) -> tuple[int, ...]:
    """Shape of an archive member, read from its .npy header (the data stays on disk)."""
    with archive.zip.open(key + ".npy") as f:
        version = np.lib.format.read_magic(f)
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, _ = reader(f)
    return tuple(int(s) for s in shape)


class _NpzArrays:
    """An archive's arrays by name: large stored members read by :mod:`finepar.npz`'s
    parallel reader, the rest by ``numpy.load``."""

    def __init__(self, path: str, archive):
        from .npz import stored_members
        self.path, self.archive = path, archive
        self.stored = stored_members(path)

    def __getitem__(self, key: str) -> np.ndarray:
        from .npz import read_member
        member = self.stored.get(key)
        return read_member(self.path, member) if member is not None else self.archive[key]


def _read_npz(ctx: _Load, archive, arrays) -> Graph:
    path = ctx.path
    keys = list(archive.files)
    if "format" not in keys:
        shown = ", ".join(keys[:6]) + (", ..." if len(keys) > 6 else "")
        raise InputError(path, f"not a scipy sparse matrix: the archive holds arrays "
                               f"({shown or 'none'}) but no 'format' entry")
    fmt = archive["format"].item()
    fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else str(fmt)
    shape = tuple(int(s) for s in np.atleast_1d(archive["shape"]))
    validate(name=path, shape=shape)
    counted = "data" if "data" in keys else "indices" if "indices" in keys else "row" if "row" in keys else None
    if counted is None:
        raise InputError(path, f"not a valid scipy sparse matrix: '{fmt}' archive has no data or index array")
    nnz = math.prod(_npy_shape(archive, counted))
    n = shape[0]
    ctx.declare(n, nnz)
    pattern = bool(archive[_NPZ_PATTERN_KEY]) if _NPZ_PATTERN_KEY in keys else False
    symmetric = bool(archive[_NPZ_SYMMETRIC_KEY]) if _NPZ_SYMMETRIC_KEY in keys else False
    ids = archive[_NPZ_IDS_KEY] if _NPZ_IDS_KEY in keys else None
    if fmt == "csr":
        if not pattern and "data" not in keys:
            raise InputError(path, "not a valid scipy sparse matrix: no 'data' entry and not marked as a "
                                   "pattern graph")
        data = None if pattern else arrays["data"]
        indices = arrays["indices"]
        known = ctx.facts is not None and ctx.facts.get("sorted_rows") is True
        graph = from_csr(arrays["indptr"], indices, data, n, name=ctx.name, source=path,
                         pattern=pattern or data.dtype == np.bool_, drop_zeros=ctx.drop_zeros,
                         sorted_rows=known)
        if ctx.facts is not None and not known and graph.indices is indices:
            ctx.facts.set(sorted_rows=True)  # taken as stored: sorted, no duplicates
    else:
        import scipy.sparse as sp
        graph = from_scipy(sp.load_npz(path), ctx.name, pattern=pattern or None, source=path,
                           drop_zeros=ctx.drop_zeros)
    if ids is not None:
        if ids.dtype.kind not in "iu" or ids.shape != (graph.n,):
            raise InputError(path, f"'{_NPZ_IDS_KEY}' entry has shape {ids.shape} and dtype {ids.dtype}, "
                                   f"expected ({graph.n:,},) integers")
        graph.ids = ids.astype(np.int64, copy=False)
    graph.symmetric = symmetric
    return graph


# text formats: reading and scanning ---------------------------------------------

_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[9, 10, 11, 12, 13, 32]] = True
_ALLOWED = _WHITESPACE.copy()  # bytes of whitespace and [+-]digits tokens
_ALLOWED[ord("0"):ord("9") + 1] = True
_ALLOWED[[ord("+"), ord("-")]] = True
_INT64_LIMITS = (int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max))


@contextlib.contextmanager
def _reading(path: str, gz: bool) -> Iterator[IO[bytes]]:
    """Open `path` for binary reading (gunzipped when `gz`); read errors become InputErrors."""
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
            yield f
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise InputError(path, f"corrupt gzip file: {e}") from None
    except OSError as e:
        if gz and not isinstance(e, (PermissionError, FileNotFoundError, IsADirectoryError)):
            raise InputError(path, f"corrupt gzip file: {e}") from None
        raise InputError(path, f"cannot read file: {e.strerror or e}") from None


def _read_bytes(path: str, gz: bool) -> bytes:
    with _reading(path, gz) as f:
        return f.read()


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of `a`."""
    view = a.view()
    view.flags.writeable = False
    return view


def _as_bytes(buf: np.ndarray) -> bytes:
    """`buf` as a bytes object: the one it views when it spans all of it, else a copy.

    ``np.fromstring`` must get bytes: they end in a NUL, while an array's last
    token would be read past its end.
    """
    base = buf
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if (isinstance(base, bytes) and len(base) == buf.size
            and np.frombuffer(base, dtype=np.uint8).ctypes.data == buf.ctypes.data):
        return base
    return buf.tobytes()


def _lines_of(raw: bytes, comments: bytes, *, line_start: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of `raw` with comments blanked, and the offsets of its newlines.

    A comment starts at any byte in `comments` (only at the start of a line
    when `line_start`) and runs to the end of its line.
    """
    original = np.frombuffer(raw, dtype=np.uint8)
    newlines = np.flatnonzero(original == ord("\n"))
    marks = np.flatnonzero(np.isin(original, np.frombuffer(comments, dtype=np.uint8)))
    if line_start and marks.size:
        first = np.ones(marks.size, dtype=bool)  # a mark at offset 0 starts the first line
        inner = marks > 0
        first[inner] = original[marks[inner] - 1] == ord("\n")
        marks = marks[first]
    return _blank_to_line_end(original, newlines, marks), newlines


def _blank_to_line_end(buf: np.ndarray, newlines: np.ndarray, marks: np.ndarray) -> np.ndarray:
    """`buf` with every range from a mark to the end of its line blanked (`buf` itself if none)."""
    if marks.size == 0:
        return buf
    line = np.searchsorted(newlines, marks)  # 0-based line of each mark
    first = np.ones(marks.size, dtype=bool)
    first[1:] = line[1:] != line[:-1]
    starts, line = marks[first], line[first]
    ends = np.full(starts.size, buf.size, dtype=np.int64)
    ended = line < newlines.size
    ends[ended] = newlines[line[ended]]
    return _blank_ranges(buf, starts, ends)


def _blank_ranges(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, *, keep: bool = False) -> np.ndarray:
    """A copy of `buf` with the disjoint ranges ``[starts, ends)`` blanked (or, with `keep`, all but them)."""
    step = np.zeros(buf.size + 1, dtype=np.int8)
    step[starts] = 1
    step[ends] -= 1
    inside = np.cumsum(step[:-1], dtype=np.int8).view(bool)
    del step
    return np.where(inside, buf, np.uint8(32)) if keep else np.where(inside, np.uint8(32), buf)


def _token_text(buf: np.ndarray, pos: int) -> str:
    """The whitespace-delimited token around byte offset `pos`, for messages."""
    start = pos
    while start > 0 and not _WHITESPACE[buf[start - 1]] and pos - start < 24:
        start -= 1
    end = pos
    while end < buf.size and not _WHITESPACE[buf[end]] and end - start < 40:
        end += 1
    text = bytes(buf[start:end]).decode("ascii", errors="replace")
    return text if len(text) <= 24 else text[:21] + "..."


def _first_bad_byte(buf: np.ndarray) -> int | None:
    """Offset of the first byte that cannot belong to a ``[+-]digits`` token."""
    bad = np.flatnonzero(~_ALLOWED[buf])
    first = int(bad[0]) if bad.size else None
    signs = np.flatnonzero((buf == ord("+")) | (buf == ord("-")))
    if signs.size:
        at_start = np.ones(signs.size, dtype=bool)
        inner = signs > 0
        at_start[inner] = _WHITESPACE[buf[signs[inner] - 1]]
        nxt = np.minimum(signs + 1, buf.size - 1)
        digit_next = (signs + 1 < buf.size) & (buf[nxt] >= ord("0")) & (buf[nxt] <= ord("9"))
        bad_sign = signs[~(at_start & digit_next)]
        if bad_sign.size and (first is None or bad_sign[0] < first):
            first = int(bad_sign[0])
    return first


def _first_unparsable(buf: np.ndarray, ends: np.ndarray, dtype) -> int:
    """Index of the first token (ending at byte ``ends[i]``) that ``np.fromstring`` rejects.

    A bisection over prefixes of `buf`: ``log2(tokens)`` parses, for messages only.
    """
    lo, hi = 0, ends.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            np.fromstring(buf[: int(ends[mid])].tobytes(), dtype=dtype, sep=" ")
            lo = mid + 1
        except ValueError:
            hi = mid
    return lo


class _Text:
    """A text file's bytes, comments blanked: its tokens per line, parsers and line-numbered errors.

    Parameters
    ----------
    path : str
        Named in errors.
    buf : numpy.ndarray of uint8
        The text, comments (and anything else to skip) already blanked.
    newlines : numpy.ndarray of int64
        Offsets of the ``\\n`` bytes.
    """

    def __init__(self, path: str, buf: np.ndarray, newlines: np.ndarray):
        self.path = path
        self.buf = _readonly(buf)
        self.newlines = newlines
        token = ~_WHITESPACE[buf]
        starts = token.copy()
        starts[1:] &= ~token[:-1]  # first byte of each token
        del token
        line_starts = np.concatenate((np.zeros(1, dtype=np.int64), newlines + 1))
        if line_starts[-1] == buf.size:
            line_starts = line_starts[:-1]
        self.per_line = (np.add.reduceat(starts.view(np.uint8), line_starts, dtype=np.int64) if buf.size
                         else np.zeros(0, dtype=np.int64))
        self.line_starts = line_starts
        self.data_lines = np.flatnonzero(self.per_line)
        self._cum = None
        self._bounds = None

    def error(self, line: int, problem: str) -> InputError:
        """An InputError for 0-based `line`, numbered from 1 in the message."""
        return InputError(self.path, f"line {int(line) + 1:,}: {problem}")

    def token_line(self, t: int) -> int:
        """0-based line of token `t` (counting every token of the file)."""
        if self._cum is None:
            self._cum = np.cumsum(self.per_line)
        return int(np.searchsorted(self._cum, t, side="right"))

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Byte offsets of every token's first byte and of the byte after its last."""
        if self._bounds is None:
            token = ~_WHITESPACE[self.buf]
            edges = np.diff(token.view(np.int8), prepend=np.int8(0), append=np.int8(0))
            del token
            self._bounds = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        return self._bounds

    def fields(self, ok: Callable[[int], bool], expected: str, nothing: str = "no edges in the file") -> int:
        """The number of fields every non-blank line has; raise naming the first line that differs."""
        if self.data_lines.size == 0:
            raise InputError(self.path, f"empty graph: {nothing}")
        first = int(self.data_lines[0])
        k = int(self.per_line[first])
        odd = self.data_lines[self.per_line[self.data_lines] != k]
        for line in (first, *odd[:1].tolist()):
            c = int(self.per_line[line])
            if not ok(c):
                raise self.error(line, f"expected {expected}, found {c} field{'s' if c != 1 else ''}")
        if odd.size:
            c = int(self.per_line[odd[0]])
            raise self.error(odd[0], f"{c} columns, but line {first + 1:,} has {k} "
                                     f"(every line needs the same columns)")
        return k

    def _columns(self, k: int, cols: Sequence[int]) -> np.ndarray:
        """The text with only columns `cols` of its `k`-field lines left."""
        if len(cols) == k:
            return self.buf
        starts, ends = self.bounds()
        keep = np.zeros(k, dtype=bool)
        keep[list(cols)] = True
        keep = np.tile(keep, starts.size // k)
        return _readonly(_blank_ranges(self.buf, starts[keep], ends[keep], keep=True))

    def _value_line(self, t: int, k: int | None, cols: Sequence[int] | None) -> int:
        if k is not None and cols is not None:
            t = (t // len(cols)) * k + cols[t % len(cols)]
        return self.token_line(t)

    def ints(self, what: str, *, k: int | None = None, cols: Sequence[int] | None = None,
             negative_ok: bool = False) -> np.ndarray:
        """Parse the tokens (of columns `cols` of `k`-field lines, or all) as int64, in file order."""
        buf = self.buf if cols is None else self._columns(k, cols)
        bad = _first_bad_byte(buf)
        if bad is not None:
            line = int(np.searchsorted(self.newlines, bad))
            raise self.error(line, f"'{_token_text(buf, bad)}' is not an integer {what}")
        values = np.fromstring(_as_bytes(buf), dtype=np.int64, sep=" ")  # the bytes were checked: it parses
        tokens = int(self.per_line.sum())
        if values.size != (tokens if cols is None else tokens // k * len(cols)):
            raise InputError(self.path, f"cannot read every {what}: {values.size:,} numbers for {tokens:,} fields")
        odd = np.flatnonzero((values == _INT64_LIMITS[1]) | (values == _INT64_LIMITS[0])
                             | ((values < 0) if not negative_ok else False))
        if odd.size:
            t = int(odd[0])
            line = self._value_line(t, k, cols)
            if values[t] < 0 and values[t] != _INT64_LIMITS[0]:
                raise self.error(line, f"negative {what} {int(values[t]):,}")
            raise self.error(line, f"{what} is too large")
        return values

    def floats(self, what: str, k: int, col: int) -> np.ndarray:
        """Parse column `col` of the `k`-field lines as float64; finite and within float32."""
        buf = self._columns(k, (col,))
        try:
            values = np.fromstring(_as_bytes(buf), dtype=np.float64, sep=" ")
        except ValueError:
            ends = self.bounds()[1][col::k]
            t = _first_unparsable(buf, ends, np.float64)
            raise self.error(self._value_line(t, k, (col,)),
                             f"{what} '{_token_text(buf, int(ends[t]) - 1)}' is not a number") from None
        _check_weights(self.path, values, lambda t: self._value_line(t, k, (col,)), what)
        return values


def _check_weights(path: str, values: np.ndarray, line_of: Callable[[int], int], what: str) -> None:
    """Raise naming the line (0-based from `line_of`) of the first value that is NaN, infinite or
    beyond float32."""
    big = float(np.finfo(np.float32).max)
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~(np.abs(values) <= big))
    if bad.size:
        t = int(bad[0])
        v = float(values[t])
        problem = f"is {_fmt_value(v)}" if not math.isfinite(v) else f"{v:g} is too large for float32"
        raise InputError(path, f"line {line_of(t) + 1:,}: {what} {problem}")


# edge lists: SNAP, KONECT, networkx -------------------------------------------------


def _compact_ids(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Renumber the used ids to ``0 .. n-1`` in increasing order; return (src, dst, ids)."""
    low = min(int(src.min()), int(dst.min()))
    top = max(int(src.max()), int(dst.max()))
    m = src.size
    if low >= 0 and top < 4 * m + (1 << 20):
        used = np.zeros(top + 1, dtype=bool)
        used[src] = True
        used[dst] = True
        ids = np.flatnonzero(used)
        if ids.size == top + 1:
            return src, dst, ids
        remap = np.cumsum(used, dtype=np.int64)
        remap -= 1
        del used
        return remap[src], remap[dst], ids
    ids, inverse = np.unique(np.concatenate((src, dst)), return_inverse=True)
    return inverse[:m], inverse[m:], ids


def _compacted(src: np.ndarray, dst: np.ndarray, notes: list[str], what: str = "ids"
               ) -> tuple[np.ndarray, np.ndarray, int, np.ndarray | None]:
    """Compact raw ids (:func:`_compact_ids`); ids None when they were already ``0 .. n-1``."""
    src, dst, ids = _compact_ids(src, dst)
    n = ids.size
    if int(ids[0]) == 0 and int(ids[-1]) == n - 1:
        return src, dst, n, None
    notes.append(f"compacted raw {what} (largest {int(ids[-1]):,}) to {n:,} vertices")
    return src, dst, n, ids


def _edges_graph(ctx: _Load, src: np.ndarray, dst: np.ndarray, weights: np.ndarray | None, n: int,
                 ids: np.ndarray | None, notes: list[str], *, symmetric: bool = False) -> Graph:
    """The graph of parsed edges (endpoints in ``[0, n)``): pattern, or valued with duplicates summed."""
    m = src.size
    ctx.declare(n, 2 * m if symmetric else m)
    src, dst = src.astype(np.int32, copy=False), dst.astype(np.int32, copy=False)
    if weights is None:
        return from_edges(src, dst, n, name=ctx.name, source=ctx.path, symmetric=symmetric, ids=ids, notes=notes)
    if symmetric:
        off = src != dst
        src, dst = np.concatenate((src, dst[off])), np.concatenate((dst, src[off]))
        weights = np.concatenate((weights, weights[off]))
        del off
        notes.append(f"stored both directions of every undirected edge ({m:,} -> {src.size:,} entries)")
    csr, merged = _valued_csr(src, dst, weights, n)
    del src, dst, weights
    if merged:
        notes.append(f"summed the weights of {merged:,} duplicate edges")
    indptr, indices, values = _finish_values(csr.indptr, csr.indices, csr.data, ctx.path,
                                             drop_zeros=ctx.drop_zeros, notes=notes)
    return Graph(indptr, indices, values, ctx.name, ctx.path, False, ids, notes, symmetric=symmetric)


def _extra_columns_note(k: int, first: int, notes: list[str], why: str) -> None:
    if k > first:
        extra = k - first
        notes.append(f"ignored {extra} extra column{'s' if extra > 1 else ''} after column {first} ({why})")


def _load_snap(ctx: _Load) -> Graph:
    text = _Text(ctx.path, *_lines_of(ctx.text(), b"#%"))
    k = text.fields(lambda c: c >= 2, "2 integer vertex ids and an optional weight")
    ends = text.ints("vertex id", k=k, cols=(0, 1)).reshape(-1, 2)
    notes = [f"read {ends.shape[0]:,} edges"]
    weights = None
    if k >= 3:
        weights = text.floats("weight", k, 2)
        notes.append("third column read as edge weights")
        _extra_columns_note(k, 3, notes, "timestamps or other data")
    src, dst, n, ids = _compacted(ends[:, 0], ends[:, 1], notes)
    del ends, text
    return _edges_graph(ctx, src, dst, weights, n, ids, notes)


_KONECT_TYPES = ("sym", "asym", "bip")


def _konect_header(path: str, raw: bytes) -> tuple[str, str, list[int]]:
    """(network type, weight type, numbers of the second header line) of a KONECT file."""
    lines = raw[:4096].split(b"\n", 2)
    first = lines[0].strip()
    words = first[1:].split() if first.startswith(b"%") else []
    kind = words[0].decode("ascii", "replace").lower() if words else ""
    if kind not in _KONECT_TYPES:
        raise InputError(path, "line 1: expected a KONECT header '% sym|asym WEIGHTS' (files named out.NAME "
                               "are read as KONECT networks)")
    if kind == "bip":
        raise InputError(path, "line 1: bipartite KONECT networks (two vertex sets) are not supported")
    weight = words[1].decode("ascii", "replace").lower() if len(words) > 1 else "unweighted"
    counts: list[int] = []
    if len(lines) > 1 and lines[1].strip().startswith(b"%"):
        numbers = lines[1].strip()[1:].split()
        if numbers and all(w.isdigit() for w in numbers):
            counts = [int(w) for w in numbers]
    return kind, weight, counts


def _load_konect(ctx: _Load) -> Graph:
    raw = ctx.text()
    kind, weight_type, counts = _konect_header(ctx.path, raw)
    text = _Text(ctx.path, *_lines_of(raw, b"%"))
    del raw
    k = text.fields(lambda c: c >= 2, "2 integer vertex ids, then optional weight and timestamp")
    ends = text.ints("vertex id", k=k, cols=(0, 1)).reshape(-1, 2)
    m = ends.shape[0]
    notes = [f"read {m:,} edges (KONECT '{kind} {weight_type}')"]
    if counts and counts[0] != m:
        raise InputError(ctx.path, f"line 2: the header declares {counts[0]:,} edges but the file lists "
                                   f"{m:,} (truncated?)")
    weights = None
    if k >= 3 and weight_type != "unweighted":
        weights = text.floats("weight", k, 2)
        notes.append("third column read as edge weights")
        _extra_columns_note(k, 3, notes, "timestamps")
    else:
        _extra_columns_note(k, 2, notes, f"'{weight_type}' network: multiplicities or timestamps")
    n = int(ends.max())
    if len(counts) > 1:
        n = max(n, counts[1])
        if n > counts[1]:
            row = int(np.flatnonzero((ends > counts[1]).any(axis=1))[0])
            raise text.error(int(text.data_lines[row]), f"vertex id {n:,} exceeds the header's "
                                                        f"{counts[1]:,} vertices")
    low = np.flatnonzero((ends == 0).any(axis=1))
    if low.size:
        raise text.error(int(text.data_lines[low[0]]), "vertex id 0 (KONECT ids start at 1)")
    del text
    ends -= 1
    symmetric = kind == "sym"
    if symmetric:
        notes.append("'% sym': undirected, each edge listed once; both directions are stored")
    return _edges_graph(ctx, ends[:, 0], ends[:, 1], weights, n, None, notes, symmetric=symmetric)


# networkx: "u v {'weight': 2.0, ...}". Values may come wrapped as np.float64(...).
_NX_WEIGHT = re.compile(rb"""[{,]\s*(?:'weight'|"weight")\s*:\s*(?:(?:np|numpy)\.\w+\()?([^\s,}()]+)""")
_NX_OTHER_KEY = re.compile(rb"""[{,]\s*(?:'(?!weight')([^'\\]*)'|"(?!weight")([^"\\]*)")\s*:""")


def _load_nx(ctx: _Load) -> Graph:
    buf, newlines = _lines_of(ctx.text(), b"#")
    notes: list[str] = []
    found = _nx_attributes(ctx.path, buf, newlines, notes)
    if found is None:  # "u v" or write_weighted_edgelist's "u v w"
        text = _Text(ctx.path, buf, newlines)
        k = text.fields(lambda c: c in (2, 3), "'u v', 'u v weight' or 'u v {attributes}'")
        weights = text.floats("weight", k, 2) if k == 3 else None
    else:
        buf, dict_lines, weights = found
        text = _Text(ctx.path, buf, newlines)
        k = text.fields(lambda c: c == 2, "'u v {attributes}'")
        bare = _first_missing(text.data_lines, dict_lines)
        if bare is not None:
            raise text.error(bare, "no attribute dict, but other lines have one")
        empty = _first_missing(dict_lines, text.data_lines)
        if empty is not None:
            raise text.error(empty, "attribute dict without an edge")
    labels = text.ints("node label", k=k, cols=(0, 1), negative_ok=True).reshape(-1, 2)
    notes.insert(0, f"read {labels.shape[0]:,} edges")
    if weights is not None and found is None:
        notes.append("third column read as edge weights")
    del text, buf
    src, dst, n, ids = _compacted(labels[:, 0], labels[:, 1], notes, "node labels")
    del labels
    return _edges_graph(ctx, src, dst, weights, n, ids, notes)


def _run_ends(values: np.ndarray, *, last: bool = False) -> np.ndarray:
    """Mask of the first (or last) element of every run of equal values in sorted `values`."""
    mask = np.ones(values.size, dtype=bool)
    if last:
        mask[:-1] = values[:-1] != values[1:]
    else:
        mask[1:] = values[1:] != values[:-1]
    return mask


def _first_missing(a: np.ndarray, b: np.ndarray) -> int | None:
    """The first value of sorted `a` that sorted `b` does not hold, or None."""
    if b.size == 0:
        return int(a[0]) if a.size else None
    at = np.minimum(np.searchsorted(b, a), b.size - 1)
    missing = np.flatnonzero(b[at] != a)
    return int(a[missing[0]]) if missing.size else None


def _nx_attributes(path: str, buf: np.ndarray, newlines: np.ndarray, notes: list[str]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """Read and blank the attribute dicts of a networkx edge list.

    Two regular-expression passes over the whole text find the ``weight``
    values and the other keys; nothing is evaluated.

    Returns
    -------
    None when no line has a dict; else the text with each line's dict (its
    first ``{`` to its last ``}``) blanked, the 0-based lines holding dicts,
    and one weight per dict line (1 where a dict has no ``weight``), or None
    for weights when no dict has one.
    """
    opens = np.flatnonzero(buf == ord("{"))
    if opens.size == 0:
        return None
    closes = np.flatnonzero(buf == ord("}"))
    open_lines = np.searchsorted(newlines, opens)
    first = _run_ends(open_lines)
    starts, open_lines = opens[first], open_lines[first]
    close_lines = np.searchsorted(newlines, closes)
    last = _run_ends(close_lines, last=True)
    ends, close_lines = closes[last] + 1, close_lines[last]
    unpaired = [x for x in (_first_missing(open_lines, close_lines), _first_missing(close_lines, open_lines))
                if x is not None]
    if not unpaired:
        unpaired = open_lines[ends <= starts][:1].tolist()
    if unpaired:
        raise InputError(path, f"line {min(unpaired) + 1:,}: unbalanced attribute dict braces")
    keys = {a or b for a, b in set(_NX_OTHER_KEY.findall(buf))}
    if keys:
        shown = ", ".join(sorted(k.decode("utf-8", "replace") for k in keys)[:8])
        notes.append(f"ignored edge attributes other than 'weight': {shown}")
    tokens = _NX_WEIGHT.findall(buf)
    blanked = _blank_ranges(buf, starts, ends)
    if not tokens:
        notes.append("no 'weight' attributes: a pattern graph")
        return blanked, open_lines, None
    where = np.searchsorted(newlines, np.fromiter(map(re.Match.start, _NX_WEIGHT.finditer(buf)), dtype=np.int64,
                                                  count=len(tokens)))
    twice = np.flatnonzero(where[1:] == where[:-1])
    if twice.size:
        raise InputError(path, f"line {int(where[twice[0]]) + 1:,}: two 'weight' attributes")
    outside = _first_missing(where, open_lines)
    if outside is not None:
        raise InputError(path, f"line {outside + 1:,}: 'weight' outside an attribute dict")
    values = _nx_weight_values(path, tokens, where)
    weights = np.ones(open_lines.size, dtype=np.float64)
    weights[np.searchsorted(open_lines, where)] = values
    missing = open_lines.size - values.size
    if missing:
        notes.append(f"{missing:,} edges have no 'weight' attribute: weight 1")
    return blanked, open_lines, weights


def _nx_weight_values(path: str, tokens: list[bytes], lines: np.ndarray) -> np.ndarray:
    """The `weight` values (one token each) as float64, finite and within float32."""
    joined = b" ".join(tokens)
    try:
        values = np.fromstring(joined, dtype=np.float64, sep=" ")
        if values.size != len(tokens):
            raise ValueError
    except ValueError:
        for token, line in zip(tokens, lines):
            try:
                np.fromstring(token, dtype=np.float64, sep=" ")
            except ValueError:
                shown = token.decode("utf-8", "replace")[:24]
                raise InputError(path, f"line {int(line) + 1:,}: weight '{shown}' is not a number") from None
        raise InputError(path, "cannot parse the 'weight' attributes") from None
    _check_weights(path, values, lambda t: int(lines[t]), "weight")
    return values


# METIS ---------------------------------------------------------------------------


@dataclass
class _MetisHeader:
    """The header line ``n m [fmt [ncon]]`` of a METIS graph file."""

    n: int
    m: int
    fmt: str  # three digits: vertex sizes, vertex weights, edge weights
    ncon: int  # vertex weights per vertex (0 without)
    line: int  # 0-based line of the header

    @property
    def leading(self) -> int:
        """Numbers before the neighbours on each vertex line."""
        return (self.fmt[0] == "1") + self.ncon

    @property
    def edge_weights(self) -> bool:
        return self.fmt[2] == "1"


def _metis_header(ctx: _Load) -> _MetisHeader:
    """Read the first non-comment line (only that much of the file)."""
    with _reading(ctx.path, ctx.gz) as f:
        for number, line in enumerate(f):
            if not line.startswith(b"%"):
                return _parse_metis_header(ctx.path, line, number)
    raise InputError(ctx.path, "no METIS header line 'n m [fmt [ncon]]' (the file holds only comments)")


def _parse_metis_header(path: str, line: bytes, number: int) -> _MetisHeader:
    words = line.split()
    where = f"line {number + 1:,}: METIS header"
    if not 2 <= len(words) <= 4:
        raise InputError(path, f"{where} must be 'n m [fmt [ncon]]', found {len(words)} fields")
    try:
        n, m = int(words[0]), int(words[1])
        ncon = int(words[3]) if len(words) > 3 else None
    except ValueError:
        raise InputError(path, f"{where}: n, m and ncon must be integers") from None
    if n < 0 or m < 0:
        raise InputError(path, f"{where}: negative {'n' if n < 0 else 'm'}")
    fmt = words[2].decode("ascii", "replace") if len(words) > 2 else "0"
    if len(fmt) > 3 or set(fmt) - {"0", "1"}:
        raise InputError(path, f"{where}: fmt '{fmt[:8]}' must be up to three digits 0 or 1")
    fmt = fmt.zfill(3)
    if ncon is not None and fmt[1] != "1":
        raise InputError(path, f"{where}: ncon is given but fmt {fmt} has no vertex weights")
    if ncon is not None and not 1 <= ncon <= 1024:
        raise InputError(path, f"{where}: ncon {ncon:,} must be 1 to 1024")
    return _MetisHeader(n, m, fmt, (ncon or 1) if fmt[1] == "1" else 0, number)


def _load_metis(ctx: _Load) -> Graph:
    path = ctx.path
    h = _metis_header(ctx)
    validate(name=path, shape=(h.n, h.n))
    ctx.check_declared(2 * h.m, 2, f"line {h.line + 1:,}: the METIS header ({h.m:,} edges)")
    ctx.declare(h.n, 2 * h.m)
    raw = ctx.text()
    buf, newlines = _lines_of(raw, b"%", line_start=True)
    starts = np.concatenate((np.zeros(1, dtype=np.int64), newlines + 1))
    end = int(newlines[h.line]) if h.line < newlines.size else len(raw)
    text = _Text(path, _blank_ranges(buf, starts[h.line:h.line + 1], np.array([end])), newlines)
    del buf
    comment = np.frombuffer(raw, dtype=np.uint8)[text.line_starts] == ord("%")
    del raw
    lines = np.flatnonzero(~comment)
    lines = lines[lines > h.line]
    if lines.size < h.n:
        raise InputError(path, f"the METIS header declares {h.n:,} vertices but the file has {lines.size:,} "
                               f"vertex lines")
    extra = lines[h.n:][text.per_line[lines[h.n:]] > 0]
    if extra.size:
        raise text.error(int(extra[0]), f"more vertex lines than the header's {h.n:,} vertices")
    lines = lines[:h.n]
    rows, cols, weights = _metis_adjacency(text, h, lines)
    notes = [f"read a METIS graph: {h.n:,} vertices, {h.m:,} undirected edges (both directions stored)"]
    if h.fmt[0] == "1":
        notes.append("skipped the vertex sizes")
    if h.ncon:
        notes.append(f"skipped the vertex weights ({h.ncon} per vertex)")
    keys = _metis_check(text, lines, rows, cols, weights)
    del rows, cols
    indptr = np.zeros(h.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys >> 32, minlength=h.n), out=indptr[1:])
    indices = (keys & 0xFFFFFFFF).astype(np.int32)
    del keys
    indptr, indices, values = _finish_values(indptr, indices, weights, path, drop_zeros=ctx.drop_zeros,
                                             notes=notes)
    return Graph(indptr, indices, values, ctx.name, path, not h.edge_weights, None, notes, symmetric=True)


def _metis_adjacency(text: _Text, h: _MetisHeader, lines: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Rows, 0-based neighbours and (with fmt xx1) weights of every vertex line, in file order."""
    counts = text.per_line[lines]
    step = 2 if h.edge_weights else 1
    listed = counts - h.leading
    bad = np.flatnonzero((listed < 0) | (listed % step != 0))
    if bad.size:
        v = int(bad[0])
        pairs = "neighbour weight pairs" if step == 2 else "neighbours"
        raise text.error(int(lines[v]), f"vertex {v + 1:,} has {int(counts[v])} numbers, which is not "
                                        f"{h.leading} leading numbers (fmt {h.fmt}) then {pairs}")
    degrees = listed // step
    total = int(degrees.sum())
    if total != 2 * h.m:
        raise InputError(text.path, f"the METIS header declares {h.m:,} edges but the vertex lines list "
                                    f"{total:,} neighbours (expected {2 * h.m:,}: every edge appears on both "
                                    f"of its endpoints' lines)")
    values = text.ints("METIS number")
    first = np.cumsum(counts) - counts + h.leading  # token of each vertex's first neighbour
    rows = np.repeat(np.arange(h.n, dtype=np.int64), degrees)
    pos = np.arange(total, dtype=np.int64)
    pos -= np.repeat(np.cumsum(degrees) - degrees, degrees)
    pos *= step
    pos += np.repeat(first, degrees)
    cols = values[pos] - 1
    weights = values[pos + 1] if h.edge_weights else None
    del values, pos
    bad = np.flatnonzero((cols < 0) | (cols >= h.n) | (cols == rows))
    if bad.size:
        v, u = int(rows[bad[0]]), int(cols[bad[0]])
        problem = (f"vertex {v + 1:,} lists itself (METIS graphs have no self-loops)" if u == v
                   else f"vertex {v + 1:,} has neighbour {u + 1:,}, outside 1..{h.n:,}")
        raise text.error(int(lines[v]), problem)
    return rows, cols, weights


def _metis_check(text: _Text, lines: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                 weights: np.ndarray | None) -> np.ndarray:
    """Sorted ``row << 32 | col`` keys of a METIS adjacency after checking it is a simple undirected graph.

    `weights` (when given) is reordered in place to match the keys.
    """
    keys = rows << 32 | cols
    order = np.argsort(keys, kind="stable") if weights is not None else None
    if order is None:
        keys.sort()
    else:
        keys = keys[order]
        weights[:] = weights[order]
    twice = np.flatnonzero(keys[1:] == keys[:-1])
    if twice.size:
        v, u = int(keys[twice[0]] >> 32), int(keys[twice[0]] & 0xFFFFFFFF)
        raise text.error(int(lines[v]), f"vertex {v + 1:,} lists neighbour {u + 1:,} twice")
    mirror = (keys & 0xFFFFFFFF) << 32 | keys >> 32
    back = np.argsort(mirror) if weights is not None else None
    mirror = mirror[back] if back is not None else np.sort(mirror)
    if not np.array_equal(keys, mirror):
        at = np.minimum(np.searchsorted(mirror, keys), keys.size - 1)
        k = int(keys[np.flatnonzero(mirror[at] != keys)[0]])
        v, u = k >> 32, k & 0xFFFFFFFF
        raise text.error(int(lines[v]), f"vertex {v + 1:,} lists {u + 1:,}, but vertex {u + 1:,} (line "
                                        f"{int(lines[u]) + 1:,}) does not list {v + 1:,}")
    if weights is not None:
        differ = np.flatnonzero(weights != weights[back])
        if differ.size:
            k = int(keys[differ[0]])
            v, u = k >> 32, k & 0xFFFFFFFF
            raise text.error(int(lines[v]), f"vertex {v + 1:,} gives edge {v + 1:,}-{u + 1:,} weight "
                                            f"{int(weights[differ[0]]):,}, but vertex {u + 1:,} (line "
                                            f"{int(lines[u]) + 1:,}) gives {int(weights[back][differ[0]]):,}")
    return keys


# MATLAB .mat ---------------------------------------------------------------------


def _load_mat(ctx: _Load) -> Graph:
    from scipy.io import matlab

    path = ctx.path
    try:
        version = matlab.matfile_version(path)
    except Exception as e:  # scipy raises many kinds on a file that is not a MAT-file
        raise InputError(path, f"not a MATLAB .mat file: {_clean_message(e)}") from None
    if version[0] == 2:
        raise InputError(path, "MATLAB v7.3 (HDF5) .mat files are not supported: save it with "
                               "save(..., '-v7') or as Matrix Market")
    if not hasattr(os, "fork"):
        return _mat_graph(ctx, lambda n, nnz: ctx.declare(n, nnz))
    return _mat_in_child(ctx)


def _mat_graph(ctx: _Load, declare: Callable[[int, int], None]) -> Graph:
    """Read the .mat file with scipy and build its graph; `declare(n, nnz)` comes first."""
    from scipy.io import loadmat

    path = ctx.path
    try:
        contents = loadmat(path, squeeze_me=True, struct_as_record=False)
    except MemoryError:
        raise InputError(path, "corrupt .mat file: it declares more data than memory holds") from None
    except Exception as e:  # a damaged file can fail anywhere inside scipy.io.matlab
        raise InputError(path, f"corrupt .mat file: {_clean_message(e)}") from None
    matrix, notes = _mat_matrix(path, contents)
    del contents
    declare(matrix.shape[0], int(matrix.nnz))
    pattern = matrix.dtype.kind in "bu" and matrix.dtype.itemsize == 1  # MATLAB logical: bool or uint8
    graph = from_scipy(matrix, ctx.name, pattern=pattern, source=path, drop_zeros=ctx.drop_zeros)
    graph.notes[:0] = notes
    return graph


def _mat_in_child(ctx: _Load) -> Graph:
    """:func:`_mat_graph` in a forked child process, the arrays sent back through a pipe.

    scipy's MATLAB reader (Cython) can crash the interpreter on a damaged file
    (a struct's field names without their NUL bytes, for one); a crash here
    ends only the child and becomes an InputError.
    """
    path = ctx.path
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            import faulthandler
            faulthandler.disable()  # its crash is the parent's one line, not a stack dump
            os.close(r)
            with os.fdopen(w, "wb") as out:
                _mat_child(ctx, out)
        finally:
            os._exit(0)
    os.close(w)
    done = crashed = False
    try:
        with os.fdopen(r, "rb") as inp:
            try:
                meta, _ = _receive(inp)
                if meta["kind"] == "size":
                    ctx.declare(meta["n"], meta["nnz"])
                    meta, arrays = _receive(inp)
                done = True
            except EOFError:
                crashed = True
    finally:
        if not (done or crashed):
            os.kill(pid, signal.SIGKILL)  # declare() refused the size: stop the child
        _, status = os.waitpid(pid, 0)
    if crashed:
        what = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"status {status}"
        raise InputError(path, f"corrupt .mat file: scipy's MATLAB reader crashed on it ({what})")
    if meta["kind"] == "error":
        raise InputError(path, meta["problem"])
    indptr, indices, data = arrays
    return Graph(indptr, indices, data, ctx.name, path, meta["pattern"], None, meta["notes"])


def _mat_child(ctx: _Load, out) -> None:
    """In the child: read the file, send its size, then the graph's arrays, or the error."""
    try:
        graph = _mat_graph(ctx, lambda n, nnz: _send(out, {"kind": "size", "n": n, "nnz": nnz}))
        _send(out, {"kind": "graph", "pattern": graph.pattern, "notes": graph.notes},
              (graph.indptr, graph.indices, graph.data))
    except InputError as e:
        _send(out, {"kind": "error", "problem": e.problem})
    except BaseException as e:
        _send(out, {"kind": "error", "problem": f"corrupt .mat file: {_clean_message(e)}"})


def _send(out, meta: dict, arrays: Sequence[np.ndarray] = ()) -> None:
    """Write a message: an 8-byte length, a JSON header (with the arrays' dtypes and lengths), raw arrays."""
    head = json.dumps({**meta, "arrays": [[a.dtype.str, int(a.shape[0])] for a in arrays]}).encode()
    out.write(len(head).to_bytes(8, "little") + head)
    for a in arrays:
        out.write(memoryview(np.ascontiguousarray(a)).cast("B"))
    out.flush()


def _receive(inp) -> tuple[dict, list[np.ndarray]]:
    """Read a message :func:`_send` wrote; EOFError if the writer ended before it was complete."""
    size = int.from_bytes(_read_exact(inp, 8), "little")
    meta = json.loads(_read_exact(inp, size))
    arrays = []
    for dtype, length in meta.pop("arrays"):
        a = np.empty(length, dtype=np.dtype(dtype))
        view = memoryview(a).cast("B")
        got = 0
        while got < view.nbytes:
            k = inp.readinto(view[got:])
            if not k:
                raise EOFError
            got += k
        arrays.append(a)
    return meta, arrays


def _read_exact(inp, size: int) -> bytes:
    data = inp.read(size)
    if len(data) != size:
        raise EOFError
    return data


def _describe_mat(contents: dict) -> str:
    """``name (shape type)`` of a .mat file's variables, for messages."""
    shown = [f"{k} ({'x'.join(map(str, np.shape(v))) or 'scalar'} {getattr(v, 'dtype', type(v).__name__)})"
             for k, v in contents.items() if not k.startswith("__")]
    return ", ".join(shown[:8]) + (", ..." if len(shown) > 8 else "") if shown else "no variables"


def _mat_matrix(path: str, contents: dict) -> tuple[Any, list[str]]:
    """The matrix a .mat file holds: ``Problem.A`` (with ``Problem.Zeros``) or its only sparse matrix."""
    import scipy.sparse as sp
    problem = contents.get("Problem")
    if problem is not None:
        fields = getattr(problem, "_fieldnames", None)
        if fields is None or "A" not in fields:
            raise InputError(path, f"the Problem struct has no A field (fields: {', '.join(fields or []) or 'none'})")
        a = problem.A
        if not sp.issparse(a):
            raise InputError(path, f"Problem.A is a dense {getattr(a, 'dtype', type(a).__name__)} array, "
                                   "not a sparse matrix")
        _check_mat_sparse(path, a, "Problem.A")
        notes = ["read Problem.A (SuiteSparse)"]
        zeros = getattr(problem, "Zeros", None)
        if zeros is not None and sp.issparse(zeros) and zeros.nnz:
            _check_mat_sparse(path, zeros, "Problem.Zeros")
            a = _with_explicit_zeros(path, a, zeros)
            notes.append(f"added {zeros.nnz:,} explicit zeros from Problem.Zeros")
        return a, notes
    names = [k for k, v in contents.items() if not k.startswith("__") and sp.issparse(v)]
    if len(names) == 1:
        _check_mat_sparse(path, contents[names[0]], names[0])
        return contents[names[0]], [f"read sparse variable '{names[0]}'"]
    if not names:
        raise InputError(path, f"no sparse matrix in the file (it holds {_describe_mat(contents)})")
    raise InputError(path, f"several sparse matrices ({', '.join(names[:8])}) and no Problem struct: "
                           "cannot tell which is the graph")


def _check_mat_sparse(path: str, a, what: str) -> None:
    """Check the arrays of a sparse matrix scipy.io.loadmat built: it does not, and scipy's
    conversions index memory with them."""
    validate(name=path, shape=a.shape)
    n = a.shape[0]
    try:
        if a.format in ("csc", "csr"):
            _check_indptr(np.asarray(a.indptr), n, int(a.indices.shape[0]), path)
            _check_range(a.indices, n, "index", path, 0)
        elif a.format == "coo":
            _check_range(a.row, n, "row index", path, 0)
            _check_range(a.col, n, "column index", path, 0)
    except InputError as e:
        raise InputError(path, f"{what} is damaged: {e.problem}") from None


def _with_explicit_zeros(path: str, a, zeros):
    """`a` plus explicit zero entries wherever `zeros` has one (SuiteSparse keeps them apart)."""
    import scipy.sparse as sp
    if zeros.shape != a.shape:
        raise InputError(path, f"Problem.Zeros has shape {zeros.shape}, Problem.A {a.shape}")
    a, z = a.tocoo(), zeros.tocoo()
    rows = np.concatenate((a.row, z.row))
    cols = np.concatenate((a.col, z.col))
    data = np.concatenate((a.data.astype(np.float64), np.zeros(z.nnz)))
    return sp.coo_array((data, (rows, cols)), shape=a.shape)


_LOADERS: dict[str, Callable[[_Load], Graph]] = {
    "mtx": _load_mm, "npz": _load_npz, "edges": _load_snap, "konect": _load_konect, "edgelist": _load_nx,
    "metis": _load_metis, "mat": _load_mat,
}


# --------------------------------------------------------------------------
# saving
# --------------------------------------------------------------------------


def _write_npz(f: IO[bytes], arrays: dict, compressed: bool, ones: int | None) -> None:
    """The members of ``arrays`` as ``numpy.savez`` lays them out (``NAME.npy``, zip64),
    deflated when ``compressed``; with ``ones``, a ``data`` member of that many boolean
    ones as well, written in chunks and deflated at level 1 whatever ``compressed`` says
    (0.15 s and 0.4 MB per 10^8 entries)."""
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(f, "w", compression=method, allowZip64=True) as zf:
        for key, value in arrays.items():
            with zf.open(key + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)
        if ones is None:
            return
        info = zipfile.ZipInfo("data.npy", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type, info._compresslevel = zipfile.ZIP_DEFLATED, 1
        with zf.open(info, "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(
                member, {"descr": "|b1", "fortran_order": False, "shape": (ones,)})
            chunk = np.ones(min(ones, 1 << 24), np.bool_).tobytes()
            for start in range(0, ones, len(chunk)):
                member.write(chunk[:ones - start])


def save(graph: Graph, path: str | os.PathLike, *, compressed: bool | None = None) -> None:
    """Write `graph` to `path` atomically, in the format its extension names.

    Parameters
    ----------
    graph : Graph
    path : str or os.PathLike
        ``.npz``: the CSR layout of :func:`scipy.sparse.save_npz` (``indptr``,
        ``indices``, ``data``, ``shape``, ``format``) with the graph's own
        dtypes: int32 ``indices`` and an ``indptr`` that is int64 only past
        the int32 limit (scipy itself would widen both to int64), so every
        file is readable by :func:`scipy.sparse.load_npz`. A pattern graph's
        ``data`` is boolean ones, always deflated (a few bytes per million
        entries), and :func:`load` never reads it. ``finepar_pattern``,
        ``finepar_symmetric`` and, when present, ``finepar_ids`` entries let
        :func:`load` restore those attributes.
        ``.mtx`` / ``.mtx.gz``: Matrix Market coordinate, ``general``; the
        ``pattern`` field when ``graph.pattern``, else ``real``.
    compressed : bool, optional
        Deflate the ``.npz`` members. Default (None): compress graphs of fewer
        than 1e8 stored entries; larger ones are stored uncompressed, which
        :func:`load` reads at disk speed.

    Raises
    ------
    InputError
        If the extension is not one of ``.npz``, ``.mtx``, ``.mtx.gz``.
    OSError
        If the file cannot be written.

    Notes
    -----
    The file is written to a temporary name in the same directory and renamed
    over `path` only when complete (:func:`finepar.files.atomic_open`); on any
    failure nothing is left at `path`.
    """
    path = os.fspath(path)
    lower = os.path.basename(path).lower()
    suffix = next((s for s in sorted(_SAVE_SUFFIXES, key=len, reverse=True) if lower.endswith(s)), None)
    if suffix is None:
        raise InputError(path, "cannot save to this file type; supported: " + ", ".join(_SAVE_SUFFIXES))
    if suffix == ".npz":
        arrays: dict[str, Any] = {
            "indices": graph.indices,
            "indptr": graph.indptr,
            "format": np.array(b"csr"),
            "shape": np.array(graph.shape, dtype=np.int64),
            _NPZ_PATTERN_KEY: np.array(bool(graph.pattern)),
            _NPZ_SYMMETRIC_KEY: np.array(bool(graph.symmetric)),
        }
        if not graph.pattern:
            arrays["data"] = graph.data
        arrays["_is_array"] = np.array(True)
        if graph.ids is not None:
            arrays[_NPZ_IDS_KEY] = graph.ids
        if compressed is None:
            compressed = graph.nnz < _COMPRESS_BELOW
        with atomic_open(path) as f:
            _write_npz(f, arrays, compressed, ones=graph.nnz if graph.pattern else None)
        return
    import fast_matrix_market as fmm

    comment = f" {graph.name}: {graph.n:,} vertices, {graph.nnz:,} stored entries (written by FinePar)"
    matrix = graph.to_scipy()
    field_ = "pattern" if graph.pattern else None
    with atomic_open(path) as f:
        if suffix == ".mtx.gz":
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
                fmm.mmwrite(gz, matrix, comment=comment, field=field_, symmetry="general")
        else:
            fmm.mmwrite(f, matrix, comment=comment, field=field_, symmetry="general")
