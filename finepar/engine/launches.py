"""Launches, and the one lowering step from a device's share to its launches.

A share (the rows a plan gives one device) becomes a **segment table**: every
segment is a run of one row's stored entries (a whole row, or part of a row
when a long row is cut for load balance or a throttling partition splits it),
plus the launches that cover it (DESIGN.md §2, "engine"). A segment that is a
whole row runs the app's epilogue in place (the FUSED path); a segment that is
part of a row writes its partial result to an accumulator slot, and the row's
last segment to finish folds its slots and runs its epilogue once, in the same
launches (no launch of its own).

Lowerings (each a function of this module, pure numpy, no device):

* :func:`lower_groups`: §4.1's length groups (or one group): a launch per
  group with its thread mapping (a work-item, a team or a work-group per row);
  segments are whole rows, indexed through the whole CSR or a compacted copy.
* :func:`lower_adaptive`: CSR-adaptive row blocks (after clSPARSE's
  ``csrmv_adaptive``): rows longer than ``split`` are cut into segments; short
  segments are packed into blocks whose entries fit local memory; one launch.
* :func:`lower_partitioned`: a throttled share (:mod:`finepar.throttle`): the
  segments in partition order, blocks never crossing a partition, and the
  launches a schedule asks for (one per cache-fit partition, one per merged
  node, or one queue launch).

:class:`Signature` names every kernel argument once, in the order of the
OpenCL source; a :class:`Launch` binds arguments by name.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph import Graph, RowEntries, row_positions
from ..parallel import chunked, copy_spans, cumsum_into
from .binding import UNSET, opencl, set_arg

# ----------------------------------------------------------------------------- arguments


@dataclass(frozen=True)
class Arg:
    """One kernel argument: its name and how a value is passed.

    Attributes
    ----------
    name : str
    kind : {'int', 'float', 'buffer'}
        Scalars are converted to ``numpy.int32`` / ``numpy.float32``.
    """

    name: str
    kind: str


@dataclass(frozen=True)
class Signature:
    """A kernel's arguments, in the order of its OpenCL source (named once, here).

    Attributes
    ----------
    kernel : str
        Kernel function name.
    args : tuple of Arg
    dropped : frozenset of str
        Arguments of the kernel's full list that this program leaves out (an option it
        was built without): binding one is a no-op.
    """

    kernel: str
    args: tuple
    dropped: frozenset = frozenset()

    def index(self, name: str) -> int:
        """The position of argument ``name`` (a dict lookup: binds look it up a few dozen
        times a step)."""
        try:
            return self._positions[name]
        except KeyError:
            raise KeyError(f"kernel {self.kernel} has no argument {name!r}") from None

    @functools.cached_property
    def _positions(self) -> dict:
        return {a.name: i for i, a in enumerate(self.args)}

    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args)


def _sig(kernel: str, spec: str) -> Signature:
    """``"nseg:int base:int seg_row ..."`` -> Signature (no kind: a buffer)."""
    args = []
    for word in spec.split():
        name, _, kind = word.partition(":")
        args.append(Arg(name, kind or "buffer"))
    return Signature(kernel, tuple(args))


#: ``rowop`` in opencl/skeleton/rowop.cl (ROWOP_ARGS).
ROWOP = _sig("rowop", "nseg:int base:int seg_row seg_ptr indices data x y s0 s1 s2 aux fscal "
                      "ia:int partials part_offset:int seg_slot seg_acc slot_row slot_ptr "
                      "slot_done blk_ptr stop queue sums_out sums_slot:int n_part:int "
                      "sums_done")
#: The arguments of ``rowop`` a program leaves out without an option: ``(the option's
#: test on its -D defines, names)``, as ``ROWOP_ARGS`` in opencl/skeleton/rowop.cl.
ROWOP_OPTIONAL = (
    (lambda d: d.get("HAS_SLOTS"), ("seg_slot", "seg_acc", "slot_row", "slot_ptr", "slot_done")),
    (lambda d: d.get("MAPPING") in (3, 5), ("blk_ptr",)),
    (lambda d: d.get("QUEUE") or d.get("MAPPING") == 5, ("queue",)),
    (lambda d: d.get("FOLD_SUMS"), ("sums_out", "sums_slot", "n_part", "sums_done")),
)


@functools.lru_cache(maxsize=None)
def _rowop_without(dropped: frozenset) -> Signature:
    return Signature("rowop", tuple(a for a in ROWOP.args if a.name not in dropped), dropped)


def rowop_signature(defines: dict) -> Signature:
    """``rowop``'s arguments in a program built with ``defines``: :data:`ROWOP` less those
    of the options it is built without (:data:`ROWOP_OPTIONAL`; NVIDIA's enqueue costs
    about 0.25 us a bound argument, 2026-11-29); all of them with ``ALL_ARGS``."""
    dropped = frozenset(n for test, names in ROWOP_OPTIONAL
                        if not (test(defines) or defines.get("ALL_ARGS")) for n in names)
    return _rowop_without(dropped)


#: Build ``rowop`` with only the arguments its options use (False: every argument, the
#: form before 2026-11-29; for probes: ``ALL_ARGS``).
TRIM_ARGS = True

#: ``reduce_partials`` in opencl/skeleton/rowop.cl.
REDUCE = _sig("reduce_partials", "n:int partials out slot:int fscal stop")
#: ``reduce_stage`` in opencl/skeleton/rowop.cl.
REDUCE_STAGE = _sig("reduce_stage", "n:int partials tmp")
#: The arguments a step sets (the rest are bound once when a launch is made).
STEP_ARGS = ("x", "y", "s0", "s1", "s2", "aux", "ia")

_SCALAR = {"int": np.int32, "float": np.float32}
#: CSR-adaptive cuts a row longer than this many blocks of ``block_nnz`` into segments
#: (:func:`lower_adaptive`'s default split).
ADAPTIVE_SPLIT_BLOCKS = 8
class Launch:
    """One kernel launch on one device: a kernel object with its arguments bound by name.

    Arguments keep their values between enqueues; :meth:`bind` sets only those
    that changed (buffers compared by identity, scalars by value), since setting
    every argument of every launch costs the host tens of microseconds a step.

    Parameters
    ----------
    signature : Signature
    kernel : pyopencl.Kernel
        Built from the program of this launch's options; one object per launch.
    global_size, local_size : int
        Work-items in all and per work-group.
    label : str
        For reports, e.g. ``gpu stream blocks 0..812``.
    nnz : int
        Stored entries the launch covers.
    """

    def __init__(self, signature: Signature, kernel: Any, global_size: int, local_size: int,
                 label: str = "", nnz: int = 0):
        self.signature = signature
        self.kernel = kernel
        self.global_size = int(global_size)
        self.local_size = int(local_size)
        self.label = label
        self.nnz = int(nnz)
        self._values: dict[str, Any] = {}
        self._given: dict[str, Any] = {}  # the object each argument was last given as

    def bind(self, **values: Any) -> "Launch":
        """Set arguments by name (only those that changed)."""
        given = self._given
        for name, v in values.items():
            if given.get(name, UNSET) is v:  # the same buffer, or the same scalar object
                continue
            if name in self.signature.dropped:  # the program was built without it
                given[name] = v
                continue
            i = self.signature.index(name)
            kind = self.signature.args[i].kind
            value = _SCALAR[kind](v) if kind in _SCALAR else v
            old = self._values.get(name, UNSET)
            if old is UNSET or (old != value if kind in _SCALAR else old is not value):
                set_arg(self.kernel, i, value)
                self._values[name] = value
            given[name] = v  # only once the kernel holds it
        return self

    def missing(self) -> list[str]:
        """Arguments never bound (a launch with any of these cannot run)."""
        return [a.name for a in self.signature.args if a.name not in self._values]

    def enqueue(self, queue, wait_for=None):
        """Enqueue on ``queue``; returns the event."""
        return opencl().enqueue_nd_range_kernel(queue, self.kernel, (self.global_size,),
                                                (self.local_size,), wait_for=wait_for)


@dataclass(frozen=True)
class RowOp:
    """A semiring row operation: which app fragment specialises the skeleton, and how.

    Attributes
    ----------
    name : str
        For reports and kernel memo keys (``spmv``, ``pagerank``, ...).
    fragment : str
        The app's OpenCL fragment (``app_spmv.cl``), concatenated before ``rowop.cl``.
    acc_dtype : numpy.dtype
        The semiring's accumulator (``float32`` or ``int32``); accumulator slots
        and partial-sum slots are of this type.
    part_dtype : numpy.dtype or None
        The type of the step's two sums (None: the app has none).
    has_data : bool
        The matrix's values enter the terms (SpMV, SSSP); else the pattern alone.
    ones_when_pattern : bool
        Built without values (``HAS_DATA=0``) the fragment's term is what the values'
        ones would give (SpMV's ``x[col]`` for ``1 * x[col]``): a pattern matrix's values
        are then neither uploaded nor read.
    defines : tuple of (str, value)
        Further ``-D`` options of the fragment (e.g. ``("PERSONALIZED", True)``).
    writes : tuple of str
        The vector arguments (``y``, ``s0``, ``s1``) a step writes, row by row
        (what an engine that moves whole row ranges must copy).
    column_writes : tuple of str
        Of those, the arguments the fragment writes at each row's column number on a
        device whose columns are renumbered (:mod:`finepar.engine.columns`; PageRank's
        next contribution vector, the ``x`` of the next step).
    empty_rows_idle : bool
        A row without entries does nothing (BFS's bottom-up step: no in-neighbour can
        be on the frontier): a launch whose segments hold no entries is not made, so a
        graph's isolated vertices (7.9 M of Graph500 scale 24's 16.8 M) cost no launch.
    max_lanes : int, optional
        A team of at most this many work-items a row, a power of two >= 2 (default: the
        share's lanes, up to the device's), rows of a work-group each too: for a scan that
        stops at a row's first hit, where most rows hit within a few entries and wider
        teams idle. Raises ValueError otherwise.
    fold_sums : bool
        A step's two sums in one pass up to ``memory.REDUCE_ONE_PASS`` work-groups, and
        with the shuffles' code folded by the step's last work-group, no launch of their own
        (``FOLD_SUMS``): PageRank's and RWR's, whose mid-size iterations the host's enqueues
        bound (on one H200 cnr-2000's went from 0.122 to 0.057 ms,
        ``benchmarks/runs/h200-2026-11-29n``); the other apps keep a reduce launch.
    """

    name: str
    fragment: str
    acc_dtype: np.dtype = np.dtype(np.float32)
    part_dtype: np.dtype | None = None
    has_data: bool = False
    defines: tuple = ()
    writes: tuple = ("y",)
    ones_when_pattern: bool = False
    column_writes: tuple = ()
    empty_rows_idle: bool = False
    max_lanes: int | None = None
    fold_sums: bool = False

    def __post_init__(self):
        m = self.max_lanes
        if m is not None and (m < 2 or m & (m - 1)):  # the team kernel masks lanes by TEAM-1
            raise ValueError(f"RowOp {self.name}: max_lanes must be a power of two >= 2, "
                             f"not {m}")

    def options(self) -> dict:
        """The fragment's ``-D`` options as a dict."""
        return dict(self.defines)

    def reads_values(self, matrix: Graph) -> bool:
        """Whether the op reads ``matrix``'s values (not a pattern's ones it need not)."""
        return self.has_data and not (matrix.pattern and self.ones_when_pattern)


