"""Row partitions across ranks: contiguous vertex ranges (DESIGN.md §3, "mpi").

Rank ``r`` owns vertices ``bounds[r] .. bounds[r+1]``, and the matrix rows of those
vertices: row ``v`` (and row ``n + v`` of HITS's stacked matrix). Two ways to draw the
bounds:

* ``nnz``: contiguous ranges of about equal stored entries, from the row pointers alone
  (no pass over the entries; every rank can compute them);
* ``metis``: METIS's k-way partition (through pymetis) of the symmetrised structure,
  weighted by entries, which cuts fewer edges, hence a smaller halo, on graphs with
  locality; the vertices are then relabelled so that each part is a contiguous range
  (the answer comes back in the input's ids). METIS needs the whole graph in one
  process (pymetis has no ParMETIS): one rank reads it and hands the others their rows.

SPAC (``throttle/spac.py``) partitions entries, not rows: a row's entries could then
sit on several ranks, which a row owner design does not allow, so it is not offered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UsageError

PARTITIONS = ("nnz", "metis")


@dataclass
class RowPartition:
    """Which rank owns each row.

    Attributes
    ----------
    bounds : ndarray of int64, shape (P + 1,)
        Rank ``r`` owns vertices ``bounds[r]`` to ``bounds[r+1]`` (exclusive).
    n : int
        Vertices.
    blocks : int
        Matrix rows per vertex: 1, or 2 for a stacked ``[[0, A], [A^T, 0]]`` (rows ``v``
        and ``n + v`` belong to the owner of ``v``).
    method : str
        How the bounds were drawn (``nnz``, ``metis``).
    """

    bounds: np.ndarray
    n: int
    blocks: int = 1
    method: str = "nnz"

    @property
    def size(self) -> int:
        """Ranks."""
        return int(self.bounds.size) - 1

    @property
    def rows(self) -> int:
        """Rows of the matrix (``blocks * n``)."""
        return self.blocks * self.n

    def stacked(self, blocks: int) -> "RowPartition":
        """The same vertex ranges over a matrix of ``blocks * n`` rows."""
        return RowPartition(self.bounds, self.n, blocks, self.method)

    def owner(self, rows: np.ndarray) -> np.ndarray:
        """The rank owning each of ``rows`` (int32)."""
        v = np.asarray(rows, dtype=np.int64) % self.n if self.blocks > 1 else rows
        return (np.searchsorted(self.bounds, v, side="right") - 1).astype(np.int32)

    def ranges(self, rank: int) -> list[tuple[int, int]]:
        """Rank ``rank``'s rows as ``(lo, hi)`` ranges, one per block."""
        lo, hi = int(self.bounds[rank]), int(self.bounds[rank + 1])
        return [(b * self.n + lo, b * self.n + hi) for b in range(self.blocks)]

    def count(self, rank: int) -> int:
        """Rows rank ``rank`` owns."""
        return self.blocks * int(self.bounds[rank + 1] - self.bounds[rank])

    def counts(self) -> np.ndarray:
        """Rows each rank owns (int64, shape (P,))."""
        return self.blocks * np.diff(self.bounds)

    def owned(self, rank: int) -> np.ndarray:
        """Rank ``rank``'s rows (int64, ascending)."""
        return np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi in self.ranges(rank)])

    def mask(self, rank: int) -> np.ndarray:
        """Boolean mask of rank ``rank``'s rows, shape (rows,)."""
        m = np.zeros(self.rows, dtype=bool)
        for lo, hi in self.ranges(rank):
            m[lo:hi] = True
        return m

    def describe(self) -> dict:
        return {"method": self.method, "ranks": self.size, "bounds": [int(b) for b in self.bounds]}


def check_method(method: str) -> str:
    """Raise a one-line UsageError for an unknown ``--partition``."""
    if method not in PARTITIONS:
        raise UsageError(f"--partition must be one of {', '.join(PARTITIONS)}, not {method!r}")
    return method


def by_nnz(indptr: np.ndarray, parts: int) -> np.ndarray:
    """Bounds of ``parts`` contiguous row ranges of about equal stored entries.

    Parameters
    ----------
    indptr : ndarray of int, shape (n + 1,)
        Row pointers (or any non-decreasing prefix sum of row weights).
    parts : int

    Returns
    -------
    ndarray of int64, shape (parts + 1,)
        Increasing, from 0 to n; range ``k`` ends at the first row where the prefix
        reaches ``k / parts`` of the total (moved where needed so that every range
        holds a row).

    Raises
    ------
    UsageError
        When there are fewer rows than parts.
    """
    indptr = np.asarray(indptr)
    n = int(indptr.size) - 1
    if n < parts:
        raise UsageError(f"{parts} ranks for {n:,} vertices: every rank needs a row")
    total = int(indptr[-1])
    targets = [total * k // parts for k in range(1, parts)]
    bounds = np.concatenate(([0], np.searchsorted(indptr, targets, side="left"), [n]))
    bounds = bounds.astype(np.int64)
    for k in range(1, parts):  # every range keeps at least one row
        bounds[k] = min(max(bounds[k], bounds[k - 1] + 1), n - (parts - k))
    return bounds


def metis_order(graph, parts: int, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """METIS's k-way partition of ``graph``'s symmetrised structure, as a relabelling.

    Parameters
    ----------
    graph : Graph
    parts : int
    weights : ndarray of int, shape (n,)
        Vertex weights (the entries of each vertex's row of the app's matrix).

    Returns
    -------
    perm : ndarray of int64, shape (n,)
        Vertex ``v`` becomes ``perm[v]``: each part's vertices, in id order, form one
        contiguous range, part 0 first.
    bounds : ndarray of int64, shape (parts + 1,)

    Raises
    ------
    UsageError
        Without pymetis (:data:`finepar.throttle.spac.METIS_MISSING`).
    """
    from ..throttle.spac import require_pymetis
    pymetis = require_pymetis()
    n = graph.n
    if parts == 1:
        return np.arange(n, dtype=np.int64), np.array([0, n], dtype=np.int64)
    sym = graph.symmetrized()
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(sym.indptr))
    keep = sym.indices != rows  # METIS takes no self-loops
    xadj = np.concatenate(([0], np.cumsum(np.bincount(rows[keep], minlength=n))))
    adjncy = sym.indices[keep]
    vw = np.maximum(np.asarray(weights, dtype=np.int64), 1)
    _, member = pymetis.part_graph(parts, xadj=xadj, adjncy=adjncy, vweights=vw)
    member = np.asarray(member, dtype=np.int64)
    order = np.argsort(member, kind="stable")
    perm = np.empty(n, dtype=np.int64)
    perm[order] = np.arange(n, dtype=np.int64)
    bounds = np.concatenate(([0], np.cumsum(np.bincount(member, minlength=parts))))
    return perm, bounds.astype(np.int64)
