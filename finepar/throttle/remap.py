"""Vertex relabelling for throttled work (throttling ATC'18 §4.2, Algorithm 5).

:func:`dbwp_remap` packs each cache-fit partition's *private* vertices (used
by that partition only) into consecutive ids so a partition's loads coalesce;
:func:`degree_remap` is the cheap option, descending degree (on the H100,
relabelling RMAT graphs by descending degree made cuSPARSE 19-53% faster,
DESIGN.md §6).

Both return ``perm`` with ``perm[v]`` the new id of vertex ``v``, the
convention of :meth:`finepar.graph.Graph.permuted` (``B[perm[i], perm[j]] = A[i, j]``).
"""

from __future__ import annotations

import numpy as np

from ..errors import UsageError
from .validate import check_int

__all__ = ["dbwp_remap", "degree_remap", "vertex_partitions"]


def _inverse(order: np.ndarray) -> np.ndarray:
    perm = np.empty(order.shape[0], np.int64)
    perm[order] = np.arange(order.shape[0], dtype=np.int64)
    return perm


def vertex_partitions(part, rows, indices, n) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (vertex, partition) pairs of a square share's tuple list.

    x and y are one vertex set: partition ``p`` uses vertex ``v`` if a nonzero
    of ``p`` is in row ``v`` (``rows[local row] == v``) or column ``v``.

    Parameters
    ----------
    part : Partitioning
    rows : array_like of int, shape (k,)
        Global vertex id of each local row of the share.
    indices : array_like of int, shape (nnz,)
        The share's column ids.
    n : int
        Number of vertices.

    Returns
    -------
    vertex, partition : numpy.ndarray of int64, shape (pairs,)
        Sorted by vertex, then partition.

    Raises
    ------
    finepar.errors.UsageError
        If the arrays do not fit the partitioning or lie outside ``[0, n)``.
    """
    n = check_int("n", n, 1)
    rows = np.asarray(rows)
    indices = np.asarray(indices)
    if rows.ndim != 1 or rows.dtype.kind not in "iu" or rows.shape[0] < part.n_rows:
        raise UsageError(f"rows must be a 1-D integer array of the share's {part.n_rows} global row ids")
    order = part.positions()
    if indices.shape != order.shape or indices.dtype.kind not in "iu":
        raise UsageError(f"indices must be the share's {order.shape[0]} integer column ids")
    for name, a in (("rows", rows), ("indices", indices)):
        if a.size and (a.min() < 0 or a.max() >= n):
            raise UsageError(f"{name} must lie in [0, n = {n})")
    seg_part = part.segment_partition()
    nz_part = np.repeat(seg_part, np.diff(part.seg_ptr))
    vertex = np.concatenate([rows[part.seg_row].astype(np.int64), indices[order].astype(np.int64)])
    owner = np.concatenate([seg_part, nz_part])
    pairs = np.unique(vertex * max(part.n_parts, 1) + owner)
    return pairs // max(part.n_parts, 1), pairs % max(part.n_parts, 1)


def dbwp_remap(part, rows, indices, n) -> np.ndarray:
    """Algorithm 5 (data remapping) for a square graph.

    A vertex used by exactly one partition is *private*, by several a
    *boundary* vertex. Partitions are ranked by their private count, fewest
    first ("we prioritize the partition that has the smallest amount of unique
    data", §4.2; ties by partition id). New ids go to: the private vertices,
    partition by partition in rank order (ascending old id inside a
    partition); then the boundary vertices, in the rank of the first partition
    that uses them, ascending old id within it; then the vertices the share
    never touches, by old id.

    Parameters
    ----------
    part : Partitioning
    rows : array_like of int, shape (k,)
        Global vertex id of each local row of the share.
    indices : array_like of int, shape (nnz,)
        The share's column ids.
    n : int
        Number of vertices.

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
        ``perm[v]``: new id of vertex ``v`` (a permutation).

    Raises
    ------
    finepar.errors.UsageError
        As :func:`vertex_partitions`.
    """
    vertex, owner = vertex_partitions(part, rows, indices, n)
    uses = np.bincount(vertex, minlength=n)
    private = uses[vertex] == 1
    unique = np.bincount(owner[private], minlength=part.n_parts)
    rank = _inverse(np.argsort(unique, kind="stable"))  # rank[p]: position of partition p
    first_rank = np.full(n, part.n_parts, np.int64)     # untouched vertices sort last
    np.minimum.at(first_rank, vertex, rank[owner])
    group = np.where(uses == 0, 2, np.where(uses == 1, 0, 1))  # private, boundary, untouched
    return _inverse(np.lexsort((np.arange(n), first_rank, group)))


def degree_remap(degrees) -> np.ndarray:
    """Relabel by descending degree, ties by ascending id.

    Parameters
    ----------
    degrees : array_like of int, shape (n,)
        Degree of each vertex (e.g. ``diff(indptr)``), non-negative.

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
        ``perm[v]``: new id of vertex ``v``; the highest-degree vertex gets 0.

    Raises
    ------
    finepar.errors.UsageError
        If `degrees` is not a 1-D array of non-negative integers.
    """
    d = np.asarray(degrees)
    if d.ndim != 1 or d.dtype.kind not in "iu" or (d.size and d.min() < 0):
        raise UsageError("degrees must be a 1-D array of non-negative integers")
    return _inverse(np.argsort(-d.astype(np.int64), kind="stable"))
