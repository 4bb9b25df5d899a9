"""The frontier loop that BFS, CC and SSSP share (FinePar TKDE §4.2; Beamer et al., SC'12).

Each iteration either **pulls** (a row operation over every row of the plan,
both devices at once: bottom-up BFS, a full edge pass) or **pushes** (one
device, the push role, expands the frontier alone from a vertex list kept on
that device). The app says which it prefers from the frontier's size and
edges; the loop moves the state between the two forms when the direction
changes:

* push -> pull: the push side's vectors go to every other side, and the app turns
  its queue into the marks a pull step reads (BFS: a frontier bitmap);
* pull -> push: every side's owned entries go to the push side, and the app
  turns the marks the pull left into a queue there, on the device.

Push levels run without a host round trip each: the host enqueues a batch of
levels whose stop test is on the device (an empty list makes a level a no-op; a
list the app's limit refuses, e.g. Beamer's switch to bottom-up, stops the batch)
and reads the lists' tallies once per batch (:class:`FrontierQueue`). The batch
doubles while the frontier stays small. A list that fits one work-group's local
memory runs many levels in one launch (``advance_local`` in ``opencl/skeleton/frontier.cl``).
A pull level reads its tally at once (it decides the next direction).

Every iteration is recorded in a trace: its direction, where it ran, the frontier's
size and edges, what it found and the launch that ran it; ``launches`` says how many
levels each launch (or batch) ran.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .core import Engine
from .binding import call, enqueue_bound
from .reads import read_buffers
from .trace import FrontierTrace
from ..errors import DeviceError
from ..device import cl, filled, write_async
from .backref import EngineRef

#: Most levels of one batch of ``advance`` launches (one read of their tallies).
MAX_BATCH = 64
#: Most levels of one ``advance_local`` launch.
MAX_LOCAL_LEVELS = 2048
#: 64-bit words of app state before the tallies (``STATE`` in opencl/skeleton/frontier.cl).
STATE = 4
#: A push limit that never stops a run (see :meth:`FrontierQueue.run`).
NO_LIMIT = (0.0, 0, 0, 0, 0)
#: The tally marks of opencl/skeleton/frontier.cl.
REFUSED = np.uint64(0xFFFFFFFFFFFFFFFF)
PAUSED = np.uint64(0xFFFFFFFFFFFFFFFE)


def sync_to_push_side(engine: Engine, names: tuple[str, ...], push: str | None = None) -> None:
    """Gather each vector's owned entries onto the push role (default: the engine's vertex
    role; a no-op in shared memory or with one role: one copy of the truth; across ranks
    on a distributed engine)."""
    if engine.whole_copies:
        return
    for name in names:
        engine.make_whole(name, push or engine.vertex_role())


def sync_from_push_side(engine: Engine, names: tuple[str, ...], push: str | None = None) -> None:
    """Copy the push role's vectors to every other side."""
    if engine.pair.shared or len(engine.roles) < 2:
        return
    push = push or engine.vertex_role()
    others = tuple(r for r in engine.roles if r != push)
    for name in names:
        engine.write(name, engine.read(name, role=push), roles=others)


