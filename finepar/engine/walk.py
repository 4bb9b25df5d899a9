"""The CPU's levels of a frontier app: one work-item walking a queue while frontiers stay
small (FinePar TKDE §4.2's frontier-adaptive split, extended with each device's cost of a
level).

A level-synchronous device pays a fixed cost a level (a launch, or a work-group barrier
in a work-group-local launch: about 11 us on an H100, tens of microseconds on PoCL) that
a level of a few hundred edges never amortises; a road network's BFS runs a thousand such
levels. One CPU work-item walking a FIFO queue (``walk`` in ``opencl/skeleton/walk.cl``,
the app's own ``ADVANCE_EDGE`` fragment) pays a few nanoseconds an edge and nothing a
level, so:

* a level runs on the walk while its frontier has at most ``switch_edges`` out-edges:
  ``switch_edges`` = the push device's measured seconds per level over the walk's
  measured seconds per edge (where they cost the same);
* the walk **hands the frontier over** to the push side when a level grows past that:
  the vertices it visited carry their entries to the push side (:meth:`SerialWalk.hand_over`:
  their rows only, nothing where the push side's buffers are the CPU's);
* the push side **hands it back** once its frontier is small again and the levels it ran
  small since the last hand-over have cost as much as a hand-back (every sync vector made
  whole on the CPU; zero where the buffers are the CPU's, so at once): the ski-rental
  rule, never more than twice the better choice made with hindsight.

Each cost starts from a prior and is replaced by what the run measures (the walk's kernel
time over its edges, the push levels' time, the hand-back's wall time); the rule with a
fixed ``switch_edges`` (``EngineOptions.walk``, an integer) hands back at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..device import cl, write_async
from .binding import call
from .reads import read_buffers
from .backref import EngineRef

#: Most levels one ``walk`` launch runs (a deeper walk launches again).
MAX_WALK_LEVELS = 4096
#: Seconds an edge of the walk costs before the run measures it (a Xeon core: 3-6 ns).
WALK_EDGE_SECONDS = 5e-9
#: Host bytes a second of a hand-back before one is measured (pageable copies, 2.6-5 GB/s).
HANDBACK_BANDWIDTH = 3e9
#: Inputs of at most this many vertices read a run's answer with the walk's own results.
RESULTS_N = 1 << 16
#: Words of ``walk``'s results before the per-level counts (``OUT`` in walk.cl).
OUT = 5
STOPS = ("empty", "grew", "capped")


def next_edges(graph, start: np.ndarray) -> int:
    """The out-edges of the out-neighbours of ``start`` (int32 vertices), counted on the host:
    a bound on the edges of the level after ``start``'s."""
    ip = graph.indptr  # O(the neighbours' count), never O(n)
    nbrs = np.concatenate([graph.indices[ip[v]:ip[v + 1]] for v in np.asarray(start)[:64]]
                          or [np.empty(0, np.int32)])
    return int((ip[nbrs + 1] - ip[nbrs]).sum())


def prebuild_moves(engine, names: tuple, push: str) -> None:
    """Build the gather and scatter kernels a hand-over uses, for each vector's type on the
    CPU and on ``push``, before any run times them (a first hand-over otherwise compiled
    them inside a run: 50 ms on the H100's driver)."""
    from .exchange import _TYPES
    for role in {"cpu", push}:
        side = engine.pair.side(role)
        for name in names:
            kind = {"T": _TYPES[engine._vec_dtype[name]]}
            for k in ("gather", "scatter"):
                engine.pair.kernel(side, ("skeleton/vector.cl",), kind, k)


def measured_rates(pair) -> dict:
    """The seconds an edge each kind of walk last measured on ``pair`` (``levels``,
    ``heap``), so a later run on the same pair starts from the measured cost, not the
    prior (a fresh engine per run would otherwise never learn it)."""
    if not hasattr(pair, "walk_edge_seconds"):
        pair.walk_edge_seconds = {}
    return pair.walk_edge_seconds


@dataclass
class WalkRun:
    """What one ``walk`` launch did.

    Attributes
    ----------
    levels : list of tuple
        ``(size, edges, found, found_edges)`` of each level walked.
    stop : {'empty', 'grew', 'capped'}
        No frontier left, a level grew past ``switch_edges``, or the level cap.
    size, edges : int
        The current level (its vertices and out-edges) after the walk.
    seconds : float
        The launch's kernel time.
    """

    levels: list
    stop: str
    size: int
    edges: int
    seconds: float
    #: The trace's launch mode (:class:`~finepar.engine.frontier.PushRun`'s field).
    mode = "walk"

    @property
    def enqueued(self) -> int:
        """Levels enqueued: those it ran (one launch)."""
        return len(self.levels)


