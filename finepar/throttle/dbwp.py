"""Data-balanced work partition, DBWP (throttling ATC'18 §2, Algorithm 1).

The GPU share of a CSR matrix is a tuple list (§2.1): nonzero ``(i, j)`` is the
tuple ``(y_i, x_j)``, an edge between the data elements ``y_i`` and ``x_j``.
:func:`dbwp` recursively bisects every sub-list whose distinct ``x`` plus
distinct ``y`` entries exceed the capacity ``T`` until each part is
*cache-fit*, and keeps the bisection tree (the SJ-tree of §3.3) for the
split-join schedules (:mod:`finepar.throttle.schedule`).

The recursion runs one tree level at a time: all nodes of a level are split
together by vectorised numpy code (K-D tiling, :mod:`.kdtile`) or by one METIS
call per node on a coarsened split-and-connect graph (:mod:`.spac`). Each
pending node's nonzeros occupy one range of two position arrays, one
row-major and one column-major; a split stably partitions both ranges, so the
final row-major array is already the partition order: partitions left to
right, rows ascending inside a partition, columns ascending inside a row.
"""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import UsageError
from . import kdgrid
from .kdtile import kd_split, segment_ranges
from .spac import require_pymetis, spac_split
from .validate import check_int, check_options, check_partitioning, check_share

__all__ = ["dbwp", "Partitioning", "SJTree", "capacity_from_cache", "BISECTIONS"]

BISECTIONS = ("kd", "spac")
"""Bisection methods :func:`dbwp` takes: K-D tiling and coarsened SPAC (§4.1)."""


@dataclass(eq=False)
class SJTree:
    """The bisection tree of a :class:`Partitioning` (the SJ-tree, §3.3).

    Node 0 is the root (the whole share). Every internal node has two
    children; leaves are the cache-fit partitions, numbered left to right, so
    every node covers a contiguous range ``[lo, hi)`` of partitions. Trees made
    by :func:`dbwp` number their nodes in pre-order (a node, then its left
    subtree, then its right subtree): a parent's id is below its children's,
    and among nodes with disjoint ranges ascending id is left-to-right order.

    Attributes
    ----------
    left, right : numpy.ndarray of int32, shape (nodes,)
        Children of each node, -1 at leaves.
    lo, hi : numpy.ndarray of int32, shape (nodes,)
        Partition range ``[lo, hi)`` covered by each node (``hi = lo + 1`` at a leaf).
    depth : numpy.ndarray of int32, shape (nodes,)
        Distance from the root (0 at the root).
    """

    left: np.ndarray
    right: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    depth: np.ndarray

    @property
    def n_nodes(self) -> int:
        """Number of tree nodes (``2 P - 1`` for ``P`` partitions)."""
        return int(self.left.shape[0])

    @property
    def n_parts(self) -> int:
        """Number of leaves (partitions), ``hi`` of the root."""
        return int(self.hi[0])

    @property
    def max_depth(self) -> int:
        """Depth of the deepest node (0 for a tree of one leaf); a property, not a method."""
        return int(self.depth.max())

    def is_leaf(self) -> np.ndarray:
        """Boolean mask of the leaves, shape (nodes,)."""
        return self.left < 0

    def leaves(self) -> np.ndarray:
        """Leaf node ids in partition order (int32, shape (P,)): ``leaves()[p]`` is partition ``p``."""
        ids = np.flatnonzero(self.is_leaf())
        return ids[np.argsort(self.lo[ids], kind="stable")].astype(np.int32)

    def nodes_at_depth(self, d: int) -> np.ndarray:
        """Node ids at depth ``d``, left to right (int32; empty past :attr:`max_depth`)."""
        ids = np.flatnonzero(self.depth == d)
        return ids[np.argsort(self.lo[ids], kind="stable")].astype(np.int32)


