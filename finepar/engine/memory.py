"""Stores: a share's arrays on one device, and the launches that run over them.

A :class:`SideStore` uploads a :class:`~finepar.engine.launches.ShareLowering`
to one side. A share whose entries fit one allocation is one **piece**; a
larger one is cut into row **chunks** (FinePar TKDE §4.3; DESIGN.md §3,
"engine"), each a piece with arrays of its own:

* **resident** chunks stay on the device (the share fits the device's memory
  or the user's budget, but not one allocation);
* **streamed** chunks live in pinned host memory and move to a ring of device
  buffers every step, on a transfer queue: chunk k+1 uploads while chunk k
  computes, and a ring slot is reused once the chunk that held it has run.

The row-sized arrays (segment rows, pointers, slots, blocks) stay resident;
only a chunk's entries (column indices and values) stream. Launches are
defined on the whole share and cut at chunk boundaries, so every lowering
(length groups, CSR-adaptive blocks, throttled partitions) composes with
chunking. For every row operation the store builds its launches once
(:class:`OpLaunches`), with one accumulator (a cut row's slots folded inside the
launches by its last segment to finish) and one partial-sum reduction for the whole
share.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from ..errors import DeviceError
from ..graph import Graph
from ..device import DevicePair, Side, alloc, cl
from ..device import PinnedHost
from . import launches
from .launches import (MAPPINGS, REDUCE, REDUCE_STAGE, Launch, LaunchSpec, RowOp,
                       ShareLowering, rowop_signature)

#: Partial-sum slots per side: device-side iterations write step k's sums to slot k % SLOTS.
SLOTS = 256
#: Device buffers a streamed share cycles through.
RING = 2
#: Where NVIDIA's compiler builds the row operation, its entries' column indices and
#: values are loaded evict-first (PTX's ``ld.global.cs``, ``opencl/skeleton/rowop.cl``'s
#: ``COL`` / ``VAL``), so L1 keeps the gathered vector. Probes turn it off to compare.
PTX_LOADS = True


def check_fits(side: Side, nbytes: int, what: str) -> None:
    """Raise a :class:`~finepar.errors.DeviceError` naming the need and the limit when
    ``nbytes`` exceed one allocation on ``side``."""
    if nbytes > side.info.max_alloc_bytes:
        raise DeviceError(
            f"{what} needs {nbytes / 2**20:.0f} MiB in one buffer but {side.info.name} "
            f"allows {side.info.max_alloc_bytes / 2**20:.0f} MiB per allocation")


def rowop_defines(op: RowOp, matrix: Graph, mapping: str, wg: int, *, compact: bool,
                  has_slots: bool, offset_type: str, ptx: bool = False,
                  shuffles: str = "auto", fold: bool = False, **extra) -> dict:
    """The ``-D`` options of ``op``'s program (``op.fragment`` + ``rowop.cl``) for one
    launch mapping and work-group size over a store of the given kind.

    Parameters
    ----------
    compact : bool
        The store holds its share's own arrays (segments), not the whole CSR.
    has_slots : bool
        Some rows are cut into segments that accumulate in slots.
    offset_type : {'int', 'long'}
        The OpenCL type of the row offsets.
    ptx : bool
        The side's compiler is NVIDIA's (:func:`builds_ptx`): with ``has_slots`` a cut
        row's slots are fenced with PTX's ``membar.gl``, not OpenCL's ``mem_fence``;
        teams reduce with PTX's warp shuffles (:func:`shuffle_mode`); and the entries'
        column indices and values are loaded evict-first (``PTX_LOADS``, while
        :data:`PTX_LOADS`).
    shuffles : {'auto', 'local', 'none'}
        :attr:`~finepar.engine.EngineOptions.shuffles`.
    fold : bool
        The step's last launch, whose last work-group folds the step's sums
        (``FOLD_SUMS``; :meth:`SideStore.folds`).
    **extra
        The mapping's own options (``LANES``, ``BLOCK_NNZ``, ``QUEUE``, ``DYN_BACK``).
    """
    ptx_defs = ({**({"PTX_FENCE": 1} if has_slots or fold else {}),
                 **({"PTX_LOADS": 1} if PTX_LOADS else {})} if ptx else {})
    mode = shuffle_mode(ptx, wg, shuffles)
    shfl = {"SG_SHFL": mode, "SG_SIZE": SUB_GROUP} if mode else {}
    return {**op.options(), "MAPPING": MAPPINGS[mapping], "WG": wg, "COMPACT": int(compact),
            "HAS_DATA": int(op.reads_values(matrix)), "HAS_SLOTS": int(has_slots),
            "OFFSET_T": offset_type, **ptx_defs, **shfl, **({"FOLD_SUMS": 1} if fold else {}),
            **({} if launches.TRIM_ARGS else {"ALL_ARGS": 1}), **extra}


#: Work-items of a sub-group whose registers the shuffles exchange (an NVIDIA warp).
SUB_GROUP = 32


def shuffle_mode(ptx: bool, wg: int, shuffles: str = "auto") -> int:
    """``SG_SHFL`` of a program of work-groups of ``wg`` (``opencl/skeleton/rowop.cl``): 1,
    PTX's ``shfl.sync`` where NVIDIA's compiler builds it (``ptx``) and ``shuffles`` is
    ``auto``; 2, the same exchanges through local memory (``local``: the emulated pair's
    tests of that code); 0, a tree in local memory (``none``, another compiler, or a
    work-group that is not whole sub-groups)."""
    if shuffles == "none" or wg % SUB_GROUP:
        return 0
    return 2 if shuffles == "local" else int(bool(ptx))


def fold_allowed(op: RowOp, n_part: int, ptx: bool, wg: int, shuffles: str) -> bool:
    """Whether a step of ``op`` over ``n_part`` work-groups, its last launch's of ``wg``,
    may fold its sums in that launch (``FOLD_SUMS``): an op with sums that asks
    (:attr:`RowOp.fold_sums`), few enough for one pass, and the shuffles' code
    (:meth:`SideStore.folds` adds the store's own conditions)."""
    return (FOLD_STEP_SUMS and op.part_dtype is not None and op.fold_sums
            and 0 < n_part <= max(REDUCE_ONE_PASS, REDUCE_FAN_IN)
            and shuffle_mode(ptx, wg, shuffles) > 0)


def in_queue_order(low: ShareLowering) -> bool:
    """Whether every launch of a lowering runs in its queue's order, the step's last one
    last (not throttled into partitions, not handed out by a counter): what a fold of the
    step's sums in its last launch needs of the lowering."""
    return low.partitions is None and low.grouping != "dynamic"


def builds_ptx(side: Side) -> bool:
    """Whether ``side``'s compiler is NVIDIA's, which takes inline PTX: its ``mem_fence``
    fences a work-group only (``membar.cta``), so a cut row's fold across work-groups needs
    PTX's ``membar.gl`` (``opencl/skeleton/rowop.cl``, ``DEVICE_FENCE``), and its warps
    exchange registers with ``shfl.sync`` (``SG_SHFL``)."""
    return "NVIDIA" in f"{side.info.platform} {side.info.vendor}".upper()


def offset_type(low: ShareLowering, matrix: Graph, offsets: str = "auto") -> str:
    """The OpenCL type of a store's row offsets (``int`` or ``long``): 64-bit where asked
    (``offsets='int64'``), where a compact share's offsets need it, or where the whole
    CSR a non-compact share indexes has 64-bit ``indptr``."""
    wide = offsets == "int64" or (low.compact and low.offset_dtype == np.int64)
    if not low.compact:
        wide = wide or np.asarray(matrix.indptr).dtype == np.int64
    return "long" if wide else "int"


def mapping_of(spec, max_lanes: int | None = None) -> str:
    """The mapping a launch of ``spec`` runs with for an op whose teams are at most
    ``max_lanes`` work-items a row (:attr:`RowOp.max_lanes`): its own, but a work-group a
    row becomes a team of ``max_lanes``."""
    return "team" if spec.mapping == "group" and max_lanes else spec.mapping


def geometry(side: Side, spec, n: int, max_lanes: int | None = None) -> tuple[int, int, dict]:
    """Work-group size, work-groups and extra ``-D`` options of a launch of ``n``
    segments (or blocks) with ``spec``'s mapping on ``side`` (a team at most ``max_lanes``
    work-items a row, :attr:`RowOp.max_lanes`, the rows of a work-group each too:
    :func:`mapping_of`)."""
    lc = side.launch
    if spec.mapping in ("item", "ell"):
        return lc.wg_item, -(-n // lc.wg_item), {}
    if mapping_of(spec, max_lanes) == "team":
        lanes = min(spec.lanes or lc.lanes, lc.lanes, max_lanes or lc.lanes)
        return lc.wg_team, -(-n // (lc.wg_team // lanes)), {"LANES": lanes}
    if spec.mapping == "group":
        return lc.wg_group, n, {}
    if spec.mapping == "dynamic":
        return (lc.wg_item, side.info.compute_units * lc.resident_groups,
                {"DYN_BACK": int(side.role == "cpu")})
    if spec.mapping == "stream":
        groups = min(n, side.info.compute_units * lc.resident_groups) if spec.queue else n
        return (spec.wg or lc.wg_stream, groups,
                {"BLOCK_NNZ": lc.block_nnz, "QUEUE": int(spec.queue)})
    raise DeviceError(f"unknown mapping {spec.mapping!r}")


def lowered_programs(side: Side, low: ShareLowering, matrix: Graph, op: RowOp,
                     offsets: str = "auto", shuffles: str = "auto") -> list[tuple[tuple, dict]]:
    """``(sources, defines)`` of every program a store of ``low`` on ``side`` builds for
    ``op`` (each once: its launches' mappings and the partial-sum reduction), known from
    the lowering alone, before the store uploads anything: :class:`~finepar.engine.Engine`
    starts their builds first."""
    specs = [spec for spec in low.launches if spec.hi > spec.lo or spec.mapping == "dynamic"]
    return _programs(side, specs, matrix, op, compact=low.compact,
                     has_slots=low.seg_slot is not None,
                     offset_type=offset_type(low, matrix, offsets), shuffles=shuffles,
                     foldable=in_queue_order(low))


def _programs(side: Side, specs: list, matrix: Graph, op: RowOp, *, compact: bool,
              has_slots: bool, offset_type: str, shuffles: str = "auto",
              foldable: bool = False) -> list[tuple[tuple, dict]]:
    """``(sources, defines)`` of ``op``'s programs for launches ``specs`` over a store of the
    given kind, with the partial-sum reduction, each once; ``foldable``: the last launch
    folds the step's sums where :meth:`SideStore.folds` would say so (a streamed store's
    does not: that program is then built where first used)."""
    out, n_part = [], 0
    for spec in specs:
        wg, groups, extra = geometry(side, spec, max(spec.hi - spec.lo, 1), op.max_lanes)
        out.append((mapping_of(spec, op.max_lanes), wg, extra, False))
        n_part += max(groups, 1)
    if foldable and out and fold_allowed(op, n_part, builds_ptx(side), out[-1][1], shuffles):
        out[-1] = (*out[-1][:3], True)
    if op.part_dtype is not None:
        out.append(("item", _pow2_at_most(side.info.max_work_group_size), {}, False))
    unique = {(m, wg, tuple(sorted(e.items())), f): (m, wg, e, f) for m, wg, e, f in out}
    return [((op.fragment, "skeleton/rowop.cl"),
             rowop_defines(op, matrix, m, wg, compact=compact, has_slots=has_slots,
                           offset_type=offset_type, ptx=builds_ptx(side),
                           shuffles=shuffles, fold=fold, **extra))
            for m, wg, extra, fold in unique.values()]


def likely_programs(pair: DevicePair, matrix: Graph, ops, offsets: str = "auto",
                    shuffles: str = "auto") -> list:
    """``(role, sources, defines)`` of the row-operation programs a plan of FinePar's
    usual shape will most likely build on the GPU, known before planning: the GPU's share
    indexing the whole CSR (no row cut) in §4.1's pow4 length groups (item, team at 4, 16
    and 32 lanes, group), and the partial-sum reduction of an op that has one, in that
    order. :meth:`finepar.api.Workload.prepare` queues them as guesses before it plans
    (:meth:`finepar.device.DevicePair.guess_build`): on a machine whose driver has
    nothing cached, the compiler works while the host plans; the engine drops the
    guesses not yet begun once it knows its own programs. None on an emulated pair or a
    CPU in the GPU role, whose builds would compete with the host's own passes for its
    cores."""
    from ..partition import team_lanes
    side = pair.gpu
    if pair.emulated or side.info.kind != "gpu":
        return []
    wide = offsets == "int64" or np.asarray(matrix.indptr).dtype == np.int64
    specs = ([LaunchSpec("item", 0, 1)]
             + [LaunchSpec("team", 0, 1, lanes=team_lanes(lo)) for lo in (4, 16, 64)]
             + [LaunchSpec("group", 0, 1)])
    return [("gpu", sources, defines) for op in ops
            for sources, defines in _programs(side, specs, matrix, op, compact=False,
                                              has_slots=False,
                                              offset_type="long" if wide else "int",
                                              shuffles=shuffles)]


def _pow2_at_most(limit: int, cap: int = 256) -> int:
    wg = 1
    while wg * 2 <= min(cap, limit):
        wg *= 2
    return wg


# ------------------------------------------------------------------------- chunking


@dataclass
class Chunking:
    """Where a share is cut, and which chunks stream.

    Attributes
    ----------
    seg_bounds : ndarray of int64, shape (C+1,)
        Chunk ``c`` holds segments ``seg_bounds[c] .. seg_bounds[c+1]``.
    blk_bounds : ndarray of int64, shape (C+1,) or None
        The same cut in blocks (lowerings with ``stream`` blocks).
    streamed : ndarray of bool, shape (C,)
        Chunks that live on the host and move to the device every step.
    """

    seg_bounds: np.ndarray
    blk_bounds: np.ndarray | None
    streamed: np.ndarray

    @property
    def count(self) -> int:
        return int(self.seg_bounds.size - 1)


def plan_chunks(low: ShareLowering, *, chunk_entries: int, resident_entries: int | None
                ) -> Chunking:
    """Cut a compact share into chunks of at most ``chunk_entries`` entries, at block
    boundaries where the lowering has blocks; the first chunks stay resident while their
    entries fit ``resident_entries`` (None: all), the rest stream.

    Raises
    ------
    DeviceError
        If one segment (or block) alone holds more than ``chunk_entries`` entries.
    """
    seg_ptr = low.seg_ptr
    if low.blk_ptr is not None:  # cut only between blocks
        units = low.blk_ptr.astype(np.int64)
    else:
        units = np.arange(low.n_segments + 1, dtype=np.int64)
    at = seg_ptr[units]  # entries before each unit
    sizes = np.diff(at)
    if sizes.size and sizes.max() > chunk_entries:
        raise DeviceError(f"one row (or block) of the {low.role} share holds "
                          f"{int(sizes.max()):,} entries but a chunk holds {chunk_entries:,} "
                          f"(raise the memory budget)")
    cuts = [0]
    while cuts[-1] < units.size - 1:  # greedy: as many units as fit, by binary search
        start = at[cuts[-1]]
        nxt = int(np.searchsorted(at, start + chunk_entries, side="right")) - 1
        cuts.append(max(nxt, cuts[-1] + 1))
    cuts = np.array(cuts, dtype=np.int64)
    seg_bounds = units[cuts]
    blk_bounds = cuts if low.blk_ptr is not None else None
    ends = at[cuts[1:]]
    streamed = (np.zeros(ends.size, bool) if resident_entries is None
                else ends > resident_entries)
    return Chunking(seg_bounds=seg_bounds, blk_bounds=blk_bounds, streamed=streamed)


# --------------------------------------------------------------------------- pieces


def upload_array(side: Side, a: np.ndarray, dtype=np.int32):
    """A read-only buffer on ``side`` holding ``a`` as ``dtype`` (converted only where the
    dtype differs; one placeholder element for an empty array)."""
    a = np.asarray(a)
    return alloc(side, a.astype(dtype, copy=False) if a.size else np.zeros(1, dtype),
                 read_only=True)



class Piece:
    """One chunk of a share (or the whole share): its arrays on one device.

    Segments ``s0 .. s1`` of the store's lowering, blocks ``b0 .. b1``; the
    arrays are the lowering's, sliced and rebased. ``host`` holds a streamed
    piece's entries (pinned host buffers) instead of device ones.
    """

    def __init__(self, store: "SideStore", s0: int, s1: int, b0: int, b1: int, *,
                 streamed: bool, matrix: Graph, has_data: bool):
        low, side = store.low, store.side
        self.s0, self.s1, self.b0, self.b1 = s0, s1, b0, b1
        self.streamed = streamed

        def upload(a, dtype=np.int32):
            return upload_array(side, a, dtype)
        ell = low.ell is not None  # one piece of padded slots, not segments of entries
        e0, e1 = (0, low.nnz) if ell else (int(low.seg_ptr[s0]), int(low.seg_ptr[s1]))
        self.entries = (e0, e1)
        self.seg_row = upload(low.seg_row[s0:s1])
        self.seg_ptr = upload(low.seg_ptr if ell else low.seg_ptr[s0:s1 + 1] - e0,
                              store.offset_dtype)
        self.seg_slot = (upload(low.seg_slot[s0:s1]) if low.seg_slot is not None
                         else store.dummy)
        self.blk_ptr = (upload(low.blk_ptr[b0:b1 + 1] - s0) if low.blk_ptr is not None
                        else store.dummy)
        # the halo reads these; dropped once computed
        self.host_indices = low.entries.take(matrix.indices, e0, e1)
        if ell:  # padded column-major slots, uploaded as they are
            idx, val = low.ell[0], (low.ell[1] if has_data else None)
        else:
            idx = self.host_indices
            val = low.entries.take(matrix.data, e0, e1) if has_data else None
        self.nbytes = idx.nbytes + (val.nbytes if val is not None else 0)
        if streamed:
            self.host = (_pinned(side, idx), _pinned(side, val) if val is not None else None)
            self.indices = self.data = None
        else:
            check_fits(side, idx.nbytes, f"a chunk of the {low.role} share's column indices")
            self.indices = upload(idx)
            self.data = (alloc(side, val if val.size else np.zeros(1, np.float32),
                               read_only=True) if val is not None else store.dummy)

    def covers(self, spec) -> tuple[int, int]:
        """The part of a whole-share launch spec inside this piece, rebased: (lo, hi)."""
        a, b = (self.b0, self.b1) if spec.mapping == "stream" else (self.s0, self.s1)
        lo, hi = max(spec.lo, a), min(spec.hi, b)
        return (lo - a, hi - a) if hi > lo else (0, 0)


def _pinned(side: Side, array: np.ndarray) -> PinnedHost:
    """The pinned host copy of a streamed chunk's array (the source of its uploads)."""
    return PinnedHost(side, np.ascontiguousarray(array))


class Ring:
    """The device buffers streamed chunks cycle through, the transfer queue, and the
    events that order uploads and launches (FinePar TKDE §4.3)."""

    def __init__(self, side: Side, pieces: list, with_data: bool, slots: int = RING):
        mod = cl()
        props = mod.command_queue_properties.PROFILING_ENABLE
        self.queue = mod.CommandQueue(side.context, side.queue.device, properties=props)
        biggest = max(p.entries[1] - p.entries[0] for p in pieces)
        self.slots = [(alloc(side, nbytes=max(4 * biggest, 1)),
                       alloc(side, nbytes=max(4 * biggest, 1)) if with_data else None)
                      for _ in range(slots)]
        self.free = [None] * slots  # the event after which a slot may be overwritten
        self.uploads: list = []     # this step's upload events (for timing)

    def upload(self, k: int, piece: Piece) -> tuple[Any, Any, Any]:
        """Enqueue chunk ``piece`` into slot ``k % slots`` once that slot is free; returns
        (indices buffer, data buffer or None, upload event)."""
        mod = cl()
        slot = k % len(self.slots)
        idx_buf, data_buf = self.slots[slot]
        wait = [self.free[slot]] if self.free[slot] is not None else None
        n = piece.entries[1] - piece.entries[0]
        ev = mod.enqueue_copy(self.queue, idx_buf, piece.host[0].host[:n], is_blocking=False,
                              wait_for=wait)
        if data_buf is not None and piece.host[1] is not None:
            ev = mod.enqueue_copy(self.queue, data_buf, piece.host[1].host[:n],
                                  is_blocking=False, wait_for=[ev])
        self.uploads.append(ev)
        return idx_buf, data_buf, ev

    def release(self, k: int, event) -> None:
        self.free[k % len(self.slots)] = event


# ------------------------------------------------------------------------- launches


@dataclass
class OpLaunches:
    """One row operation's launches on one store.

    Attributes
    ----------
    launches : list of Launch
        The ``rowop`` launches in enqueue order (chunk by chunk).
    piece : list of int
        The piece (chunk) of each launch.
    queue : dict
        Launch index -> block counter of a queue launch (zeroed before it runs).
    reduce : Launch or None
        Sums the step's partials into ``reduced`` (None: the op has none).
    reduce_stage : Launch or None
        A first pass of many work-groups over a step's many partials.
    n_partials : int
        Work-groups over all launches (two partial sums each).
    fold : bool
        The last launch's last work-group sums the step's partials into ``reduced``
        (``FOLD_SUMS``): no reduce launch.
    partials, reduced, seg_acc : buffers
    host : ndarray
        Two partial sums read back by the host.
    """

    launches: list
    piece: list = field(default_factory=list)
    queue: dict = field(default_factory=dict)
    reduce: Launch | None = None
    reduce_stage: Launch | None = None
    n_partials: int = 0
    fold: bool = False
    partials: Any = None
    reduced: Any = None
    seg_acc: Any = None
    host: np.ndarray | None = None

    def sum_into(self, slot: int) -> None:
        """Before the step's launches: where the last launch folds the sums, their slot."""
        if self.fold:
            self.launches[-1].bind(sums_slot=slot)

    def enqueue_reduce(self, queue, slot: int):
        """Sum the step's partials into slot ``slot`` (two passes where they are many);
        nothing where the last launch folded them (:meth:`sum_into`)."""
        if self.fold:
            return None
        if self.reduce_stage is not None:
            self.reduce_stage.enqueue(queue)
        return self.reduce.bind(slot=slot).enqueue(queue)


#: Partial-sum pairs each work-group of a first pass reads.
REDUCE_FAN_IN = 2048
#: Partial-sum pairs up to which the last pass alone reads the partials of a step of an op
#: that folds its sums (:attr:`RowOp.fold_sums`); more get a first pass. One launch fewer a
#: step where the host's enqueues bound a mid-size input's iterations (PageRank on
#: cnr-2000: 4,000 work-groups, 30 us of kernels a step).
REDUCE_ONE_PASS = 16384
#: Let the step's last launch fold its sums where :meth:`SideStore.folds` allows (probes
#: compare a store built without).
FOLD_STEP_SUMS = True


class SideStore:
    """A share's segment table and entries on one device, whole or in chunks.

    Parameters
    ----------
    pair : DevicePair
    side : Side
    low : ShareLowering
    matrix : Graph
        The matrix the lowering indexes.
    global_csr : callable
        ``global_csr(role, wide) -> (indptr, indices, data)`` buffers of the whole
        CSR on that side (used when the lowering is not compact).
    dummy : buffer
        Stands in for arguments an op does not use.
    has_data : bool
        Upload the share's values.
    offsets : {'auto', 'int64'}
        ``int64``: 64-bit segment offsets at any size (for tests); ``auto``:
        64-bit only where the share's offsets pass the int32 limit.
    shuffles : {'auto', 'local', 'none'}
        How teams reduce (:attr:`~finepar.engine.EngineOptions.shuffles`).
    counter : buffer, optional
        The chunk counter both devices' ``dynamic`` launches share.
    chunking : Chunking, optional
        Cut the (compact) share into chunks (resident or streamed); None: one piece.

    Raises
    ------
    DeviceError
        If a piece's entries do not fit one allocation of the side.
    """

    def __init__(self, pair: DevicePair, side: Side, low: ShareLowering, matrix: Graph, *,
                 global_csr: Callable, dummy, has_data: bool, offsets: str = "auto",
                 shuffles: str = "auto", counter=None, chunking: Chunking | None = None):
        self.pair, self.side, self.low, self.role = pair, side, low, low.role
        self.shuffles = shuffles
        self.matrix = matrix
        self.dummy = dummy
        self.counter = counter if counter is not None else dummy
        self.has_data = has_data
        wide = offsets == "int64" or (low.compact and low.offset_dtype == np.int64)
        self.pieces: list[Piece] = []
        self.ring: Ring | None = None
        self.chunking = chunking
        if low.compact:
            self.offset_dtype = np.int64 if wide else np.int32
            nblk = int(low.blk_ptr.size - 1) if low.blk_ptr is not None else 0
            if chunking is None:
                chunking = Chunking(np.array([0, low.n_segments]), np.array([0, nblk]),
                                    np.zeros(1, bool))
            for c in range(chunking.count):
                s0, s1 = int(chunking.seg_bounds[c]), int(chunking.seg_bounds[c + 1])
                b0, b1 = ((int(chunking.blk_bounds[c]), int(chunking.blk_bounds[c + 1]))
                          if chunking.blk_bounds is not None else (0, 0))
                self.pieces.append(Piece(self, s0, s1, b0, b1, streamed=bool(chunking.streamed[c]),
                                         matrix=matrix, has_data=has_data))
            streamed = [p for p in self.pieces if p.streamed]
            if streamed:
                self.ring = Ring(side, streamed, has_data)
        else:
            wide = wide or matrix.indptr.dtype == np.int64
            self.offset_dtype = np.int64 if wide else np.int32
            self.pieces.append(_WholePiece(self, global_csr(low.role, wide)))
        self.offset_type = offset_type(low, matrix, offsets)
        up = lambda a: alloc(side, np.asarray(a, np.int32) if np.size(a)  # noqa: E731
                             else np.zeros(1, np.int32), read_only=True)
        # a cut row's slots, each slot's row and the row's count of finished segments
        # (zero between steps): what its last segment needs to fold the row
        owner = np.repeat(np.arange(low.apply_rows.size, dtype=np.int32), np.diff(low.slot_ptr))
        self.slot_ptr, self.slot_row = up(low.slot_ptr), up(owner)
        self.slot_done = alloc(side, np.zeros(max(int(low.apply_rows.size), 1), np.int32))
        self._ops: dict[str, OpLaunches] = {}
        self._reduced: dict[str, Any] = {}

    @property
    def share_indices(self):
        """The columns the share reads (None for a share indexing the whole CSR)."""
        parts = [p.host_indices for p in self.pieces if p.host_indices is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @share_indices.setter
    def share_indices(self, value) -> None:
        if value is None:
            for p in self.pieces:
                p.host_indices = None

    def describe(self) -> dict:
        """Chunks, their bytes, and how many stream."""
        res = [p.nbytes for p in self.pieces if not p.streamed]
        st = [p.nbytes for p in self.pieces if p.streamed]
        return {"chunks": len(self.pieces), "resident_chunks": len(res),
                "streamed_chunks": len(st), "resident_bytes": int(sum(res)),
                "streamed_bytes": int(sum(st))}

    def relaunch(self, cover: list, *, queue: bool = False) -> None:
        """Replace a throttled store's launches by those of another cover of its SJ-tree
        (the arrays stay; the launches of every op are rebuilt on next use)."""
        from .launches import cover_launches
        self.low.launches = cover_launches(self.low, cover, queue=queue)
        self._ops.clear()

    # ------------------------------------------------------------------- launches
    def _defines(self, op: RowOp, mapping: str, wg: int, fold: bool = False, **extra) -> dict:
        """The ``-D`` options of ``op``'s program for a launch of ``mapping`` on this store."""
        return rowop_defines(op, self.matrix, mapping, wg, compact=self.low.compact,
                             fold=fold, has_slots=self.low.seg_slot is not None,
                             offset_type=self.offset_type, ptx=builds_ptx(self.side),
                             shuffles=self.shuffles, **extra)

    def _program(self, op: RowOp, defines: dict):
        """``op``'s program built with ``defines`` (:meth:`_defines`) on this side."""
        return self.pair.program(self.side, (op.fragment, "skeleton/rowop.cl"), defines)

    def ops(self, op: RowOp, fscal, stop) -> OpLaunches:
        """The launches of ``op`` on this store (built on first use).

        Parameters
        ----------
        op : RowOp
        fscal, stop : buffers
            The side's app scalars and stop flag (bound to every launch).
        """
        hit = self._ops.get(op.name)
        if hit is None:
            hit = self._ops[op.name] = self._build(op, fscal, stop)
        return hit

    def _pieces_launches(self, max_lanes: int | None = None):
        """``(k, piece, spec, lo, hi, wg, groups, extra)`` of every launch the store makes
        for an op (its teams at most ``max_lanes`` a row): each launch spec over each piece
        it covers."""
        for k, piece in enumerate(self.pieces):
            for spec in self.low.launches:
                lo, hi = piece.covers(spec)
                if hi <= lo and not (spec.mapping == "dynamic" and k == 0):
                    continue
                if spec.mapping == "dynamic":
                    lo, hi = spec.lo, spec.hi
                wg, groups, extra = geometry(self.side, spec, hi - lo, max_lanes)
                yield k, piece, spec, lo, hi, wg, max(groups, 1), extra

    def _op_launches(self, op: RowOp) -> list:
        """:meth:`_pieces_launches` for ``op``: its rows without entries left out where
        they do nothing in it, and adjacent launches that its team cap runs alike (the
        lowering's own length groups, whose planned team sizes differ, all capped to
        ``op.max_lanes``) merged into one: each launch costs the host a bind and an
        enqueue (BFS's bottom-up step at Graph500 scale 24 with teams of 2: five launches
        become two)."""
        out = []
        for k, piece, spec, lo, hi, wg, groups, extra in self._pieces_launches(op.max_lanes):
            if op.empty_rows_idle and spec.nnz == 0 and self.low.grouping != "dynamic":
                continue  # rows without entries, which do nothing in this op (the dynamic
                # baseline's host hands out chunks by their launch's index: all kept)
            prev = out[-1] if out else None
            if (op.max_lanes and prev is not None and prev[0] == k and prev[4] == lo
                    and mapping_of(spec, op.max_lanes) == "team"
                    and mapping_of(prev[2], op.max_lanes) == "team"
                    and (prev[5], prev[7]) == (wg, extra)):
                first, lo0 = prev[2], prev[3]
                wg, groups, extra = geometry(self.side, spec, hi - lo0, op.max_lanes)
                merged = replace(spec, mapping="team", lo=first.lo, nnz=first.nnz + spec.nnz,
                                 label=f"{first.label.rsplit('..', 1)[0]}.."
                                       f"{spec.label.rsplit('..', 1)[1]}")
                out[-1] = (k, piece, merged, lo0, hi, wg, groups, extra)
            else:
                out.append((k, piece, spec, lo, hi, wg, groups, extra))
        return out

    def folds(self, op: RowOp, wg: int, n_part: int) -> bool:
        """Whether the last launch of ``op``'s step, of work-groups of ``wg``, folds the
        step's ``n_part`` partial pairs itself (``FOLD_SUMS``): :func:`fold_allowed`, and a
        store whose launches all run in its queue's order (not streamed, throttled or
        handed out)."""
        return (fold_allowed(op, n_part, builds_ptx(self.side), wg, self.shuffles)
                and self.ring is None and in_queue_order(self.low))

    def _build(self, op: RowOp, fscal, stop) -> OpLaunches:
        mod = cl()
        out = OpLaunches(launches=[])
        part = 0
        plan = self._op_launches(op)
        out.fold = bool(plan) and self.folds(op, plan[-1][5], sum(p[6] for p in plan))
        for i, (k, piece, spec, lo, hi, wg, groups, extra) in enumerate(plan):
            fold = out.fold and i == len(plan) - 1
            defines = self._defines(op, mapping_of(spec, op.max_lanes), wg, fold, **extra)
            kern = mod.Kernel(self._program(op, defines), "rowop")
            L = Launch(rowop_signature(defines), kern, groups * wg, wg, label=spec.label,
                       nnz=spec.nnz)
            counter = self.dummy
            if spec.mapping == "dynamic":
                counter = self.counter
            elif spec.queue:
                counter = alloc(self.side, np.zeros(1, np.int32))
                out.queue[len(out.launches)] = counter
            L.bind(nseg=hi - lo, base=lo, seg_row=piece.seg_row, seg_ptr=piece.seg_ptr,
                   fscal=fscal, part_offset=part, seg_slot=piece.seg_slot,
                   slot_row=self.slot_row, slot_ptr=self.slot_ptr, slot_done=self.slot_done,
                   blk_ptr=piece.blk_ptr, stop=stop, queue=counter, sums_out=self.dummy,
                   sums_slot=0, n_part=0, sums_done=self.dummy)
            if not piece.streamed:
                L.bind(indices=piece.indices, data=piece.data)
            out.launches.append(L)
            out.piece.append(k)
            part += groups
        self._finisher(op, out, fscal, stop, part)
        return out

    def _finisher(self, op: RowOp, out: OpLaunches, fscal, stop, part: int) -> None:
        """The whole share's accumulator slots and partial-sum reduction."""
        low, mod = self.low, cl()
        acc_bytes = np.dtype(op.acc_dtype).itemsize
        out.seg_acc = (alloc(self.side, nbytes=max(low.n_slots, 1) * acc_bytes)
                       if low.n_slots else self.dummy)
        for L in out.launches:
            L.bind(seg_acc=out.seg_acc)
        out.n_partials = part
        every = out.launches
        if op.part_dtype is None:
            for L in every:
                L.bind(partials=self.dummy)
            return
        item = np.dtype(op.part_dtype).itemsize
        out.partials = alloc(self.side, nbytes=2 * max(part, 1) * item)
        # the step sums' slots outlive a relaunch (SJ re-covering mid-batch of device steps)
        out.reduced = self._reduced.get(op.name)
        if out.reduced is None:
            out.reduced = self._reduced[op.name] = alloc(self.side, nbytes=2 * SLOTS * item)
        out.host = np.zeros(2, dtype=op.part_dtype)
        wg = _pow2_at_most(self.side.info.max_work_group_size)
        prg = self._program(op, self._defines(op, "item", wg))
        last_n, last_in = part, out.partials
        one_pass = REDUCE_ONE_PASS if op.fold_sums else REDUCE_FAN_IN
        if part > max(one_pass, REDUCE_FAN_IN):  # many: a first pass of many groups
            groups = min(-(-part // REDUCE_FAN_IN), REDUCE_FAN_IN)
            tmp = alloc(self.side, nbytes=2 * groups * item)
            out.reduce_stage = Launch(REDUCE_STAGE, mod.Kernel(prg, "reduce_stage"), groups * wg,
                                      wg, label=f"{self.role} reduce pass 1")
            out.reduce_stage.bind(n=part, partials=out.partials, tmp=tmp)
            last_n, last_in = groups, tmp
        out.reduce = Launch(REDUCE, mod.Kernel(prg, "reduce_partials"), wg, wg,
                            label=f"{self.role} reduce")
        out.reduce.bind(n=last_n, partials=last_in, out=out.reduced, slot=0, fscal=fscal,
                        stop=stop)
        for L in every:
            L.bind(partials=out.partials)
        if out.fold:
            every[-1].bind(sums_out=out.reduced, n_part=part,
                           sums_done=alloc(self.side, np.zeros(1, np.int32)))

    # -------------------------------------------------------------------- enqueue
    def enqueue(self, ol: OpLaunches, bound: dict, flush: bool = False) -> list:
        """Enqueue every launch of ``ol`` with the step's arguments ``bound``: a queue
        launch's counter zeroed first, a streamed chunk uploaded first (into a free ring
        slot, on the transfer queue). Returns the launch events in order.

        ``flush``: submit each launch as it is enqueued (NVIDIA's driver holds commands
        until a flush or a blocking call), so that the device starts the step while the
        host enqueues the rest of it: a step the host waits for (two devices, ranks)
        otherwise leaves the device idle for the whole of the step's enqueueing."""
        q = self.side.queue
        events, uploaded = [], {}
        if self.ring is not None:
            self.ring.uploads = []
        for i, L in enumerate(ol.launches):
            k = ol.piece[i]
            piece = self.pieces[k]
            wait = None
            if piece.streamed:
                if k not in uploaded:
                    uploaded[k] = self.ring.upload(k, piece)
                idx_buf, data_buf, up = uploaded[k]
                L.bind(indices=idx_buf, data=data_buf if data_buf is not None else self.dummy)
                wait = [up]
            if i in ol.queue:
                cl().enqueue_fill_buffer(q, ol.queue[i], np.zeros(1, np.int32), 0, 4)
            events.append(L.bind(**bound).enqueue(q, wait_for=wait))
            if flush:
                q.flush()
            last = i + 1 == len(ol.launches) or ol.piece[i + 1] != k
            if piece.streamed and last:
                self.ring.release(k, events[-1])
        return events


class _WholePiece:
    """A share indexing the whole CSR on its side (not compact): one piece, no chunks."""

    streamed = False
    host_indices = None
    nbytes = 0

    def __init__(self, store: SideStore, csr: tuple):
        low, side = store.low, store.side

        def upload(a, dtype=np.int32):
            return upload_array(side, a, dtype)
        self.seg_ptr, self.indices, self.data = csr
        self.seg_row = upload(low.seg_row)
        self.seg_slot = upload(low.seg_slot) if low.seg_slot is not None else store.dummy
        self.blk_ptr = upload(low.blk_ptr) if low.blk_ptr is not None else store.dummy
        nblk = int(low.blk_ptr.size - 1) if low.blk_ptr is not None else 0
        self.s0, self.s1, self.b0, self.b1 = 0, low.n_segments, 0, nblk
        self.entries = (0, 0)

    def covers(self, spec) -> tuple[int, int]:
        return spec.lo, spec.hi