class RowMover:
    """Moves the entries of the rows each other role owns between it and the push side
    (split memory, two roles): what a pull step writes only on its own rows (BFS's levels
    and parents) goes to the push side before a push, and back after it, so a switch moves
    the other side's rows, not whole vectors.

    Parameters
    ----------
    engine : Engine
    push : str
        The push role.
    """

    engine = EngineRef()  # weak: the engine's state holds this

    def __init__(self, engine: Engine, push: str):
        from ..device import alloc
        self.engine, self.push = engine, push
        self.parts = []
        for o in engine.roles:
            rows = engine.plan.shares[o].rows if o != push else np.empty(0)
            if rows.size:  # the rows' ids and a 4-byte staging buffer on both sides
                idx = np.ascontiguousarray(rows, dtype=np.int32)
                sides = (o, push)
                self.parts.append({"role": o, "count": idx.size,
                                   "idx": {r: alloc(engine.pair.side(r), idx, read_only=True)
                                           for r in sides},
                                   "tmp": {r: alloc(engine.pair.side(r), nbytes=4 * idx.size)
                                           for r in sides},
                                   "host": np.empty(4 * idx.size, np.uint8)})
        self.rows = sum(p["count"] for p in self.parts)

    def _move(self, name: str, to_push: bool) -> None:
        from ..engine.exchange import _TYPES
        eng, mod = self.engine, cl()
        dtype = eng._vec_dtype[name]
        for p in self.parts:
            src, dst = (p["role"], self.push) if to_push else (self.push, p["role"])
            ss, ds = eng.pair.side(src), eng.pair.side(dst)
            count, host = p["count"], p["host"].view(dtype)
            grid = (-(-count // 64) * 64,)
            call(eng.pair.kernel(ss, ("skeleton/vector.cl",), {"T": _TYPES[dtype]}, "gather"),
                 ss.queue, grid, None, np.int32(count), p["idx"][src], eng.buffer(name, src),
                 p["tmp"][src])
            eng.read_buffer(src, host, p["tmp"][src])
            mod.enqueue_copy(ds.queue, p["tmp"][dst], host, is_blocking=False)
            call(eng.pair.kernel(ds, ("skeleton/vector.cl",), {"T": _TYPES[dtype]}, "scatter"),
                 ds.queue, grid, None, np.int32(count), p["idx"][dst], p["tmp"][dst],
                 eng.buffer(name, dst))

    def to_push(self, names: tuple) -> None:
        """The other roles' rows of each vector -> the push side."""
        for name in names:
            self._move(name, True)

    def from_push(self, names: tuple) -> None:
        """The push side's values of the other roles' rows -> those roles."""
        for name in names:
            self._move(name, False)


def pick_algorithm(engine: Engine, asked: str, one_device: str, over_plan: str, *,
                   plan_anyway: bool = False) -> str:
    """The algorithm a run of an app with two takes: ``auto`` is ``one_device`` (which
    needs one device holding the whole CSR) where a device does (:meth:`Engine.push_roles`)
    and ``plan_anyway`` is false, else ``over_plan`` (row operations over the plan, chunked
    shares included).

    Raises
    ------
    UsageError
        ``one_device`` asked for where no device holds the whole CSR.
    """
    from ..errors import UsageError
    holds = bool(engine.push_roles())
    if asked == one_device and not holds:
        raise UsageError(f"algorithm {one_device} needs one device holding the whole CSR "
                         f"(none can here: use --algorithm {over_plan})")
    if asked == "auto":
        return one_device if holds and not plan_anyway else over_plan
    return asked


def round_trip_seconds(engine: Engine, role: str, repeats: int = 3) -> float:
    """The least time of an empty launch and a blocking 8-byte read on ``role`` (what a
    push level costs before any work; not counted as a run's host sync)."""
    side = engine.pair.side(role)
    k = engine.pair.kernel(side, ("skeleton/vector.cl",), {"T": "int"}, "iota")
    buf, host = engine.dummy(role), np.zeros(2, np.int32)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        call(k, side.queue, (64,), None, np.int32(0), buf)
        cl().enqueue_copy(side.queue, host, buf, is_blocking=True)
        best = min(best, time.perf_counter() - t0)
    return best


def choose_push_role(engine: Engine, names: tuple, *, owned_rows: bool,
                     roles: tuple | None = None) -> tuple[str | None, dict]:
    """The role that pushes small frontiers (FinePar TKDE §4.2), where it pays.

    Each role that can push (:meth:`Engine.push_roles`) is measured: the round trip of an
    empty level on it (:func:`round_trip_seconds`) plus, in split memory with two roles,
    moving the vectors ``names`` for one switch each way (with ``owned_rows``: the rows
    the other role owns, :class:`RowMover`, timed once; otherwise whole vectors, the same
    for either role). The cheapest wins; another role must beat the paper's choice (the
    CPU first) by a quarter, so near-equal devices (an emulated pair) keep it.
    ``roles``: the candidates instead of :meth:`Engine.push_roles` (a rank of a
    distributed run pushes from its own vertices' out-edges: ``DistEngine.own_push_roles``).

    Returns
    -------
    (str or None, dict)
        The role, and each candidate's measured seconds.
    """
    roles = engine.push_roles() if roles is None else roles
    if len(roles) < 2:
        return (roles[0] if roles else None), {}
    moves = (not engine.pair.shared and len(engine.roles) == 2 and owned_rows
             and engine.plan.method != "dynamic")
    cost = {}
    for r in roles:
        cost[r] = round_trip_seconds(engine, r)
        if moves:
            t0 = time.perf_counter()
            RowMover(engine, r).to_push(names[:1])
            cost[r] += 2 * len(names) * (time.perf_counter() - t0)
    best = roles[0]
    for r in roles[1:]:
        if cost[r] < 0.75 * cost[best]:
            best = r
    return best, {r: float(v) for r, v in cost.items()}


def cpu_may_walk(engine: Engine, graph) -> bool:
    """Whether the CPU may walk ``graph``'s frontiers: it is one of the plan's roles, or
    the plan is a fine split (the tuner gave it no rows: a road network's rows are all
    short), and it holds the whole CSR within its budget. Not for a plan of the GPU
    alone (``--devices gpu``)."""
    if "cpu" not in engine.roles and engine.plan.method != "fine":
        return False
    if engine.pair.shared and "cpu" in engine.roles:
        return True
    side = engine.pair.side("cpu")
    return (engine.fits_whole(side)
            and graph.indices.nbytes + graph.indptr.nbytes <= engine.options.budget("cpu", side))


def make_walker(engine: Engine, graph, sources: tuple, names: tuple, push: str | None,
                costs: dict, kind: str = "levels", results: tuple = ()):
    """The CPU's walk of a frontier app, or None where it cannot or should not run: no push
    side, no CPU role, a CPU that cannot hold the whole CSR, or ``EngineOptions.walk ==
    'none'``. ``kind``: ``levels`` (:class:`~finepar.engine.walk.SerialWalk`, BFS's) or
    ``heap`` (:class:`~finepar.engine.heapwalk.HeapWalk`, SSSP's Dijkstra). Its prior cost
    of a push level is the push side's measured round trip (``costs``, the push role's
    choice, includes a switch's moves). ``results``: the vectors a run's answer reads, read
    with a small input's walk (:meth:`~finepar.engine.walk.CpuWalk.read_out`)."""
    from .walk import SerialWalk, prebuild_moves
    from .heapwalk import HeapWalk
    mode = engine.options.walk
    if mode == "none" or push is None or not cpu_may_walk(engine, graph):
        return None
    level = round_trip_seconds(engine, push)
    cls = {"levels": SerialWalk, "heap": HeapWalk}[kind]
    walker = cls(engine, graph, sources, names, push, level,
                 fixed=None if mode == "auto" else int(mode), results=results)
    if not walker.same:
        prebuild_moves(engine, names, push)
    return walker


def count_roots(side, program, labels, n: int) -> int:
    """The vertices ``v < n`` whose label is ``v`` (a labelling's roots: CC's components),
    counted on the device that holds ``labels`` (int32 buffer) by ``frontier.cl``'s
    ``count_roots`` in ``program``: one 4-byte read instead of a count over n labels on
    the host."""
    mod = cl()
    total = filled(side, 1, np.uint32)
    groups = -(-max(int(n), 1) // 256)
    call(mod.Kernel(program, "count_roots"), side.queue, (groups * 256,), (256,), np.int32(n),
         labels, total)
    out = np.zeros(1, np.uint32)
    mod.enqueue_copy(side.queue, out, total, is_blocking=True)
    return int(out[0])


def tally_bits(n: int, nnz: int) -> int:
    """Bits of a list's 64-bit tally that sum out-degrees (the rest count up to ``n``
    vertices); see opencl/skeleton/frontier.cl.

    Raises
    ------
    DeviceError
        When no split of 64 bits holds both ``n`` and ``nnz``.
    """
    edge_bits = 64 - max(int(n).bit_length(), 1)
    if int(nnz) >= (1 << edge_bits) - 2:  # the two largest values are batch marks
        raise DeviceError(f"a frontier of {n:,} vertices and {nnz:,} edges does not fit one "
                          "64-bit tally")
    return edge_bits


def limit_args(limit: tuple | None) -> tuple:
    """A push limit (:meth:`FrontierQueue.run`) as the kernels' ``LIMIT_ARGS``."""
    f, budget, decay, min_edges, check_from = limit or NO_LIMIT
    return (np.float32(f), np.int64(budget), np.int32(decay), np.int64(min_edges),
            np.int32(check_from))


def local_geometry(info, offset_bytes: int) -> tuple[int, int] | None:
    """``(LWG, QCAP)`` of ``advance_local`` on a device: a work-group of 1024 work-items on
    a GPU (256 elsewhere, within the device's limit) and the largest power-of-two list
    capacity, at most 2048, whose two lists of vertices and offsets fit its local memory;
    None without 64-bit atomics or room for 256 vertices."""
    if not info.int64_atomics:
        return None
    lwg = min(1024 if info.kind == "gpu" else 256, int(info.max_work_group_size))
    lwg = 1 << (max(lwg, 1).bit_length() - 1)
    room = (int(info.local_mem_bytes) - 1024) // (2 * (4 + offset_bytes))
    qcap = 1 << (max(min(room, 2048), 1).bit_length() - 1)
    return (lwg, qcap) if qcap >= 256 else None


def queue_defines(info, graph, defines: dict | None = None, local: bool = True, *,
                  role: str, aggregate: bool = True) -> dict:
    """The ``-D`` options of a :class:`FrontierQueue`'s program on the device ``info``
    describes, in ``role``, for ``graph`` (its first build; a device that cannot run the
    local advance at that size gets another): known before any engine, so the build can
    start early (:func:`early_build`). The GPU role's appends are aggregated per work-group
    (``AGG_APPENDS``: thousands of work-items appending to one list serialise on its tally);
    the CPU's stay one atomic each (a few cores contend little, and a PoCL build for the CPU
    aborted on the barriers the aggregation needs), as do those of a queue built without
    ``aggregate`` (:class:`FrontierQueue`)."""
    wide = graph.indptr.dtype == np.int64
    opts = {"OFFSET_T": "long" if wide else "int", "EDGE_BITS": tally_bits(graph.n, graph.nnz),
            "STATE": STATE, **({"AGG_APPENDS": 1} if role == "gpu" and aggregate else {}),
            **(defines or {})}
    geo = local_geometry(info, 8 if wide else 4) if local else None
    if geo is not None:
        opts.update(LWG=geo[0], QCAP=geo[1], ELOCAL=16 * geo[0])
    return opts


def early_build(pair, builds: list) -> None:
    """Start building ``(role, sources, defines)`` programs on the build threads
    (:meth:`~finepar.device.DevicePair.start_build`) and return: a later
    :meth:`~finepar.device.DevicePair.program` call for the same program takes it
    (waiting for it while it builds). A frontier queue's program (its defines set ``LWG``)
    is built as :func:`queue_program` builds it, with the smaller work-group the device
    may need right after. A guess that no run asks for costs a build on a spare thread; a
    build that fails is built again, and fails, where it is used."""
    for role, sources, defines in builds:
        if "LWG" in defines:
            geo = (int(defines["LWG"]), int(defines["QCAP"]))
            pair.start_build(queue_program, pair, pair.side(role), tuple(sources),
                             dict(defines), geo)
        else:
            pair.start_build(pair.program, pair.side(role), sources, defines)


def queue_program(pair, side, sources: tuple, opts: dict, geo: tuple[int, int] | None):
    """A frontier queue's program on ``side``, built with the largest ``advance_local``
    work-group (``geo``: ``(LWG, QCAP)``, None: no local advance) the device runs as
    compiled (its registers and local memory): a device that cannot run ``LWG`` gets the
    program again at the largest power of two it can, or none below 64.

    Returns
    -------
    (program, advance_local kernel or None, (LWG, QCAP) or None)
        ``opts`` is updated to the options of the program returned.
    """
    mod = cl()
    size = mod.kernel_work_group_info.WORK_GROUP_SIZE
    while True:
        if geo is not None:
            opts.update(LWG=geo[0], QCAP=geo[1], ELOCAL=16 * geo[0])
        prg = pair.program(side, sources, opts)
        local = mod.Kernel(prg, "advance_local") if geo is not None else None
        fits = None if local is None else int(local.get_work_group_info(size, side.queue.device))
        if fits is None or fits >= geo[0]:
            return prg, local, geo
        geo = (1 << (fits.bit_length() - 1), geo[1]) if fits >= 64 else None


@dataclass
class PushRun:
    """What one launch (or batch of launches) of push levels did.

    Attributes
    ----------
    mode : {'local', 'batch', 'step', 'pull', 'chain'}
        One ``advance_local`` launch, a batch of ``advance`` launches, an app's
        own one-level step, a pull step, or pull steps chained on one device
        (:meth:`~finepar.apps.bfs.BFS.pull_chain`).
    levels : list of tuple
        ``(size, edges, found, found_edges)`` of each level that ran.
    enqueued : int
        Levels enqueued (a batch past its stop enqueues levels that do nothing).
    refused : bool
        The app's limit stopped the run: the next level should pull.
    size, edges : int
        The current list after the run.
    stop : str
        Why it stopped: ``empty`` (no frontier left), ``refused``, ``paused`` (a local
        launch whose list outgrew local memory or its level cap), ``batch`` (every level
        enqueued ran), ``switch`` (a chain of pulls stopped by the app's direction test).
    """

    mode: str
    levels: list
    enqueued: int
    refused: bool
    size: int
    edges: int
    stop: str = "batch"


class FrontierQueue:
    """A frontier as a vertex list on one device, with a load-balanced advance.

    The list carries its vertices' out-edge offsets, made by the appends themselves
    (opencl/skeleton/frontier.cl): levels need no scan, and a batch of them no host round trip.

    Parameters
    ----------
    engine : Engine
    role : str
        The device that holds the list (the push role).
    graph : Graph
        The out-edge CSR the advance walks (uploaded whole to that side).
    sources : tuple of str
        The app's advance fragment, then ``frontier.cl``.
    defines : dict
        Extra ``-D`` options of the fragment.
    with_data : bool
        Upload the CSR's values too (weighted apps).
    local : bool
        Build ``advance_local`` where the device allows (64-bit atomics, local memory).
    refill : bool
        The fragment refills an empty list itself (``LOCAL_REFILL``; a batch level's
        ``before_level`` kernel): a run may start from an empty list.
    aggregate : bool
        On the GPU, aggregate the appends per work-group (``AGG_APPENDS``, default): for
        lists that take many appends. False for an app whose advance appends nothing and
        whose lists are short (CC's), which would pay the aggregation's barriers for none.

    Attributes
    ----------
    size : int
        Vertices in the current list.
    edges : int
        Their out-edges (the next advance's work-items).
    """

    engine = EngineRef()  # weak: the engine's state holds this

    def __init__(self, engine: Engine, role: str, graph, sources: tuple, defines: dict | None = None,
                 *, with_data: bool = False, local: bool = True, refill: bool = False,
                 aggregate: bool = True):
        self.engine, self.role = engine, role
        side = self.side = engine.pair.side(role)
        n = self.n = graph.n
        self.nnz = graph.nnz
        self.degrees = np.diff(graph.indptr)
        wide = graph.indptr.dtype == np.int64
        self.offset_dtype = np.dtype(np.int64 if wide else np.int32)
        self.indptr, self.indices, data = engine.global_csr(role, graph, wide=wide)
        if with_data:
            from ..device import alloc
            data = engine._global_csr.setdefault(
                ("data", role, id(graph)), (alloc(side, graph.data, read_only=True),))[0]
        self.data = data
        self.edge_bits = tally_bits(n, graph.nnz)
        self.front = engine.scratch(role, np.zeros(max(n, 1), np.int32))
        self.next = engine.scratch(role, np.zeros(max(n, 1), np.int32))
        self.offs = engine.scratch(role, np.zeros(max(n, 1), self.offset_dtype))
        self.next_offs = engine.scratch(role, np.zeros(max(n, 1), self.offset_dtype))
        self.max_levels = max(MAX_BATCH, MAX_LOCAL_LEVELS)
        self.tallies = engine.scratch(role, np.zeros(STATE + self.max_levels + 2, np.uint64))
        self.host = np.zeros(STATE + self.max_levels + 2, np.uint64)
        self.size = self.edges = 0
        self.refill = refill
        opts = queue_defines(side.info, graph, defines, local, role=role, aggregate=aggregate)
        geo = local_geometry(side.info, self.offset_dtype.itemsize) if local else None
        prg, self.local_kernel, geo = queue_program(engine.pair, side, tuple(sources), opts, geo)
        self.program = prg
        mod = cl()
        self.lwg, self.qcap = geo if geo is not None else (0, 0)
        self.elocal = 16 * self.lwg
        self.advance_kernel = mod.Kernel(prg, "advance")
        self.kernels = {k: mod.Kernel(prg, k) for k in
                        ("queue_from_bitmap", "bitmap_from_queue", "queue_from_stamp",
                         "load_one")}
        #: every later list's tally is zero already (the current list was just made):
        #: the next run's levels need no fill
        self.zeroed = False
        self.grid_cap = max(256, side.info.compute_units * 2048)

    # ------------------------------------------------------------- the current list
    def _set_tally(self, size: int, edges: int) -> None:
        """Write the current list's tally (non-blocking: no host wait)."""
        t = np.array([(int(size) << self.edge_bits) | int(edges)], np.uint64)
        write_async(self.side.queue, self.tallies, t, dst_offset=8 * STATE)
        self.size, self.edges, self.zeroed = int(size), int(edges), False

    def set_state(self, words) -> None:
        """Write the first app state words (``tallies[0 ..]``; non-blocking)."""
        w = np.array([int(x) for x in words], np.uint64)
        write_async(self.side.queue, self.tallies, w)

    def _zero_tallies(self, first: int, count: int) -> None:
        """Zero the tallies of lists ``first .. first + count - 1``."""
        cl().enqueue_fill_buffer(self.side.queue, self.tallies, np.zeros(1, np.uint64),
                                 8 * (STATE + first), 8 * count)

    def load_all(self) -> None:
        """Make every vertex the current list (on the device): offsets are indptr."""
        k = self.engine.pair.kernel(self.side, ("skeleton/vector.cl",), {"T": "int"}, "iota")
        enqueue_bound(self.engine, self.side.queue, k, (-(-self.n // 64) * 64,), None,
                      (np.int32(self.n), self.front))
        if self.n:
            cl().enqueue_copy(self.side.queue, self.offs, self.indptr,
                              byte_count=self.n * self.offset_dtype.itemsize)
        self._set_tally(self.n, int(self.degrees.sum()))
        self.engine._shared_barrier(self.side)

    def load(self, vertices: np.ndarray) -> None:
        """Make ``vertices`` (int32) the current list (non-blocking copies; one vertex: one
        launch of ``load_one``, which also zeroes every later list's tally)."""
        v = np.array(vertices, dtype=np.int32)  # a copy: the write is not waited for
        if v.size == 1:
            self.engine.launch(self.role, self.kernels["load_one"], self.max_levels + 1,
                               (np.int32(v[0]), np.int32(self.max_levels + 1), self.indptr,
                                self.front, self.offs, self.tallies), kind="queue", wg=64,
                               wait=False)
            self.size, self.edges, self.zeroed = 1, int(self.degrees[v[0]]), True
            return
        deg = self.degrees[v].astype(self.offset_dtype)
        if v.size:
            offs = np.concatenate([[0], np.cumsum(deg[:-1])]).astype(self.offset_dtype)
            write_async(self.side.queue, self.front, v)
            write_async(self.side.queue, self.offs, offs)
        self._set_tally(v.size, int(deg.sum()))

    def _build(self, kernel: str, args: tuple, size: int, edges: int) -> None:
        self._zero_tallies(0, self.max_levels + 2)  # the list's and every later one's
        self.zeroed = True
        self.engine.launch(self.role, self.kernels[kernel], self.n, args, kind="queue",
                           wg=256, wait=False)
        self.size, self.edges = int(size), int(edges)

    def from_bitmap(self, bitmap, size: int, edges: int) -> None:
        """The current list <- the vertices set in ``bitmap`` (a device buffer); ``size``
        and ``edges`` are what the caller knows of them (a pull step's tally)."""
        self._build("queue_from_bitmap", (np.int32(self.n), bitmap, self.indptr,
                                          self.front, self.offs, self.tallies), size, edges)

    def from_stamp(self, stamp, it: int, size: int, edges: int) -> None:
        """The current list <- the vertices with ``stamp[v] == it`` (``size`` and ``edges``
        as for :meth:`from_bitmap`)."""
        self._build("queue_from_stamp", (np.int32(self.n), stamp, np.int32(it), self.indptr,
                                         self.front, self.offs, self.tallies), size, edges)

    def to_bitmap(self, bitmap, wait: bool = True) -> None:
        """Set the current list's bits in ``bitmap`` (zeroed by the caller); ``wait=False``
        where only this side's queue reads the bitmap next (in order)."""
        if self.size:
            self.engine.launch(self.role, self.kernels["bitmap_from_queue"], self.size,
                               (np.int32(self.size), self.front, bitmap), kind="queue", wg=256,
                               wait=wait)

    def vertices(self) -> np.ndarray:
        """The current list's vertices (int32; one blocking read)."""
        out = np.empty(self.size, np.int32)
        if out.size:
            self.engine.read_buffer(self.role, out, self.front, out.size)
        return out

    def read_tally(self, then_read: tuple = ()) -> tuple[int, int]:
        """The current list's size and edges, read from the device (one blocking read).

        ``then_read``: ``(host array, buffer)`` pairs on this queue's device copied in the
        same wait (each array filled whole: small ones, a plain copy each)."""
        read_buffers(self.engine, self.role, [(self.host[:STATE + 1], self.tallies),
                                              *then_read])
        t = int(self.host[STATE])
        self.size, self.edges = t >> self.edge_bits, t & ((1 << self.edge_bits) - 1)
        return self.size, self.edges

    # ------------------------------------------------------------------- levels
    def _split(self, t) -> tuple[int, int]:
        t = int(t)
        return t >> self.edge_bits, t & ((1 << self.edge_bits) - 1)

    def local_fits(self) -> bool:
        """Whether the current list fits ``advance_local``'s work-group."""
        return (self.local_kernel is not None and (self.size > 0 or self.refill)
                and self.size <= self.qcap and self.edges <= self.elocal)

    def enqueue_level(self, j: int, it: int, extra_args: tuple, limit: tuple | None = None,
                      grid: int | None = None, kind: str = "push") -> None:
        """Enqueue level ``j`` of a batch (level ``it`` of the run), list j in ``front`` when
        j is even, in ``next`` when odd; nothing is read."""
        a, b = ((self.front, self.offs), (self.next, self.next_offs))[::1 if j % 2 == 0 else -1]
        grid = grid or self.grid(self.edges)
        self.engine.launch(self.role, self.advance_kernel, grid,
                           (np.int32(j), a[0], a[1], self.indptr, self.indices, b[0], b[1],
                            self.tallies, np.int32(it), *limit_args(limit), *extra_args),
                           kind=kind, wg=256, wait=False)

    def grid(self, edges: int) -> int:
        """Work-items of a batch's levels: four per edge of the current list, at least 256,
        at most ``compute_units * 2048`` (levels stride over more)."""
        return int(min(max(256, 4 * int(edges)), self.grid_cap))

    def run(self, it: int, extra_args: tuple, *, batch: int, cap: int | None = None,
            limit: tuple = None, before_level=None, kind: str = "push",
            local: bool = True, then=None) -> PushRun:
        """Run push levels from the current list, starting at level ``it``, with one read at
        the end: one ``advance_local`` launch when the list fits it (up to
        :data:`MAX_LOCAL_LEVELS` levels), else a batch of ``batch`` ``advance`` launches.

        Parameters
        ----------
        extra_args : tuple
            The fragment's ``ADVANCE_ARGS``.
        batch : int
            Levels of a batch of ``advance`` launches (at most :data:`MAX_BATCH`).
        cap : int, optional
            Run at most this many levels (an iteration cap).
        limit : tuple
            ``(edge_factor, budget, decay, min_edges, check_from)`` of
            opencl/skeleton/frontier.cl's ``refuses``: level j stops the run when
            ``j >= check_from``, its list's edges exceed ``min_edges`` and, times
            ``edge_factor``, exceed ``budget`` less (``decay``) the edges the run's levels
            found before it. :data:`NO_LIMIT` never stops.
        before_level : callable, optional
            ``before_level(j, it)`` enqueues the app's own kernels before batch level
            ``j`` (SSSP's far-pile refill).
        local : bool
            Allow ``advance_local``.
        then : callable, optional
            ``then(k)`` enqueues more work behind the ``k`` levels before the host reads
            their tallies, so the device keeps busy during the read (BFS's speculative
            chain).
        """
        limit = limit_args(limit)
        use_local = local and self.local_fits()
        k = MAX_LOCAL_LEVELS if use_local else min(batch, MAX_BATCH)
        k = max(1, min(k, cap if cap is not None else k))
        if not self.zeroed:
            self._zero_tallies(1, k + 1)
        self.zeroed = False
        if use_local:
            self.engine.launch(self.role, self.local_kernel, self.lwg,
                               (np.int32(k), self.front, self.offs, self.indptr, self.indices,
                                self.next, self.next_offs, self.tallies, np.int32(it),
                                *limit, *extra_args), kind=kind, wg=self.lwg, wait=False)
        else:
            grid = self.grid(self.edges)
            for j in range(k):
                if before_level is not None:
                    before_level(j, it + j)
                self.enqueue_level(j, it + j, extra_args, limit, grid, kind)
        if then is not None:
            then(k)
        self.engine.read_buffer(self.role, self.host, self.tallies, STATE + k + 2)
        return self._parse(k, "local" if use_local else "batch")

    def _parse(self, k: int, mode: str) -> PushRun:
        """Read a run's tallies: the levels that ran, where it stopped and why; make the
        list it stopped at the current one (its buffers and its tally at index 0)."""
        h = self.host
        levels, stop, m = [], "batch", 0
        while m < k:
            nxt = h[STATE + m + 1]
            if nxt >= PAUSED:
                stop = "refused" if nxt == REFUSED else "paused"
                break
            size, edges = self._split(h[STATE + m])
            levels.append((size, edges, *self._split(nxt)))
            m += 1
            if self._split(nxt)[0] == 0:
                stop = "empty"
                break
        size, edges = self._split(h[STATE + m])
        if mode == "local" or m % 2:  # the list is in `next` (a local run always leaves it there)
            self.front, self.next = self.next, self.front
            self.offs, self.next_offs = self.next_offs, self.offs
        if m:
            cl().enqueue_copy(self.side.queue, self.tallies, self.tallies, byte_count=8,
                              src_offset=8 * (STATE + m), dst_offset=8 * STATE)
        self.size, self.edges = size, edges
        return PushRun(mode, levels, k, stop == "refused", size, edges, stop)


class FrontierApp:
    """The loop's side of a frontier app (mixed into an :class:`~finepar.apps.base.App`).

    Subclasses implement :meth:`start`, :meth:`pull`, :meth:`push_levels` (or
    :meth:`push`, one level at a time), :meth:`queue_from_marks` and, where a pull step
    reads the frontier itself, :meth:`marks_from_queue`; :attr:`sync_vectors` names the
    vectors whose owned entries move when the direction changes. An app that walks
    (:attr:`walk_sources`) splits its start instead: ``start_host(engine, st)`` (the
    start's list in ``st['start_list']``; returns its size and edges),
    ``start_devices(engine, st, roles=None, queue=True)`` and ``start_vectors(engine, st,
    roles)`` (the walk's vectors only), which :meth:`start` composes.
    """

    sync_vectors: tuple = ()
    #: A pull step writes only its own rows of the sync vectors and reads no other row of
    #: them (BFS): a switch moves the other role's rows only (:class:`RowMover`).
    owned_rows = False
    #: Direction names for reports (BFS calls them top-down and bottom-up).
    direction_names = {"push": "push", "pull": "pull"}
    #: The app's advance fragment and ``skeleton/walk.cl``: small frontiers run on the
    #: CPU's walk (:mod:`finepar.engine.walk`); None: the app does not walk.
    walk_sources: tuple | None = None
    #: The walk's kind (:func:`make_walker`): ``levels`` (BFS) or ``heap`` (SSSP).
    walk_kind = "levels"
    #: The vectors the walk writes, moved on a hand-over; None: :attr:`sync_vectors`.
    walk_vectors: tuple | None = None
    #: The vectors the app's answer reads (its collect), read with a small input's walk.
    walk_results: tuple = ()
    #: Levels of the first push batch after a pull (doubled after each batch of narrow
    #: levels): more where the device stops a batch at the app's own switch (BFS).
    batch_after_pull = 1

    def prepare_push(self, engine: Engine, graph=None, roles: tuple | None = None) -> dict:
        """The push role (:func:`choose_push_role`, among ``roles`` where given), its
        measured costs, the mover of owned rows where the app allows one (split memory,
        two roles), and the CPU's walk over ``graph`` (the out-edge CSR) where the app
        and the engine allow one (:func:`make_walker`)."""
        push, costs = choose_push_role(engine, self.sync_vectors, owned_rows=self.owned_rows,
                                       roles=roles)
        mover = (RowMover(engine, push) if push is not None and self.owned_rows
                 and not engine.pair.shared and len(engine.roles) == 2
                 and engine.plan.method != "dynamic" else None)
        walker = (make_walker(engine, graph, self.walk_sources,
                              self.walk_vectors or self.sync_vectors, push, costs,
                              self.walk_kind, self.walk_results)
                  if graph is not None and self.walk_sources else None)
        return {"push_role": push, "push_costs": costs, "mover": mover, "walker": walker}

    def start(self, engine: Engine, st: dict) -> tuple[int, int]:
        """A run's start on the host and every side (an app that walks: its split hooks)."""
        size, edges = self.start_host(engine, st)
        self.start_devices(engine, st)
        return size, edges

    def walks(self, st: dict) -> bool:
        """Whether this run's levels may run on the CPU's walk (default: yes)."""
        return True

    def walk_args(self, engine: Engine, st: dict) -> tuple:
        """The walk fragment's ``ADVANCE_ARGS`` on the CPU (default: the sync vectors)."""
        return tuple(engine.buffer(v, "cpu") for v in self.sync_vectors)

    def walked(self, st: dict, levels: list) -> None:
        """The walk ran ``levels`` (``(size, edges, found, found_edges)`` each): update the
        app's own loop state (default: nothing)."""

    def walk_handed(self, engine: Engine, st: dict, walker) -> None:
        """The walk handed its frontier to the push side's queue: make the app's own push
        state agree (default: nothing)."""

    def _to_push(self, engine: Engine, st: dict) -> None:
        if st.get("mover") is not None:
            st["mover"].to_push(self.sync_vectors)
        else:
            sync_to_push_side(engine, self.sync_vectors, st["push_role"])

    def _from_push(self, engine: Engine, st: dict) -> None:
        if st.get("mover") is not None:
            st["mover"].from_push(self.sync_vectors)
        else:
            sync_from_push_side(engine, self.sync_vectors, st["push_role"])

    def wants_pull(self, st: dict, size: int, edges: int, processed: int, policy,
                   two_roles: bool) -> bool:
        """§4.2: pull (co-run over every row) when the frontier touches enough edges, or
        when the device refused to push it."""
        return st.pop("refused", False) or policy.corun(edges, processed, st["nnz"], two_roles)

    def marks_from_queue(self, engine: Engine, st: dict) -> None:
        """Before a pull step that follows a push step: the queue as marks (default: none)."""

    def more_work(self, st: dict) -> bool:
        """Work the device holds beyond an empty frontier (SSSP's far pile; default none)."""
        return False

    def pull_levels(self, engine: Engine, st: dict, it: int, size: int, edges: int,
                    cap: int | None) -> PushRun:
        """Pull steps from level ``it`` over a frontier of ``size`` vertices and ``edges``
        out-edges, at most ``cap``; default: one :meth:`pull` (an app may chain several
        on the device, BFS's :meth:`~finepar.apps.bfs.BFS.pull_levels`)."""
        found, found_edges = self.pull(engine, st, it)
        level = (int(size), int(edges), int(found), int(found_edges))
        return PushRun("pull", [level], 1, False, int(found), int(found_edges),
                       "empty" if not found else "batch")

    def push_levels(self, engine: Engine, st: dict, it: int, batch: int,
                    cap: int | None) -> PushRun:
        """Push levels from level ``it``: a batch of ``batch`` levels, or as many as a local
        launch runs, at most ``cap`` (:meth:`FrontierQueue.run`); default: one
        :meth:`push`."""
        t0 = st["queue"].size, st["queue"].edges
        found, found_edges = self.push(engine, st, it)
        level = (int(t0[0]), int(t0[1]), int(found), int(found_edges))
        return PushRun("step", [level], 1, False, found, found_edges,
                       "empty" if not found else "batch")

    def frontier_loop(self, engine: Engine, st: dict, *, policy, max_iter: int | None
                      ) -> tuple[int, FrontierTrace, str]:
        """Run iterations until the frontier is empty (or ``max_iter``).

        Returns
        -------
        (int, FrontierTrace, str)
            Iterations run, the trace, and where the state lives at the end
            (``queue``: on the push side; ``marks``: every side owns its rows; ``walk``:
            whole on the CPU, :mod:`finepar.engine.walk`).
        """
        size, edges, where = self._start(engine, st)
        walker = st.get("walker")
        trace = FrontierTrace()
        loop = {"processed": 0, "batch": 1, "it": 0}
        while (size > 0 or self.more_work(st)) and (max_iter is None or loop["it"] < max_iter):
            t0 = time.perf_counter()
            cap = None if max_iter is None else max_iter - loop["it"]
            if (walker is not None and where == "queue" and walker.takes(edges)
                    and self.walks(st)):
                walker.take_back(st["queue"])
                where = "walk"
            if where == "walk":
                run, where, here = self._walk_levels(engine, st, walker, loop["it"], cap), \
                    "walk", "cpu (walk)"
                if run.stop == "grew":
                    if st.pop("pending_start", False):  # the push side's start, at last
                        self.start_devices(engine, st, walker.other_roles(), queue=False)
                    walker.hand_over(st["queue"])
                    self.walk_handed(engine, st, walker)
                    where = "queue"
                pull = False
            else:
                run, where, pull = self._step(engine, st, where, size, edges, policy, loop, cap)
                here = ("both" if len(engine.roles) == 2 else engine.roles[0]) if pull \
                    else st["push_role"]
                if walker is not None:
                    dt = time.perf_counter() - t0
                    if not pull:
                        walker.pushed(run.levels, dt)
                    walker.stepped(dt, len(run.levels))
            self._record(trace, run, pull, here, loop["it"], time.perf_counter() - t0)
            loop["processed"] += sum(lv[1] for lv in run.levels)
            loop["it"] += len(run.levels)
            size, edges = run.size, run.edges
        if walker is not None:
            trace.handovers = dict(walker.moves)
        return loop["it"], trace, where

    def _start(self, engine: Engine, st: dict) -> tuple[int, int, str]:
        """A run's start: ``(size, edges, where)``. Where the CPU's walk takes it, only the
        CPU's copies get their start values; the other sides' wait for the first hand-over
        (``st['pending_start']``), so a run the walk finishes sends the GPU nothing (five
        pageable copies to an H100: about 1.4 ms of luxembourg's BFS)."""
        walker = st.get("walker")
        where = "queue" if st["push_role"] is not None else "marks"
        if walker is None:
            return (*self.start(engine, st), where)
        walker.begin()
        size, edges = self.start_host(engine, st)
        if self.walks(st) and walker.starts(edges, st["start_list"]):
            self.start_vectors(engine, st, ("cpu",))
            st["pending_start"] = True
            walker.load(st["start_list"])  # the CPU holds the start: nothing to move
            return size, edges, "walk"
        self.start_devices(engine, st)
        return size, edges, where

    def _step(self, engine: Engine, st: dict, where: str, size: int, edges: int, policy,
              loop: dict, cap: int | None) -> tuple[PushRun, str, bool]:
        """One pull step, or a run of push levels (the push side's queue); returns the
        run, where the state lives after it, and whether it pulled."""
        two = len(engine.roles) == 2
        pull = st["push_role"] is None or self.wants_pull(st, size, edges, loop["processed"],
                                                          policy, two)
        if pull:
            if where == "queue":
                self._from_push(engine, st)
                self.marks_from_queue(engine, st)
            loop["batch"] = self.batch_after_pull
            return self.pull_levels(engine, st, loop["it"], size, edges, cap), "marks", True
        if where == "marks":
            self._to_push(engine, st)
            self.queue_from_marks(engine, st, loop["it"], size, edges)
        walker = st.get("walker")
        if walker is not None and self.walks(st):
            small = walker.push_cap(edges)
            cap = small if cap is None else min(cap, small)
        run = self.push_levels(engine, st, loop["it"], loop["batch"], cap)
        if run.refused:
            st["refused"] = True
        widest = max((lv[1] for lv in run.levels), default=0)
        loop["batch"] = min(2 * loop["batch"], MAX_BATCH) if widest < st["nnz"] / 8 else 1
        return run, "queue", False

    def _walk_levels(self, engine: Engine, st: dict, walker, it: int, cap: int | None):
        """Levels on the CPU's walk (:class:`~finepar.engine.walk.SerialWalk`)."""
        run = walker.run(it, self.walk_args(engine, st), cap)
        self.walked(st, run.levels)
        return run

    def _record(self, trace: FrontierTrace, run, pull: bool, here: str, it: int,
                seconds: float) -> None:
        name = self.direction_names["pull" if pull else "push"]
        trace.add(run.mode, run.levels, run.enqueued, seconds, run.stop, first=it,
                  direction=name, where=here)