@dataclass(eq=False)
class Partitioning:
    """Cache-fit partitions of a CSR share, as made by :func:`dbwp`.

    A *segment* is one row's nonzeros inside one partition. Partition ``p``
    holds segments ``part_seg[p]:part_seg[p+1]``; segment ``s`` holds the
    nonzero positions ``order[seg_ptr[s]:seg_ptr[s+1]]`` of local row
    ``seg_row[s]`` (positions index the share's ``indices``).

    Attributes
    ----------
    order : numpy.ndarray of int64, shape (nnz,), or None
        A permutation of ``0..nnz-1``: the nonzero positions in partition order;
        within a partition grouped by local row (ascending), within a row in
        their original (ascending column) order. None when only the segments are
        kept (:mod:`.kdgrid`, the cache): :meth:`positions` derives it.
    seg_row : numpy.ndarray of int32, shape (S,)
        Local row of each segment (ascending within a partition).
    seg_ptr : numpy.ndarray of int64, shape (S + 1,)
        Segment boundaries in `order`.
    part_seg : numpy.ndarray of int64, shape (P + 1,)
        Partition boundaries in the segment list.
    tree : SJTree
        The bisection tree; leaf ``p`` (in :meth:`SJTree.leaves` order) is partition ``p``.
    nnz, distinct_x, distinct_y : numpy.ndarray of int64, shape (P,)
        Nonzeros, distinct columns (x entries) and distinct rows (y entries) of each partition.
    capacity : int
        ``T``: the most distinct x plus y entries a partition may touch.
    method : str
        ``"kd"`` or ``"spac"``.
    seconds : float
        Wall-clock seconds :func:`dbwp` took to partition (validation excluded).
    min_nnz : int
        Smallest partition a bisection may create (see :func:`dbwp`).
    n_rows, n_cols : int
        Rows ``k`` of the share and columns ``n`` of the matrix.
    extra : dict
        Method parameters reported by :meth:`describe` (SPAC: ``seed``, ``spac_levels``;
        grid K-D tiling: ``grid``).
    seg_start : numpy.ndarray of int64, shape (S,)
        Share position of each segment's first nonzero. A K-D segment is a contiguous
        run of its row's positions (``order[seg_ptr[s]:seg_ptr[s+1]]`` is
        ``seg_start[s] + arange(len)``), so the grid tiling keeps no ``order``; a SPAC
        segment may skip positions, and ``order`` is kept.
    """

    order: np.ndarray | None
    seg_row: np.ndarray
    seg_ptr: np.ndarray
    part_seg: np.ndarray
    tree: SJTree
    nnz: np.ndarray
    distinct_x: np.ndarray
    distinct_y: np.ndarray
    capacity: int
    method: str
    seconds: float
    min_nnz: int = 1
    n_rows: int = 0
    n_cols: int = 0
    extra: dict = field(default_factory=dict)
    seg_start: np.ndarray | None = None

    def __post_init__(self):
        if self.seg_start is None:
            self.seg_start = self.order[self.seg_ptr[:-1]].astype(np.int64)

    def positions(self) -> np.ndarray:
        """:attr:`order`, made from the segments where it is not kept (int64, (nnz,))."""
        if self.order is not None:
            return self.order
        from ..graph import RowEntries
        return RowEntries(self.seg_start, self.seg_ptr).positions()

    @property
    def n_parts(self) -> int:
        """Number of partitions ``P``."""
        return int(self.part_seg.shape[0]) - 1

    @property
    def n_segments(self) -> int:
        """Number of segments ``S``."""
        return int(self.seg_row.shape[0])

    @property
    def part_ptr(self) -> np.ndarray:
        """Partition boundaries in `order` (int64, shape (P + 1,)): partition ``p``
        holds ``order[part_ptr[p]:part_ptr[p+1]]``."""
        return self.seg_ptr[self.part_seg]

    @property
    def working_set(self) -> np.ndarray:
        """Distinct x plus distinct y entries of each partition (int64, shape (P,))."""
        return self.distinct_x + self.distinct_y

    def over_capacity(self) -> np.ndarray:
        """Partitions whose working set exceeds :attr:`capacity` (int64 ids): only
        those that could not be split (fewer than ``2 * min_nnz`` nonzeros)."""
        return np.flatnonzero(self.working_set > self.capacity)

    def segment_partition(self) -> np.ndarray:
        """Partition of each segment (int64, shape (S,))."""
        return np.repeat(np.arange(self.n_parts, dtype=np.int64), np.diff(self.part_seg))

    def replication(self, total_distinct: int) -> int:
        """Vertex replication cost R(x) of Eq. 2: the working sets summed over
        partitions minus ``total_distinct``, the distinct x plus y entries of the
        whole share (each data element counted once)."""
        return int(self.working_set.sum()) - int(total_distinct)

    def describe(self) -> dict:
        """Summary for reports: method, capacity, counts, sizes and seconds (JSON-ready)."""
        ws = self.working_set
        return {
            "method": self.method,
            "capacity": int(self.capacity),
            "partitions": self.n_parts,
            "segments": self.n_segments,
            "nnz": int(self.nnz.sum()),
            "tree_nodes": self.tree.n_nodes,
            "tree_depth": self.tree.max_depth,
            "nnz_per_partition": _spread(self.nnz),
            "working_set": _spread(ws),
            "mean_fill": float(ws.mean() / self.capacity) if ws.size else 0.0,
            "over_capacity": int(self.over_capacity().size),
            "seconds": float(self.seconds),
            **self.extra,
        }

    _ARRAYS = ("seg_start", "seg_row", "seg_ptr", "part_seg", "nnz", "distinct_x", "distinct_y")
    _TREE = ("left", "right", "lo", "hi", "depth")

    def to_arrays(self) -> tuple[dict, dict]:
        """``(arrays, scalars)``: everything to rebuild it with :meth:`from_arrays` (the
        prepared-graph cache, :mod:`finepar.prepcache`)."""
        arrays = {k: getattr(self, k) for k in self._ARRAYS}
        if self.order is not None:
            arrays["order"] = self.order
        arrays.update({f"tree_{k}": getattr(self.tree, k) for k in self._TREE})
        scalars = {"capacity": int(self.capacity), "method": self.method,
                   "seconds": float(self.seconds), "min_nnz": int(self.min_nnz),
                   "n_rows": int(self.n_rows), "n_cols": int(self.n_cols), "extra": self.extra}
        return arrays, scalars

    @classmethod
    def from_arrays(cls, arrays: dict, scalars: dict) -> "Partitioning":
        """The partitioning :meth:`to_arrays` described."""
        tree = SJTree(**{k: arrays[f"tree_{k}"] for k in cls._TREE})
        return cls(order=arrays.get("order"), tree=tree, **{k: arrays[k] for k in cls._ARRAYS},
                   **scalars)

    def check(self, indptr, indices) -> None:
        """Raise if the partitioning does not describe this share or breaks an invariant.

        Checks: `order` is a permutation; segments are non-empty, lie in one
        row each (`seg_row`), keep ascending positions, and rows ascend within a
        partition; the partitions' ``nnz`` / ``distinct_x`` / ``distinct_y``
        match a recount; partitions respect the capacity unless too small to
        split; the tree's ranges nest and cover ``[0, P)``.

        Parameters
        ----------
        indptr : array_like of int, shape (k + 1,)
        indices : array_like of int, shape (nnz,)
            The share that was partitioned.

        Raises
        ------
        finepar.errors.UsageError
            Naming the first invariant that fails.
        """
        check_partitioning(self, indptr, indices)


