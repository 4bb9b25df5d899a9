"""The host-side machinery the apps' float64 references share (scipy): a graph's pattern
and structure without copies, row blocks for a thread pool, edge lookups, the undirected
simple graph. Each app's own reference is beside the app (``finepar/apps/<app>.py``:
``reference_pagerank``, ``bfs_levels_fast``, ``validate_bfs``, ...), which its
:meth:`~finepar.apps.base.App.reference` and :meth:`~finepar.apps.base.App.check` call.

They are meant for large graphs too (Graph500 scale 24 and beyond): they read the graph's
own index arrays without copying them where scipy allows, cut the work into row blocks or
frontier slices run on a thread pool (scipy's sparse products and numpy's large-array
loops release the GIL), and reuse their vectors between iterations. Nothing here touches
OpenCL.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .graph import Graph


# Work per task handed to a thread: stored entries (and rows, for a row block of
# PageRank) of a row block or of a slice of a BFS frontier.
BLOCK_NNZ = 1 << 22


def structure(graph: Graph) -> sp.csr_array:
    """The graph's pattern for scipy.sparse.csgraph, which reads the structure only.

    Shares ``indices`` and ``indptr`` where scipy allows (one index dtype: an
    int64 ``indptr`` makes it copy ``indices``); the values are one broadcast
    float64 1.0, so no array of ``nnz`` values is built.
    """
    ones = np.broadcast_to(np.float64(1.0), (graph.nnz,))
    return sp.csr_array((ones, graph.indices, graph.indptr), shape=graph.shape, copy=False)


def row_ranges(indptr: np.ndarray, target: int) -> list[tuple[int, int]]:
    """Consecutive row ranges ``[lo, hi)`` covering all rows, each about `target` units of
    work, a unit being a stored entry or a row (the per-row vector work)."""
    n = indptr.shape[0] - 1
    cost = indptr + np.arange(n + 1)  # work before each row
    pieces = max(1, min(n, -(-int(cost[-1]) // target)))
    cuts = np.searchsorted(cost, np.linspace(0, int(cost[-1]), pieces + 1)[1:-1])
    bounds = np.unique(np.concatenate(([0], cuts, [n]))).tolist()
    return list(zip(bounds[:-1], bounds[1:]))


def pattern(graph: Graph) -> sp.csr_array:
    """The graph's pattern as a scipy CSR array of float64 ones, shape (n, n)."""
    return sp.csr_array((np.ones(graph.nnz), graph.indices, graph.indptr), shape=graph.shape)


def pattern_blocks(graph: Graph) -> list[tuple[int, int, sp.csr_array]]:
    """Row blocks ``(lo, hi, B)`` of the graph's pattern with float64 values 1.0:
    ``B @ v`` is rows ``lo .. hi - 1`` of ``A v``. The blocks share ``indices``
    and one array of ones as long as the largest block."""
    ranges = row_ranges(graph.indptr, BLOCK_NNZ)
    ptr = graph.indptr
    ones = np.ones(max(int(ptr[hi] - ptr[lo]) for lo, hi in ranges))
    blocks = []
    for lo, hi in ranges:
        s, e = int(ptr[lo]), int(ptr[hi])
        local = (ptr[lo:hi + 1] - s).astype(np.int32 if e - s <= np.iinfo(np.int32).max else np.int64)
        block = sp.csr_array((ones[:e - s], graph.indices[s:e], local), shape=(hi - lo, graph.n),
                             copy=False)
        blocks.append((lo, hi, block))
    return blocks


def has_edges(graph: Graph, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Whether each ``(src[i], dst[i])`` is a stored entry of the graph (bool array).

    A binary search in each source row (a :class:`~finepar.graph.Graph` keeps each
    row's columns sorted), vectorised over all queries: O(k log(longest row)).
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    cols = graph.indices
    indptr = graph.indptr.astype(np.int64, copy=False)
    a, hi = indptr[src], indptr[src + 1]
    b = hi.copy()
    while True:
        active = a < b
        if not active.any():
            break
        mid = (a + b) // 2
        right = active & (cols[np.minimum(mid, max(cols.size - 1, 0))] < dst)
        a = np.where(right, mid + 1, a)
        b = np.where(active & ~right, mid, b)
    found = a < hi
    found[found] = cols[a[found]] == dst[found]
    return found


def undirected_simple(graph: Graph) -> sp.csr_array:
    """The pattern of ``A + A^T`` without self-loops (float64 ones, canonical CSR)."""
    a = pattern(graph)
    s = (a + a.T).tocsr()
    s.setdiag(0)
    s.eliminate_zeros()
    s.sort_indices()
    s.data[:] = 1.0
    return s
