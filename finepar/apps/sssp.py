"""Single-source shortest paths: frontier Bellman-Ford on the (min, +) semiring, float32,
with near and far piles.

Edge lengths are the matrix's values (``weights='values'``: a pattern input's are 1)
or their magnitudes (``weights='abs'``, for signed matrices such as circuit
conductances); a negative length is refused before any work. Two kinds of round on
the frontier loop (:mod:`finepar.engine.frontier`, FinePar TKDE §4.2):

* **pull**: the row operation on ``A^T`` over every row of the plan, both devices at
  once, in place: ``dist[r] <- min(dist[r], min_{u -> r} dist[u] + w)``; a row that
  changed is stamped with the round and counted, with its out-degree (the next
  frontier's edges);
* **push**: from the vertices the last round changed, a load-balanced advance over
  their out-edges on one device, an atomic minimum on the float's bits per edge.
  Pushes keep two piles (near-far, Davidson, Baxter, Garland and Owens, IPDPS 2014):
  an improved vertex below the threshold joins the next frontier (the near pile), one
  at or above it the far pile; when the near pile empties, the far pile's least
  distance ``m`` sets the threshold to ``m + delta`` and the far vertices below it
  become the frontier, on the device. A road graph's relaxation waves so run in batches
  and work-group-local launches, read once per batch, not once per wave, and far
  vertices are not relaxed before the band below them settles. ``delta = inf`` is plain
  frontier Bellman-Ford; the default is cuGraph's seed for its near-far SSSP,
  32 x the mean edge length / the mean out-degree.

A run whose source has few out-edges starts on the CPU's walk
(:mod:`finepar.engine.heapwalk`): Dijkstra on one CPU work-item, the same float32
relaxations, to the end on a road graph; a heap whose vertices' out-edges pass the switch
point (``EngineOptions.walk``) becomes the push side's near pile (no hand-back).

A round pulls while the changed vertices' out-edges are at least
``frontier_fraction`` of all edges (each round judged anew: Bellman-Ford revisits
edges, so §4.2's stop-counting rule would end co-running while frontiers are still
large; a push batch stops on the device where a frontier grows that large). A pull
relaxes every edge, so it empties the far pile. It stops when the frontier and the far
pile are empty.

**The pull's bound.** Every vertex whose out-edges are not yet relaxed at its current
distance (the frontier, the far pile: the *open* vertices) is at ``m`` or more, so no
improvement a round can make is below ``b = fl(m + l)``, ``l`` the least edge length
(float32 addition is monotone). A pull so skips every row at or below ``b`` and stops a
row's scan once its minimum reaches ``b`` (``opencl/apps/sssp/rowop.cl``; the per-row
mappings only: ``groupings``); what it leaves unread could not have changed it, so the
pull still relaxes every edge. The host keeps ``m`` without a read: 0 at the source; a
level (pushed or pulled) from open vertices at ``m`` or more opens only vertices at
``fl(m + l)`` or more; a hand-over from the walk opens its queue, at its least distance
or more; a far pile holds vertices at the threshold of its push phase or more, so ``m``
is capped by that threshold. Where every edge has one length ``l`` (a pattern graph),
frontier Bellman-Ford from a frontier of one distance is breadth-first, relaxing no vertex
twice, so ``delta`` defaults to ``inf`` (no far pile, nothing capping ``m``), ``m`` is the
frontier's one distance and a pull is the bottom-up step of a direction-optimising BFS
(Beamer, Asanović and Patterson, SC'12): an unreached row stops at its first in-neighbour
on the frontier, a reached one is not read.

The answer is the float32 fixed point, which is unique (float32
addition is monotone): the least float32 left-to-right sum over the paths to each
vertex, whatever the split, the piles and the order of the relaxations;
:func:`validate_sssp` checks it exactly and bounds its distance to
float64 Dijkstra.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..engine import Engine, RowOp
from ..errors import InputError
from ..device import cl
from ..graph import Graph
from . import register
from .base import MAX_ITER, App, AppResult, Param, in_unit, positive, vertex_label
from ..engine.executors import DynamicPolicy
from ..engine.frontier import FrontierApp, FrontierQueue
from ..engine import grouplevels
from ..engine.reads import walked
from ..engine.trace import by_device_line, launch_line, push_line

WEIGHTS = ("values", "abs")
#: Entries up to which a GPU alone runs SSSP's rounds in one work-group, frontier
#: Bellman-Ford without piles (:mod:`finepar.engine.grouplevels`, ``group_loop='auto'``).
GROUP_NNZ = 1 << 20


def _op(name: str, weights: str) -> RowOp:
    return RowOp(name, "apps/sssp/rowop.cl", acc_dtype=np.dtype(np.float32),
                 part_dtype=np.dtype(np.int64), has_data=True, ones_when_pattern=True,
                 defines=(("ABS_WEIGHTS", weights == "abs"),), writes=("y", "s0"))


#: Graphs whose values were found non-negative (the values array checked): every run
#: checks its parameters, and a scan of 10^8 values costs tens of milliseconds.
_CHECKED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def check_weights(graph: Graph) -> None:
    """Refuse negative edge lengths (NaN and infinite values never reach a Graph), once
    per graph and values array.

    Raises
    ------
    InputError
        Naming the input, how many lengths are negative and the first one.
    """
    if graph.pattern or _CHECKED.get(graph) is graph.data:
        return  # all ones, or this graph's values were checked before
    neg = np.flatnonzero(graph.data < 0)
    if not neg.size:
        _CHECKED[graph] = graph.data
    else:
        k = int(neg[0])
        u = int(np.searchsorted(graph.indptr, k, side="right")) - 1
        raise InputError(graph.source or graph.name,
                         f"{neg.size:,} negative edge weights (first: edge "
                         f"{graph.vertex_label(u)} -> {graph.vertex_label(graph.indices[k])}, "
                         f"{float(graph.data[k]):g}); shortest paths need non-negative "
                         f"weights (--weights abs takes their magnitudes)")


#: The least and the longest edge length of a graph's values array, by weights: a pass over
#: 10^8 values costs tens of milliseconds, once.
_RANGES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def length_range(graph: Graph, weights: str = "values") -> tuple[float, float]:
    """The least and the longest edge length (:func:`sssp_weights`), once per graph, values
    array and weights; a pattern graph's (1, 1) without a pass, a graph without edges
    (1, 1). Lengths are non-negative here (:func:`check_weights`); a zero is +0.

    Returns
    -------
    (float, float)
        Both exact float32 values.
    """
    if graph.pattern or not graph.nnz:
        return 1.0, 1.0
    held = _RANGES.get(graph)
    if held is None or held[0] is not graph.data:
        held = _RANGES[graph] = (graph.data, {})
    if weights not in held[1]:
        w = sssp_weights(graph, weights)
        held[1][weights] = (float(w.min()) + 0.0, float(w.max()) + 0.0)  # -0.0 -> +0.0
    return held[1][weights]


@register
class SSSP(grouplevels.GroupLevelsApp, FrontierApp, App):
    """Frontier Bellman-Ford from one root with pull and push rounds.

    Result: ``values`` are the path lengths (float32, ``inf`` unreached);
    ``extra['trace']`` the rounds (direction, where, frontier), ``extra['reached']``
    the vertices reached. The rate is Graph500's TEPS: the out-edges of the reached
    vertices (undirected edges once) over the run's time.
    """

    name = "sssp"
    #: Place in the registry's order (the CLI's and the API's lists).
    order = 70
    api_args = ('root',)
    api_doc = """Single-source shortest path lengths from ``root`` over the stored values (or their
        magnitudes: ``weights='abs'``); returns ``(lengths, report)`` (float32, ``inf``
        unreached). Negative lengths raise :class:`~finepar.errors.InputError`."""
    title = "single-source shortest paths (frontier Bellman-Ford with near-far piles, float32)"
    ops = (_op("sssp", "values"), _op("sssp-abs", "abs"))
    params = (
        Param("root", "vertex", None, "source vertex: the input's own id; default the vertex "
                                      "of largest out-degree"),
        Param("weights", "choice", "values", "edge lengths: the matrix values (values, the "
                                             "default; 1 for a pattern input) or their "
                                             "magnitudes (abs)", choices=WEIGHTS),
        Param("frontier_fraction", "float", 0.2,
              "pull over every row (both devices) while the changed vertices' out-edges are at "
              "least this share of all edges (0.2, §4.2)", in_unit),
        Param("static", "flag", False, "every round pulls over every row (no push)"),
        Param("delta", "float", None, "near-far band: a push puts improved vertices at or above "
                                      "the threshold in the far pile, moved in when the "
                                      "threshold rises by delta (default 32 x mean edge length "
                                      "/ mean out-degree, or inf where every edge has one "
                                      "length; inf: plain frontier Bellman-Ford)",
              positive),
        Param("unbounded", "flag", False, "pulls read every in-edge of every row (no row "
                                          "skipped, no scan stopped at the least distance an "
                                          "improvement can have): a comparison's baseline"),
        MAX_ITER,
    )
    rate_unit = "TEPS"
    weighted = True
    #: a small input's rounds in one work-group (finepar.engine.grouplevels)
    group_fragment, group_vectors = "apps/sssp/group.cl", ("dist", "stamp")
    group_reads_values = True
    sync_vectors = ("dist", "stamp")
    #: a run from a small source starts on the CPU's walk, Dijkstra on one work-item
    #: (finepar.engine.heapwalk); it writes dist only
    walk_sources = ("apps/sssp/walk.cl",)
    walk_results = ("dist",)
    walk_kind = "heap"
    walk_vectors = ("dist",)
    #: a pull skips rows and stops scans at its bound (the module's docstring): per-row
    #: mappings only (CSR-adaptive blocks and ELL read every entry)
    groupings = ("none", "pow4")

    def static_params(self) -> dict:
        return {"static": True}

    matrix_form = "transpose"

    def matrix(self, graph: Graph) -> Graph:
        return graph.transpose()

    def extra_params(self) -> tuple:
        return ("policy",)

    def defaults(self, graph: Graph, params: dict) -> dict:
        if params.setdefault("weights", "values") == "values":
            check_weights(graph)
        if params.get("root") is None:
            params["root"] = int(np.argmax(graph.out_degrees()))
        return params

    def prepare(self, engine: Engine, graph: Graph) -> dict:
        n = graph.n
        outdeg = graph.out_degrees().astype(np.int32)
        engine.blank("dist", n, np.float32)
        engine.blank("stamp", n, np.int32, -1)
        engine.vector("outdeg", outdeg)
        engine.prepare_exchange()
        pp = self.prepare_push(engine, graph)
        push = pp["push_role"]
        out = {"outdeg": outdeg, **pp, "queue": None, "mean_length": {}}
        if push is not None and not grouplevels.applies(engine, graph, GROUP_NNZ, True):
            out.update(self._push_state(engine, push, graph))  # else built on first use
        return out

    def _push_state(self, engine: Engine, push: str, graph: Graph) -> dict:
        """The push side's list, far piles and refill kernel (a small input's usual runs
        take one work-group's launch and never build them: :meth:`_ensure_push`)."""
        q = FrontierQueue(engine, push, graph, ("apps/sssp/frontier.cl", "skeleton/frontier.cl",
                                                "apps/sssp/refill.cl"),
                          with_data=not graph.pattern, refill=True)
        piles = {k: engine.scratch(push, np.full(max(graph.n, 1), -1, np.int32))
                 for k in ("fstamp", "far0", "far1")}
        return {"queue": q, **piles, "refill": cl().Kernel(q.program, "far_refill")}

    def _ensure_push(self, engine: Engine, graph: Graph, st: dict) -> None:
        """Build the push side's state where :meth:`prepare` left it to its first use."""
        if st["queue"] is None and st["push_role"] is not None:
            built = self._push_state(engine, st["push_role"], graph)
            engine.state[self.name].update(built)
            st.update(built)

    def default_delta(self, graph: Graph, st: dict, weights: str) -> float:
        """cuGraph's near-far seed: 32 x the mean edge length / the mean out-degree (once
        per graph and weights); ``inf`` where every edge has one length (a push from a
        frontier of one distance relaxes no vertex twice: the far pile would only cost
        atomics, and would cap the pull's bound)."""
        lo, hi = length_range(graph, weights)
        if lo == hi:
            return float("inf")
        if weights not in st["mean_length"]:
            if graph.pattern:
                w = 1.0
            else:
                w = float(np.abs(graph.data).mean(dtype=np.float64) if weights == "abs"
                          else graph.data.mean(dtype=np.float64))
            st["mean_length"][weights] = w
        deg = graph.nnz / max(graph.n, 1)
        return 32.0 * st["mean_length"][weights] / max(deg, 1e-30) or float("inf")

    # ------------------------------------------------------------ the loop's hooks
    def start_host(self, engine: Engine, st: dict):
        """The run's start on the host: the source's list and out-edges; the walk's queue
        for these lengths."""
        root = st["root"]
        st["start_list"] = np.array([root], np.int32)
        st["far"] = 0
        self.open_at(st, 0.0, st["delta"])
        if st.get("walker") is not None:  # the lengths pick its queue (and its costs)
            st["walker"].use(st["weights"] == "abs")
        return 1, int(st["outdeg"][root])

    def start_devices(self, engine: Engine, st: dict, roles: tuple | None = None,
                      queue: bool = True) -> None:
        """The run's start on the devices: distances on ``roles`` (default: the plan's;
        ``()``: none), no stamps, an empty far pile; with ``queue`` the source in the push
        side's near pile."""
        if roles is None or roles:
            self.start_vectors(engine, st, roles)
        engine.fill("stamp", -1)
        q = st["queue"]
        if q is not None:
            cl().enqueue_fill_buffer(q.side.queue, st["fstamp"], np.full(1, -1, np.int32), 0,
                                     st["fstamp"].size)
            q.set_state([0, np.float32(st["delta"]).view(np.uint32), 0])  # far pile, threshold
            if queue:
                q.load(np.array([st["root"]], np.int32))

    def start_vectors(self, engine: Engine, st: dict, roles: tuple | None = None) -> None:
        """Distances at a run's start on ``roles`` (default: the plan's): inf, the source's
        0 (on the devices: no n-long host arrays, no waits)."""
        engine.fill("dist", np.float32(np.inf), roles)
        engine.set_entries("dist", [st["root"]], [0.0], roles, wait=False)

    def walks(self, st: dict) -> bool:
        """The walk pushes: not where every round must pull."""
        return not st["static"]

    def walk_args(self, engine: Engine, st: dict) -> tuple:
        """The walk's ``(abs_weights, dist)`` on the CPU."""
        return np.int32(st["weights"] == "abs"), engine.buffer("dist", "cpu")

    def walk_handed(self, engine: Engine, st: dict, walker) -> None:
        """The heap's vertices are the near pile: the far pile empty (nothing pushed before
        in this run), the threshold the least distance handed over plus delta."""
        thr = np.float32(np.float32(walker.least) + np.float32(st["delta"]))
        st["queue"].set_state([0, thr.view(np.uint32), 0])
        st["far"] = 0
        self.open_at(st, walker.least, thr)

    # ------------------------------------------------------------ the pull's bound
    @staticmethod
    def open_at(st: dict, least: float, threshold: float) -> None:
        """The open vertices (out-edges not relaxed at their distance) are at ``least`` or
        more, and the far pile's will be at ``threshold`` or more (the threshold now: it
        only rises)."""
        st["open"] = np.float32(least)
        st["levels"] = 0  # levels since, each adding the least length
        st["threshold"] = st["threshold_now"] = np.float32(threshold)

    def pull_bound(self, st: dict) -> np.float32:
        """The least distance a pull can give a row now: ``fl(m + l)``, ``m`` the open
        vertices' lower bound (each level since it was set adds ``l``, the least length, in
        float32 as the devices add; capped by the far pile's threshold, which a pull's
        phase began at), ``l`` the least length; ``-inf`` (read everything) when
        ``unbounded``."""
        if st["unbounded"]:
            return np.float32(-np.inf)
        least = np.float32(st["least_length"])
        m = st["open"]
        for _ in range(st["levels"]):
            m = np.float32(m + least)
        m = min(m, st["threshold"])
        return np.float32(m + least)

    def wants_pull(self, st, size, edges, processed, policy, two_roles) -> bool:
        refused = st.pop("refused", False)
        return refused or policy.corun(edges, 0, st["nnz"], two_roles)  # judged anew

    def more_work(self, st: dict) -> bool:
        """The far pile still holds vertices (the near pile may be empty)."""
        return st.get("far", 0) > 0

    def pull(self, engine: Engine, st: dict, it: int):
        """A pull round at the bound (:meth:`pull_bound`, the devices' ``fscal[0]``); the
        rows it changed are the open vertices after it, at the bound or more."""
        bound = self.pull_bound(st)
        engine.scalars([bound], wait=False)
        found, found_edges = engine.rowop(op=st["op"], x="dist", y="dist", s0="stamp",
                                          aux="outdeg", ia=it, exchange="dist")
        if st["queue"] is not None and st["far"]:  # every edge relaxed: the far pile is done
            q = st["queue"]  # a new epoch: its vertices' far stamps must not keep them out
            q.set_state([0, q.host[1], q.host[2] + np.uint64(1)])
            st["far"] = 0
        self.open_at(st, bound, st["threshold_now"])  # the far pile is empty
        return int(found), int(found_edges)

    def _advance_args(self, engine: Engine, st: dict) -> tuple:
        role, q = st["push_role"], st["queue"]
        return (engine.buffer("dist", role), engine.buffer("stamp", role), q.data,
                np.int32(st["weights"] == "abs"), st["fstamp"], st["far0"], st["far1"],
                np.float32(st["delta"]), np.float32(st["one_length"]))

    def push_levels(self, engine: Engine, st: dict, it: int, batch: int, cap):
        """Push levels in a batch (or a work-group-local launch), stopped on the device where
        a frontier's out-edges reach ``frontier_fraction`` of all edges (a pull pays
        there); before each batch level, the far pile refills an empty near pile."""
        q = st["queue"]
        args = self._advance_args(engine, st)
        limit = (1.0, int(np.ceil(st["frontier_fraction"] * st["nnz"])) - 1, 0, 0, 0)

        def refill(j: int, level: int) -> None:
            buf = (q.front, q.offs) if j % 2 == 0 else (q.next, q.next_offs)
            engine.launch(st["push_role"], st["refill"], q.lwg or 256,
                          (np.int32(j), q.indptr, buf[0], buf[1], q.tallies, np.int32(level),
                           *args), kind="refill", wg=q.lwg or 256, wait=False)
        far = np.isfinite(st["delta"])  # delta = inf: no far pile to refill from
        run = q.run(it, args, batch=batch, cap=cap, limit=limit,
                    before_level=refill if far else None)
        st["far"] = int(q.host[0])
        st["levels"] += len(run.levels)
        st["threshold_now"] = np.uint32(q.host[1]).view(np.float32)
        return run

    def queue_from_marks(self, engine: Engine, st: dict, it: int, size: int, edges: int) -> None:
        """The rows the last pull round changed (stamped ``it - 1``) become the queue."""
        st["queue"].from_stamp(engine.buffer("stamp", st["push_role"]), it - 1, size, edges)

    # ---------------------------------------------------------------- the app
    def run(self, engine: Engine, graph: Graph, *, root: int | None = None,
            weights: str = "values", frontier_fraction: float = 0.2, static: bool = False,
            delta: float | None = None, unbounded: bool = False,
            policy: DynamicPolicy | None = None, max_iter: int | None = None) -> AppResult:
        p = self.check_params(graph, {"root": root, "weights": weights,
                                      "frontier_fraction": frontier_fraction, "static": static,
                                      "delta": delta, "unbounded": unbounded,
                                      "max_iter": max_iter})
        policy = policy or DynamicPolicy(enabled=not p["static"],
                                         frontier_fraction=p["frontier_fraction"])
        st = self.prepared(engine, graph)
        d = p.get("delta") or self.default_delta(graph, st, p["weights"])
        lo, hi = length_range(graph, p["weights"])
        st = dict(st)
        st.update(p, n=graph.n, nnz=graph.nnz, op=self.ops[WEIGHTS.index(p["weights"])].name,
                  delta=d, least_length=lo, one_length=lo if lo == hi else -1.0)
        if self.in_group(engine, graph, p):  # a small input: one launch
            iters, trace, where = self.group_levels(engine, graph, st)
        else:
            self._ensure_push(engine, graph, st)
            iters, trace, where = self.frontier_loop(engine, st, policy=policy,
                                                     max_iter=p.get("max_iter"))
        last = trace.last()
        converged = last is None or (last["found"] == 0 and not st.get("far"))
        return AppResult(values=None, iterations=iters, converged=converged,
                         extra={"root": st["root"], "weights": p["weights"], "delta": d,
                                "trace": trace.step_view(), "launches": trace.launches,
                                "per_launch": trace.per_launch(),
                                "push_role": st["push_role"], "push_costs": st["push_costs"],
                                "steps": trace.counts(), "where": where,
                                "by_device": trace.by_device(),
                                "handovers": trace.handovers,
                                "walk_queue": (st["walker"].queue_kind
                                               if st.get("walker") is not None else None)})

    def usual(self, params: dict) -> bool:
        """Whether a run with ``params`` runs SSSP the default way: not ``static`` or
        ``unbounded``, no ``delta`` (the piles asked for) and no ``max_iter``."""
        return not (params.get("static") or params.get("unbounded")
                    or params.get("delta") is not None or params.get("max_iter") is not None)

    @property
    def group_nnz(self) -> int:
        """:data:`GROUP_NNZ`, as the module holds it at the call."""
        return GROUP_NNZ

    def group_args(self, engine: Engine, st: dict, gl) -> tuple:
        """Distances, stamps and the lengths (one length, the values or their
        magnitudes) on the launch's role."""
        return (engine.buffer("dist", gl.role), engine.buffer("stamp", gl.role), gl.data,
                np.int32(st["weights"] == "abs"), np.float32(st["one_length"]))

    def early_programs(self, pair, matrix: Graph, params: dict, options=None) -> list:
        """The one work-group's program where :meth:`one_device` takes the GPU by rule."""
        return [self.group_program()] if self.one_device(pair, matrix, params, options) else []

    def collect(self, engine: Engine, graph: Graph, result: AppResult) -> AppResult:
        st = engine.state[self.name]
        role = {"queue": st["push_role"], "walk": "cpu",
                "group": engine.roles[0]}.get(result.extra["where"])
        got = walked(st, result.extra["where"], ("dist",))
        result.values = got[0] if got else engine.read("dist", role=role)
        reached = np.isfinite(result.values)
        work = int(st["outdeg"][reached].sum(dtype=np.int64))
        result.work_edges = work // 2 if graph.symmetric else work
        result.extra["reached"] = int(reached.sum())
        return result

    def profile_step(self, engine: Engine) -> None:
        """A pull round over every row, unbounded (every row scans all its in-edges)."""
        engine.scalars([-np.inf])
        engine.rowop(x="dist", y="dist", s0="stamp", aux="outdeg", ia=-2)

    def warmup(self, engine: Engine, graph: Graph, **params) -> None:
        """A few rounds each way, so every kernel is compiled (a small input's one
        work-group's run, where it applies, instead: :meth:`in_group`)."""
        if self.in_group(engine, graph, self.check_params(graph, dict(params))):
            self.run(engine, graph, **params)
            return
        self.run(engine, graph, **{**params, "max_iter": 2, "static": True})
        self.run(engine, graph, **{**params, "max_iter": 2, "static": False,
                                   "frontier_fraction": 1.0})

    # ------------------------------------------------------------- answers
    def reference(self, graph: Graph, params: dict):
        return reference_sssp(graph, params["root"], params.get("weights", "values"))

    def check(self, graph: Graph, result: AppResult, ref, params: dict) -> str:
        return "; ".join(validate_sssp(graph, params["root"], result.values,
                                                 params.get("weights", "values"), *ref))

    def summary(self, result: AppResult, graph: Graph) -> list[tuple[str, str]]:
        ex = result.extra
        d = result.values[np.isfinite(result.values)]
        return [("root", vertex_label(graph, ex["root"])),
                ("reached", f"{ex['reached']:,} of {graph.n:,} vertices"),
                ("longest path", f"{float(d.max()):.6g} ({ex['weights']} weights)"),
                ("rounds", f"{result.iterations} ("
                           + ", ".join(f"{k}: {v}" for k, v in ex["steps"].items())
                           + f"; near-far delta {ex['delta']:.4g})"),
                ("launches", launch_line(ex["per_launch"])),
                ("by device", by_device_line(ex["by_device"], ex.get("handovers"))
                 + (f"; the walk's queue: {ex['walk_queue']}" if ex.get("walk_queue") else "")),
                ("push role", push_line(ex["push_role"], ex["push_costs"]))]