def _spread(values: np.ndarray) -> dict:
    if values.size == 0:
        return {"min": 0, "median": 0.0, "max": 0}
    return {"min": int(values.min()), "median": float(np.median(values)), "max": int(values.max())}


def capacity_from_cache(cache_bytes, fraction: float = 0.5, bytes_per_entry: int = 4) -> int:
    """Capacity ``T`` (vector entries) of a cache: ``floor(cache_bytes * fraction / bytes_per_entry)``.

    Parameters
    ----------
    cache_bytes : int
        Cache size in bytes (e.g. a GPU's L2: 50 MB on an H100, DESIGN.md §6).
    fraction : float
        Share of the cache given to the x and y entries, in ``(0, 1]``; the rest
        holds the streamed matrix and other traffic (default 0.5).
    bytes_per_entry : int
        Bytes of one x or y entry (4 for float32 / int32).

    Returns
    -------
    int
        ``T`` >= 2.

    Raises
    ------
    finepar.errors.UsageError
        If an argument is out of range or the cache holds fewer than 2 entries.
    """
    check_int("cache_bytes", cache_bytes, 1)
    check_int("bytes_per_entry", bytes_per_entry, 1)
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real) or not 0 < fraction <= 1:
        raise UsageError(f"fraction must be a number in (0, 1], got {fraction!r}")
    capacity = int(cache_bytes * fraction) // int(bytes_per_entry)
    if capacity < 2:
        raise UsageError(f"a cache of {cache_bytes} bytes at fraction {fraction} holds {capacity} "
                         f"entries of {bytes_per_entry} bytes; the capacity must be at least 2")
    return capacity


