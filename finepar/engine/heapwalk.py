"""SSSP's CPU walk: Dijkstra on one CPU work-item while the frontier stays small (the
priority-ordered sibling of :class:`~finepar.engine.walk.SerialWalk`, BFS's level walk).

The queue follows the edge lengths (:meth:`HeapWalk.queue_for`, ``opencl/apps/sssp/walk.cl``):
one length for every edge, a FIFO (breadth-first order settles each vertex at its first
visit: ``fifo_walk``, a BFS's cost); lengths within a factor of 4,094, Dinitz's buckets of
the least length (Dial's cyclic bucket queue, O(1) an edge: ``dial_walk``); wider, a binary
heap (``dijkstra_walk``, O(log n) an improvement). Each measures its own seconds an edge.

A road network's near-far SSSP on a level-synchronous device runs thousands of narrow
relaxation waves, each paying a launch or a work-group barrier. One CPU work-item popping
the nearest vertex from a binary heap (``dijkstra_walk`` in ``opencl/apps/sssp/walk.cl``)
pays a few nanoseconds an edge, nothing a wave, and relaxes each vertex once. So:

* a run starts on the walk when the source's out-edges are at most ``switch_edges`` (the
  push device's measured seconds per level over the walk's seconds per edge, or
  ``EngineOptions.walk`` fixed), and the walk runs to the end while the heap's vertices
  have at most ``switch_edges`` out-edges between them;
* past that it **hands the frontier over**: the heap's vertices become the push side's near
  pile (an empty far pile, the threshold the least distance left plus delta, set by the
  app's :meth:`~finepar.engine.frontier.FrontierApp.walk_handed`), and the distances of every
  vertex the walk touched go to the push side first (their entries only; nothing where the
  push side's buffers are the CPU's).

There is **no hand-back**: a run's walk starts only from its source, and a frontier the walk
declines or hands over stays with the push side to the end of the run (taking one back
would also have to take the far pile). The relaxations are the device fragment's float32
sums, so either way the answer is the one float32 fixed point.
"""

from __future__ import annotations

import time

import numpy as np

from ..device import alloc, cl, write_async
from .walk import (WALK_EDGE_SECONDS, STOPS, CpuWalk, WalkRun, measured_rates, move_entries,
                   next_edges)

#: Seconds an edge of the heap walk costs before a run measures it (a heap operation an
#: improved vertex on top of the edge: about twice the level walk's).
HEAP_EDGE_SECONDS = 1e-8
#: Words of ``dijkstra_walk``'s results (``out`` in walk.cl).
OUT = 6
#: A cap on the push side's levels that never binds (no hand-back to wait for).
NO_CAP = 1 << 30
#: Most buckets of ``dial_walk`` (longest edge / least edge + 2): past it, the heap.
BUCKETS_MAX = 4096
#: The key of :func:`~finepar.engine.walk.measured_rates` under which the push side's
#: measured seconds a level after a hand-over are kept (:meth:`HeapWalk.stepped`).
PUSH_LEVEL = "push level after a hand-over"


