"""The frontier loop that BFS, CC and SSSP share (FinePar TKDE §4.2; Beamer et al., SC'12).

Each iteration either **pulls** (a row operation over every row of the plan,
both devices at once: bottom-up BFS, a full edge pass) or **pushes** (one
device, the push role, expands the frontier alone from a vertex list kept on
that device). The app says which it prefers from the frontier's size and
edges; the loop moves the state between the two forms when the direction
changes:

* push -> pull: the push side's vectors go to every side, and the app turns
  its queue into the marks a pull step reads (BFS: a frontier bitmap);
* pull -> push: every side's owned entries go to the push side, and the app
  turns the marks the pull left into a queue there, on the device.

The host reads one tally per iteration (the frontier's size and edges),
never the frontier itself. Every iteration is recorded in a trace: its
direction, where it ran, the frontier's size and edges and what it found.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..engine import Engine
from ..errors import DeviceError
from ..runtime import cl


def sync_to_push_side(engine: Engine, names: tuple[str, ...]) -> None:
    """Gather each vector's owned entries onto the vertex role (the push role where there
    is one; a no-op in shared memory or with one role: one copy of the truth; across
    ranks on a distributed engine)."""
    if engine.whole_copies:
        return
    for name in names:
        engine.write(name, engine.read(name), roles=(engine.vertex_role(),))


def sync_from_push_side(engine: Engine, names: tuple[str, ...]) -> None:
    """Copy the vertex role's vectors to every side."""
    if engine.pair.shared or len(engine.roles) < 2:
        return
    for name in names:
        engine.write(name, engine.read(name, role=engine.vertex_role()))


def tally_bits(n: int, nnz: int) -> int:
    """Bits of a list's 64-bit tally that sum out-degrees (the rest count up to ``n``
    vertices); see opencl/frontier.cl.

    Raises
    ------
    DeviceError
        When no split of 64 bits holds both ``n`` and ``nnz``.
    """
    edge_bits = 64 - max(int(n).bit_length(), 1)
    if int(nnz) >= 1 << edge_bits:
        raise DeviceError(f"a frontier of {n:,} vertices and {nnz:,} edges does not fit one "
                          "64-bit tally")
    return edge_bits


