"""Connected components by Afforest (Sutton, Ben-Nun and Barak, "Optimizing Parallel Graph
Connectivity Computation via Subgraph Sampling", IPDPS 2018) on one device.

On the symmetrised graph, a forest ``comp`` (every vertex's parent, a root its own) is
built by links that hook the larger of two roots under the smaller by compare-and-swap
(``opencl/apps/cc/afforest.cl``; each link as ECL-CC's, Jaiganesh and Burtscher, HPDC
2018: roots found with path halving, a failed swap continued from the value it returned):

1. **neighbour sampling**: ``rounds`` rounds (k = 2, the paper's choice) in which every
   vertex links to its r-th neighbour: on a graph with a giant component most of it is
   one tree after touching 2n edges. GAPBS follows each round with pointer jumping
   (compression); here, as in ECL-CC, the finds' path halving keeps the trees shallow
   and one pass at the mark compresses them;
2. **the giant component**: the roots of a fixed sample of 1,024 vertices; the most
   frequent is the giant component's, found on the device (one work-group sorts them), so
   the host waits for nothing between the sampling and the hooking;
3. **final hooking**: the vertices outside it with an edge left after the sampling
   rounds (more than ``rounds`` edges: a frontier list, built on the device) link along
   their remaining edges, a load-balanced advance of :mod:`finepar.engine.frontier`; the
   giant component's edges are never visited (its vertices' edges to others are seen from
   the other end: the graph is symmetric). Listing every vertex outside the giant, as
   GAPBS's loop visits them, listed a Graph500 graph's many isolated vertices too (38%
   of them at scale 20), one global atomic each: 25.6 ms of a 35.4-ms run on one H200 at scale 26
   (benchmarks/RESULTS.md), for vertices with nothing left to link;
4. a last compression: every label is its tree's root, the smallest vertex id of its
   component.

A small input (under ``EngineOptions.group_loop``, as PageRank's loop) skips the sampling:
every edge is linked and every vertex compressed (:meth:`Afforest.run_unsampled`), where
the sampled run's seven launches cost more than its work. Its shape
(:func:`unsampled_shape`) and size rule: on a CPU device one work-item's loop in one launch
(``afforest_group``: PoCL's barriers cost microseconds), up to
:data:`~finepar.apps.powerloop.GROUP_LOOP_NNZ` entries; on a GPU three launches over the
whole device (the labels' start, ``afforest_link_entries`` a work-item an entry,
``afforest_compress``), up to :data:`WIDE_NNZ`. On one H200 (benchmarks/RESULTS.md) the
three launches took 0.13-0.15 ms on the four real graphs under 45,000 entries, where the
sampled run took 0.41-0.44 ms, one work-group's loop 0.26-0.55 ms (one SM's
latency-bound finds) and scipy 0.13-0.40 ms.

Everything runs on one device that holds the whole symmetrised CSR (links need one
address space); a run reads nothing back. The giant and its share of the sample come
back with the tally of the final hooking (:meth:`Afforest.hooked`), after the run.
"""

from __future__ import annotations

import numpy as np

from ..engine import Engine
from ..engine.binding import enqueue_bound
from ..device import cl, filled
from ..device import read_staged
from ..engine.frontier import FrontierQueue
from ..engine.backref import EngineRef
from . import powerloop

#: Neighbour-sampling rounds (the paper's k).
ROUNDS = 2
#: Vertices whose roots are sampled to find the giant component (``AFFOREST_SAMPLES`` in
#: afforest.cl, the same number: the slots ``afforest_sample`` sorts in local memory).
SAMPLES = 1024


#: Entries up to which a GPU links every edge (the ``wide`` shape) instead of sampling: on
#: one H200 its three launches took 0.48 ms at Graph500 scale 18 (7.6 M entries) against
#: the sampled run's 1.19, 0.81 against 0.95 at scale 20 (31 M) and 2.87 against 1.38 at
#: scale 22 (benchmarks/RESULTS.md).
WIDE_NNZ = 1 << 24


def unsampled_shape(side) -> str:
    """How a small input's unsampled run (:meth:`Afforest.run_unsampled`) is launched on
    ``side``: ``loop`` on a CPU device (one work-item links and compresses in one launch:
    the emulated GPU role is a CPU too), ``wide`` on a GPU (three launches, a work-item an
    entry, then a vertex)."""
    return "loop" if side.info.kind == "cpu" else "wide"


