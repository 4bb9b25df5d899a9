"""Argument checks of the throttling package, and the invariants of its results.

Inputs are checked before any work and fail with a one-line
:class:`~finepar.errors.UsageError` naming the argument; :func:`check_partitioning`
and :func:`check_tree` recount a result from its arrays and name the first
invariant that fails.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..errors import UsageError

__all__ = ["check_share", "check_options", "check_int", "check_tree", "check_partitioning"]


def check_int(name: str, value, minimum: int) -> int:
    """``value`` as an int if it is an integer (not a bool) >= ``minimum``, else raise UsageError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise UsageError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _int_array(name: str, a) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise UsageError(f"{name} must be a 1-D integer array, got shape {a.shape} of {a.dtype}")
    return a if a.dtype in (np.int32, np.int64) else a.astype(np.int64)


def check_share(indptr, indices, n) -> tuple[np.ndarray, np.ndarray]:
    """Validate a compact CSR share; return ``indptr`` as int64 and ``indices`` as int32/int64.

    Raises
    ------
    finepar.errors.UsageError
        Naming `indptr`, `indices` or `n` and what is wrong.
    """
    n = check_int("n", n, 1)
    indptr = _int_array("indptr", indptr).astype(np.int64, copy=False)
    indices = np.ascontiguousarray(_int_array("indices", indices))
    nnz = indices.shape[0]
    if indptr.shape[0] < 1 or indptr[0] != 0 or indptr[-1] != nnz:
        raise UsageError(f"indptr must start at 0 and end at nnz = {nnz} (the length of indices)")
    lengths = np.diff(indptr)
    if (lengths < 0).any():
        raise UsageError(f"indptr must be non-decreasing (row {int(np.argmax(lengths < 0))} has a "
                         "negative length)")
    if nnz and (indices.min() < 0 or indices.max() >= n):
        raise UsageError(f"indices must lie in [0, n = {n}), found {int(indices.min())}.."
                         f"{int(indices.max())}")
    down = np.flatnonzero(np.diff(indices) < 0) + 1  # positions where the column goes down
    row_first = np.zeros(nnz + 1, dtype=bool)
    row_first[indptr] = True
    bad = down[~row_first[down]]
    if bad.size:
        row = int(np.searchsorted(indptr, bad[0], side="right")) - 1
        raise UsageError(f"indices must be sorted within each row (row {row} is not)")
    return indptr, indices


def check_options(capacity, bisect, spac_levels, seed, min_nnz, bisections) -> None:
    """Validate :func:`~finepar.throttle.dbwp.dbwp`'s options (`bisect` among
    `bisections`); raise UsageError naming the option."""
    check_int("capacity", capacity, 2)
    if bisect not in bisections:
        raise UsageError(f"bisect must be one of {', '.join(bisections)}, got {bisect!r}")
    check_int("spac_levels", spac_levels, 0)
    check_int("seed", seed, 0)
    check_int("min_nnz", min_nnz, 1)


def _fail(what: str, problem: str):
    raise UsageError(f"{what}: {problem}")


def check_tree(tree) -> None:
    """Raise UsageError unless `tree` is a full binary tree rooted at node 0 whose
    ranges nest: children split their parent's ``[lo, hi)`` at one point, a leaf
    covers one partition, the leaves cover ``[0, P)`` once, depths step by one."""
    arrays = [np.asarray(a) for a in (tree.left, tree.right, tree.lo, tree.hi, tree.depth)]
    count = arrays[0].shape[0]
    if count == 0 or any(a.shape != (count,) for a in arrays):
        _fail("SJ-tree", "left, right, lo, hi and depth must be non-empty arrays of one length")
    left, right, lo, hi, depth = (a.astype(np.int64) for a in arrays)
    inner = np.flatnonzero(left >= 0)
    if ((right >= 0) != (left >= 0)).any() or (left >= count).any() or (right >= count).any():
        _fail("SJ-tree", "a node must have two children in range or none")
    kids = np.concatenate([left[inner], right[inner]])
    if np.bincount(kids, minlength=count)[1:].tolist() != [1] * (count - 1) or (kids == 0).any():
        _fail("SJ-tree", "every node but the root (node 0) must have exactly one parent")
    if lo[0] != 0 or depth[0] != 0:
        _fail("SJ-tree", "the root must start at partition 0 and have depth 0")
    l, r = left[inner], right[inner]
    deeper = depth[inner] + 1
    if ((lo[l] != lo[inner]) | (hi[l] != lo[r]) | (hi[r] != hi[inner]) | (lo[r] <= lo[inner])
            | (hi[inner] <= lo[r]) | (depth[l] != deeper) | (depth[r] != deeper)).any():
        _fail("SJ-tree", "children must split their parent's range at one point, one level deeper")
    leaves = np.flatnonzero(left < 0)
    if (hi[leaves] != lo[leaves] + 1).any() or np.sort(lo[leaves]).tolist() != list(range(hi[0])):
        _fail("SJ-tree", "the leaves must cover [0, P) with one partition each")