class CpuWalk:
    """What a walk on one CPU work-item holds whatever its queue (BFS's levels:
    :class:`SerialWalk`; SSSP's priority queue: :class:`~finepar.engine.heapwalk.HeapWalk`).

    Parameters
    ----------
    engine : Engine
        Its plan is a split or the CPU's; the CPU holds the whole out-edge CSR.
    graph : Graph
        The out-edge CSR the walk follows (the push queue's).
    names : tuple of str
        The vectors the walk writes (BFS's level and parent, SSSP's dist), moved on a
        hand-over.
    push : str
        The push role (whose queue takes the frontier over).
    push_level_seconds : float
        The prior cost of one of the push side's levels (its measured round trip).
    fixed : int, optional
        A fixed ``switch_edges`` (hand-backs at once); None: measured costs decide.
    results : tuple of str
        The vectors a run's answer reads (BFS's level and parent): on an input of at most
        :data:`RESULTS_N` vertices each walk reads them with its own results, in one wait
        (:meth:`read_out`), for a run the walk ends.
    """

    engine = EngineRef()  # weak: the engine's state holds this

    def __init__(self, engine, graph, names: tuple, push: str, push_level_seconds: float,
                 fixed: int | None = None, results: tuple = ()):
        self.engine, self.names, self.push, self.n = engine, names, push, graph.n
        self.results = tuple(results) if graph.n <= RESULTS_N else ()
        self.fetched: dict | None = None
        self.graph, self.fixed = graph, fixed
        self.side = engine.pair.side("cpu")
        self.wide = graph.indptr.dtype == np.int64
        self.indptr, self.indices, _ = engine.global_csr("cpu", graph, wide=self.wide)
        self.degrees = np.diff(graph.indptr)
        self.push_level_seconds = max(float(push_level_seconds), 1e-7)
        self.same = all(engine.buffer(v, "cpu") is engine.buffer(v, push) for v in names)

    def other_roles(self) -> tuple:
        """The plan's roles whose copies of the walk's vectors are not the CPU's (those a
        hand-over must start and fill)."""
        return tuple(r for r in self.engine.roles
                     if any(self.engine.buffer(v, r) is not self.engine.buffer(v, "cpu")
                            for v in self.names))

    def program(self, sources: tuple, kernel: str):
        """Kernel ``kernel`` of the walk's program on the CPU (``OFFSET_T`` as the CSR's)."""
        return self.engine.pair.kernel(self.side, tuple(sources),
                                       {"OFFSET_T": "long" if self.wide else "int"}, kernel)

    def read_out(self, out, count: int | None = None) -> np.ndarray:
        """The walk's results ``out`` into :attr:`host` (one blocking read, its first
        ``count`` words), and with them, behind the walk on the CPU's queue, the vectors of
        :attr:`results` into :attr:`fetched` (the answer where this walk ends the run)."""
        eng = self.engine
        self.fetched = {v: np.empty(eng._vectors[v]["size"], eng._vec_dtype[v])
                        for v in self.results}
        read_buffers(eng, "cpu", [*((a, eng.buffer(v, "cpu")) for v, a in self.fetched.items()),
                                  (self.host[:count], out)])
        return self.host

    def stepped(self, seconds: float, levels: int) -> None:
        """The push side ran a step of ``levels`` levels in ``seconds`` (every step, pushes
        and pulls); the level walk learns from :meth:`SerialWalk.pushed` instead."""

    @property
    def switch_edges(self) -> int:
        """The frontier's out-edges up to which the walk runs it faster than the push side:
        the push side's seconds a level over the walk's seconds an edge (or ``fixed``)."""
        if self.fixed is not None:
            return int(self.fixed)
        return int(self.push_level_seconds / self.edge_seconds)