def sample_group(kernel, device) -> int:
    """Work-items of ``afforest_sample``'s one work-group on ``device``: the largest power
    of two within :data:`SAMPLES` and the kernel's limit there (1,024 on NVIDIA's and
    PoCL's devices; each work-item takes every W-th slot where it is fewer)."""
    limit = kernel.get_work_group_info(cl().kernel_work_group_info.WORK_GROUP_SIZE, device)
    return 1 << (min(SAMPLES, int(limit)).bit_length() - 1)


class Afforest:
    """Afforest's buffers and kernels on one role of an engine (built once per engine).

    Parameters
    ----------
    engine : Engine
        Built on the symmetrised graph.
    role : str
        The device that runs it (it must hold the whole CSR: :meth:`Engine.push_roles`).
    graph : Graph, optional
        The symmetric graph it labels (default: the engine's matrix); a rank of a
        distributed run passes its own subgraph (:mod:`finepar.apps.ccranks`).

    Attributes
    ----------
    queue : FrontierQueue
        The vertices outside the giant component, and the final hooking's advance.
    unsampled : bool
        Every edge linked, no sampling (:meth:`run_unsampled`): the engine's own graph
        (not a rank's subgraph, whose giant the ranks' steps read), small enough for
        ``group_loop`` (:func:`~finepar.apps.powerloop.wanted`; on a GPU up to
        :data:`WIDE_NNZ` entries).
    shape : str or None
        The unsampled run's launches (:func:`unsampled_shape`), None where sampled.
    giant : pyopencl.Buffer of int32, shape (2,)
        The giant component's root and its count in the sample (``afforest_sample``);
        ``giant_host`` holds them once :meth:`hooked` or :meth:`labels_and_hooked` read
        them.
    """

    engine = EngineRef()  # weak: the engine's state holds this

    def __init__(self, engine: Engine, role: str, graph=None):
        sym = engine.matrix if graph is None else graph
        self.engine, self.role, self.n = engine, role, sym.n
        self.side = engine.pair.side(role)
        self.queue = FrontierQueue(engine, role, sym, ("apps/cc/afforest.cl", "skeleton/frontier.cl"),
                                   local=False, aggregate=False)
        n = max(self.n, 1)
        self.comp = filled(self.side, n, np.int32)
        self.mark = filled(self.side, n, np.int32)
        rng = np.random.default_rng(0)
        count = min(SAMPLES, self.n) or 1
        self.sample_idx = engine.scratch(role, rng.integers(0, n, count).astype(np.int32))
        self.count = count
        self.giant = engine.scratch(role, np.zeros(2, np.int32))  # its root, its count
        self.giant_host = np.zeros(2, np.int32)
        prg = self.queue.program
        self.kernels = {k: cl().Kernel(prg, f"afforest_{k}")
                        for k in ("link", "compress", "sample", "mark", "group",
                                  "link_entries")}
        self.sample_wg = sample_group(self.kernels["sample"], self.side.queue.device)
        shape = unsampled_shape(self.side)
        limit = WIDE_NNZ if shape == "wide" else powerloop.GROUP_LOOP_NNZ
        self.unsampled = (graph is None and sym.nnz < 2**31
                          and powerloop.wanted(sym.nnz, engine.options, limit))
        self.shape = shape if self.unsampled else None
        if self.unsampled:  # each entry's row: work-items take entries, not rows
            self.rows = engine.scratch(role, np.repeat(np.arange(sym.n, dtype=np.int32),
                                                       np.diff(sym.indptr)))
            self.nnz = int(sym.nnz)

    def _vertex_kernel(self, name: str, args: tuple, size: int | None = None) -> None:
        self.engine.launch(self.role, self.kernels[name], self.n if size is None else size,
                           args, kind=f"afforest-{name}", wg=256, wait=False)

    def run(self, rounds: int = ROUNDS) -> list[dict]:
        """Label every vertex with its component's smallest vertex id (left in
        :attr:`comp` on the device; the giant component's root and its count in the
        sample in :attr:`giant`). Returns the phases run, for the trace (the sample's
        entry completed by :meth:`sampled` once the giant is read)."""
        eng, q, n = self.engine, self.queue, np.int32(self.n)
        k = eng.pair.kernel(self.side, ("skeleton/vector.cl",), {"T": "int"}, "iota")
        enqueue_bound(eng, self.side.queue, k, (-(-self.n // 64) * 64,), None, (n, self.comp))
        trace = []
        for r in range(rounds):  # no compression between: each find halves its path
            self._vertex_kernel("link", (n, q.indptr, q.indices, np.int32(r), self.comp))
            trace.append({"phase": "link", "round": r})
        eng.launch(self.role, self.kernels["sample"], self.sample_wg,
                   (np.int32(self.count), self.sample_idx, self.comp, self.giant),
                   kind="afforest-sample", wg=self.sample_wg, wait=False)  # one work-group
        trace.append({"phase": "sample", "giant": None, "share": None})
        self._vertex_kernel("mark", (n, self.comp, self.giant, q.indptr, np.int32(rounds),
                                     self.mark))
        q.from_stamp(self.mark, 1, self.n, q.nnz)  # an upper bound: the grid strides
        q.enqueue_level(0, 0, (self.comp, np.int32(rounds)), kind="afforest-hook")
        self._vertex_kernel("compress", (n, self.comp))
        trace.append({"phase": "hook"})
        return trace

    def run_unsampled(self) -> list[dict]:
        """Every edge linked, every vertex compressed, no sampling: :attr:`comp` as
        :meth:`run` leaves it. ``loop``: one launch of ``afforest_group``, one work-item;
        ``wide``: the labels' start, ``afforest_link_entries`` over every entry and
        ``afforest_compress`` over every vertex (:func:`unsampled_shape`). Returns the
        trace's one phase."""
        eng, n = self.engine, np.int32(self.n)
        if self.shape == "loop":
            eng.launch(self.role, self.kernels["group"], 1,
                       (n, np.int32(self.nnz), self.rows, self.queue.indices, self.comp),
                       kind="afforest-group", wg=1, wait=False)
            return [{"phase": "unsampled", "shape": "loop", "entries": self.nnz,
                     "launches": 1}]
        k = eng.pair.kernel(self.side, ("skeleton/vector.cl",), {"T": "int"}, "iota")
        eng.launch(self.role, k, self.n, (n, self.comp), kind="afforest-start", wg=256,
                   wait=False)
        eng.launch(self.role, self.kernels["link_entries"], self.nnz,
                   (np.int32(self.nnz), self.rows, self.queue.indices, self.comp),
                   kind="afforest-link", wg=256, wait=False)
        self._vertex_kernel("compress", (n, self.comp))
        return [{"phase": "unsampled", "shape": "wide", "entries": self.nnz, "launches": 3}]

    def sampled(self, trace: list[dict]) -> None:
        """Complete ``trace``'s sample entry (``giant``: the giant component's root;
        ``share``: its share of the sample) from the last read of :attr:`giant`."""
        for t in trace:
            if t["phase"] == "sample":
                t.update(giant=int(self.giant_host[0]),
                         share=float(self.giant_host[1]) / self.count)

    def labels(self) -> np.ndarray:
        """The labels on the host (int32, shape (n,))."""
        out = np.empty(self.n, np.int32)
        read_staged(self.side, out, self.comp)
        return out

    def labels_and_hooked(self) -> tuple[np.ndarray, int]:
        """:meth:`labels` and :meth:`hooked` in one host wait (a small input's labels:
        a plain copy)."""
        out = np.empty(self.n, np.int32)
        if self.unsampled:  # no final hooking: the labels alone
            self.engine.read_buffer(self.role, out, self.comp)
            return out, 0
        hooked = self.queue.read_tally(then_read=((out, self.comp),
                                                  (self.giant_host, self.giant)))[0]
        return out, hooked

    def hooked(self) -> int:
        """Vertices the final hooking visited (outside the giant component, with more
        than ``rounds`` edges); the giant
        (:attr:`giant_host`) read in the same wait; 0 for an unsampled run."""
        if self.unsampled:
            return 0
        return self.queue.read_tally(then_read=((self.giant_host, self.giant),))[0]