def check_partitioning(part, indptr, indices) -> None:
    """Recount a :class:`~finepar.throttle.dbwp.Partitioning` from the share; raise
    UsageError naming the first invariant that fails (see ``Partitioning.check``)."""
    what = "partitioning"
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices)
    nnz, k = indices.shape[0], indptr.shape[0] - 1
    order, seg_ptr, part_seg = (np.asarray(a, dtype=np.int64) for a in (part.positions(), part.seg_ptr,
                                                                         part.part_seg))
    seg_row = np.asarray(part.seg_row, dtype=np.int64)
    if order.shape != (nnz,) or np.bincount(order, minlength=nnz).tolist() != [1] * nnz:
        _fail(what, f"order is not a permutation of the share's {nnz} nonzero positions")
    S = seg_row.shape[0]
    if (seg_ptr.shape != (S + 1,) or seg_ptr[0] != 0 or seg_ptr[-1] != nnz
            or (np.diff(seg_ptr) <= 0).any()):
        _fail(what, "seg_ptr must rise strictly from 0 to nnz (no empty segment)")
    if part_seg[0] != 0 or part_seg[-1] != S or (np.diff(part_seg) < 0).any():
        _fail(what, "part_seg must rise from 0 to the number of segments")
    check_tree(part.tree)
    P = part_seg.shape[0] - 1
    if part.tree.n_parts != P:
        _fail(what, f"the tree has {part.tree.n_parts} leaves for {P} partitions")
    rows = np.repeat(np.arange(k, dtype=np.int64), np.diff(indptr))
    seg_len = np.diff(seg_ptr)
    if seg_row.size and (seg_row.min() < 0 or seg_row.max() >= k):
        _fail(what, "seg_row out of range")
    if (rows[order] != np.repeat(seg_row, seg_len)).any():
        _fail(what, "a segment holds nonzeros of a row other than its seg_row")
    same_seg = np.repeat(np.arange(S), seg_len)
    if ((np.diff(order) <= 0) & (same_seg[1:] == same_seg[:-1])).any():
        _fail(what, "positions must ascend within a segment")
    seg_part = np.repeat(np.arange(P), np.diff(part_seg))
    if ((np.diff(seg_row) <= 0) & (seg_part[1:] == seg_part[:-1])).any():
        _fail(what, "rows must ascend strictly within a partition")
    _check_counts(part, indices, order, seg_ptr, part_seg, seg_part)


def _check_counts(part, indices, order, seg_ptr, part_seg, seg_part) -> None:
    what = "partitioning"
    P = part_seg.shape[0] - 1
    nz_part = np.repeat(seg_part, np.diff(seg_ptr))
    cols = indices[order].astype(np.int64)
    width = int(cols.max()) + 1 if cols.size else 1
    dx = np.bincount(np.unique(nz_part * width + cols) // width, minlength=P)  # distinct (part, col)
    nnz = np.diff(seg_ptr[part_seg])
    dy = np.diff(part_seg)
    for name, mine, true in (("nnz", part.nnz, nnz), ("distinct_x", part.distinct_x, dx),
                             ("distinct_y", part.distinct_y, dy)):
        if np.asarray(mine).tolist() != true.tolist():
            _fail(what, f"{name} does not match a recount")
    over = (dx + dy > part.capacity) & (nnz >= 2 * part.min_nnz)
    if over.any():
        p = int(np.argmax(over))
        _fail(what, f"partition {p} touches {int(dx[p] + dy[p])} entries, over the capacity "
                    f"{part.capacity}, yet could be split")