# ------------------------------------------------- float64 reference (host, scipy)


def sssp_weights(graph: Graph, weights: str = "values") -> np.ndarray:
    """Edge lengths of SSSP: the stored values (``values``) or their magnitudes (``abs``),
    float32 as the graph stores them, shape (nnz,)."""
    return np.abs(graph.data) if weights == "abs" else graph.data


def reference_sssp(graph: Graph, root: int, weights: str = "values"):
    """Shortest-path lengths from ``root`` along out-edges, by scipy's Dijkstra in float64.

    Parameters
    ----------
    weights : {'values', 'abs'}
        Edge lengths (:func:`sssp_weights`; non-negative).

    Returns
    -------
    (dist, hops)
        ``dist``: float64, shape (n,), ``inf`` where unreached; ``hops``: int64,
        shape (n,), edges on the path Dijkstra found (-1 unreached).
    """
    import scipy.sparse as sp
    from scipy.sparse import csgraph
    w = sssp_weights(graph, weights).astype(np.float64)
    a = sp.csr_array((w, graph.indices, graph.indptr), shape=graph.shape)
    dist, pred = csgraph.dijkstra(a, directed=True, indices=root, return_predecessors=True)
    return dist, _tree_depth(pred, root)


def _tree_depth(pred: np.ndarray, root: int) -> np.ndarray:
    """Depth of every vertex in a predecessor tree (-1 off the tree), by pointer jumping:
    O(n log depth). ``pred``: scipy's predecessors (negative for the root and unreached)."""
    up = np.where(pred >= 0, pred, -1).astype(np.int64)
    depth = (up >= 0).astype(np.int64)  # invariant: depth[v] = edges from v up to up[v]
    active = np.flatnonzero(up >= 0)
    while active.size:
        anc = up[active]
        depth[active] += depth[anc]  # right-hand sides are read before any assignment
        up[active] = up[anc]
        active = active[up[active] >= 0]
    depth[(pred < 0) & (np.arange(pred.size) != root)] = -1
    return depth