def dbwp(indptr, indices, n, capacity, *, bisect: str = "kd", spac_levels: int = 4, seed: int = 0,
         min_nnz: int = 1, checked: bool = False, symmetric: bool = False,
         counter=None) -> Partitioning:
    """Cut a CSR share into cache-fit partitions (Algorithm 1, DBWP).

    Every sub-list of nonzeros whose distinct x plus distinct y entries exceed
    `capacity` is bisected, recursively; a sub-list with fewer than
    ``2 * min_nnz`` nonzeros cannot be split further and is recorded as a
    partition as it is (with ``min_nnz = 1``: a single nonzero, which always
    fits since ``T >= 2``). Deterministic for a given `seed`.

    Parameters
    ----------
    indptr : array_like of int, shape (k + 1,)
        Compact row pointers of the share's ``k`` rows (local rows ``0..k-1``):
        ``indptr[0] == 0``, non-decreasing, ``indptr[-1] == nnz``.
    indices : array_like of int, shape (nnz,)
        Column ids in ``[0, n)``, sorted within each row.
    n : int
        Number of columns (x entries).
    capacity : int
        ``T`` >= 2: the most distinct x plus y entries a partition may touch
        (:func:`capacity_from_cache`).
    bisect : {"kd", "spac"}
        K-D tiling (:mod:`.kdtile`, cheap) or coarsened SPAC through pymetis
        (:mod:`.spac`, fewer replicated entries), §4.1.
    spac_levels : int
        Heavy-edge coarsening levels done in numpy before METIS bisects (SPAC
        only; refinement is skipped at these levels, Algorithm 4).
    seed : int
        Seed of SPAC's matching order and of METIS (K-D tiling uses no randomness).
    min_nnz : int
        Smallest number of nonzeros a bisection may leave in a child (>= 1).
    checked : bool
        The share comes from a validated :class:`~finepar.graph.Graph` (sorted rows,
        columns in range): its O(nnz) checks are skipped, the options' are not.
    symmetric : bool
        The share is a whole symmetric matrix (the grid tiling counts half as much).
    counter : finepar.throttle.kdcount.DeviceCounter, optional
        Where the grid tiling counts (on a device pair's GPU); None: on the host.

    Returns
    -------
    Partitioning

    Raises
    ------
    finepar.errors.UsageError
        If an argument is malformed or out of range, or `bisect` is ``"spac"``
        and pymetis is not installed; raised before any work.
    """
    if checked:
        indptr, indices = np.asarray(indptr, dtype=np.int64), np.asarray(indices)
    else:
        indptr, indices = check_share(indptr, indices, n)
    check_options(capacity, bisect, spac_levels, seed, min_nnz, BISECTIONS)
    t0 = time.perf_counter()
    if bisect == "kd" and indices.shape[0] >= kdgrid.GRID_MIN_NNZ:
        part = grid_partitioning(indptr, indices, int(n), int(capacity), int(min_nnz),
                                 symmetric=symmetric, counter=counter)
        if part is not None:
            return part
    split = _bisector(bisect, spac_levels, seed, min_nnz)
    work = _Work.from_csr(indptr, indices, int(n))
    nodes = _bisect_levels(work, int(capacity), int(min_nnz), split)
    part = _assemble(work, nodes)
    seconds = time.perf_counter() - t0
    return Partitioning(order=part["order"], seg_row=part["seg_row"], seg_ptr=part["seg_ptr"],
                        part_seg=part["part_seg"], tree=part["tree"], nnz=part["nnz"],
                        distinct_x=part["dx"], distinct_y=part["dy"], capacity=int(capacity),
                        method=bisect, seconds=seconds, min_nnz=int(min_nnz),
                        n_rows=int(indptr.shape[0]) - 1, n_cols=int(n),
                        extra={"seed": int(seed), "spac_levels": int(spac_levels)} if bisect == "spac"
                        else {})