class SerialWalk(CpuWalk):
    """One CPU work-item walking an app's frontier level by level (see the module);
    parameters as :class:`CpuWalk`'s, and ``sources``: the app's advance fragment, then
    ``skeleton/walk.cl``."""

    def __init__(self, engine, graph, sources: tuple, names: tuple, push: str,
                 push_level_seconds: float, fixed: int | None = None, results: tuple = ()):
        super().__init__(engine, graph, names, push, push_level_seconds, fixed, results)
        self.fifo = engine.scratch("cpu", np.zeros(max(graph.n, 1), np.int32))
        self.out = engine.scratch("cpu", np.zeros(OUT + 2 * MAX_WALK_LEVELS, np.int64))
        self.host = np.zeros(OUT + 2 * MAX_WALK_LEVELS, np.int64)
        self.kernel = self.program(sources, "walk")
        self.head = self.tail = self.edges = 0
        #: seconds an edge, as the last walk of this kind on this pair measured it
        self.edge_seconds = measured_rates(engine.pair).get("levels", WALK_EDGE_SECONDS)
        self.handback_seconds = 0.0 if self.same else (
            self.push_level_seconds + sum(graph.n * engine._vec_dtype[v].itemsize
                                          for v in names) / HANDBACK_BANDWIDTH)
        self.begin()

    def begin(self) -> None:
        """A new run: no small levels counted, no hand-overs yet."""
        self.small_seconds, self.check_levels, self.declined = 0.0, 2, False
        self.fetched = None
        self.moves = {"to_walk": 0, "from_walk": 0, "seconds": 0.0}

    # ------------------------------------------------------------------ the rule
    def starts(self, edges: int, start: np.ndarray) -> bool:
        """Whether the walk takes a run's start (every side holds it: nothing to move): its
        out-edges within the switch point, and (measured costs) the next level's at most
        too, counted on the host (:func:`next_edges`): a walk that would hand over after
        one level saves one of the push side's levels and pays a hand-over (a hub's
        neighbourhood: wiki-Vote's BFS took 3.9 ms so against 1.6 on the GPU alone)."""
        if edges > self.switch_edges:
            return False
        ok = self.fixed is not None or next_edges(self.graph, start) <= self.switch_edges
        self.declined = not ok  # the loop's first look (takes) says no as well
        return ok

    def takes(self, edges: int) -> bool:
        """Whether the walk should run the next level (a frontier of ``edges`` out-edges):
        small enough, and (the ski-rental rule) the push side's small levels since the last
        hand-over have cost a hand-back."""
        if edges > self.switch_edges or self.declined:
            self.declined = False
            return False
        return self.fixed is not None or self.small_seconds >= self.handback_seconds

    def push_cap(self, edges: int) -> int:
        """The most levels the push side should run before the walk is asked again: for a
        small frontier the levels a hand-back's cost still allows; for a large one 2 while
        it is within 4x the switch point (it may shrink below it soon), else a number that
        doubles while frontiers stay that large, up to 256 (the push side has no test for
        a shrinking frontier: the host looks between runs)."""
        if edges > 4 * self.switch_edges:
            self.check_levels = min(2 * self.check_levels, 256)
            return self.check_levels
        self.check_levels = 2
        if edges > self.switch_edges:
            return 2
        left = self.handback_seconds - self.small_seconds
        return max(1, int(np.ceil(left / self.push_level_seconds)))

    def pushed(self, levels: list, seconds: float) -> None:
        """The push side ran ``levels`` in ``seconds``: count the small ones' cost and
        measure a level's cost from runs of small levels."""
        small = [lv for lv in levels if lv[1] <= self.switch_edges]
        if levels and len(small) == len(levels) and self.fixed is None:
            self.push_level_seconds = seconds / len(levels)
        self.small_seconds += seconds * len(small) / max(len(levels), 1)

    # ------------------------------------------------------------------ the walk
    def load(self, vertices: np.ndarray) -> None:
        """Start walking from ``vertices`` (int32, the current level; non-blocking)."""
        v = np.array(vertices, dtype=np.int32)  # a copy: the write is not waited for
        if v.size:
            write_async(self.side.queue, self.fifo, v)
        self.head, self.tail, self.edges = 0, int(v.size), int(self.degrees[v].sum())

    def run(self, it: int, args: tuple, cap: int | None = None) -> WalkRun:
        """Walk levels from level ``it`` until the frontier is empty, grows past
        :attr:`switch_edges`, or ``cap`` levels (one launch, one read)."""
        k = min(MAX_WALK_LEVELS, cap if cap is not None else MAX_WALK_LEVELS)
        size0, edges0 = self.tail - self.head, self.edges
        rec = self.engine.launch("cpu", self.kernel, 1, (
            np.int32(it), np.int32(k), np.int64(self.switch_edges), np.int32(self.head),
            np.int32(self.tail), np.int64(self.edges), self.fifo, self.indptr, self.indices,
            self.out, *args), kind="walk", wg=1)
        self.read_out(self.out, OUT + 2 * k)
        h, ran = self.host, int(self.host[2])
        found = h[OUT:OUT + 2 * ran:2].tolist()
        grown = h[OUT + 1:OUT + 2 * ran:2].tolist()
        levels = list(zip([size0] + found[:-1], [edges0] + grown[:-1], found, grown))
        size, edges = (found[-1], grown[-1]) if ran else (size0, edges0)
        self.head, self.tail, self.edges = int(h[0]), int(h[1]), int(h[4])
        seconds = float(rec.kernel.get("cpu", rec.wall))
        walked = sum(lv[0] + lv[1] for lv in levels)  # vertices and edges walked
        if walked >= 4096 and self.fixed is None:
            self.edge_seconds = max(seconds / walked, 1e-10)
            measured_rates(self.engine.pair)["levels"] = self.edge_seconds
        return WalkRun(levels, STOPS[int(h[3])], size, edges, seconds)

    def frontier(self) -> np.ndarray:
        """The current level's vertices (one blocking read)."""
        out = np.empty(self.tail - self.head, np.int32)
        if out.size:
            cl().enqueue_copy(self.side.queue, out, self.fifo, src_offset=4 * self.head,
                              is_blocking=True)
        return out

    # ------------------------------------------------------------- hand-overs
    def hand_over(self, queue) -> None:
        """The frontier to the push side's ``queue`` (a level grew past
        :attr:`switch_edges`): the entries the walk wrote, of the vertices it visited,
        go to the push side's vectors first (none where its buffers are the CPU's)."""
        t0 = time.perf_counter()
        front = self.frontier()
        if not self.same and self.tail:
            self._move_visited()
        queue.load(front)
        self.small_seconds = 0.0
        self.moves["from_walk"] += 1
        self.moves["seconds"] += time.perf_counter() - t0

    def _move_visited(self) -> None:
        """Copy each vector's entries of the vertices in ``fifo[:tail]`` from the CPU to the
        push side (:func:`move_entries`)."""
        move_entries(self.engine, self.names, self.push, self.fifo, self.tail)

    def take_back(self, queue) -> None:
        """The push side's frontier (its ``queue``, whose side holds whole vectors) back to
        the walk: every sync vector made whole on the CPU first (nothing where the buffers
        are the CPU's); the hand-back's wall time becomes its measured cost."""
        t0 = time.perf_counter()
        if not self.same:
            for name in self.names:
                self.engine.write(name, self.engine.read(name, role=self.push), roles=("cpu",))
        self.load(queue.vertices())
        seconds = time.perf_counter() - t0
        if not self.same and self.fixed is None:
            self.handback_seconds = seconds
        self.small_seconds = 0.0
        self.moves["to_walk"] += 1
        self.moves["seconds"] += seconds


