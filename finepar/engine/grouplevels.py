"""A frontier app's every level in one work-group's launch on a GPU alone, for a small
input (issue 29: never slower than the best single device).

On a graph of a few thousand vertices a level of BFS or SSSP is microseconds of work, while
each launch and host round trip costs tens of microseconds: on one H200 the GPU's usual
BFS (top-down batches, bottom-up steps, 12-68 launches and 3-8 host waits on the real
graphs under 130,000 entries) took 2.1-3.2 ms, and the CPU's walk (one PoCL launch, but six
commands) 0.66-1.96 ms, where scipy's ``breadth_first_order`` took 0.11-0.84 ms. Here one
work-group runs every level itself (``group_levels`` in ``opencl/skeleton/grouplevels.cl``,
the app's edge action before it: ``opencl/apps/bfs/group.cl``, ``opencl/apps/sssp/group.cl``;
each level's edges shared over the work-items by a scan of the list's out-degrees), so a
run is one launch and one read of its per-level counts. BFS runs top-down only and SSSP
frontier Bellman-Ford without piles: on inputs this small each level touches few edges,
and the answer is the same (levels; the float32 fixed point). On the same H200 a BFS run
took 0.17-0.36 ms on the six real graphs under 130,000 entries (3.5 us a level on
luxembourg's 952, where the CPU's walk is as fast; benchmarks/RESULTS.md).

It runs where the plan leaves the GPU alone, in one process, on an input of at most the
app's number of entries (``EngineOptions.group_loop='auto'``,
:meth:`~finepar.engine.EngineOptions.small_form`), with the app's default way of running (no
iteration cap, no direction or pile asked for); ``'always'`` takes it on any one-device
plan and input, the CPU's too (one work-item there: the emulated pair's tests). A CPU
device is otherwise left to its walk (:mod:`finepar.engine.walk`,
:mod:`finepar.engine.heapwalk`), the same loop in one work-item. Whether the GPU's launch
beats the CPU's walk on an input is the whole-run choice's to measure
(:mod:`finepar.split.answer`).
"""

from __future__ import annotations

import time
import weakref

import numpy as np

from ..device import cl
from .levels import deeper_than
from .trace import FrontierTrace

#: The skeleton, concatenated after the app's fragment.
SKELETON = "skeleton/grouplevels.cl"
#: The widest work-group used on a GPU.
GPU_GROUP = 1024
#: Levels whose counts the first read brings back for the trace; a deeper run reads the
#: rest in a second.
FIRST_LEVELS = 512
#: Bytes of local memory left unclaimed by the lists and the bitmap (the kernel's own
#: counters and what a compiler adds).
LOCAL_SLACK = 256
#: The fewest list entries kept in local memory before a bitmap may take the room.
MIN_LOCAL_LIST = 256


def whole_on_one_device(engine) -> bool:
    """One device, one process, and the matrix in one piece there (no budget cut it into
    chunks): where a small input's one-launch forms may hold the whole CSR (these levels,
    :mod:`finepar.apps.powerloop`'s loop)."""
    if len(engine.roles) != 1 or getattr(engine, "comm", None) is not None:
        return False
    store = engine.stores.get(engine.roles[0])
    return store is None or len(store.pieces) <= 1


def applies(engine, graph, limit: int, usual: bool, deep_limit: int = 0) -> bool:
    """Whether ``engine`` runs an app's levels in one work-group: one device, one process,
    a non-empty input with int32 offsets, the matrix in one piece (a budget that cuts it
    into chunks is kept), the app's default way of running (``usual``), and a GPU device
    alone on an input of at most ``limit`` entries, or of at most ``deep_limit`` that is
    deep for its size (:func:`deep_for_loop`; or ``group_loop='always'`` on either
    role)."""
    if (not usual or graph.n == 0 or graph.nnz >= 2**31 or graph.indptr.dtype != np.int32
            or not whole_on_one_device(engine)):  # a budget's chunks: the launch would
        return False  # hold the whole CSR past it
    if getattr(engine.options, "group_loop", "auto") == "always":
        return True
    role = engine.roles[0]
    return (role == "gpu" and engine.pair.side(role).info.kind == "gpu"
            and in_loop_size(graph, limit, deep_limit, engine.options))