def grid_partitioning(indptr, indices, n: int, capacity: int, min_nnz: int = 1, *,
                      symmetric: bool = False, drop: np.ndarray | None = None,
                      counter=None):
    """:class:`Partitioning` by the grid K-D tiling (:func:`.kdgrid.grid_tiling`), or None
    where the grid cannot resolve ``capacity``; with ``drop`` (bool, one per row), of the
    share without those rows (rows and positions renumbered to it) cut with the tree of
    every row; ``counter`` as :func:`dbwp`'s."""
    t0 = time.perf_counter()
    g = kdgrid.grid_tiling(indptr, indices, n, capacity, min_nnz, symmetric, drop, counter)
    if g is None:
        return None
    k = int(indptr.shape[0]) - 1 - (int(np.count_nonzero(drop)) if drop is not None else 0)
    return Partitioning(
        order=None, seg_start=g["seg_start"], seg_row=g["seg_row"], seg_ptr=g["seg_ptr"],
        part_seg=g["part_seg"],
        tree=SJTree(**{key: g["tree"][key] for key in ("left", "right", "lo", "hi", "depth")}),
        nnz=g["nnz"], distinct_x=g["dx"], distinct_y=g["dy"], capacity=int(capacity),
        method="kd", seconds=time.perf_counter() - t0, min_nnz=int(min_nnz), n_rows=k,
        n_cols=int(n), extra={"grid": g["grid"], "stage_seconds": g["stage_seconds"],
                              **({"rows_dropped": int(np.count_nonzero(drop))}
                                 if drop is not None else {})})


def _bisector(bisect: str, spac_levels: int, seed: int, min_nnz: int):
    """The split function of one tree level, ``f(work, starts, lengths, depth, mask)
    -> (nleft, done)``: it sets `mask` on the nonzero positions that go left and
    returns the left children's sizes and the order (``"row"``, ``"col"``) that its
    split already left partitioned, or None."""
    if bisect == "kd":
        return lambda work, starts, lengths, depth, mask: kd_split(
            work.by_row, work.by_col, starts, lengths, depth, mask)
    metis = require_pymetis()
    return lambda work, starts, lengths, depth, mask: spac_split(
        work.by_row, work.by_col, work.rows, work.cols, starts, lengths, depth, mask,
        levels=spac_levels, seed=seed, min_nnz=min_nnz, metis=metis)


@dataclass(eq=False)
class _Work:
    """The tuple list being cut: each nonzero position's row and column, and the
    row-major and column-major position orders that the splits partition."""

    rows: np.ndarray    # local row of each position
    cols: np.ndarray    # column of each position
    by_row: np.ndarray  # positions, row-major within each node's range (int32 below 2**31 nnz)
    by_col: np.ndarray  # positions, column-major within each node's range

    @property
    def nnz(self) -> int:
        return int(self.cols.shape[0])

    @classmethod
    def from_csr(cls, indptr: np.ndarray, indices: np.ndarray, n: int) -> "_Work":
        import scipy.sparse as sp
        k, nnz = indptr.shape[0] - 1, indices.shape[0]
        itype = np.int32 if max(k, nnz) < 2**31 else np.int64
        rows = np.repeat(np.arange(k, dtype=itype), np.diff(indptr))
        positions = np.arange(nnz, dtype=itype)
        # Column-major order by scipy's O(nnz + n) CSR -> CSC conversion of the positions.
        csr = sp.csr_matrix((positions, indices, indptr), shape=(k, n))
        by_col = np.ascontiguousarray(csr.tocsc().data, dtype=itype)
        return cls(rows=rows, cols=indices, by_row=positions, by_col=by_col)