def validate_sssp(graph: Graph, root: int, dist: np.ndarray, weights: str,
                  ref_dist: np.ndarray, ref_hops: np.ndarray) -> list[str]:
    """Check float32 shortest-path lengths exactly, then against float64 Dijkstra.

    float32 addition is monotone and never decreases a non-negative sum, so the
    float32 Bellman-Ford fixed point is unique: ``dist32[v]`` = the least float32
    left-to-right sum over the paths to ``v``. The rules:

    1. ``dist[root] == 0``; unreached (``inf``) exactly where Dijkstra's is;
    2. no edge ``u -> v`` improves ``v``: ``dist[v] <= fl32(dist[u] + w)``;
    3. every reached vertex is reached from the root along tight edges
       (``fl32(dist[u] + w) == dist[v]``); ``h32[v]`` is the fewest such edges.

    Rules 2 and 3 prove ``dist`` is that fixed point. Then, with ``u = 2**-24``,
    ``h = max(h32[v], hops[v])`` (Dijkstra's path) and ``g = h u / (1 - h u)``:
    ``|dist[v] - ref_dist[v]| <= g ref_dist[v]``, since a float32 sum of h
    non-negative terms is within a factor ``(1 +- u)^h`` of the exact sum
    (rule 2 along Dijkstra's path bounds ``dist`` above; the tight path of rule 3,
    exactly summed, is no shorter than ``ref_dist``, which bounds it below). The
    lengths are the graph's float32 values, exact in float64; Dijkstra's own float64
    rounding (``2**-53`` per edge) is added to ``g``.

    Returns
    -------
    list of str
        The rules broken (empty if the result is right).
    """
    import scipy.sparse as sp
    from scipy.sparse import csgraph
    errors = []
    dist = np.asarray(dist, dtype=np.float32)
    reached = np.isfinite(dist)
    if dist[root] != 0:
        errors.append(f"dist[root] is {dist[root]}, not 0")
    if not np.array_equal(reached, np.isfinite(ref_dist)):
        bad = np.flatnonzero(reached != np.isfinite(ref_dist))
        return errors + [f"the reached set differs from Dijkstra's at {bad.size} vertices "
                         f"(first {bad[0]})"]
    rows = np.repeat(np.arange(graph.n), np.diff(graph.indptr))
    w = sssp_weights(graph, weights)
    via = dist[rows] + w  # float32 sums, rounded to nearest as the devices round them
    if np.any(dist[graph.indices] > via):
        k = int(np.flatnonzero(dist[graph.indices] > via)[0])
        errors.append(f"edge {rows[k]} -> {graph.indices[k]} still shortens the path")
    tight = reached[rows] & (via == dist[graph.indices])
    t = sp.csr_array((np.ones(int(tight.sum())), (rows[tight], graph.indices[tight])),
                     shape=graph.shape)
    h32 = csgraph.dijkstra(t, directed=True, indices=root, unweighted=True)
    if np.any(np.isinf(h32[reached])):
        errors.append("a reached vertex's distance is the length of no path from the root")
        return errors
    h = np.maximum(h32, ref_hops)[reached]
    g = h * U32 / (1 - h * U32) + h * 2.0 ** -53
    off = np.abs(dist[reached].astype(np.float64) - ref_dist[reached]) > g * ref_dist[reached]
    if off.any():
        v = int(np.flatnonzero(reached)[np.flatnonzero(off)[0]])
        errors.append(f"{int(off.sum())} distances off Dijkstra's by more than float32 "
                      f"rounding (first vertex {v}: {dist[v]!r} vs {ref_dist[v]!r})")
    return errors


#: Unit roundoff of float32 (round to nearest): fl(a + b) = (a + b)(1 + d), |d| <= U32.
U32 = 2.0 ** -24
