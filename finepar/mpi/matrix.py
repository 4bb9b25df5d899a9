"""A rank's rows of an app's matrix, and the graph its app sees (DESIGN.md §3, "mpi").

Each app names how its matrix comes from the graph (:attr:`finepar.apps.base.App.matrix_form`);
a rank builds only the rows of the vertices it owns, with global column ids:

* ``graph``: its rows of ``A`` as read;
* ``transpose``: row ``v`` of ``A^T`` lists the in-edges of ``v``: every rank sends each of
  its entries ``(u, v)`` to the owner of ``v`` (``MPI_Alltoallv``); a symmetric graph is its
  own transpose and sends nothing;
* ``symmetrized``: the pattern of its rows of ``A`` and of ``A^T`` together;
* ``stacked``: HITS's ``[[0, A], [A^T, 0]]`` (2n rows): row ``v`` lists ``n + w`` for
  ``v``'s out-edges, row ``n + v`` its in-edges; both belong to ``v``'s owner.

The result is an ``N x N`` :class:`~finepar.graph.Graph` (``N`` the matrix's rows) whose
rows outside the rank's are empty: row ids and vector indices stay global, so the
engine, the kernels and the apps run unchanged over the rank's rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import InputError, UsageError
from ..graph import INT32_MAX, Graph, as_indices, as_indptr
from .comm import Communicator
from .rows import RankRows
from .partition import RowPartition

FORMS = ("graph", "transpose", "symmetrized", "stacked")


@dataclass(eq=False, repr=False)
class RankGraph(Graph):
    """The graph an app sees on one rank: its rows of ``A`` (the others empty), with the
    numbers of the whole graph.

    ``n`` is every vertex; :attr:`nnz` and :meth:`out_degrees` are the whole graph's
    (apps read any vertex's out-degree: PageRank's ``1 / outdeg``, the BFS root);
    ``indptr`` / ``indices`` / ``data`` hold only the rank's rows (:attr:`local_nnz`).

    Attributes
    ----------
    degrees : ndarray of int32, shape (n,)
    global_nnz : int
    """

    degrees: np.ndarray | None = None
    global_nnz: int = 0

    @property
    def nnz(self) -> int:
        """Stored entries of the whole graph."""
        return int(self.global_nnz)

    @property
    def local_nnz(self) -> int:
        """Stored entries of this rank's rows."""
        return int(self.indices.shape[0])

    def out_degrees(self) -> np.ndarray:
        """Out-degree of every vertex of the whole graph (int32, shape (n,))."""
        return self.degrees

    def __repr__(self) -> str:
        return (f"RankGraph(name={self.name!r}, n={self.n:,}, nnz={self.nnz:,}, "
                f"local_nnz={self.local_nnz:,})")


def full_rows(n_rows: int, blocks: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]):
    """An ``n_rows``-row CSR holding ``blocks`` of rows, the other rows empty.

    Parameters
    ----------
    n_rows : int
    blocks : list of (first_row, indptr, indices, data)
        Disjoint row ranges in ascending order; each ``indptr`` from 0.

    Returns
    -------
    (indptr, indices, data)
        ``indptr`` int32 or int64 (:func:`finepar.graph.as_indptr`).
    """
    lengths = np.zeros(n_rows, dtype=np.int64)
    for first, ptr, _, _ in blocks:
        lengths[first:first + ptr.size - 1] = np.diff(ptr)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    if len(blocks) == 1:  # the block's own arrays, not a copy
        indices, data = blocks[0][2], blocks[0][3]
    else:
        indices = (np.concatenate([b[2] for b in blocks]) if blocks else np.zeros(0, np.int32))
        data = (np.concatenate([b[3] for b in blocks]) if blocks else np.zeros(0, np.float32))
    return as_indptr(indptr), as_indices(indices), np.ascontiguousarray(data, np.float32)


def rank_graph(rows: RankRows) -> RankGraph:
    """The :class:`RankGraph` of a rank's rows."""
    indptr, indices, data = full_rows(rows.n, [(rows.lo, rows.indptr, rows.indices, rows.data)])
    return RankGraph(indptr, indices, data, rows.name, rows.source, rows.pattern, rows.ids,
                     list(rows.notes), rows.symmetric, degrees=rows.degrees,
                     global_nnz=rows.nnz)


