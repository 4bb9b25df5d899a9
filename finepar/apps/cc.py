"""Connected components by FastSV (Zhang, Azad and Hu, SIAM PP 2020): log-depth rounds.

On the symmetrised graph (weak components for directed input), every vertex
keeps a parent ``f`` (initially itself) and a grandparent ``gf = f[f]``. A round:

1. the edge phase: ``mn[u]``, the smallest ``gf`` among ``u``'s neighbours:
   the (min, second) row operation pulled over every row of the plan (both
   devices), or, when few grandparents changed, pushed from those vertices
   alone on one device (``mn`` only falls: ``gf`` never rises);
2. the vertex phase on the push side: stochastic hooking ``f[f[u]] <- mn[u]``,
   aggressive hooking ``f[u] <- mn[u]``, shortcutting ``f[u] <- gf[u]``
   (atomic minima), then ``gf <- f[f]``.

It stops when no grandparent changes; each label is then the smallest vertex
id of its component. Pointer jumping halves tree depths every round, so the
rounds grow with log n, not with the diameter as label propagation's do.
"""

from __future__ import annotations

import numpy as np

from ..engine import Engine, RowOp
from ..graph import Graph
from . import register
from ..runtime import cl
from .base import MAX_ITER, App, AppResult, DynamicPolicy, Param, component_sizes, in_unit
from .frontier import FrontierApp, FrontierQueue, sync_from_push_side, sync_to_push_side