class FrontierQueue:
    """A frontier as a vertex list on one device, with a load-balanced advance.

    The list carries its vertices' out-edge offsets, made by the appends themselves
    (opencl/frontier.cl): a step is the app's advance, a fill and one read of the tally,
    with no scan and no other host round trip.

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

    Attributes
    ----------
    size : int
        Vertices in the current list.
    edges : int
        Their out-edges (the next advance's work-items).
    """

    def __init__(self, engine: Engine, role: str, graph, sources: tuple, defines: dict | None = None,
                 *, with_data: bool = False):
        self.engine, self.role = engine, role
        side = self.side = engine.pair.side(role)
        n = self.n = graph.n
        self.degrees = np.diff(graph.indptr)
        wide = graph.indptr.dtype == np.int64
        self.offset_dtype = np.dtype(np.int64 if wide else np.int32)
        self.indptr, self.indices, data = engine.global_csr(role, graph, wide=wide)
        if with_data:
            from ..runtime import alloc
            data = engine._global_csr.setdefault(
                ("data", role, id(graph)), (alloc(side, graph.data, read_only=True),))[0]
        self.data = data
        self.edge_bits = tally_bits(n, graph.nnz)
        self.front = engine.scratch(role, np.zeros(max(n, 1), np.int32))
        self.next = engine.scratch(role, np.zeros(max(n, 1), np.int32))
        self.offs = engine.scratch(role, np.zeros(max(n, 1), self.offset_dtype))
        self.next_offs = engine.scratch(role, np.zeros(max(n, 1), self.offset_dtype))
        self.tally = engine.scratch(role, np.zeros(1, np.uint64))
        self.host = np.zeros(1, np.uint64)
        self.size = self.edges = 0
        opts = {"OFFSET_T": "long" if wide else "int", "EDGE_BITS": self.edge_bits,
                **(defines or {})}
        prg = self.program = engine.pair.program(side, tuple(sources), opts)
        mod = cl()
        self.advance_kernel = mod.Kernel(prg, "advance")
        self.kernels = {k: mod.Kernel(prg, k) for k in
                        ("queue_from_bitmap", "bitmap_from_queue", "queue_from_stamp")}

    def next_args(self) -> tuple:
        """The arguments a kernel that appends to the next list takes (``NEXT_ARGS``)."""
        return self.next, self.next_offs, self.tally

    def load_all(self) -> None:
        """Make every vertex the current list (on the device): offsets are indptr."""
        k = self.engine.pair.kernel(self.side, ("vector.cl",), {"T": "int"}, "iota")
        k(self.side.queue, (-(-self.n // 64) * 64,), None, np.int32(self.n), self.front)
        if self.n:
            cl().enqueue_copy(self.side.queue, self.offs, self.indptr,
                              byte_count=self.n * self.offset_dtype.itemsize)
        self.engine._shared_barrier(self.side)
        self.size, self.edges = self.n, int(self.degrees.sum())

    def load(self, vertices: np.ndarray) -> None:
        """Make ``vertices`` (int32) the current list."""
        v = np.ascontiguousarray(vertices, dtype=np.int32)
        deg = self.degrees[v].astype(self.offset_dtype)
        if v.size:
            offs = np.concatenate([[0], np.cumsum(deg[:-1])]).astype(self.offset_dtype)
            cl().enqueue_copy(self.side.queue, self.front, v, is_blocking=True)
            cl().enqueue_copy(self.side.queue, self.offs, offs, is_blocking=True)
        self.size, self.edges = int(v.size), int(deg.sum())

    def _zero_tally(self) -> None:
        cl().enqueue_fill_buffer(self.side.queue, self.tally, np.zeros(1, np.uint64), 0, 8)

    def advance(self, extra_args: tuple, kind: str = "push") -> tuple[int, int]:
        """Run the app's advance over the current list into the next; swap.

        Returns
        -------
        (int, int)
            The next list's size and its out-edges.
        """
        self._zero_tally()
        if self.edges:
            self.engine.launch(self.role, self.advance_kernel, self.edges,
                               (np.int32(self.size), self.front, self.offs,
                                self.offset_dtype.type(self.edges), self.indptr, self.indices,
                                *self.next_args(), *extra_args), kind=kind, wg=256,
                               wait=False)  # swap()'s read of the tally waits
        return self.swap()

    def swap(self) -> tuple[int, int]:
        """The next list becomes the current one; returns its size and out-edges."""
        cl().enqueue_copy(self.side.queue, self.host, self.tally, is_blocking=True)
        self.front, self.next = self.next, self.front
        self.offs, self.next_offs = self.next_offs, self.offs
        t = int(self.host[0])
        self.size, self.edges = t >> self.edge_bits, t & ((1 << self.edge_bits) - 1)
        return self.size, self.edges

    def from_bitmap(self, bitmap) -> int:
        """The current list <- the vertices set in ``bitmap`` (a device buffer)."""
        self._zero_tally()
        self.engine.launch(self.role, self.kernels["queue_from_bitmap"], self.n,
                           (np.int32(self.n), bitmap, self.indptr, *self.next_args()),
                           kind="queue", wg=256, wait=False)
        return self.swap()[0]

    def from_stamp(self, stamp, it: int) -> int:
        """The current list <- the vertices with ``stamp[v] == it``."""
        self._zero_tally()
        self.engine.launch(self.role, self.kernels["queue_from_stamp"], self.n,
                           (np.int32(self.n), stamp, np.int32(it), self.indptr,
                            *self.next_args()), kind="queue", wg=256, wait=False)
        return self.swap()[0]

    def to_bitmap(self, bitmap) -> None:
        """Set the current list's bits in ``bitmap`` (zeroed by the caller)."""
        if self.size:
            self.engine.launch(self.role, self.kernels["bitmap_from_queue"], self.size,
                               (np.int32(self.size), self.front, bitmap), kind="queue", wg=256)


@dataclass
class FrontierTrace:
    """What a frontier loop did, iteration by iteration.

    Attributes
    ----------
    steps : list of dict
        ``iteration``, ``direction`` ('push' or 'pull'), ``where`` (the role
        that ran it, or 'both'), ``frontier`` (vertices), ``frontier_edges``,
        ``found`` (vertices the step added to the next frontier), ``seconds`` (its
        wall time, the direction change included).
    """

    steps: list = field(default_factory=list)

    def counts(self) -> dict:
        """Steps by ``direction on where``, e.g. ``{'pull on both': 3, 'push on gpu': 4}``."""
        out: dict[str, int] = {}
        for s in self.steps:
            k = f"{s['direction']} on {s['where']}"
            out[k] = out.get(k, 0) + 1
        return out


class FrontierApp:
    """The loop's side of a frontier app (mixed into an :class:`~finepar.apps.base.App`).

    Subclasses implement :meth:`start`, :meth:`pull`, :meth:`push`,
    :meth:`queue_from_marks` and, where a pull step reads the frontier itself,
    :meth:`marks_from_queue`; :attr:`sync_vectors` names the vectors whose
    owned entries move when the direction changes.
    """

    sync_vectors: tuple = ()
    #: Direction names for reports (BFS calls them top-down and bottom-up).
    direction_names = {"push": "push", "pull": "pull"}

    def wants_pull(self, st: dict, size: int, edges: int, processed: int, policy,
                   two_roles: bool) -> bool:
        """§4.2: pull (co-run over every row) when the frontier touches enough edges."""
        return policy.corun(edges, processed, st["nnz"], two_roles)

    def marks_from_queue(self, engine: Engine, st: dict) -> None:
        """Before a pull step that follows a push step: the queue as marks (default: none)."""

    def frontier_loop(self, engine: Engine, st: dict, *, policy, max_iter: int | None
                      ) -> tuple[int, FrontierTrace, str]:
        """Run iterations until the frontier is empty (or ``max_iter``).

        Returns
        -------
        (int, FrontierTrace, str)
            Iterations run, the trace, and where the state lives at the end
            (``queue``: on the push side; ``marks``: every side owns its rows).
        """
        size, edges = self.start(engine, st)
        push_role = st["push_role"]
        where = "queue" if push_role is not None else "marks"
        trace = FrontierTrace()
        processed, it = 0, 0
        two = len(engine.roles) == 2
        while size > 0 and (max_iter is None or it < max_iter):
            t0 = time.perf_counter()
            # no device holds the whole CSR (chunked shares): every iteration pulls
            pull = push_role is None or self.wants_pull(st, size, edges, processed, policy, two)
            if pull:
                if where == "queue":
                    sync_from_push_side(engine, self.sync_vectors)
                    self.marks_from_queue(engine, st)
                    where = "marks"
                found, found_edges = self.pull(engine, st, it)
                ran = "both" if two else engine.roles[0]
            else:
                if where == "marks":
                    sync_to_push_side(engine, self.sync_vectors)
                    self.queue_from_marks(engine, st, it)
                    where = "queue"
                found, found_edges = self.push(engine, st, it)
                ran = push_role
            trace.steps.append({"iteration": it, "direction": self.direction_names[
                "pull" if pull else "push"], "where": ran, "frontier": int(size),
                "frontier_edges": int(edges), "found": int(found),
                "found_edges": int(found_edges), "seconds": time.perf_counter() - t0})
            processed += edges
            size, edges = int(found), int(found_edges)
            it += 1
        return it, trace, where