# -------------------------------------------------------------------- host-side lowering

MAPPINGS = {"item": 0, "team": 1, "group": 2, "stream": 3, "ell": 4, "dynamic": 5}


@dataclass
class LaunchSpec:
    """A launch before it is bound to a device.

    Attributes
    ----------
    mapping : {'item', 'team', 'group', 'stream'}
    lo, hi : int
        Segments ``lo .. hi-1`` (``stream``: blocks ``lo .. hi-1``).
    lanes : int or None
        Team size of the ``team`` mapping (None: the device's default).
    nnz : int
        Stored entries covered.
    queue : bool
        ``stream`` blocks taken from a device-side queue (an atomic counter) in
        order, by persistent work-groups (CF-Q / SJ-Q, throttling Algorithm 2),
        instead of one work-group per block.
    label : str
    wg : int or None
        ``stream``: the work-group size its blocks were packed for (at most ``wg``
        segments a block; :meth:`~finepar.device.LaunchConfig.stream_wg`); None: the
        device's ``wg_stream``.
    """

    mapping: str
    lo: int
    hi: int
    lanes: int | None = None
    nnz: int = 0
    queue: bool = False
    label: str = ""
    wg: int | None = None


@dataclass
class ShareLowering:
    """One device's share as segments and launch specs (the input of a device store).

    Attributes
    ----------
    role : {'cpu', 'gpu'}
    rows : ndarray of int32, shape (R,)
        The share's rows (global ids) in segment order of their first segment.
    compact : bool
        True: the share has its own arrays, ``indices[entries]`` in segment
        order, indexed by ``seg_ptr`` per segment. False: segments are whole
        rows of the whole CSR, indexed by its ``indptr`` at the segment's row.
    seg_row : ndarray of int32, shape (S,)
        Global row of each segment.
    seg_ptr : ndarray of int64, shape (S+1,) or None
        Compact only: segment ``s`` holds compact entries ``seg_ptr[s] ..
        seg_ptr[s+1]``.
    entries : RowEntries or None
        Compact only: the position in the matrix's ``indices`` / ``data`` of each
        compact entry (runs of consecutive positions: slices, not gathers, where the
        share's rows are consecutive).
    seg_slot : ndarray of int32, shape (S,) or None
        Accumulator slot of each segment (-1: a whole row, epilogue in place);
        None when no row is cut.
    apply_rows : ndarray of int32, shape (A,)
        Rows that were cut; each one's last segment to finish folds its slots and
        runs its epilogue (the APPLY phase, inside the launches).
    slot_ptr : ndarray of int32, shape (A+1,)
        Row ``apply_rows[j]`` owns slots ``slot_ptr[j] .. slot_ptr[j+1]``.
    blk_ptr : ndarray of int32, shape (B+1,) or None
        ``stream`` launches: block ``b`` holds segments ``blk_ptr[b] .. blk_ptr[b+1]``.
    launches : list of LaunchSpec
        In enqueue order.
    nnz : int
    grouping : str
        The lowering that made this (``none``, ``pow4``, ``adaptive``, ``throttled``).
    partitions : object or None
        The :class:`finepar.throttle.Partitioning` of a throttled share.
    ell : (ndarray, ndarray or None) or None
        An ELL share's column-major padded ``indices`` (int32, -1 past a row's
        end) and ``data``, shape (width * rows,).
    """

    role: str
    rows: np.ndarray
    compact: bool
    seg_row: np.ndarray
    seg_ptr: np.ndarray | None = None
    entries: np.ndarray | None = None
    seg_slot: np.ndarray | None = None
    apply_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    slot_ptr: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int32))
    blk_ptr: np.ndarray | None = None
    launches: list = field(default_factory=list)
    nnz: int = 0
    grouping: str = "none"
    partitions: Any = None
    ell: tuple | None = None

    @property
    def n_segments(self) -> int:
        return int(self.seg_row.size)

    @property
    def n_slots(self) -> int:
        return int(self.slot_ptr[-1]) if self.slot_ptr.size else 0

    @property
    def offset_dtype(self) -> np.dtype:
        """int64 once the share's offsets pass the int32 limit, else int32."""
        top = int(self.seg_ptr[-1]) if self.seg_ptr is not None and self.seg_ptr.size else 0
        return np.dtype(np.int64) if top > np.iinfo(np.int32).max else np.dtype(np.int32)

    _ARRAYS = ("rows", "seg_row", "seg_ptr", "seg_slot", "apply_rows", "slot_ptr", "blk_ptr")

    def to_arrays(self) -> tuple[dict, dict] | None:
        """``(arrays, scalars)`` that :meth:`from_arrays` rebuilds the lowering from (the
        prepared-graph cache); None for an ELL share (its padded slots are not kept)."""
        if self.ell is not None:
            return None
        arrays = {k: getattr(self, k) for k in self._ARRAYS if getattr(self, k) is not None}
        if self.entries is not None:
            arrays["entries_starts"], arrays["entries_ptr"] = self.entries.starts, self.entries.ptr
        return arrays, {"role": self.role, "compact": self.compact, "nnz": self.nnz,
                        "grouping": self.grouping,
                        "launches": [dict(vars(spec)) for spec in self.launches]}

    @classmethod
    def from_arrays(cls, arrays: dict, scalars: dict, partitions=None) -> "ShareLowering":
        """The lowering :meth:`to_arrays` described (``partitions``: the throttled share's)."""
        entries = (RowEntries(arrays["entries_starts"], arrays["entries_ptr"])
                   if "entries_starts" in arrays else None)
        return cls(role=scalars["role"], compact=scalars["compact"], nnz=scalars["nnz"],
                   grouping=scalars["grouping"], entries=entries, partitions=partitions,
                   launches=[LaunchSpec(**spec) for spec in scalars["launches"]],
                   **{k: arrays[k] for k in cls._ARRAYS if k in arrays})

    def describe(self) -> dict:
        """Counts for reports: segments, cut rows, blocks, launches by mapping."""
        by: dict[str, int] = {}
        for spec in self.launches:
            by[spec.mapping] = by.get(spec.mapping, 0) + 1
        out = {"grouping": self.grouping, "rows": int(self.rows.size), "nnz": self.nnz,
               "segments": self.n_segments, "cut_rows": int(self.apply_rows.size),
               "blocks": int(self.blk_ptr.size - 1) if self.blk_ptr is not None else 0,
               "launches": len(self.launches),
               "by_mapping": by}
        if self.partitions is not None:
            out["partitions"] = self.partitions.describe()
        return out