def move_entries(engine, names: tuple, push: str, index, count: int) -> None:
    """Copy each vector's entries of the ``count`` vertices in the CPU buffer ``index``
    (int32) from the CPU to the push side: gathered on the CPU, scattered on the push side
    (O(count), not O(n))."""
    from ..device import alloc
    from .exchange import _TYPES
    side = engine.pair.side("cpu")
    idx = np.empty(count, np.int32)
    cl().enqueue_copy(side.queue, idx, index, is_blocking=True)
    dst = engine.pair.side(push)
    idx_dst = alloc(dst, idx, read_only=True)
    grid = (-(-count // 64) * 64,)
    for name in names:
        dtype = engine._vec_dtype[name]
        kind = {"T": _TYPES[dtype]}
        tmp = alloc(side, nbytes=count * dtype.itemsize)
        call(engine.pair.kernel(side, ("skeleton/vector.cl",), kind, "gather"),
             side.queue, grid, None, np.int32(count), index, engine.buffer(name, "cpu"), tmp)
        host = np.empty(count, dtype)
        cl().enqueue_copy(side.queue, host, tmp, is_blocking=True)
        vals = alloc(dst, host, read_only=True)
        call(engine.pair.kernel(dst, ("skeleton/vector.cl",), kind, "scatter"),
             dst.queue, grid, None, np.int32(count), idx_dst, vals, engine.buffer(name, push))
    engine.host_syncs += 1 + len(names)