class HeapWalk(CpuWalk):
    """One CPU work-item running Dijkstra from a run's source (see the module); parameters
    as :class:`~finepar.engine.walk.CpuWalk`'s, and ``sources``: the walk's program
    (``apps/sssp/walk.cl``); ``graph`` carries the edge lengths."""

    def __init__(self, engine, graph, sources: tuple, names: tuple, push: str,
                 push_level_seconds: float, fixed: int | None = None, results: tuple = ()):
        super().__init__(engine, graph, names, push, push_level_seconds, fixed, results)
        self.round_trip = self.push_level_seconds  # the prior: an empty level's round trip
        self.lengths, self._buckets, self._lists = graph.data, {}, None
        size = max(graph.n, 1)
        self.heap_d = engine.scratch("cpu", np.zeros(size, np.float32))
        self.heap_v = engine.scratch("cpu", np.zeros(size, np.int32))
        self.pos = engine.scratch("cpu", np.full(size, -1, np.int32))
        self.touched = engine.scratch("cpu", np.zeros(size, np.int32))
        self.out = engine.scratch("cpu", np.zeros(OUT, np.int64))
        self.host = np.zeros(OUT, np.int64)
        self.kernel = self.program(sources, "dijkstra_walk")
        self.dial = self.program(sources, "dial_walk")
        self.fifo = self.program(sources, "fifo_walk")
        self.queue_kind = "heap"
        self.nfront = self.ntouched = self.size = self.edges = 0
        self.least = float("inf")
        self.begin()

    def begin(self) -> None:
        """A new run: the walk may take its source; no hand-overs yet. A level of the push
        side costs what the levels after the last hand-over on this pair cost
        (:meth:`stepped`), at least an empty level's round trip."""
        self.open = True
        self.moves = {"to_walk": 0, "from_walk": 0, "seconds": 0.0}
        self.after = [0.0, 0]  # seconds and levels of the push side's steps this run
        self.fetched = None
        if self.fixed is None:
            self.push_level_seconds = max(
                self.round_trip, measured_rates(self.engine.pair).get(PUSH_LEVEL, 0.0))

    def stepped(self, seconds: float, levels: int) -> None:
        """The push side ran a step of ``levels`` levels (a push or a pull) in ``seconds``
        (wall time: its launches, fills and reads): after this run's hand-over, the mean
        over its steps so far becomes the pair's measured cost of a level (a run whose walk
        declined its source records nothing: its levels are a hub's, not small ones). With no hand-back, a hand-over gives
        the push side every level left, so an empty launch's round trip (the prior)
        undersold it: ca-GrQc's SSSP on the CPU alone handed a 4,158-vertex run over
        after one level and took 1.7 ms, where BFS's walk took the whole run in 0.5."""
        if not self.moves["from_walk"]:  # only the levels a hand-over gave the push side
            return
        self.after[0] += float(seconds)
        self.after[1] += max(int(levels), 1)
        measured_rates(self.engine.pair)[PUSH_LEVEL] = self.after[0] / self.after[1]

    def use(self, abs_weights: int) -> None:
        """The run's edge lengths (their magnitudes with ``abs_weights``) pick the queue:
        buckets where :meth:`buckets` allows, else the heap."""
        self.abs_weights = int(abs_weights)
        self.queue_kind = self.queue_for(self.abs_weights)[0]

    @property
    def edge_seconds(self) -> float:
        """Seconds an edge of this run's queue, as the last such walk on this pair measured
        it (before any: :data:`HEAP_EDGE_SECONDS`, or the level walk's prior for a FIFO)."""
        prior = HEAP_EDGE_SECONDS if self.queue_kind != "fifo" else WALK_EDGE_SECONDS
        return measured_rates(self.engine.pair).get(self.queue_kind, prior)

    # ------------------------------------------------------------------ the rule
    def takes(self, edges: int) -> bool:
        """Whether the walk runs from the current frontier (``edges`` out-edges): only at
        a run's start, when small enough; once declined or handed over, never again in
        the run (no hand-back)."""
        ok = self.open and edges <= self.switch_edges
        self.open = False
        return ok

    def starts(self, edges: int, start: np.ndarray) -> bool:
        """Whether the walk takes the run's source: :meth:`takes`, and (measured costs) the
        source's out-neighbours' out-edges within the switch point too
        (:func:`~finepar.engine.walk.next_edges`; see :meth:`SerialWalk.starts`), counted
        only for a source within it (a hub's neighbours' count cost Graph500 scale 24's SSSP
        15 ms a run on the H100's host, 2026-11-27)."""
        if (self.open and self.fixed is None and edges <= self.switch_edges
                and next_edges(self.graph, start) > self.switch_edges):
            self.open = False
        return self.takes(edges)

    def push_cap(self, edges: int) -> int:
        """No cap on the push side's levels (it never hands back)."""
        return NO_CAP

    def pushed(self, levels: list, seconds: float) -> None:
        """The push side's levels change nothing here (no hand-back to pay for)."""

    # ------------------------------------------------------------------ the walk
    def load(self, vertices: np.ndarray) -> None:
        """Start from ``vertices`` (their distances set on the CPU; non-blocking)."""
        v = np.unique(np.asarray(vertices, dtype=np.int32))
        if v.size:
            write_async(self.side.queue, self.touched, v)
        self.nfront, self.size, self.edges = int(v.size), int(v.size), int(self.degrees[v].sum())

    def queue_for(self, abs_weights: int) -> tuple[str, tuple]:
        """The walk's queue for these edge lengths (their magnitudes with ``abs_weights``)
        and its kernel's extra arguments' sizes: ``('fifo', (w,))`` where every length is
        ``w``; ``('buckets', (width, count))``, Dinitz's buckets of the least length, where
        the longest is at most :data:`BUCKETS_MAX` - 2 times it; else ``('heap', ())``."""
        key = int(abs_weights)
        if key not in self._buckets and getattr(self.graph, "pattern", False):
            self._buckets[key] = ("fifo", (1.0,))  # every length 1: no pass over them
        if key not in self._buckets:  # one pass over the lengths per walk, on first use
            w = np.abs(self.lengths) if key else self.lengths
            lo, hi = (float(w.min()), float(w.max())) if w.size else (1.0, 1.0)
            nb = int(hi / lo) + 2 if lo > 0 else BUCKETS_MAX + 1
            self._buckets[key] = (("fifo", (lo,)) if lo == hi and lo > 0 else
                                  ("buckets", (lo, nb)) if nb <= BUCKETS_MAX else ("heap", ()))
        return self._buckets[key]

    def lengths_buffer(self):
        """The edge lengths on the CPU (uploaded on first use: a FIFO walk of one length,
        every pattern graph's, reads none)."""
        key = ("data", "cpu", id(self.graph))
        return self.engine._global_csr.setdefault(
            key, (alloc(self.side, self.graph.data, read_only=True),))[0]

    def _bucket_args(self, width: float, nb: int) -> tuple:
        """``dial_walk``'s extra arguments; its lists are allocated on first use."""
        if self._lists is None:
            n = max(self.n, 1)
            self._lists = (self.engine.scratch("cpu", np.full(BUCKETS_MAX, -1, np.int32)),
                           self.engine.scratch("cpu", np.zeros(n, np.int32)),
                           self.engine.scratch("cpu", np.zeros(n, np.int32)))
        return (np.float32(1.0 / np.float32(width)), np.int32(nb), *self._lists)

    def run(self, it: int, args: tuple, cap: int | None = None) -> WalkRun:
        """Dijkstra from the loaded frontier until the heap empties or its vertices' out-edges
        pass :attr:`switch_edges` (one launch, one read); ``args`` are ``(abs_weights,
        dist)`` on the CPU. The walk counts as one level of the trace whatever ``cap``:
        ``(frontier, its edges, heap left, its edges)``."""
        abs_weights, dist = args
        size0, edges0 = self.size, self.edges
        self.use(int(abs_weights))
        kind, sizes = self.queue_for(self.abs_weights)
        data = self.engine.dummy("cpu") if kind == "fifo" else self.lengths_buffer()
        common = (np.int64(self.switch_edges), np.int32(self.nfront), self.indptr,
                  self.indices, data, abs_weights, dist, self.heap_d, self.heap_v,
                  self.pos, self.touched, self.out)
        if kind == "fifo":
            kernel, extra = self.fifo, (np.float32(sizes[0]),)
        elif kind == "buckets":
            kernel, extra = self.dial, self._bucket_args(*sizes)
        else:
            kernel, extra = self.kernel, ()
        rec = self.engine.launch("cpu", kernel, 1, (*common, *extra), kind="walk", wg=1)
        h = self.read_out(self.out)
        stop, self.size, self.edges, self.ntouched = (int(x) for x in h[:4])
        seconds = float(rec.kernel.get("cpu", rec.wall))
        if int(h[5]) >= 4096 and self.fixed is None:
            measured_rates(self.engine.pair)[self.queue_kind] = max(seconds / int(h[5]), 1e-10)
        return WalkRun([(size0, edges0, self.size, self.edges)], STOPS[stop], self.size,
                       self.edges, seconds)

    def frontier(self) -> tuple[np.ndarray, float]:
        """The heap's vertices and the least distance among them (one blocking read)."""
        v = np.empty(self.size, np.int32)
        d = np.full(1, np.inf, np.float32)
        if v.size:
            cl().enqueue_copy(self.side.queue, v, self.heap_v, is_blocking=False)
            cl().enqueue_copy(self.side.queue, d, self.heap_d, is_blocking=True)
        return v, float(d[0])

    # ------------------------------------------------------------- hand-overs
    def hand_over(self, queue) -> None:
        """The heap's vertices to the push side's ``queue`` as its near pile; first the
        distances of every vertex the walk touched go to the push side (none where its
        buffers are the CPU's). :attr:`least` keeps the least distance handed over."""
        t0 = time.perf_counter()
        front, self.least = self.frontier()
        if not self.same and self.ntouched:
            move_entries(self.engine, self.names, self.push, self.touched, self.ntouched)
        queue.load(front)
        self.open = False
        self.moves["from_walk"] += 1
        self.moves["seconds"] += time.perf_counter() - t0

    def take_back(self, queue) -> None:
        """Never asked (:meth:`takes` says no after a run's start)."""
        raise NotImplementedError("SSSP's walk does not take a frontier back")