def lower_groups(matrix: Graph, role: str, groups: list, *, compact: bool) -> ShareLowering:
    """Segments and launches of §4.1's length groups (FinePar TKDE §4.1), every row whole,
    in group order: one launch per run of adjacent groups with the same mapping and lanes
    (their rows run alike, and each launch costs the host a bind and an enqueue and the
    device a tail: Graph500 scale 24's eleven groups make five launches), a group without
    entries on its own (an op may skip it: :attr:`RowOp.empty_rows_idle`).

    Parameters
    ----------
    matrix : Graph
    role : {'cpu', 'gpu'}
    groups : list of finepar.partition.Group
        Each with ``rows``, ``mapping`` ('item', 'team', 'group') and ``lanes``.
    compact : bool
        Copy the share's entries into arrays of its own (split memory) instead
        of indexing the whole CSR.

    Returns
    -------
    ShareLowering
    """
    rows = (np.concatenate([np.asarray(g.rows, dtype=np.int32) for g in groups])
            if groups else np.zeros(0, np.int32))
    launches, lo, first = [], 0, None
    for g in groups:
        n, prev = len(g), launches[-1] if launches else None
        if (prev is not None and prev.mapping == g.mapping and prev.lanes == g.lanes
                and prev.nnz and g.nnz):
            launches[-1] = LaunchSpec(g.mapping, prev.lo, lo + n, lanes=g.lanes,
                                      nnz=prev.nnz + int(g.nnz),
                                      label=f"{role} {g.mapping} rows, length {first}..{g.hi}")
        else:
            first = g.lo
            launches.append(LaunchSpec(g.mapping, lo, lo + n, lanes=g.lanes, nnz=int(g.nnz),
                                       label=f"{role} {g.mapping} rows, length {g.lo}..{g.hi}"))
        lo += n
    low = ShareLowering(role=role, rows=rows, compact=compact, seg_row=rows, launches=launches,
                        grouping="pow4" if len(groups) > 1 else "none")
    if compact:
        lengths = matrix.lengths_of(rows)
        low.seg_ptr = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=low.seg_ptr[1:])
        low.entries = RowEntries.of_rows(matrix.indptr, rows)
    low.nnz = int(sum(int(g.nnz) for g in groups))
    return low


