"""The engine: an app's row operations over a plan, on a DevicePair (DESIGN.md §3, "engine").

The plan's shares are lowered to segments and launches
(:mod:`~finepar.engine.launches`), uploaded to their devices
(:mod:`~finepar.engine.memory`), and run by an executor
(:mod:`~finepar.engine.executors`); in split memory the halo moves after a
step (:mod:`~finepar.engine.exchange`). Each device's launches go to its own
queue, both devices at once, and the host waits only where an app needs a
number back.

Memory
------
* **shared** (one context): one set of buffers; both devices read one CSR
  (through their row lists, or compacted copies for CSR-adaptive and
  throttled layouts) and write disjoint rows of the same vectors.
* **split** (two contexts): the CPU side indexes the whole CSR through its
  rows (or a compacted copy of its rows when the whole CSR does not fit one
  allocation); the GPU side holds a compacted copy of its own rows. Vectors are
  full length on both sides; after a step the halo moves.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..errors import DeviceError
from ..graph import Graph
from ..parallel import ascending
from ..partition import Plan
from ..device import (DevicePair, PinnedHost, PlainQueues, Side, alloc, cl, filled,
                      read_staged, write_async)
from .exchange import Halo
from .executors import (DeviceCounterExecutor, HostChunkExecutor, ProfilingExecutor,
                        StaticExecutor)
from .binding import enqueue_bound
from .launches import (RowOp, ShareLowering, lower_adaptive, lower_chunks, lower_ell,
                       lower_groups, lower_partitioned)
from .columns import check_step_numbering, order_columns, scatter
from .memory import SLOTS, SideStore, check_fits, lowered_programs
from .options import EngineOptions
from .reads import read_later, read_split
from .timing import StepRecord, event_seconds, summarize, time_pending, time_step

_VEC_TYPES = (np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint32))
#: Floats every side keeps for an app's scalars (``fscal``).
N_SCALARS = 16
#: Read the steps' sums into page-locked host memory (:meth:`Engine.sums_later`): NVIDIA's
#: queue holds a non-blocking read to pageable memory, and the steps behind it, until the
#: host waits for it; a page-locked read is the copy engine's alone.
PINNED_SUMS = True


class Engine:
    """Runs an app's semiring row operations over a plan.

    Parameters
    ----------
    pair : DevicePair
    matrix : Graph
        The matrix whose rows are the work (A for SpMV, A^T for PageRank and
        BFS, the symmetrised graph for CC).
    plan : Plan
        Built from ``matrix.row_lengths()``.
    ops : RowOp or sequence of RowOp
        The app's row operations; the first is the default of :meth:`rowop`.
    options : EngineOptions, optional
    lowerings : dict, optional
        ``{role: ShareLowering}`` made before for this plan and matrix (the prepared-graph
        cache): used as they are instead of lowering the plan again.
    built_ahead : sequence of str, optional
        The names of the ops whose programs :meth:`prebuild` starts (default: all); the
        others are built where first used.
    column_vectors : tuple of str
        The vectors the ops read by column (:attr:`finepar.apps.base.App.column_vectors`):
        where ``options.columns`` asks, a device's share's columns are renumbered and
        these vectors kept in that numbering on that device (:mod:`finepar.engine.columns`;
        :attr:`columns`, one :class:`~finepar.engine.columns.ColumnOrder` per role).

    Raises
    ------
    DeviceError
        If the plan gives no rows to any device, or a share does not fit its
        device's allocation limit (the message names the need and the limit).
    """

    #: The GPU's static run, nothing streamed, may take its plain queue
    #: (``EngineOptions.timing``).
    PLAIN_QUEUES = True

    def __init__(self, pair: DevicePair, matrix: Graph, plan: Plan, ops, *,
                 options: EngineOptions | None = None, lowerings: dict | None = None,
                 built_ahead=None, column_vectors: tuple = ()):
        t0 = time.perf_counter()
        self.pair, self.matrix, self.plan = pair, matrix, plan
        self.ops = (ops,) if isinstance(ops, RowOp) else tuple(ops)
        self.options = options or EngineOptions()
        self.n = matrix.n
        self.records: list[StepRecord] = []
        #: Blocking waits of the host on a device (reads, blocking writes, waits on
        #: events, finishes) since the last :meth:`reset_records`.
        self.host_syncs = 0
        self.pending: list = []
        self.last_events: dict = {}
        self.state: dict[str, Any] = {}  # per-app prepared state (App.prepare)
        self._vectors: dict[str, dict[str, Any]] = {}
        self._vec_dtype: dict[str, np.dtype] = {}
        self._global_csr: dict[tuple, tuple] = {}
        self._dummy: dict[str, Any] = {}
        self._read_pack: dict[tuple, dict] = {}
        self._sums_host: dict[tuple, Any] = {}  # page-locked targets of the sums' reads
        self.halo: dict[str, np.ndarray] = {}
        self._halo: Halo | None = None
        self.roles = tuple(plan.active_roles())
        if not self.roles:
            raise DeviceError("the plan assigns no rows to any device")
        dynamic = plan.method == "dynamic"
        self.executor = self._executor()
        counter = alloc(pair.cpu, np.zeros(1, np.int32)) if dynamic and pair.shared else None
        self.stores: dict[str, SideStore] = {}
        has_data = self.reads_values
        lows = {}
        for role in self.roles:
            side = pair.side(role)
            low = (lowerings or {}).get(role) or self.lower(role, side)
            if low.ell is not None and self._needs_chunks(role, side, low, has_data):
                low = lower_adaptive(matrix, role, low.rows, block_nnz=side.launch.block_nnz,
                                     max_segments=side.launch.stream_wg(low.nnz))  # not cut
            if not low.compact and self._needs_chunks(role, side, low, has_data):
                low = lower_groups(matrix, role, plan.shares[role].groups, compact=True)
            lows[role] = low
        self.built_ahead = tuple(built_ahead) if built_ahead is not None else None
        if self.options.prebuild:  # the compilers start before the uploads
            self.prebuild(lows)
        cuts = {role: self._chunking(role, pair.side(role), low, has_data)
                for role, low in lows.items()}
        streams = any(c is not None and c.streamed.any() for c in cuts.values())
        self.profile = self.options.timing(self.roles, self.PLAIN_QUEUES and not streams
                                           and type(self.executor) is StaticExecutor)
        if self.profile == "none":  # the GPU's commands on its plain queue
            self.pair = pair = PlainQueues(pair)
        for role, low in lows.items():
            self.stores[role] = SideStore(pair, pair.side(role), low, matrix,
                                          global_csr=self._csr_for, dummy=self.dummy(role),
                                          has_data=has_data, offsets=self.options.offsets,
                                          shuffles=self.options.shuffles, counter=counter,
                                          chunking=cuts[role])
        self.fscal = {r: alloc(pair.side(r), np.zeros(N_SCALARS, np.float32)) for r in self.roles}
        self.stop = {r: alloc(pair.side(r), np.zeros(1, np.int32)) for r in self.roles}
        if pair.shared:  # one context: one copy of the scalars for both queues
            for r in self.roles[1:]:
                self.fscal[r], self.stop[r] = self.fscal[self.roles[0]], self.stop[self.roles[0]]
        self._needs_halo = not pair.shared and len(self.roles) == 2 and not dynamic
        self.columns = ({r: order_columns(self, tuple(column_vectors), self.options.columns, r)
                         for r in self.roles} if column_vectors else {})
        self.setup_seconds = time.perf_counter() - t0
        self.cache_seconds = 0.0  # set by a run whose preparation came from the cache

    def prebuild(self, lows: dict | None = None) -> None:
        """Start compiling the row operations' programs of every share, one build job
        each, on the build threads (:meth:`finepar.device.DevicePair.start_build`;
        pyopencl releases the GIL while a driver builds) and return: the uploads and the
        app's own preparation go on meanwhile, and the first use of a program waits for its
        build (:meth:`finepar.device.DevicePair.program`). Guessed builds not yet begun
        are dropped first. ``lows``: ``{role: ShareLowering}`` (default: the stores'); the
        ops are ``built_ahead`` where the engine was given them, else all. A program that
        fails here is built again, and its error raised, where it is first used."""
        self.pair.drop_guesses()
        lows = lows if lows is not None else {r: st.low for r, st in self.stores.items()}
        ops = [op for op in self.ops if self.built_ahead is None or op.name in self.built_ahead]
        for role, low in lows.items():
            side = self.pair.side(role)
            for op in ops:
                for sources, defines in lowered_programs(side, low, self.matrix, op,
                                                         self.options.offsets,
                                                         self.options.shuffles):
                    self.pair.start_build(self.pair.program, side, sources, defines)

    def _executor(self):
        """The executor the plan needs: split-join profiling for an SJ / SJ-Q throttled
        GPU share, the dynamic baseline's chunk hand-out, else the static co-run."""
        throttle = self.plan.throttle
        if self.plan.method == "dynamic":
            return DeviceCounterExecutor() if self.pair.shared else HostChunkExecutor()
        if throttle is not None and throttle.schedule in ("sj", "sj-q") and "gpu" in self.roles:
            return ProfilingExecutor("gpu", queue=throttle.schedule == "sj-q")
        return StaticExecutor()

    def _needs_chunks(self, role: str, side: Side, low: ShareLowering, has_data: bool) -> bool:
        """Whether a share's entries exceed one allocation, the device's budget, or the
        chunk size asked for."""
        if self.plan.method == "dynamic" or low.nnz == 0:
            return False
        total = low.nnz * (4 + (4 if has_data else 0))
        return (self.options.chunk_bytes is not None or total > side.info.max_alloc_bytes
                or total > self.options.budget(role, side))

    def _chunking(self, role: str, side: Side, low: ShareLowering, has_data: bool):
        """Chunks for a share that does not fit one allocation or the device's budget
        (resident while the budget lasts, streamed beyond), else None (FinePar TKDE §4.3).

        Raises
        ------
        DeviceError
            If the budget cannot even hold the ring of streamed chunks (the message
            names the need and the limit).
        """
        from .memory import RING, plan_chunks
        if not self._needs_chunks(role, side, low, has_data):
            return None
        per_entry = 4 + (4 if has_data else 0)
        total = low.nnz * per_entry
        budget = self.options.budget(role, side)
        chunk = min(side.info.max_alloc_bytes, self.options.chunk_bytes or side.info.max_alloc_bytes)
        chunk_entries = max(chunk // 4, 1)  # indices and values are 4-byte arrays
        if total <= budget:
            return plan_chunks(low, chunk_entries=chunk_entries, resident_entries=None)
        longest = int(np.diff(low.seg_ptr[low.blk_ptr.astype(np.int64)] if low.blk_ptr is not None
                              else low.seg_ptr).max(initial=1))
        chunk_entries = min(chunk_entries, max(budget // (RING * per_entry), longest))
        ring = RING * chunk_entries * per_entry
        if ring > budget:
            mib = 2 ** 20
            raise DeviceError(
                f"the {role} share streams in chunks of at least its longest row or block "
                f"({longest:,} entries): {ring / mib:.1f} MiB for a ring of {RING}, plus "
                f"{self.options.reserve_bytes / mib:.1f} MiB for the app's vectors, but the "
                f"{role} may use {self.options.limit(role, side) / mib:.1f} MiB "
                f"(--{role}-memory)")
        resident = (budget - ring) // per_entry
        return plan_chunks(low, chunk_entries=chunk_entries, resident_entries=resident)

    # ------------------------------------------------------------------ lowering
    def compact(self, role: str) -> bool:
        """Whether ``role``'s share gets arrays of its own (split memory: the CPU when the
        whole CSR does not fit one of its allocations; the GPU unless its share holds at
        least half the matrix's entries and the whole CSR fits its budget, when uploading
        the matrix's arrays as they are costs less than gathering the share's rows)."""
        if self.pair.shared:
            return False
        side = self.pair.side(role)
        if role == "cpu" or not self.fits_whole(side):
            return not self.fits_whole(side)
        whole = self.matrix.nnz * (8 if self.reads_values else 4) + self.matrix.indptr.nbytes
        share = self.plan.shares[role].nnz
        return 2 * share < self.matrix.nnz or whole > self.options.budget(role, side)

    def fits_whole(self, side: Side) -> bool:
        """Whether the whole CSR's largest array fits one allocation on ``side``."""
        return self.matrix.indices.nbytes <= side.info.max_alloc_bytes

    def lower(self, role: str, side: Side) -> ShareLowering:
        """The lowering of ``role``'s share that the plan asks for."""
        share = self.plan.shares[role]
        lc = side.launch
        throttle = self.plan.throttle
        if self.plan.method == "dynamic":
            return lower_chunks(self.matrix, role, self.plan.chunk_bounds,
                                device_counter=self.pair.shared)
        if role == "gpu" and throttle is not None:
            # CF: a launch per partition; CF-Q: one queue launch (the root's); SJ and SJ-Q
            # start from the leaves and the profiling executor re-covers the tree later
            cover = [0] if throttle.schedule == "cf-q" else None
            return lower_partitioned(self.matrix, role, ascending(share.rows),
                                     throttle.partitioning, block_nnz=lc.block_nnz,
                                     max_segments=lc.wg_stream, cover=cover,
                                     queue=throttle.schedule == "cf-q")
        if self.plan.grouping == "ell" and role == "gpu":
            try:
                return lower_ell(self.matrix, role, ascending(share.rows),
                                 with_data=self.reads_values)
            except ValueError:  # too much padding: CSR-adaptive blocks instead
                pass
        if self.plan.grouping in ("adaptive", "ell") and share.groups and \
                share.groups[0].mapping in ("stream", "ell"):
            return lower_adaptive(self.matrix, role, ascending(share.rows),
                                  block_nnz=lc.block_nnz, max_segments=lc.stream_wg(share.nnz))
        return lower_groups(self.matrix, role, share.groups, compact=self.compact(role))

    # ------------------------------------------------------------------ buffers
    def _csr_for(self, role: str, wide: bool = False):
        """``(indptr, indices, data)`` of the whole matrix on ``role``'s side."""
        return self.global_csr(role, wide=wide)

    def global_csr(self, role: str, graph: Graph | None = None, *, wide: bool = False):
        """Buffers ``(indptr, indices, data)`` of a whole CSR on ``role``'s side.

        In shared mode every role gets the same buffers (one context). ``wide``:
        an int64 ``indptr``.
        """
        graph = self.matrix if graph is None else graph
        side = self.pair.side(role)
        key = ("shared" if self.pair.shared else role, id(graph), wide)
        hit = self._global_csr.get(key)
        if hit is None:
            check_fits(side, graph.indices.nbytes, f"the column indices of {graph.name}")
            data = (alloc(side, graph.data, read_only=True)
                    if any(op.reads_values(graph) for op in self.ops) else self.dummy(role))
            indptr = graph.indptr.astype(np.int64 if wide else graph.indptr.dtype)
            hit = (alloc(side, indptr, read_only=True), alloc(side, graph.indices, read_only=True),
                   data)
            self._global_csr[key] = hit
        return hit

    @property
    def reads_values(self) -> bool:
        """Whether a row operation reads the matrix's values (:meth:`RowOp.reads_values`:
        SpMV's do not on a pattern matrix, whose values are all ones; none are uploaded)."""
        return any(op.reads_values(self.matrix) for op in self.ops)

    def dummy(self, role: str):
        """A small placeholder buffer for kernel arguments an op does not use (one for
        both roles in shared memory, kept under each role's name too)."""
        hit = self._dummy.get(role)
        if hit is None:
            key = "shared" if self.pair.shared else role
            if key not in self._dummy:
                self._dummy[key] = alloc(self.pair.side(role), nbytes=64)
            hit = self._dummy[role] = self._dummy[key]
        return hit

    def scratch(self, role: str, array: np.ndarray):
        """A buffer on ``role``'s side holding ``array`` (frontier lists, counters)."""
        return alloc(self.pair.side(role), array)

    # ------------------------------------------------------------------ vectors
    def vector(self, name: str, init: np.ndarray) -> None:
        """Create (or overwrite) a full-length state vector on every side.

        Parameters
        ----------
        name : str
        init : ndarray of float32, int32 or uint32, shape (k,)
            Usually ``k = n``; bitmaps and other vectors may be shorter.
        """
        init = np.ascontiguousarray(init)
        if init.dtype not in _VEC_TYPES:
            raise TypeError(f"vector {name!r}: dtype must be float32, int32 or uint32, "
                            f"not {init.dtype}")
        if (name in self._vectors and self._vec_dtype[name] == init.dtype
                and self._vectors[name]["size"] == init.size):
            self.write(name, init)
            return
        self._new_vector(name, init.size, init.dtype, lambda side: alloc(side, init))
        for r in self.roles:
            if self._by_column(name, r):
                scatter(self, self.columns[r], name)

    def _by_column(self, name: str, role: str | None = None) -> bool:
        """Whether vector ``name`` is read by column on ``role``'s device (any, for None)
        whose columns were renumbered (its copy there is kept in the new numbering)."""
        return any(c.applied and name in c.names for r, c in self.columns.items()
                   if role is None or r == role)

    def _plain(self, *names: str) -> None:
        """Refuse a device-side operation that would mix the numberings of a vector read
        by column on a renumbered device."""
        for name in names:
            if name and self._by_column(name):
                raise DeviceError(f"vector {name!r} is kept in the renumbered columns' order "
                                  f"on a device: write it from the host (Engine.vector / "
                                  f"write), or run with columns='none'")

    def replace_indices(self, role: str, piece, indices) -> None:
        """Make ``indices`` the column indices ``piece`` of ``role``'s store reads (and, for
        a piece of the whole CSR, the whole CSR's on that side)."""
        old = piece.indices
        piece.indices = indices
        for key, (indptr, idx, data) in list(self._global_csr.items()):
            if idx is old:
                self._global_csr[key] = (indptr, indices, data)

    def _new_vector(self, name: str, size: int, dtype, make) -> None:
        """Vector ``name``'s buffers, ``make(side)`` each: one for both roles in shared
        mode (one context), else one a role."""
        self._vec_dtype[name] = np.dtype(dtype)
        if self.pair.shared:
            buf = make(self.pair.cpu)
            self._vectors[name] = {"size": int(size), **{r: buf for r in ("cpu", "gpu")}}
        else:
            self._vectors[name] = {"size": int(size),
                                   **{r: make(self.pair.side(r)) for r in self.roles}}

    def blank(self, name: str, size: int, dtype, value=0) -> None:
        """Create (or refill) a state vector of ``size`` entries of ``dtype`` on every side,
        every entry ``value``: filled on the devices, so no host array is built and nothing
        crosses the bus (enqueued, in order with the steps that follow).

        Parameters
        ----------
        name : str
        size : int
        dtype : float32, int32 or uint32
        value : scalar
        """
        dtype = np.dtype(dtype)
        if dtype not in _VEC_TYPES:
            raise TypeError(f"vector {name!r}: dtype must be float32, int32 or uint32, "
                            f"not {dtype}")
        have = self._vectors.get(name)
        if have is None or self._vec_dtype[name] != dtype or have["size"] != size:
            nbytes = max(int(size), 1) * dtype.itemsize
            self._new_vector(name, size, dtype, lambda side: alloc(side, nbytes=nbytes))
        self.fill(name, value)

    def buffer(self, name: str, role: str):
        """The buffer of vector ``name`` on ``role``'s side."""
        bufs = self._vectors[name]
        if role not in bufs:  # a role that joined later (a device-alone step)
            bufs[role] = filled(self.pair.side(role), bufs["size"], self._vec_dtype[name])
        return bufs[role]

    def step_args(self, args: dict, role: str) -> dict:
        """A step's kernel arguments on ``role``: each named vector's buffer there, the
        dummy for an unnamed one, ``ia`` as given (one call a step: its host cost counts)."""
        out, vectors = {}, self._vectors
        for k, v in args.items():
            hit = v if k == "ia" else vectors[v].get(role) if v else self.dummy(role)
            out[k] = hit if hit is not None else self.buffer(v, role)
        return out

    @property
    def device_iterations(self) -> bool:
        """Whether an app may run its iterations on the device alone, testing convergence
        there (one role in one process: no host round trip per iteration). A distributed
        engine says False: each step's sums are combined across ranks on the host."""
        return len(self.roles) == 1

    @property
    def whole_copies(self) -> bool:
        """Whether every side's copy of a vector is whole after a step (shared memory, or
        one role): nothing to gather before a phase that runs on one side."""
        return self.pair.shared or len(self.roles) < 2

    def make_whole(self, name: str, role: str) -> None:
        """Make role ``role``'s copy of vector ``name`` whole: every entry as the side
        owning its row wrote it (before a phase that runs on that side alone)."""
        self.write(name, self.read(name), roles=(role,))

    def merge_bits(self, name: str) -> None:
        """Make bitmap ``name`` (uint32 words, bit ``v`` in word ``v // 32``) whole on every
        side after a step in which each side set the bits of its own rows: an OR of the
        sides' copies (split memory with two roles; otherwise one copy already holds all)."""
        if self.pair.shared or len(self.roles) < 2:
            return
        self.write(name, self.read(name, role="cpu") | self.read(name, role="gpu"))

    def swap(self, a: str, b: str) -> None:
        """Exchange the names of two vectors (double buffering)."""
        if self._by_column(a) != self._by_column(b):
            self._plain(a, b)
        self._vectors[a], self._vectors[b] = self._vectors[b], self._vectors[a]
        self._vec_dtype[a], self._vec_dtype[b] = self._vec_dtype[b], self._vec_dtype[a]

    def write(self, name: str, array: np.ndarray, roles: tuple | None = None) -> None:
        """Write a whole vector to every side (or to ``roles``)."""
        mod = cl()
        array = np.ascontiguousarray(array, dtype=self._vec_dtype[name])
        done = set()
        for r in roles or self.roles:
            buf = self.buffer(name, r)
            if id(buf) in done:
                continue
            done.add(id(buf))
            mod.enqueue_copy(self.pair.side(r).queue, buf, array, is_blocking=True)
            self.host_syncs += 1
            if self._by_column(name, r):
                scatter(self, self.columns[r], name)

    def _each_buffer(self, name: str, roles: tuple | None):
        """(side, buffer) of vector ``name`` on each role, once per distinct buffer."""
        done = set()
        for r in roles or self.roles:
            buf = self.buffer(name, r)
            if id(buf) not in done:
                done.add(id(buf))
                yield self.pair.side(r), buf

    def _shared_barrier(self, side: Side) -> None:
        """In shared memory both roles' queues use one buffer: what one queue wrote must be
        done before the other queue's next command reads it (queues are not ordered with
        each other)."""
        if self.pair.shared and len(self.roles) == 2:
            side.queue.finish()
            self.host_syncs += 1

    def fill(self, name: str, value, roles: tuple | None = None) -> None:
        """Set every entry of vector ``name`` to ``value`` on the devices (no transfer;
        enqueued, in order with the steps that follow)."""
        pattern = np.array([value], dtype=self._vec_dtype[name])
        for side, buf in self._each_buffer(name, roles):
            cl().enqueue_fill_buffer(side.queue, buf, pattern, 0, buf.size)
            self._shared_barrier(side)

    def copy(self, src: str, dst: str, roles: tuple | None = None) -> None:
        """``dst <- src`` (vectors of one dtype and size) on the devices, no transfer."""
        if self._by_column(src) != self._by_column(dst):
            self._plain(src, dst)
        for side, buf in self._each_buffer(dst, roles):
            role = next(r for r in (roles or self.roles) if self.buffer(dst, r) is buf)
            cl().enqueue_copy(side.queue, buf, self.buffer(src, role))
            self._shared_barrier(side)

    def iota(self, name: str, roles: tuple | None = None) -> None:
        """Set entry ``i`` of vector ``name`` to ``i`` on the devices (no transfer)."""
        self.vector_kernel("iota", name, roles)

    def vector_kernel(self, kernel: str, out: str, roles: tuple | None = None, *inputs: str):
        """Run ``opencl/skeleton/vector.cl``'s ``kernel`` over vector ``out`` (and ``inputs``) on the
        devices: ``iota`` (out[i] = i) or ``multiply`` (out = inputs[0] * inputs[1])."""
        from .exchange import _TYPES
        self._plain(out, *inputs)
        dtype = self._vec_dtype[out]
        size = self._vectors[out]["size"]
        for r in roles or self.roles:
            side = self.pair.side(r)
            if self.pair.shared and r != (roles or self.roles)[0]:
                continue  # one buffer for both roles
            k = self.pair.kernel(side, ("skeleton/vector.cl",), {"T": _TYPES[dtype]}, kernel)
            enqueue_bound(self, side.queue, k, (-(-size // 64) * 64,), None,
                          (np.int32(size), *[self.buffer(v, r) for v in inputs],
                           self.buffer(out, r)))
            self._shared_barrier(side)

    def clear_stop(self, role: str) -> None:
        """Lower ``role``'s device-side stop flag (enqueued, in order with the steps): the
        start of a batch of steps that test their own stop on the device."""
        cl().enqueue_fill_buffer(self.pair.side(role).queue, self.stop[role],
                                 np.zeros(1, np.int32), 0, 4)

    def zero_unless_stopped(self, name: str, role: str) -> None:
        """Zero vector ``name`` on ``role`` unless that side's device-side stop flag is
        raised (enqueued, in order with the steps): the next step of a chain that the
        device may stop (:attr:`device_iterations`) gets a cleared output only where it
        runs, and a stopped chain keeps its last output."""
        from .exchange import _TYPES
        self._plain(name)
        side, size = self.pair.side(role), self._vectors[name]["size"]
        k = self.pair.kernel(side, ("skeleton/vector.cl",), {"T": _TYPES[self._vec_dtype[name]]},
                             "zero_unless_stopped")
        enqueue_bound(self, side.queue, k, (-(-size // 64) * 64,), None,
                      (np.int32(size), self.buffer(name, role), self.stop[role]))

    def set_entries(self, name: str, index: np.ndarray, values: np.ndarray,
                    roles: tuple | None = None, wait: bool = True) -> None:
        """Write a few entries of vector ``name`` (small host-to-device copies). ``wait=False``
        enqueues them, in order with the queue's other commands (pyopencl keeps the host
        values alive until they are copied), except in shared memory with two roles, where
        the other role's queue is not ordered with this one."""
        self._plain(name)
        mod = cl()
        dtype = self._vec_dtype[name]
        vals = np.ascontiguousarray(values, dtype=dtype)
        block = wait or (self.pair.shared and len(self.roles) == 2)
        for side, buf in self._each_buffer(name, roles):
            for i, v in zip(np.asarray(index).ravel(), vals.ravel()):
                one, at = np.array([v], dtype=dtype), int(i) * dtype.itemsize
                if block:
                    mod.enqueue_copy(side.queue, buf, one, dst_offset=at, is_blocking=True)
                    self.host_syncs += 1
                else:
                    write_async(side.queue, buf, one, dst_offset=at)

    def scalars(self, values, roles: tuple | None = None, wait: bool = True) -> None:
        """Write the app's scalars (``fscal[0..]``, float32) to every side.

        ``wait=False``: enqueue the writes, in order with the steps that follow on each
        queue, without waiting (in shared memory with two roles, whose queues share one
        buffer and are not ordered with each other, the write still waits)."""
        mod = cl()
        v = np.zeros(N_SCALARS, np.float32)
        v[:len(values)] = values
        block = wait or (self.pair.shared and len(self.roles) == 2)
        done = set()
        for r in roles or self.roles:
            if id(self.fscal[r]) in done:
                continue
            done.add(id(self.fscal[r]))
            if block:
                mod.enqueue_copy(self.pair.side(r).queue, self.fscal[r], v, is_blocking=True)
                self.host_syncs += 1
            else:
                write_async(self.pair.side(r).queue, self.fscal[r], v)

    def read(self, name: str, role: str | None = None) -> np.ndarray:
        """Vector ``name`` on the host: each entry from the side that owns its row.

        With ``role`` given, that side's whole copy as it is (a vector kept in a device's
        renumbered columns comes back in the input's numbering).
        """
        self.drain()
        size = self._vectors[name]["size"]
        out = np.empty(size, dtype=self._vec_dtype[name])
        if self._by_column(name):  # a copy in the input's numbering, else a renumbered one
            r = role or next((x for x in self.roles if not self._by_column(name, x)),
                             self.roles[0])
            read_staged(self.pair.side(r), out, self.buffer(name, r))
            self.host_syncs += 1
            if self._by_column(name, r):
                return out[self.columns[r].perm_host(self.pair.side(r))]
            return out
        if (self.pair.shared or role is not None or len(self.roles) == 1 or size != self.n
                or self.plan.method == "dynamic"):  # dynamic: each side holds every entry
            r = role or self.roles[0]
            read_staged(self.pair.side(r), out, self.buffer(name, r))
            self.host_syncs += 1
            return out
        read_split(self, out, name)  # the whole copy from one side, the other's rows
        return out

    # ---------------------------------------------------------------- row operations
    def op(self, name: str | None = None) -> RowOp:
        """The row operation ``name`` (default: the first)."""
        if name is None:
            return self.ops[0]
        for o in self.ops:
            if o.name == name:
                return o
        raise KeyError(f"no row operation {name!r} (have {[o.name for o in self.ops]})")

    def rowop(self, *, x: str | None = None, y: str | None = None, s0: str | None = None,
              s1: str | None = None, s2: str | None = None, aux: str | None = None,
              ia: int = 0, exchange: str | None = None, roles: tuple | None = None,
              wait: bool = True, op: str | None = None, slot: int | None = None):
        """One row operation over every row of the plan (both devices at once).

        Parameters
        ----------
        x, y, s0, s1, s2, aux : str
            Vector names for the kernel's arguments (see ``opencl/skeleton/rowop.cl``).
        ia : int
            The integer scalar argument.
        exchange : str, optional
            Vector whose halo is exchanged after the step (split memory only).
        roles : tuple of str, optional
            Run only these roles' shares (default: every active role).
        wait : bool
            False: enqueue and return None at once (no sums read, no exchange);
            :meth:`drain` records the timings. For steps whose results the host
            does not need, so the devices never idle between them.
        op : str, optional
            Which of the engine's row operations (default: the first).
        slot : int, optional
            With ``wait=False``: still reduce the step's sums on the device into
            slot ``slot % SLOTS`` (read later with :meth:`sums`), for
            iterations that test convergence on the device.

        Returns
        -------
        ndarray, shape (2,) or None
            The two sums of the app's epilogue over the rows run (float64 for
            float apps, int64 for integer apps).
        """
        roles = tuple(r for r in (roles or self.roles) if r in self.stores)
        args = {"x": x, "y": y, "s0": s0, "s1": s1, "s2": s2, "aux": aux, "ia": ia}
        o = self.op(op)
        if self.columns:
            check_step_numbering(self.columns, roles, o, args, exchange)
        return self.executor.step(self, o, args, roles, wait=wait, exchange=exchange,
                                  slot=None if slot is None else slot % SLOTS)

    def sums(self, role: str, first: int, count: int, op: str | None = None) -> np.ndarray:
        """Read the device-side sums of ``count`` steps from slot ``first`` on: shape
        (count, 2) of the op's partial type. The queue is in order, so this waits for
        those steps."""
        return self.sums_later(role, first, count, op)()

    def sums_later(self, role: str, first: int, count: int, op: str | None = None):
        """:meth:`sums` with its read enqueued now and waited for by the call it returns:
        steps enqueued after the read run while the host waits for it."""
        o = self.op(op)
        ol = self.stores[role].ops(o, self.fscal[role], self.stop[role])
        if PINNED_SUMS:
            key = (role, o.name)
            if key not in self._sums_host:
                self._sums_host[key] = PinnedHost(self.pair.side(role),
                                                  np.zeros(2 * SLOTS, o.part_dtype))
            out = self._sums_host[key].host.reshape(SLOTS, 2)
        else:
            out = np.empty((SLOTS, 2), dtype=o.part_dtype)
        wait = read_later(self, role, [(out, ol.reduced)])
        return lambda: (wait(), out[(np.arange(count) + first) % SLOTS])[1]

    def drain(self, until: float | None = None) -> None:
        """Wait for steps enqueued with ``wait=False`` and record their timings (their
        wall time, to ``until`` or now, is spread evenly over them: the host did not see
        their ends; so is each device's span over the batch unless ``options.profile``
        is ``launch``)."""
        if not self.pending:
            return
        last = self._pending_last()
        done = cl().command_execution_status.COMPLETE
        if any(ev.command_execution_status != done for ev in last.values()):
            self.host_syncs += 1  # steps a blocking read already waited for cost no sync
        for ev in last.values():
            ev.wait()
        time_pending(self.profile, self.roles, self.pending)
        for rec, events, _ in self.pending:
            for role, ups in rec.pending_uploads.items():
                rec.upload[role] = event_seconds(ups)
                rec.streamed_bytes[role] = self.stores[role].describe()["streamed_bytes"]
            rec.pending_uploads = {}
        end = time.perf_counter() if until is None else until
        wall = max(end - self.pending[0][2], 0.0) / len(self.pending)
        for rec, _, _ in self.pending:
            rec.wall = wall
            self.records.append(rec)
        self.pending.clear()

    def _pending_last(self) -> dict:
        """Each role's last event among the steps enqueued without a wait."""
        last = {}
        for _, events, _ in self.pending:
            last.update({role: evs[-1] for role, evs in events.items() if evs})
        return last

    def add_record(self, rec: StepRecord, t0: float) -> None:
        """Record a step the host waited for, begun at ``t0`` (:func:`time.perf_counter`).
        The steps enqueued before it without a wait are recorded first where every role's
        are done, as on its own queue they are (in order): their span over a device then
        ends before this step's launches, rather than taking in its time as well. Where
        another role's are still running (a split plan's step on one side) they wait for
        a later drain, and their span may take in this step's."""
        done = cl().command_execution_status.COMPLETE
        if self.pending and all(ev.command_execution_status == done
                                for ev in self._pending_last().values()):
            self.drain(until=t0)
        self.records.append(rec)

    def time_step(self, rec: StepRecord, role: str, events: list) -> None:
        """``rec``'s device seconds on ``role`` from one step's events, as :attr:`profile`
        says (:func:`~finepar.engine.timing.time_step`)."""
        time_step(self.profile, rec, role, events)

    def read_buffer(self, role: str, out: np.ndarray, buffer, count: int | None = None
                    ) -> np.ndarray:
        """Blocking read of a device buffer into ``out`` (its first ``count`` entries),
        counted in :attr:`host_syncs`; returns ``out``."""
        dst = out if count is None else out[:count]
        cl().enqueue_copy(self.pair.side(role).queue, dst, buffer, is_blocking=True)
        self.host_syncs += 1
        return out

    def finish(self) -> None:
        """Wait for everything enqueued on every side."""
        for r in self.roles:
            self.pair.side(r).queue.finish()
            self.host_syncs += 1

    # ---------------------------------------------------------------- exchange
    def prepare_exchange(self) -> None:
        """Compute the halo now (split memory, both roles); apps that exchange call
        this while preparing so that it is not timed. Idempotent."""
        if self._needs_halo and self._halo is None:
            t0 = time.perf_counter()
            self._halo = Halo(self.pair, self.matrix, self.stores, self.plan.owner())
            self.halo = self._halo.needs
            self.setup_seconds += time.perf_counter() - t0

    def after_kernels(self, exchange: str | None) -> None:
        """Called by a waited-for row operation between its kernels and its sums' reads:
        nothing here (a rank packs its halo: ``DistEngine.after_kernels``)."""

    def halo_events(self, name: str) -> list:
        """Enqueue the halo exchange of vector ``name``; returns its events."""
        self.prepare_exchange()
        if self._halo is None:
            return []
        # the host waits for each direction's packed entries before sending them on
        self.host_syncs += sum(1 for v in self._halo.needs.values() if v.size)
        perms = {r: self.columns[r].perm_host(self.pair.side(r)) for r in ("cpu", "gpu")
                 if self._by_column(name, r)}  # a copy kept in a device's column numbering
        return self._halo.enqueue(self._vec_dtype[name],
                                  {r: self.buffer(name, r) for r in ("cpu", "gpu")}, perms)

    def exchange(self, name: str) -> float:
        """Move the halo of vector ``name`` both ways now (split memory; a no-op when
        shared). Returns the summed time of the exchange commands, seconds."""
        evs = self.halo_events(name)
        for ev in evs:
            ev.wait()
        if evs:
            self.host_syncs += 1
        return event_seconds(evs)[0]

    # ------------------------------------------------------------ device-alone steps
    def push_role(self) -> str | None:
        """The role that runs frontier-driven steps alone (FinePar TKDE §4.2), or None:
        the first of :meth:`push_roles`."""
        roles = self.push_roles()
        return roles[0] if roles else None

    def push_roles(self) -> tuple[str, ...]:
        """The roles that can run frontier-driven steps alone, in the paper's order of
        preference.

        The CPU when it has rows and can hold the whole CSR in one allocation
        (the paper's choice; always so in shared memory), then the GPU when it
        can; the push side needs the whole out-edge CSR. Empty when no side
        can hold it (a share cut into chunks for lack of memory) or append to a
        frontier list (no 64-bit atomics): frontier apps then pull every
        iteration over the plan's (chunked) shares.
        """
        def holds(role: str) -> bool:
            side = self.pair.side(role)
            st = self.stores.get(role)
            chunked = st is not None and len(st.pieces) > 1
            return (self.fits_whole(side) and not chunked and side.info.int64_atomics
                    and self.matrix.indices.nbytes <= self.options.budget(role, side))
        out = []
        if "cpu" in self.roles and (self.pair.shared or holds("cpu")):
            out.append("cpu")
        if "gpu" in self.roles and holds("gpu"):
            out.append("gpu")
        if "gpu" not in self.roles and "cpu" not in out and holds("cpu"):
            out.append("cpu")
        return tuple(out)

    def vertex_role(self) -> str:
        """Where an app's per-vertex work runs (every side holds whole vectors): the push
        role, else the GPU, else the only role."""
        return self.push_role() or ("gpu" if "gpu" in self.roles else self.roles[0])

    def launch(self, role: str, kernel, global_size: int, args: tuple | None, *,
               kind: str = "push", wg: int = 64, wait: bool = True) -> StepRecord:
        """Run one kernel on one side (a device-alone step); returns its StepRecord
        (also appended to ``records``). ``args`` are set on the engine's own copy of the
        kernel, those that changed only (:func:`~finepar.engine.binding.enqueue_bound`);
        ``args=None``: the kernel holds its arguments already
        (:func:`~finepar.engine.binding.bind_changed`)."""
        t0 = time.perf_counter()
        side = self.pair.side(role)
        size = (-(-max(global_size, 1) // wg) * wg,)
        ev = (enqueue_bound(self, side.queue, kernel, size, (wg,), args) if args is not None
              else cl().enqueue_nd_range_kernel(side.queue, kernel, size, (wg,)))
        rec = StepRecord(kind, (role,), launches={role: 1})
        if wait:
            ev.wait()
            self.host_syncs += 1
            if self.profile != "none" or role not in PlainQueues.ROLES:  # a profiling queue
                rec.kernel[role], rec.span[role] = event_seconds([ev])
            rec.wall = time.perf_counter() - t0
            self.add_record(rec, t0)
        else:
            self.pending.append((rec, {role: [ev]}, t0))
        return rec

    # ---------------------------------------------------------------- report
    def describe(self) -> dict:
        """How each share was lowered (segments, blocks, launches, partitions, chunks)."""
        out = {r: {**st.low.describe(), **st.describe()} for r, st in self.stores.items()}
        if self.plan.throttle is not None and "gpu" in out:
            out["gpu"]["throttle"] = self.plan.throttle.describe()
        return out

    def summary(self) -> dict:
        """Totals over all steps (see :func:`finepar.engine.timing.summarize`)."""
        self.drain()
        out = summarize(self.records, self.setup_seconds, self.halo)
        out["host_syncs"] = self.host_syncs
        out["profile"] = self.profile
        out["executor"] = self.executor.name
        out["lowering"] = self.describe()
        out["columns"] = ({r: c.to_dict() for r, c in self.columns.items()}
                          if self.columns else None)
        ex = self.executor
        if isinstance(ex, ProfilingExecutor) and ex.cover is not None:
            st = ex.stime
            out["sj"] = {"cover": [int(v) for v in ex.cover], "passes": ex.chosen_after,
                         "root_s": float(st[0]),
                         "cover_s": float(sum(st[v] for v in ex.cover))}
        return out

    def reset_records(self) -> None:
        """Forget the steps recorded so far (and the host syncs counted)."""
        self.drain()
        self.records.clear()
        self.host_syncs = 0
