"""The level profile of a BFS on the host: how many levels a frontier app's run from the
default root takes, and each level's out-edges. The whole-run choice weighs candidates by
it (:mod:`finepar.split.answer`), and a small input's rule for one work-group's levels
(:mod:`finepar.engine.grouplevels`) leaves a deep graph to that choice."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

#: A host BFS gives the level profile of inputs of at most this many entries (about 20 ms
#: on a 2-core EPYC at a million); larger ones get :func:`estimated_profile`.
LEVELS_HOST_NNZ = 1 << 22


@dataclass
class LevelProfile:
    """The out-edges of each level of a BFS from a vertex.

    Attributes
    ----------
    edges : ndarray of int64, shape (levels,)
        Level ``l``'s frontier out-edges (level 0: the root's).
    how : str
        ``host BFS from vertex V`` or ``estimated``.
    seconds : float
    """

    edges: np.ndarray
    how: str
    seconds: float = 0.0

    @property
    def levels(self) -> int:
        return int(self.edges.size)


def level_profile(graph) -> LevelProfile:
    """The level profile of a BFS from ``graph``'s vertex of most out-edges (the frontier
    apps' default root), on the host (scipy's ``breadth_first_order``; each level's end
    found by a binary search over the parents' positions, which a BFS order keeps sorted).
    Inputs past :data:`LEVELS_HOST_NNZ` entries get :func:`estimated_profile`."""
    t0 = time.perf_counter()
    n, nnz = graph.n, int(graph.indptr[-1]) if graph.n else 0
    if n == 0 or nnz == 0:
        return LevelProfile(np.zeros(1, np.int64), "empty", 0.0)
    if nnz > LEVELS_HOST_NNZ:
        return estimated_profile(n, nnz)
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order
    deg = np.diff(graph.indptr).astype(np.int64)
    root = int(np.argmax(deg))
    a = sp.csr_matrix((np.ones(nnz, np.int8), graph.indices, graph.indptr), shape=(n, n))
    order, pred = breadth_first_order(a, root, directed=True, return_predecessors=True)
    pos = np.empty(n, np.int64)
    pos[order] = np.arange(order.size)
    parent_pos = pos[pred[order[1:]]]  # non-decreasing: parents are dequeued in order
    ends = [1]
    while ends[-1] < order.size:  # level l+1 begins after the last child of level l
        ends.append(1 + int(np.searchsorted(parent_pos, ends[-1])))
    bounds = np.asarray([0] + ends)
    cum = np.concatenate(([0], np.cumsum(deg[order])))
    edges = cum[bounds[1:]] - cum[bounds[:-1]]
    return LevelProfile(edges.astype(np.int64), f"host BFS from vertex {root}",
                        time.perf_counter() - t0)


def estimated_profile(n: int, nnz: int) -> LevelProfile:
    """A small-world guess where no host BFS is run: ``log n / log(mean degree) + 2``
    levels, the entries spread evenly (at these sizes the row operations dominate)."""
    mean = max(nnz / max(n, 1), 2.0)
    levels = max(int(math.ceil(math.log(max(n, 2)) / math.log(mean))) + 2, 1)
    return LevelProfile(np.full(levels, nnz // levels, np.int64), "estimated")


def deeper_than(graph, levels: int) -> bool:
    """Whether a BFS of ``graph`` (its CSR rows' out-edges) from its vertex of most entries
    takes more than ``levels`` levels: numpy, level by level, stopping there. A rule that
    runs on every call (warm ones too: :func:`finepar.engine.grouplevels.by_rule`) so
    imports no ``scipy.sparse.csgraph`` (about 50 ms in a fresh process on the 2-core box)
    and walks no deep graph to its end (luxembourg's 952 levels)."""
    n = graph.n
    if n == 0 or graph.nnz == 0:
        return False
    indptr, indices = graph.indptr, graph.indices
    root = int(np.argmax(np.diff(indptr)))
    seen = np.zeros(n, bool)
    seen[root] = True
    front = np.array([root], np.int64)
    for _ in range(int(levels)):
        starts = indptr[front].astype(np.int64)
        counts = indptr[front + 1].astype(np.int64) - starts
        if not counts.sum():
            return False
        first = np.repeat(starts - np.cumsum(counts) + counts, counts)
        nb = indices[first + np.arange(int(counts.sum()))]
        front = np.unique(nb[~seen[nb]]).astype(np.int64)
        if not front.size:
            return False
        seen[front] = True
    return True