def in_loop_size(graph, limit: int, deep_limit: int, options=None) -> bool:
    """Whether ``options.group_loop`` takes the one work-group's levels on ``graph`` by
    its size: ``always``; or ``auto`` and at most ``limit`` entries, or at most
    ``deep_limit`` and deep for its size (:func:`deep_for_loop`)."""
    from .options import EngineOptions
    opts = options or EngineOptions()
    if opts.small_form(graph.nnz, limit):
        return True
    return (opts.group_loop == "auto" and 0 < graph.nnz <= deep_limit
            and graph.indptr.dtype == np.int32 and deep_for_loop(graph))


#: The edges the GPU's one work-group walks (top-down, about 0.34 G edges/s) in the time
#: the usual path takes a level (about 0.5 ms, its launches and host waits): on one H200,
#: BFS on cnr-2000 (3.2 M entries, 36 levels) took 9.9 ms in the loop against 19.9 on the
#: usual path, and at Graph500 scale 18 (7.6 M entries, 5 levels) 22.4 against 2.8
#: (benchmarks/RESULTS.md, 2026-11-28).
LOOP_EDGES_PER_LEVEL = 170_000


def deep_for_loop(graph) -> bool:
    """Whether a BFS of ``graph`` from its vertex of most entries takes more levels than
    ``nnz / LOOP_EDGES_PER_LEVEL``: where the loop's one SM, walking every edge, beats
    the usual path's cost a level (:func:`~finepar.engine.levels.deeper_than`, once a
    matrix)."""
    return _deeper(graph, max(1, -(-int(graph.nnz) // LOOP_EDGES_PER_LEVEL)))


def _deeper(matrix, levels: int, transposed: bool = False) -> bool:
    """:func:`~finepar.engine.levels.deeper_than` of ``matrix`` (of its transpose where
    ``transposed``), once a matrix and depth (:data:`_DEEP`)."""
    known = _DEEP.setdefault(matrix, {})
    if (levels, transposed) not in known:
        known[levels, transposed] = deeper_than(matrix.transpose() if transposed else matrix,
                                                levels)
    return known[levels, transposed]


#: A small input whose host BFS from the default root takes more levels than this is left
#: to the whole-run choice (:func:`by_rule`): there the CPU's walk can win, a level costing
#: the GPU's one work-group 3.6-4.5 us against the walk's few hundred nanoseconds. On one
#: H200 luxembourg's 952 levels took 3.6-4.3 ms on the GPU and 3.0-3.8 on the CPU's walk;
#: USPowerGrid's 33, 0.34 against 0.93 (benchmarks/RESULTS.md).
DEEP_LEVELS = 256


def by_rule(pair, matrix, limit: int, usual: bool, options=None,
            transposed: bool = False) -> str | None:
    """``'gpu'`` where a run of ``matrix`` takes the GPU's one work-group by rule, nothing
    tuned, measured or built but the program it runs (an app's ``one_device``): the app's
    usual way of running, ``group_loop='auto'`` and at most ``limit`` entries, a real GPU
    (not an emulated pair's), and a host BFS from the default root of at most
    :data:`DEEP_LEVELS` levels (:func:`~finepar.engine.levels.deeper_than`), along the
    out-edges (``transposed``: ``matrix`` is the app's ``A^T``, whose transpose the BFS
    walks; a symmetric graph is its own); else None.
    A cold run of such an input spent 2.9-3.3 s of its 3.7-4.1 s measuring every
    candidate (each one's programs built cold) to pick this one."""
    from .options import EngineOptions
    opts = options or EngineOptions()
    gpu = getattr(pair, "gpu", None)
    if (not usual or opts.group_loop != "auto" or matrix.nnz > limit
            or getattr(pair, "emulated", False) or gpu is None or gpu.info.kind != "gpu"
            or matrix.indptr.dtype != np.int32):
        return None
    # once a matrix: the plan and the early builds both ask
    return None if _deeper(matrix, DEEP_LEVELS, transposed) else "gpu"


#: The depth tests by matrix, ``(levels, transposed) -> bool`` (:func:`_deeper`: each BFS and
#: any transpose done once).
_DEEP: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def group_size(side) -> int:
    """The work-group's size on ``side``: one work-item on a CPU device (the emulated GPU
    role too), else the largest power of two it allows, at most :data:`GPU_GROUP`."""
    if side.info.kind == "cpu":
        return 1
    return 1 << (min(GPU_GROUP, int(side.info.max_work_group_size)).bit_length() - 1)


def local_room(side, own: int, wg: int) -> int:
    """Bytes of ``side``'s local memory a launch's lists and bitmap may take: the device's
    less the kernel's own (``own``), the chunk's three words a work-item (``wg``: vertex,
    scan, first offset) and :data:`LOCAL_SLACK`."""
    return int(side.info.local_mem_bytes) - own - LOCAL_SLACK - 12 * wg


class GroupLevels:
    """The launch's buffers on an engine's one device (built once an engine).

    Parameters
    ----------
    engine : Engine
        One device.
    graph : Graph
        The out-edge CSR the levels follow (int32 offsets); its values uploaded where
        ``with_data``.
    fragment : str
        The app's fragment (``GROUP_ARGS``, ``GROUP_INIT``, ``GROUP_ROOT``, ``GROUP_EDGE``).
    with_data : bool
        Upload the values (:attr:`data`; else a dummy buffer).
    bitmap : bool
        The fragment takes a local visited bitmap (BFS): :attr:`seen` holds one bit a
        vertex where it fits beside the scan and :data:`MIN_LOCAL_LIST` list entries
        (:attr:`bitmap` then True), else one word (the fragment's global claim).

    Notes
    -----
    The launch goes through :meth:`~finepar.engine.Engine.launch`, so its arguments are
    bound once on the engine's own kernel copy and only a changed one (the root) set again
    (:func:`~finepar.engine.binding.enqueue_bound`): pyopencl's kernel call set every one,
    63 us of host time a run on an H200's host (2026-11-28). The
    lists' first :attr:`lq_cap` entries live in local memory (the rest of the room).
    """

    def __init__(self, engine, graph, fragment: str, with_data: bool = False,
                 bitmap: bool = False):
        self.role = role = engine.roles[0]
        side = engine.pair.side(role)
        self.indptr, self.indices, _ = engine.global_csr(role, graph)
        self.data = engine.dummy(role)
        if with_data:  # shared with the push side's list where it uploaded them
            from ..device import alloc
            key = ("data", role, id(graph))
            if key not in engine._global_csr:
                engine._global_csr[key] = (alloc(side, graph.data, read_only=True),)
            self.data = engine._global_csr[key][0]
        self.graph = graph
        mod = cl()
        self.kernel = engine.pair.kernel(side, (fragment, SKELETON), {}, "group_levels")
        info = mod.kernel_work_group_info
        limit = self.kernel.get_work_group_info(info.WORK_GROUP_SIZE, side.queue.device)
        own = self.kernel.get_work_group_info(info.LOCAL_MEM_SIZE, side.queue.device)
        self.wg = min(group_size(side), 1 << (max(int(limit), 1).bit_length() - 1))
        n = max(graph.n, 1)
        room = local_room(side, int(own), self.wg)
        words = (n + 31) // 32
        self.bitmap = bitmap and 4 * words + 8 * min(n, MIN_LOCAL_LIST) <= room
        self.seen = mod.LocalMemory(4 * (words if self.bitmap else 1))
        self.lq_cap = max(1, min(n, (room - (4 * words if self.bitmap else 0)) // 8))
        self.local = (*(mod.LocalMemory(4 * self.wg) for _ in range(3)),
                      mod.LocalMemory(8 * self.lq_cap))
        self.lists = [engine.scratch(role, np.zeros(n, np.int32)) for _ in range(2)]
        self.out = engine.scratch(role, np.zeros(2 + 2 * graph.n, np.int32))
        self.host = np.zeros(2 + 2 * graph.n, np.int32)

    def run(self, engine, root: int, args: tuple, direction: str) -> tuple:
        """Every level from ``root`` in one launch with the fragment's ``args``, then one
        read of the counts (two past :data:`FIRST_LEVELS` levels).

        Returns
        -------
        (int, FrontierTrace, str)
            Levels run (the last found nothing), their trace (one launch, ``direction on
            ROLE (work-group)``), and ``'group'``: the app's vectors are on the role.
        """
        role, wg, h, g = self.role, self.wg, self.host, self.graph
        t0 = time.perf_counter()
        engine.launch(role, self.kernel, wg, (
            np.int32(g.n), np.int32(root), np.int32(g.n + 1), self.indptr, self.indices,
            *args, *self.lists, self.out, *self.local, np.int32(self.lq_cap)),
            kind="group", wg=wg, wait=False)
        engine.read_buffer(role, h, self.out, min(1 + 2 * FIRST_LEVELS, h.size))
        depth = int(h[0])
        if depth > FIRST_LEVELS:
            engine.read_buffer(role, h, self.out, 1 + 2 * depth)
        found = h[1:1 + 2 * depth:2].tolist()
        found_edges = h[2:2 + 2 * depth:2].tolist()
        root_edges = int(g.indptr[root + 1] - g.indptr[root])
        levels = list(zip([1] + found[:-1], [root_edges] + found_edges[:-1], found,
                          found_edges))
        trace = FrontierTrace()
        trace.add("group", levels, 1, time.perf_counter() - t0, "empty", direction=direction,
                  where=f"{role} (work-group)")
        return depth, trace, "group"


class GroupLevelsApp:
    """What a frontier app (BFS, SSSP) shares to run a small input's levels in one
    work-group's launch; mixed in before :class:`~finepar.apps.base.App`. The app sets
    :attr:`group_fragment`, :attr:`group_nnz`, :attr:`group_direction` and
    :attr:`group_vectors`, and defines :meth:`usual` and :meth:`group_args`."""

    #: The app's fragment, before :data:`SKELETON`.
    group_fragment = ""
    #: Entries up to which a GPU alone takes it (``group_loop='auto'``).
    group_nnz = 0
    #: Entries up to which a GPU alone takes it on a graph deep for its size
    #: (:func:`deep_for_loop`; 0: never past :attr:`group_nnz`).
    group_deep_nnz = 0
    #: The trace's name for its levels' direction.
    group_direction = "push"
    #: The app's vectors the fragment writes (kept in the input's numbering).
    group_vectors: tuple = ()
    #: Whether the fragment reads the matrix's values (SSSP's lengths).
    group_reads_values = False
    #: Whether the fragment takes a local visited bitmap (:class:`GroupLevels`, BFS).
    group_bitmap = False

    def usual(self, params: dict) -> bool:
        """Whether a run with ``params`` runs the app the default way, which the one
        work-group's levels compute."""
        return True

    def group_args(self, engine, st: dict, gl: GroupLevels) -> tuple:
        """The fragment's ``GROUP_ARGS`` on ``gl``'s role."""
        raise NotImplementedError

    def in_group(self, engine, graph, params: dict) -> bool:
        """Whether a run with ``params`` takes every level in one work-group's launch
        (:func:`applies`, up to :attr:`group_nnz` entries, or :attr:`group_deep_nnz` on a
        deep graph, the default way: :meth:`usual`)."""
        return applies(engine, graph, self.group_nnz, self.usual(params), self.group_deep_nnz)

    def one_device(self, pair, matrix, params: dict, options=None) -> str | None:
        """The GPU alone on a small, shallow input by rule (:func:`by_rule`: one
        work-group's levels there beat every plan), else None (the whole-run choice)."""
        return by_rule(pair, matrix, self.group_nnz, self.usual(params), options,
                       transposed=getattr(self, "matrix_form", None) == "transpose")

    def group_program(self) -> tuple:
        """The launch's program, as :meth:`~finepar.apps.base.App.early_programs` lists it."""
        return ("gpu", (self.group_fragment, SKELETON), {})

    def group_levels(self, engine, graph, st: dict) -> tuple:
        """Every level from ``st['root']`` in one launch (:class:`GroupLevels`, built once
        an engine): ``(levels, trace, 'group')``."""
        state = engine.state[self.name]
        if state.get("group_levels") is None:
            state["group_levels"] = GroupLevels(engine, graph, self.group_fragment,
                                                with_data=not graph.pattern
                                                and self.group_reads_values,
                                                bitmap=self.group_bitmap)
        gl = state["group_levels"]
        engine._plain(*self.group_vectors)
        return gl.run(engine, st["root"], self.group_args(engine, st, gl),
                      self.group_direction)