@dataclass(eq=False)
class _Nodes:
    """Tree nodes in creation (level) order: ranges in the position orders, depth,
    children and working sets."""

    start: np.ndarray
    length: np.ndarray
    depth: np.ndarray
    left: np.ndarray
    right: np.ndarray
    dx: np.ndarray
    dy: np.ndarray


def _bisect_levels(work: _Work, capacity: int, min_nnz: int, split) -> _Nodes:
    """Algorithm 1, breadth first: split every node of a level that is over
    capacity and splittable, all at once; return every node created."""
    nnz = work.nnz
    level = {"start": np.array([0], np.int64), "length": np.array([nnz], np.int64),
             "dx": np.array([_count_runs(work.cols[work.by_col])]),
             "dy": np.array([_count_runs(work.rows)]), "id": np.array([0], np.int64)}
    levels, parents, lefts = [level], [], []
    depth, next_id = 0, 1
    while True:
        pend = (level["dx"] + level["dy"] > capacity) & (level["length"] >= 2 * min_nnz)
        if not pend.any():
            break
        lay = _Layout(level["start"][pend], level["length"][pend], nnz)
        mask = np.zeros(nnz, dtype=bool)
        nleft, done = split(work, lay.starts, lay.lengths, depth, mask)
        for name in ("row", "col"):
            if name != done:
                _stable_partition(getattr(work, "by_" + name), lay, nleft, mask)
        ids = next_id + np.arange(2 * lay.count, dtype=np.int64)
        parents.append(level["id"][pend])
        lefts.append(ids[0::2])
        dx, dy = _distinct_children(work, lay, nleft)
        level = {"start": np.column_stack([lay.starts, lay.starts + nleft]).ravel(),
                 "length": np.column_stack([nleft, lay.lengths - nleft]).ravel(),
                 "dx": dx, "dy": dy, "id": ids}
        levels.append(level)
        next_id += 2 * lay.count
        depth += 1
    return _collect(levels, parents, lefts, next_id)


def _count_runs(values: np.ndarray) -> int:
    """Number of runs of equal values (= distinct values of a sorted array)."""
    return int(values.shape[0] > 0) + int(np.count_nonzero(values[1:] != values[:-1]))


def _collect(levels, parents, lefts, count) -> _Nodes:
    cat = {key: np.concatenate([lv[key] for lv in levels]) for key in ("start", "length", "dx", "dy")}
    depth = np.concatenate([np.full(lv["id"].shape[0], d, np.int64) for d, lv in enumerate(levels)])
    left = np.full(count, -1, np.int64)
    right = np.full(count, -1, np.int64)
    if parents:
        p, lt = np.concatenate(parents), np.concatenate(lefts)
        left[p], right[p] = lt, lt + 1
    return _Nodes(start=cat["start"], length=cat["length"], depth=depth, left=left, right=right,
                  dx=cat["dx"], dy=cat["dy"])


class _Layout:
    """The nodes split at one level: their ranges in the orders, where each
    begins in the concatenation of those ranges, and (unless the ranges cover
    every position) the concatenated positions ``idx``."""

    def __init__(self, starts: np.ndarray, lengths: np.ndarray, nnz: int):
        self.starts, self.lengths = starts, lengths
        self.count = starts.shape[0]
        self.offsets = np.cumsum(lengths) - lengths
        self.whole = int(lengths.sum()) == nnz  # the ranges are disjoint: they cover everything
        self.idx = None if self.whole else segment_ranges(starts, lengths)

    def take(self, order: np.ndarray) -> np.ndarray:
        """``order`` restricted to the ranges, concatenated (a copy)."""
        return order.copy() if self.whole else order[self.idx]