def cut_rows(rows: np.ndarray, lengths: np.ndarray, split: int):
    """Cut every row longer than ``split`` entries into segments of at most ``split``.

    Parameters
    ----------
    rows : ndarray of int, shape (R,)
        Global rows, in the order their segments should follow.
    lengths : ndarray of int, shape (R,)
        Stored entries of each row.
    split : int
        Longest segment (>= 1).

    Returns
    -------
    seg_row : ndarray of int32, shape (S,)
    seg_len : ndarray of int64, shape (S,)
    seg_slot : ndarray of int32, shape (S,) or None
        -1 for a whole row; slots numbered in segment order (a cut row's slots
        are consecutive); None when no row is cut.
    apply_rows : ndarray of int32, shape (A,)
    slot_ptr : ndarray of int32, shape (A+1,)
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int32)
    cut = np.concatenate([np.zeros(0, dtype=np.int64)] + chunked(
        lambda lo, hi: np.flatnonzero(lengths[lo:hi] > split) + lo, lengths.size))
    if not cut.size:
        return rows, lengths, None, np.zeros(0, np.int32), np.zeros(1, np.int32)
    pieces = -(-lengths[cut] // split)  # segments of each cut row
    extra = np.concatenate(([0], np.cumsum(pieces - 1)))  # segments added before each
    first_seg = cut + extra[:-1]  # a cut row's first segment
    size = rows.size + int(extra[-1])
    seg_row = np.empty(size, dtype=np.int32)
    seg_len = np.empty(size, dtype=np.int64)
    # every stretch of rows up to and with a cut row moves back by the segments before it
    src = np.concatenate(([0], cut + 1, [rows.size]))
    copy_spans([(dst[a + sh:b + sh], whole[a:b]) for a, b, sh in zip(src[:-1], src[1:], extra)
                for dst, whole in ((seg_row, rows), (seg_len, lengths)) if b > a])
    idx = _ranges(first_seg, pieces)  # the cut rows' segments
    within = idx - np.repeat(first_seg, pieces)
    seg_row[idx] = np.repeat(rows[cut], pieces)
    seg_len[idx] = np.minimum(np.repeat(lengths[cut], pieces) - within * split, split)
    seg_slot = np.full(size, -1, dtype=np.int32)
    seg_slot[idx] = np.arange(idx.size, dtype=np.int32)
    slot_ptr = np.zeros(cut.size + 1, dtype=np.int32)
    np.cumsum(pieces, out=slot_ptr[1:])
    return seg_row, seg_len, seg_slot, rows[cut], slot_ptr


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(starts[i], starts[i] + lengths[i])`` (int64)."""
    offset = np.cumsum(lengths) - lengths
    return np.repeat(starts - offset, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


def pack_blocks(seg_len: np.ndarray, block_nnz: int, max_segments: int,
                bounds: np.ndarray | None = None) -> np.ndarray:
    """CSR-adaptive row blocks: consecutive segments whose entries fit ``block_nnz``.

    A segment longer than ``block_nnz // 2`` is a block of its own; shorter
    segments are grouped while their start offsets fall in one window of
    ``block_nnz // 2`` entries (so a block holds at most ``block_nnz``) and
    at most ``max_segments`` of them. No block crosses a position in ``bounds``.
    Vectorised: no loop over segments.

    Parameters
    ----------
    seg_len : ndarray of int, shape (S,)
    block_nnz : int
        Entries a work-group stages in local memory (even, >= 2).
    max_segments : int
        Segments per block at most (the work-group size).
    bounds : ndarray of int, optional
        Segment indices where a block must start (partition boundaries).

    Returns
    -------
    ndarray of int32, shape (B+1,)
        ``blk_ptr``: block ``b`` holds segments ``blk_ptr[b] .. blk_ptr[b+1]``.
    """
    seg_len = np.asarray(seg_len, dtype=np.int64)
    S = seg_len.size
    if S == 0:
        return np.zeros(1, dtype=np.int32)
    b = None if bounds is None else np.asarray(bounds, dtype=np.int64)
    half = max(1, block_nnz // 2)

    def piece(lo: int, hi: int) -> np.ndarray:
        inner = None if b is None else b[(b >= lo) & (b < hi)] - lo
        return _block_starts(seg_len[lo:hi], half, max_segments, inner) + lo
    starts = chunked(piece, S, PACK_SEGMENTS)  # no block crosses a piece of the list
    return np.concatenate(starts + [np.array([S])]).astype(np.int32)


#: Segments packed into blocks by one thread (a block starts where each such piece does).
PACK_SEGMENTS = 1 << 20


def _block_starts(seg_len: np.ndarray, half: int, max_segments: int,
                  bounds: np.ndarray | None) -> np.ndarray:
    """The segments of one piece that start a block (see :func:`pack_blocks`)."""
    S = seg_len.size
    big = seg_len > half
    start = big.copy()  # a block starts at every big segment ...
    start[1:] |= big[:-1]  # ... and right after one
    start[0] = True
    if bounds is not None:
        start[bounds] = True
    # windows of `half` entries, counted from each run's start
    run = np.cumsum(start) - 1
    before = np.cumsum(seg_len) - seg_len
    run_first = np.flatnonzero(start)
    window = (before - before[run_first][run]) // half
    start[1:] |= window[1:] != window[:-1]
    # at most max_segments per block
    grp = np.cumsum(start) - 1
    grp_first = np.flatnonzero(start)
    idx = np.arange(S) - grp_first[grp]
    start |= (idx % max_segments) == 0
    return np.flatnonzero(start)


def lower_adaptive(matrix: Graph, role: str, rows: np.ndarray, *, block_nnz: int,
                   max_segments: int, split: int | None = None) -> ShareLowering:
    """CSR-adaptive lowering: one ``stream`` launch over row blocks of a compacted share.

    Rows longer than ``split`` (default ``8 * block_nnz``) are cut into segments
    (accumulator slots, folded by each row's last segment), so no work-group takes more
    than ``split`` entries; the rest keep the row order of ``rows``, so reads of
    the share's arrays and writes of ``y`` stay coalesced.

    Parameters
    ----------
    matrix : Graph
    role : {'cpu', 'gpu'}
    rows : ndarray of int
        The share's rows, ascending.
    block_nnz : int
        Local-memory entries per work-group (``-D BLOCK_NNZ``).
    max_segments : int
        The work-group size (the launch's :attr:`LaunchSpec.wg`).
    split : int, optional

    Returns
    -------
    ShareLowering
    """
    rows = np.asarray(rows, dtype=np.int32)
    split = int(split or ADAPTIVE_SPLIT_BLOCKS * block_nnz)
    lengths = matrix.lengths_of(rows)
    seg_row, seg_len, seg_slot, apply_rows, slot_ptr = cut_rows(rows, lengths, split)
    seg_ptr = np.zeros(seg_row.size + 1, dtype=np.int64)
    cumsum_into(seg_len, seg_ptr[1:])
    blk_ptr = pack_blocks(seg_len, block_nnz, max_segments)
    nnz = int(seg_ptr[-1])
    launches = [LaunchSpec("stream", 0, int(blk_ptr.size - 1), nnz=nnz, wg=int(max_segments),
                           label=f"{role} stream, {blk_ptr.size - 1} blocks")] if rows.size else []
    return ShareLowering(role=role, rows=rows, compact=True, seg_row=seg_row, seg_ptr=seg_ptr,
                         entries=RowEntries.of_rows(matrix.indptr, rows), seg_slot=seg_slot,
                         apply_rows=apply_rows, slot_ptr=slot_ptr, blk_ptr=blk_ptr,
                         launches=launches, nnz=nnz, grouping="adaptive")


def lower_partitioned(matrix: Graph, role: str, rows: np.ndarray, part, *, block_nnz: int,
                      max_segments: int, cover: list | None = None,
                      queue: bool = False) -> ShareLowering:
    """Lower a throttled share (throttling-atc18 §3): segments in cache-fit partition
    order, ``stream`` blocks that never cross a partition, and one launch per node of
    ``cover`` (a list of SJ-tree nodes whose partition ranges tile all partitions;
    default: every leaf, the CF schedule), each taking its blocks from a device-side
    queue when ``queue`` (CF-Q, SJ-Q).

    Parameters
    ----------
    matrix : Graph
    role : {'cpu', 'gpu'}
    rows : ndarray of int32, shape (k,)
        The share's rows (global ids, ascending): local row ``i`` of ``part`` is
        ``rows[i]``.
    part : finepar.throttle.Partitioning
        Of the share's compact CSR (rows ``rows`` in order).
    block_nnz, max_segments : int
        As :func:`lower_adaptive`.
    cover : list of int, optional
        SJ-tree nodes to launch, in order.
    queue : bool

    Returns
    -------
    ShareLowering
    """
    rows = np.asarray(rows, dtype=np.int32)
    entries = _partition_entries(matrix, rows, part)
    per_row = np.bincount(part.seg_row, minlength=rows.size)
    # rows without entries are in no partition, but their epilogue must run (PageRank's
    # base term, SpMV's zero): empty segments after the last partition
    empty = np.flatnonzero(per_row == 0)
    seg_row = np.concatenate((rows[part.seg_row], rows[empty]))
    seg_ptr = np.concatenate((part.seg_ptr, np.full(empty.size, part.seg_ptr[-1])))
    seg_len = np.diff(seg_ptr)
    S = seg_row.size
    # a row split across partitions accumulates; its slots must be contiguous per row
    split_row = per_row > 1
    seg_slot = None
    apply_rows, slot_ptr = np.zeros(0, np.int32), np.zeros(1, np.int32)
    if split_row.any():
        cut = np.concatenate((split_row[part.seg_row], np.zeros(empty.size, bool)))
        order = np.argsort(part.seg_row[cut[:part.seg_row.size]], kind="stable")  # by row
        seg_slot = np.full(S, -1, dtype=np.int32)
        cut_idx = np.flatnonzero(cut)
        seg_slot[cut_idx[order]] = np.arange(cut_idx.size, dtype=np.int32)
        apply_rows = rows[split_row]
        slot_ptr = np.zeros(apply_rows.size + 1, dtype=np.int32)
        np.cumsum(per_row[split_row], out=slot_ptr[1:])
    blk_ptr = pack_blocks(seg_len, block_nnz, max_segments, bounds=part.part_seg)
    low = ShareLowering(role=role, rows=rows, compact=True, seg_row=seg_row,
                        seg_ptr=seg_ptr.astype(np.int64), entries=entries,
                        seg_slot=seg_slot, apply_rows=apply_rows, slot_ptr=slot_ptr,
                        blk_ptr=blk_ptr, nnz=int(part.seg_ptr[-1]), grouping="throttled",
                        partitions=part)
    low.launches = cover_launches(low, cover, queue=queue)
    return low


def _partition_entries(matrix: Graph, rows: np.ndarray, part) -> RowEntries:
    """The matrix positions of a partitioning's entries in partition order: runs from each
    segment's start (K-D segments are runs of their rows), or the explicit order (SPAC)."""
    if part.order is not None:
        share = RowEntries.of_rows(matrix.indptr, rows).positions()
        return RowEntries.of_positions(share[part.order])
    row_len = matrix.lengths_of(rows)
    share_start = np.cumsum(row_len) - row_len
    first = (np.asarray(matrix.indptr)[rows[part.seg_row]].astype(np.int64)
             + part.seg_start - share_start[part.seg_row])
    return RowEntries.of_runs(first, np.diff(part.seg_ptr))


def cover_launches(low: ShareLowering, cover: list | None, *, queue: bool = False) -> list:
    """The launches of a throttled lowering for a cover of its SJ-tree: one ``stream``
    launch per node (its partitions' blocks), in the order given; default every leaf
    (CF: one launch per cache-fit partition).

    Returns
    -------
    list of LaunchSpec
    """
    part = low.partitions
    tree = part.tree
    part_blk = np.searchsorted(low.blk_ptr, part.part_seg).astype(np.int64)
    nodes = list(cover) if cover is not None else [int(v) for v in tree.leaves()]
    launches = []
    for v in nodes:
        p0, p1 = int(tree.lo[v]), int(tree.hi[v])
        b0, b1 = int(part_blk[p0]), int(part_blk[p1])
        nnz = int(part.seg_ptr[part.part_seg[p1]] - part.seg_ptr[part.part_seg[p0]])
        launches.append(LaunchSpec("stream", b0, b1, nnz=nnz, queue=queue,
                                   label=f"{low.role} partitions {p0}..{p1 - 1} (node {v})"))
    tail = int(part_blk[-1]), int(low.blk_ptr.size - 1)  # the share's rows without entries
    if tail[1] > tail[0]:
        launches.append(LaunchSpec("stream", tail[0], tail[1], label=f"{low.role} empty rows"))
    return launches


def lower_chunks(matrix: Graph, role: str, bounds: np.ndarray, *,
                 device_counter: bool) -> ShareLowering:
    """The dynamic baseline's share: every row of the whole CSR, cut into chunks
    (chunk ``c``: rows ``bounds[c] .. bounds[c+1]``) that either device may take.

    Parameters
    ----------
    matrix : Graph
    role : {'cpu', 'gpu'}
    bounds : ndarray of int, shape (C+1,)
        Chunk boundaries (rows), 0 first and ``n`` last.
    device_counter : bool
        One persistent ``dynamic`` launch taking chunks from a counter shared by
        both devices (shared memory); else one ``item`` launch per chunk, which
        the host hands out.

    Returns
    -------
    ShareLowering
        Not compact; ``blk_ptr`` holds the chunk bounds.
    """
    rows = np.arange(matrix.n, dtype=np.int32)
    bounds = np.asarray(bounds, dtype=np.int64)
    nnz_at = np.asarray(matrix.indptr)[bounds].astype(np.int64)
    if device_counter:
        launches = [LaunchSpec("dynamic", 0, int(bounds.size - 1), nnz=int(matrix.nnz),
                               label=f"{role} dynamic chunks from the "
                                     f"{'back' if role == 'cpu' else 'front'}")]
    else:
        launches = [LaunchSpec("item", int(a), int(b), nnz=int(nb - na), label=f"{role} chunk {c}")
                    for c, (a, b, na, nb) in enumerate(zip(bounds[:-1], bounds[1:],
                                                           nnz_at[:-1], nnz_at[1:]))]
    return ShareLowering(role=role, rows=rows, compact=False, seg_row=rows,
                         blk_ptr=bounds.astype(np.int32), launches=launches,
                         nnz=int(matrix.nnz), grouping="dynamic")


#: ELL pads every row to the longest; past this many stored slots per entry it is refused.
ELL_MAX_PADDING = 3.0


def lower_ell(matrix: Graph, role: str, rows: np.ndarray, *, with_data: bool) -> ShareLowering:
    """An ELL share (the TKDE paper's SpMV-ELL): every row padded to the share's longest,
    stored column-major so the work-items of one launch (a row each) read consecutive
    slots together.

    Parameters
    ----------
    matrix : Graph
    role : {'cpu', 'gpu'}
    rows : ndarray of int
        The share's rows, ascending.
    with_data : bool
        Store the values too.

    Returns
    -------
    ShareLowering
        Compact, one ``ell`` launch; ``seg_ptr`` is ``[0, width]`` (the kernel
        reads the width from it).

    Raises
    ------
    ValueError
        If padding would store more than :data:`ELL_MAX_PADDING` slots per entry.
    """
    rows = np.asarray(rows, dtype=np.int32)
    lengths = matrix.lengths_of(rows)
    R, width = int(rows.size), int(lengths.max(initial=0))
    nnz = int(lengths.sum())
    if R * width > ELL_MAX_PADDING * max(nnz, 1):
        raise ValueError(f"ELL would store {R * width:,} slots for {nnz:,} entries")
    pos = row_positions(matrix.indptr, rows)
    j = np.repeat(np.arange(R, dtype=np.int64), lengths)
    t = np.arange(nnz, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    slot = t * R + j
    idx = np.full(max(R * width, 1), -1, dtype=np.int32)
    idx[slot] = matrix.indices[pos]
    data = None
    if with_data:
        data = np.zeros(max(R * width, 1), dtype=np.float32)
        data[slot] = matrix.data[pos]
    launches = [LaunchSpec("ell", 0, R, nnz=nnz, label=f"{role} ell, width {width}")] if R else []
    return ShareLowering(role=role, rows=rows, compact=True, seg_row=rows,
                         seg_ptr=np.array([0, width], dtype=np.int64),
                         entries=RowEntries.of_positions(pos),
                         launches=launches, nnz=nnz, grouping="ell", ell=(idx, data))