@register
class ConnectedComponents(FrontierApp, App):
    """FastSV connected components with pull / push edge phases.

    Result: ``values`` are labels (int32, the smallest vertex id of each component);
    ``extra['components']`` their count and ``extra['trace']`` the rounds.
    """

    name = "cc"
    title = "connected components (FastSV: hooking and pointer jumping; weak for directed input)"
    ops = (RowOp("cc", "app_cc.cl", acc_dtype=np.dtype(np.int32), writes=("y",)),)
    params = (Param("frontier_fraction", "float", 0.2,
                    "pull over every row (both devices) while the changed vertices touch at "
                    "least this share of the edges (0.2, §4.2)", in_unit),
              Param("static", "flag", False, "every round pulls over every row (no push)"),
              MAX_ITER)

    def static_params(self) -> dict:
        return {"static": True}

    matrix_form = "symmetrized"

    def matrix(self, graph: Graph) -> Graph:
        return graph.symmetrized()

    def extra_params(self) -> tuple:
        return ("policy",)

    def prepare(self, engine: Engine, graph: Graph) -> dict:
        sym = engine.matrix
        n = sym.n
        for name, init in (("f", np.arange(n)), ("f_old", np.arange(n)), ("gf", np.arange(n)),
                           ("mn", np.full(n, np.iinfo(np.int32).max)), ("stamp", np.full(n, -1))):
            engine.vector(name, init.astype(np.int32))
        push, vrole = engine.push_role(), engine.vertex_role()
        q = FrontierQueue(engine, push, sym, ("cc.cl", "frontier.cl")) if push else None
        wide = sym.indptr.dtype == np.int64
        side = engine.pair.side(vrole)
        prg = (q.program if q else engine.pair.program(
            side, ("cc.cl", "frontier.cl"), {"OFFSET_T": "long" if wide else "int"}))
        return {"push_role": push, "vertex_role": vrole, "queue": q,
                "indptr": q.indptr if q else engine.scratch(vrole, sym.indptr),
                "counters": engine.scratch(vrole, np.zeros(4, np.uint32)),
                "host": np.zeros(4, np.uint32),
                "hook": cl().Kernel(prg, "fastsv_hook"),
                "grand": cl().Kernel(prg, "fastsv_grandparent")}

    # ------------------------------------------------------------ the loop's hooks
    def start(self, engine: Engine, st: dict):
        engine.iota("f")  # on the devices: no n-long host arrays, no transfers
        engine.iota("gf")
        engine.fill("mn", np.iinfo(np.int32).max)
        engine.fill("stamp", -1)
        if st["queue"] is not None:
            st["queue"].load_all()
        return st["n"], st["nnz"]

    def _vertex_phase(self, engine: Engine, st: dict, it: int):
        """Hooking and shortcutting on the vertex role; the changed vertices become the
        next push's queue (where there is a push side)."""
        role, n, q = st["vertex_role"], st["n"], st["queue"]
        queue = engine.pair.side(role).queue
        b = {v: engine.buffer(v, role) for v in ("f", "f_old", "gf", "mn", "stamp")}
        engine.copy("f", "f_old", roles=(role,))  # hooking indexes by the round's first f
        engine.launch(role, st["hook"], n,
                      (np.int32(n), b["mn"], b["f"], b["gf"], b["f_old"]),
                      kind="hook", wg=256, wait=False)  # in order; the counters' read waits
        cl().enqueue_fill_buffer(queue, st["counters"], np.zeros(1, np.uint32), 0, 16)
        engine.launch(role, st["grand"], n, (np.int32(n), b["f"], b["gf"], b["stamp"],
                                             np.int32(it), st["indptr"], st["counters"]),
                      kind="shortcut", wg=256, wait=False)
        cl().enqueue_copy(queue, st["host"], st["counters"], is_blocking=True)
        changed, edges = int(st["host"][0]), int(st["host"][1])
        if changed and q is not None:
            q.from_stamp(b["stamp"], it)
        return changed, edges

    def pull(self, engine: Engine, st: dict, it: int):
        engine.rowop(x="gf", y="mn")
        sync_to_push_side(engine, ("mn",))
        changed = self._vertex_phase(engine, st, it)
        sync_from_push_side(engine, ("gf",))
        return changed

    def push(self, engine: Engine, st: dict, it: int):
        role = st["push_role"]
        st["queue"].advance((engine.buffer("gf", role), engine.buffer("mn", role)), kind="push")
        changed = self._vertex_phase(engine, st, it)
        sync_from_push_side(engine, ("gf",))
        return changed

    def queue_from_marks(self, engine: Engine, st: dict, it: int) -> None:
        """The queue is rebuilt after every round's vertex phase: nothing to do."""

    # ---------------------------------------------------------------- the app
    def run(self, engine: Engine, graph: Graph, *, frontier_fraction: float = 0.2,
            static: bool = False, policy: DynamicPolicy | None = None,
            max_iter: int | None = None) -> AppResult:
        p = self.check_params(graph, {"frontier_fraction": frontier_fraction, "static": static,
                                      "max_iter": max_iter})
        policy = policy or DynamicPolicy(enabled=not p["static"],
                                         frontier_fraction=p["frontier_fraction"])
        sym = engine.matrix
        st = dict(self.prepared(engine, graph))
        st.update(n=sym.n, nnz=sym.nnz)
        iters, trace, _ = self.frontier_loop(engine, st, policy=policy, max_iter=max_iter)
        work = sum(s["frontier_edges"] for s in trace.steps)
        converged = bool(trace.steps) and trace.steps[-1]["found"] == 0
        return AppResult(values=None, iterations=iters, converged=converged,
                         extra={"trace": trace.steps, "steps": trace.counts()},
                         work_edges=int(work))

    def collect(self, engine: Engine, graph: Graph, result: AppResult) -> AppResult:
        result.values = engine.read("gf", role=engine.state[self.name]["vertex_role"])
        result.extra["components"] = int(np.count_nonzero(component_sizes(result.values)))
        return result

    def wants_pull(self, st, size, edges, processed, policy, two_roles) -> bool:
        return policy.corun(edges, 0, st["nnz"], two_roles)  # every round counts anew

    def profile_step(self, engine: Engine) -> None:
        engine.write("gf", np.arange(engine.n, dtype=np.int32))
        engine.rowop(x="gf", y="mn")

    def warmup(self, engine: Engine, graph: Graph, **params) -> None:
        self.run(engine, graph, max_iter=2, static=True)
        self.run(engine, graph, max_iter=2, frontier_fraction=1.0)

    # ---------------------------------------------------------------- answers
    def reference(self, graph: Graph, params: dict):
        from .. import reference
        return reference.components(graph)

    def check(self, graph: Graph, result: AppResult, ref, params: dict) -> str:
        if not np.array_equal(result.values, ref):
            bad = np.flatnonzero(result.values != ref)
            return f"component labels differ from the reference at {bad.size} vertices"
        return ""

    def unpermute(self, result: AppResult, perm: np.ndarray) -> AppResult:
        """Labels are vertex ids: map them back, then name each component by its
        smallest input id."""
        inv = np.empty_like(perm)
        inv[perm] = np.arange(perm.size, dtype=perm.dtype)
        lab = inv[result.values[perm]]
        first = np.full(perm.size, np.iinfo(np.int64).max)
        np.minimum.at(first, lab, np.arange(perm.size))
        result.values = first[lab].astype(np.int32)
        return result

    def summary(self, result: AppResult, graph: Graph) -> list[tuple[str, str]]:
        labels = result.values
        counts = component_sizes(labels)
        return [("components", f"{result.extra['components']:,}"),
                ("largest", f"{counts.max():,} vertices ({100.0 * counts.max() / graph.n:.1f}%)"),
                ("rounds", f"{result.iterations} ("
                           + ", ".join(f"{k}: {v}" for k, v in result.extra["steps"].items())
                           + ")")]