def _stable_partition(order: np.ndarray, lay: _Layout, nleft: np.ndarray, mask: np.ndarray) -> None:
    """Stable partition of each node's range of `order`: the nonzeros with
    ``mask`` set first (``nleft[s]`` of them), each side keeping its order."""
    sub = lay.take(order)
    goes_left = mask[sub]
    order[segment_ranges(lay.starts, nleft)] = sub[goes_left]
    order[segment_ranges(lay.starts + nleft, lay.lengths - nleft)] = sub[~goes_left]


def _distinct_children(work: _Work, lay: _Layout, nleft: np.ndarray):
    """Distinct columns and rows of the two (non-empty) children of each split
    node, interleaved (left, right); each int64, shape (2 m,)."""
    bounds = np.column_stack([lay.offsets, lay.offsets + nleft]).ravel()
    out = []
    for order, values in ((work.by_col, work.cols), (work.by_row, work.rows)):
        v = values[lay.take(order)]
        new = np.empty(v.shape[0], dtype=bool)
        np.not_equal(v[1:], v[:-1], out=new[1:])
        new[bounds] = True
        out.append(np.add.reduceat(new, bounds, dtype=np.int64))
    return out[0], out[1]


def _assemble(work: _Work, nodes: _Nodes) -> dict:
    """The tree in pre-order numbering with partition ranges, and the segments."""
    tree, leaves = _preorder_tree(nodes)
    order = work.by_row
    nnz = order.shape[0]
    part_ptr = np.append(nodes.start[leaves], nnz)
    r = work.rows[order]
    new = np.ones(nnz, dtype=bool)
    new[1:] = r[1:] != r[:-1]
    new[part_ptr[:-1][part_ptr[:-1] < nnz]] = True  # a partition starts a segment
    seg_start = np.flatnonzero(new)
    return {"tree": tree, "order": order.astype(np.int64), "seg_row": r[seg_start].astype(np.int32),
            "seg_ptr": np.append(seg_start, nnz).astype(np.int64),
            "part_seg": np.searchsorted(seg_start, part_ptr).astype(np.int64),
            "nnz": nodes.length[leaves].copy(), "dx": nodes.dx[leaves].copy(),
            "dy": nodes.dy[leaves].copy()}


def _preorder_tree(nodes: _Nodes) -> tuple[SJTree, np.ndarray]:
    """Renumber the level-order nodes in pre-order; return the tree and the
    level-order ids of the leaves, left to right."""
    count = nodes.start.shape[0]
    left, right, depth = nodes.left, nodes.right, nodes.depth
    blocks = np.searchsorted(depth, np.arange(depth.max() + 2))  # level d: ids blocks[d]:blocks[d+1]
    internal = [np.arange(blocks[d], blocks[d + 1])[left[blocks[d]:blocks[d + 1]] >= 0]
                for d in range(len(blocks) - 1)]
    size = np.ones(count, np.int64)
    for ids in reversed(internal):
        size[ids] += size[left[ids]] + size[right[ids]]
    pre = np.zeros(count, np.int64)
    for ids in internal:
        pre[left[ids]] = pre[ids] + 1
        pre[right[ids]] = pre[ids] + 1 + size[left[ids]]
    leaves = np.flatnonzero(left < 0)
    leaves = leaves[np.argsort(nodes.start[leaves], kind="stable")]
    lo = np.searchsorted(nodes.start[leaves], nodes.start)  # leaves start strictly left of a node
    hi = lo + (size + 1) // 2  # a full binary tree of `size` nodes has (size + 1) / 2 leaves
    old = np.empty(count, np.int64)
    old[pre] = np.arange(count)

    def renumber(child):
        c = child[old]
        return np.where(c < 0, -1, pre[np.maximum(c, 0)]).astype(np.int32)

    tree = SJTree(left=renumber(left), right=renumber(right), lo=lo[old].astype(np.int32),
                  hi=hi[old].astype(np.int32), depth=depth[old].astype(np.int32))
    return tree, leaves