def _csr(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, first: int, count: int,
         n_cols: int, pattern: bool):
    """Canonical CSR of entries whose rows lie in ``first .. first + count``: (indptr from
    0, indices, data); a pattern keeps one entry of each duplicate, valued 1."""
    if count == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32)
    vals = np.ones(rows.size, np.float32) if pattern else vals
    a = sp.csr_array((vals, (np.asarray(rows, np.int64) - first, cols)), shape=(count, n_cols))
    a.sum_duplicates()
    data = np.ones(a.nnz, np.float32) if pattern else a.data.astype(np.float32)
    return a.indptr.astype(np.int64), as_indices(a.indices), data


def app_matrix(rows: RankRows, form: str, comm: Communicator,
               graph: RankGraph | None = None) -> tuple[Graph, RowPartition]:
    """This rank's rows of the app's matrix, and the partition of its rows.

    Parameters
    ----------
    rows : RankRows
    form : {'graph', 'transpose', 'symmetrized', 'stacked'}
    comm : Communicator
    graph : RankGraph, optional
        :func:`rank_graph` of ``rows``: where the matrix is the graph itself, its arrays
        serve (no second copy of the rank's entries).

    Returns
    -------
    (Graph, RowPartition)
        The ``N x N`` matrix (``N = n``, or ``2 n`` stacked) holding this rank's rows.

    Raises
    ------
    UsageError
        For a form this module does not know.
    InputError
        When a stacked matrix's ``2 n`` rows pass the int32 limit.
    """
    if form not in FORMS:
        raise UsageError(f"no distributed form of an app matrix {form!r} "
                         f"(known: {', '.join(FORMS)})")
    n, part = rows.n, rows.partition
    lo, hi = rows.lo, rows.hi
    notes = list(rows.notes)
    if form == "graph" or (form == "transpose" and rows.symmetric) or (
            form == "symmetrized" and rows.symmetric and rows.pattern):
        graph = graph if graph is not None else rank_graph(rows)
        return (Graph(graph.indptr, graph.indices, graph.data, rows.name, rows.source,
                      rows.pattern, None, notes, rows.symmetric), part)
    r, c, v = rows.entries()
    if form == "transpose":
        tr, tc, tv = comm.route(part.owner(c), c.astype(np.int32), r.astype(np.int32), v)
        blocks = [(lo, *_csr(tr, tc, tv, lo, hi - lo, n, rows.pattern))]
        out_n, blocks_n, pattern, symmetric = n, 1, rows.pattern, False
        notes.append("transposed (rows list in-edges)")
    elif form == "symmetrized":
        tr, tc = comm.route(part.owner(c), c.astype(np.int32), r.astype(np.int32))
        both_r, both_c = np.concatenate((r, tr)), np.concatenate((c, tc))
        blocks = [(lo, *_csr(both_r, both_c, None, lo, hi - lo, n, True))]
        out_n, blocks_n, pattern, symmetric = n, 1, True, True
        notes.append("symmetrized: structure of A + A^T")
    else:  # stacked
        if 2 * n > INT32_MAX:
            raise InputError(rows.source or rows.name,
                             f"HITS needs 2n = {2 * n:,} rows, past the int32 limit")
        tr, tc = comm.route(part.owner(c), c.astype(np.int32), r.astype(np.int32))
        hub = _csr(r, c + n, None, lo, hi - lo, 2 * n, True)
        auth = _csr(tr, tc, None, lo, hi - lo, 2 * n, True)
        blocks = [(lo, *hub), (n + lo, *auth)]
        out_n, blocks_n, pattern, symmetric = 2 * n, 2, True, True
        notes.append("stacked as [[0, A], [A^T, 0]] for HITS")
    indptr, indices, data = full_rows(out_n, blocks)
    matrix = Graph(indptr, indices, data, rows.name, rows.source, pattern, None, notes,
                   symmetric)
    return matrix, part.stacked(blocks_n)
