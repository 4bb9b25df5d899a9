"""Connected components, weak for directed input (on the symmetrised graph); each label
is the smallest vertex id of its component. Two algorithms (``algorithm``):

* **afforest** (Sutton, Ben-Nun and Barak, IPDPS 2018; :mod:`finepar.apps.afforest`):
  two neighbour-sampling rounds of links (each find halving its path), the most frequent
  root of a sample as the giant component, then a final hooking over the remaining edges
  of the vertices outside it only, and one compression (a small input: every edge in one
  work-group's launch). It touches about 2n edges plus the small components' edges, with
  no blocking read in the run, but needs one device holding the whole CSR (links need
  one address space).
* **fastsv** (Zhang, Azad and Hu, SIAM PP 2020): log-depth rounds over the plan. Every
  vertex keeps a parent ``f`` (initially itself) and a grandparent ``gf = f[f]``. A
  round: (1) the edge phase, ``mn[u]``, the smallest ``gf`` among ``u``'s neighbours:
  the (min, second) row operation pulled over every row of the plan (both devices), or,
  when few grandparents changed, pushed from those vertices alone on one device (``mn``
  only falls: ``gf`` never rises); (2) the vertex phase on the push side: stochastic
  hooking ``f[f[u]] <- mn[u]``, aggressive hooking ``f[u] <- mn[u]``, shortcutting
  ``f[u] <- gf[u]`` (atomic minima), then ``gf <- f[f]``. It stops when no grandparent
  changes. Pointer jumping halves tree depths every round, so the rounds grow with log
  n, not with the diameter as label propagation's do; every round reads back once.

Across the ranks of a distributed run, Afforest runs on each rank's own subgraph and
only the cross edges' components meet (:mod:`finepar.apps.ccranks`): a bit per ghost
vertex and a record per cross edge between two small components cross the ranks, once.

``auto`` (the default) is Afforest wherever a device holds the whole CSR (across ranks:
the rank's rows), else FastSV,
whose edge phase runs over the plan's shares even when they are cut into chunks. Afforest
is the default because it does less of everything: FastSV's rounds each pull over every
edge (4 rounds at Graph500 scales 22 and 24 on the H100, 8.9x BFS's time at scale 24),
while Afforest's sampling touches two edges per vertex and its final hooking skips the
giant component that holds nearly every edge of a Graph500 or web graph; on a graph
without one (a road network is one large component too; many small ones) the final
hooking still visits each remaining edge once, no more than one FastSV round.
"""

from __future__ import annotations

import numpy as np

from ..engine import Engine, RowOp
from ..graph import Graph
from . import register
from ..device import cl
from .afforest import ROUNDS, Afforest
from .ccranks import BITS_PATHS, PHASES, RankComponents, across_ranks
from .base import MAX_ITER, App, AppResult, Param, component_sizes, in_unit
from ..engine.executors import DynamicPolicy
from ..engine.frontier import (FrontierApp, FrontierQueue, choose_push_role, count_roots,
                               pick_algorithm, queue_defines, sync_from_push_side,
                               sync_to_push_side)
from ..engine.trace import push_line

ALGORITHMS = ("auto", "afforest", "fastsv")
#: Labellings of at most this many vertices have their roots counted on the host, from
#: the labels read anyway (tens of microseconds), instead of a kernel and a read more.
HOST_COUNT_N = 1 << 16


@register
class ConnectedComponents(FrontierApp, App):
    """Connected components by Afforest on one device, or FastSV with pull / push edge
    phases over the plan.

    Result: ``values`` are labels (int32, the smallest vertex id of each component);
    ``extra['components']`` their count, ``extra['algorithm']`` which ran and
    ``extra['trace']`` its phases (Afforest) or rounds (FastSV).
    """

    name = "cc"
    #: Place in the registry's order (the CLI's and the API's lists).
    order = 60
    api_name = "connected_components"
    api_doc = """Weakly connected components; returns ``(labels, report)``; each label is
        the smallest vertex id of its component."""
    title = "connected components (Afforest or FastSV; weak for directed input)"
    ops = (RowOp("cc", "apps/cc/rowop.cl", acc_dtype=np.dtype(np.int32), writes=("y",)),)
    params = (Param("algorithm", "choice", "auto",
                    "afforest (sampling, giant component skipped; one device holding the "
                    "whole CSR), fastsv (rounds over the plan), or auto: afforest where a "
                    "device holds the CSR", choices=ALGORITHMS),
              Param("frontier_fraction", "float", 0.2,
                    "fastsv: pull over every row (both devices) while the changed vertices "
                    "touch at least this share of the edges (0.2, §4.2)", in_unit),
              Param("static", "flag", False, "fastsv: every round pulls over every row "
                                             "(no push)"),
              MAX_ITER)

    def static_params(self) -> dict:
        return {"algorithm": "fastsv", "static": True}

    matrix_form = "symmetrized"

    def matrix(self, graph: Graph) -> Graph:
        return graph.symmetrized()

    def extra_params(self) -> tuple:
        return ("policy",)

    def prepare(self, engine: Engine, graph: Graph) -> dict:
        sym = engine.matrix
        n = sym.n
        for name in ("f", "f_old", "gf", "mn", "stamp"):
            engine.blank(name, n, np.int32)  # start() sets each on the devices
        push, vrole = engine.push_role(), engine.vertex_role()
        q = (FrontierQueue(engine, push, sym, ("apps/cc/frontier.cl", "skeleton/frontier.cl"),
                           local=False, aggregate=False) if push
             else None)
        wide = sym.indptr.dtype == np.int64
        side = engine.pair.side(vrole)
        prg = (q.program if q else engine.pair.program(
            side, ("apps/cc/frontier.cl", "skeleton/frontier.cl"), {"OFFSET_T": "long" if wide else "int"}))
        return {"push_role": push, "vertex_role": vrole, "queue": q,
                "indptr": q.indptr if q else engine.scratch(vrole, sym.indptr),
                "counters": engine.scratch(vrole, np.zeros(4, np.uint32)),
                "host": np.zeros(4, np.uint32), "program": prg,
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
        engine.read_buffer(role, st["host"], st["counters"])
        changed, edges = int(st["host"][0]), int(st["host"][1])
        if changed and q is not None:
            q.from_stamp(b["stamp"], it, changed, edges)
        return changed, edges

    def pull(self, engine: Engine, st: dict, it: int):
        engine.rowop(x="gf", y="mn")
        sync_to_push_side(engine, ("mn",))
        changed = self._vertex_phase(engine, st, it)
        sync_from_push_side(engine, ("gf",))
        return changed

    def push(self, engine: Engine, st: dict, it: int):
        role = st["push_role"]
        st["queue"].enqueue_level(0, it, (engine.buffer("gf", role), engine.buffer("mn", role)))
        changed = self._vertex_phase(engine, st, it)
        sync_from_push_side(engine, ("gf",))
        return changed

    def queue_from_marks(self, engine: Engine, st: dict, it: int, size: int, edges: int) -> None:
        """The queue is rebuilt after every round's vertex phase: nothing to do."""

    # ---------------------------------------------------------------- the app
    def run(self, engine: Engine, graph: Graph, *, algorithm: str = "auto",
            frontier_fraction: float = 0.2, static: bool = False,
            policy: DynamicPolicy | None = None, max_iter: int | None = None) -> AppResult:
        p = self.check_params(graph, {"algorithm": algorithm,
                                      "frontier_fraction": frontier_fraction, "static": static,
                                      "max_iter": max_iter})
        if self.algorithm(engine, p.get("algorithm", "auto"), p.get("static", False)) == \
                "afforest":
            return self._afforest(engine, graph)
        policy = policy or DynamicPolicy(enabled=not p.get("static", False),
                                         frontier_fraction=p.get("frontier_fraction", 0.2))
        sym = engine.matrix
        st = dict(self.prepared(engine, graph))
        st.update(n=sym.n, nnz=sym.nnz)
        iters, trace, _ = self.frontier_loop(engine, st, policy=policy, max_iter=max_iter)
        work = trace.totals()["frontier_edges"]
        last = trace.last()
        converged = last is not None and last["found"] == 0
        return AppResult(values=None, iterations=iters, converged=converged,
                         extra={"algorithm": "fastsv", "trace": trace.step_view(),
                                "steps": trace.counts()},
                         work_edges=int(work))

    def one_device(self, pair, matrix: Graph, params: dict, options=None) -> str | None:
        """Afforest, which ``auto`` takes where a device holds the whole CSR, runs on that
        device alone: the GPU where it can hold it, else the CPU (None for FastSV, or where
        neither can)."""
        from ..engine import EngineOptions
        if params.get("static") or params.get("algorithm", "auto") not in ("auto", "afforest"):
            return None
        opts = options or EngineOptions()
        need = matrix.indices.nbytes
        for role in ("gpu", "cpu"):
            side = pair.side(role)
            if (side.info.int64_atomics and need <= side.info.max_alloc_bytes
                    and need <= opts.budget(role, side)):
                return role
        return None

    def early_programs(self, pair, matrix: Graph, params: dict, options=None) -> list:
        """Afforest's and FastSV's list programs on the device Afforest would take."""
        role = self.one_device(pair, matrix, params, options)
        if role is None:
            return []
        info = pair.side(role).info
        return [(role, (src, "skeleton/frontier.cl"),
                 queue_defines(info, matrix, local=False, role=role, aggregate=False))
                for src in ("apps/cc/afforest.cl", "apps/cc/frontier.cl")]

    def algorithm(self, engine: Engine, asked: str, static: bool = False) -> str:
        """The algorithm a run takes: ``auto`` is Afforest where a device holds the whole
        CSR (and no static run is asked for), else FastSV (:func:`pick_algorithm`); across
        ranks, where a device holds the rank's rows (:func:`_rank_role`)."""
        if across_ranks(engine) and not static and asked in ("auto", "afforest") and \
                _rank_role(self, engine) is not None:
            return "afforest"
        return pick_algorithm(engine, asked, "afforest", "fastsv", plan_anyway=static)

    def _afforest(self, engine: Engine, graph: Graph) -> AppResult:
        """Afforest on the role that pays (:func:`choose_push_role`), built once per engine."""
        st = self.prepared(engine, graph)
        if across_ranks(engine):
            return self._afforest_ranks(engine, st)
        if st.get("afforest") is None:
            role, costs = choose_push_role(engine, (), owned_rows=False)
            st["afforest"] = Afforest(engine, role)
            st["afforest_costs"] = costs
        aff = st["afforest"]
        trace = aff.run_unsampled() if aff.unsampled else aff.run(ROUNDS)
        return AppResult(values=None, iterations=1 if aff.unsampled else ROUNDS + 1,
                         converged=True,
                         extra={"algorithm": "afforest", "trace": trace, "role": aff.role,
                                "push_costs": st["afforest_costs"]},
                         work_edges=int(engine.matrix.nnz))

    def _afforest_ranks(self, engine: Engine, st: dict) -> AppResult:
        """Afforest on this rank's subgraph, then the cross edges' components
        (:class:`~finepar.apps.ccranks.RankComponents`, built once per engine)."""
        if st.get("ranks") is None:
            st["ranks"] = RankComponents(engine, _rank_role(self, engine))
        rc = st["ranks"]
        trace = rc.run()
        return AppResult(values=None, iterations=ROUNDS + 1, converged=True,
                         extra={"algorithm": "afforest", "trace": trace, "role": rc.role,
                                "push_costs": {}, "ranks": dict(rc.stats)},
                         work_edges=int(engine.matrix.nnz))

    def collect(self, engine: Engine, graph: Graph, result: AppResult) -> AppResult:
        st = engine.state[self.name]
        n = engine.matrix.n
        if "ranks" in result.extra:
            rc = st["ranks"]
            result.values = rc.labels()
            result.extra["components"] = int(np.count_nonzero(
                result.values == np.arange(n, dtype=np.int32)))
            result.extra["hooked"] = rc.afforest.hooked()
            rc.afforest.sampled(result.extra["trace"])
            result.extra["ranks"] = dict(rc.finished())
        elif result.extra["algorithm"] == "afforest":
            aff = st["afforest"]
            if n <= HOST_COUNT_N:
                # one wait for the labels and the tally; the roots counted here
                result.values, result.extra["hooked"] = aff.labels_and_hooked()
                result.extra["components"] = int(np.count_nonzero(
                    result.values == np.arange(n, dtype=np.int32)))
            else:
                result.extra["components"] = count_roots(aff.side, aff.queue.program,
                                                         aff.comp, n)
                result.values = aff.labels()
                result.extra["hooked"] = aff.hooked()
            aff.sampled(result.extra["trace"])
        else:
            role = st["vertex_role"]
            result.extra["components"] = count_roots(
                engine.pair.side(role), st["program"], engine.buffer("gf", role), n)
            result.values = engine.read("gf", role=role)
        return result

    def wants_pull(self, st, size, edges, processed, policy, two_roles) -> bool:
        return policy.corun(edges, 0, st["nnz"], two_roles)  # every round counts anew
        # (a FastSV push is one level, never refused on the device)

    def profile_step(self, engine: Engine) -> None:
        engine.write("gf", np.arange(engine.n, dtype=np.int32))
        engine.rowop(x="gf", y="mn")

    def warmup(self, engine: Engine, graph: Graph, **params) -> None:
        """The run's algorithm once (FastSV: a few rounds each way)."""
        p = self.check_params(graph, {k: v for k, v in params.items() if k != "policy"})
        if self.algorithm(engine, p.get("algorithm", "auto"), p.get("static", False)) == \
                "afforest":
            self.run(engine, graph, algorithm="afforest")
        else:
            self.run(engine, graph, algorithm="fastsv", max_iter=2, static=True)
            self.run(engine, graph, algorithm="fastsv", max_iter=2, frontier_fraction=1.0)

    # ---------------------------------------------------------------- answers
    def reference(self, graph: Graph, params: dict):
        return reference_components(graph)

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
        ex = result.extra
        counts = component_sizes(result.values)
        out = [("components", f"{ex['components']:,}"),
               ("largest", f"{counts.max():,} vertices ({100.0 * counts.max() / graph.n:.1f}%)")]
        if "ranks" in ex:
            r = ex["ranks"]
            out.append(("ranks", f"afforest on each rank's subgraph; "
                                        f"{r['cross_edges']:,} cross edges here, "
                                        f"{r['bit_words_sent']:,} words of giant bits sent "
                                        f"({BITS_PATHS[r.get('bits_path', 'host')]}), "
                                        f"{r['records_gathered']:,} records gathered"))
            out += [(f"rank {i}", rank_times(t)) for i, t in enumerate(r.get("per_rank", []))]
        elif ex["algorithm"] == "afforest":
            out += [("algorithm", afforest_line(ex)),
                    ("device", push_line(ex["role"], ex["push_costs"]))]
        else:
            out.append(("rounds", f"fastsv: {result.iterations} ("
                                  + ", ".join(f"{k}: {v}" for k, v in ex["steps"].items())
                                  + ")"))
        return out


# ------------------------------------------------- float64 reference (host, scipy)


def reference_components(graph: Graph) -> np.ndarray:
    """Weakly connected reference_components, each labelled by its smallest vertex id.

    scipy.sparse.csgraph on the graph's structure (no values are copied). A
    :attr:`~finepar.graph.Graph.symmetric` graph's strong reference_components are its
    reference_components, found without the transposed copy scipy builds for weak ones.

    Returns
    -------
    ndarray of int64, shape (n,)
    """
    from .. import reference
    from scipy.sparse import csgraph
    connection = "strong" if graph.symmetric else "weak"
    _, lab = csgraph.connected_components(reference.structure(graph), directed=True, connection=connection)
    first = np.full(lab.max() + 1, graph.n, dtype=np.int64)
    np.minimum.at(first, lab, np.arange(graph.n))
    return first[lab]


def afforest_line(ex: dict) -> str:
    """The summary's line for a one-process Afforest run (its ``extra``): the sampling,
    the giant's share of the sample and the final hooking's list, or a small input's
    unsampled run and its launches."""
    phases = {t["phase"]: t for t in ex["trace"]}
    if "unsampled" in phases:
        u = phases["unsampled"]
        how = ("one work-item's loop in one launch" if u["shape"] == "loop"
               else "a work-item an entry, three launches")
        return (f"afforest: every one of {u['entries']:,} entries linked, no sampling "
                f"({how}; a small input, --group-loop)")
    sample = phases["sample"]
    return (f"afforest: {ROUNDS} sampling rounds, giant component in "
            f"{100 * sample['share']:.0f}% of the sample, final hooking over "
            f"{ex['hooked']:,} vertices outside it")


def rank_times(t: dict) -> str:
    """One rank's line of a run across ranks: its kernels' milliseconds (Afforest's, by
    kind, with its subgraph's entries, largest degree and the vertices its final hooking
    listed; the cross edges'; the labels') and the host's between its waits
    (:data:`ccranks.PHASES`); the cross edges' kernels by kind too."""
    ks = t["kernel_s"]
    aff = {k: v for k, v in ks.items() if not k.startswith("cc-ranks-")}
    kinds = ", ".join(f"{k.removeprefix('afforest-')} {1e3 * v:.2f}" for k, v in aff.items())
    label = ks.get("cc-ranks-label", 0.0)
    steps = {k.removeprefix("cc-ranks-"): v for k, v in ks.items()
             if k.startswith("cc-ranks-") and k != "cc-ranks-label"}
    cross = sum(steps.values())
    by = ", ".join(f"{k} {1e3 * v:.2f}" for k, v in steps.items())
    host = ", ".join(f"{p} {1e3 * t['host_s'][p]:.2f}" for p in PHASES if p in t["host_s"])
    shape = (f"; {t['local_entries']:,} entries, largest degree {t['largest_degree']:,}, "
             f"{t['listed']:,} listed" if "listed" in t else "")
    return (f"kernels: afforest {1e3 * sum(aff.values()):.2f} ms ({kinds}{shape}), "
            f"cross edges {1e3 * cross:.2f} ms ({by}; {t['hook_entries']:,} entries hooked), "
            f"labels {1e3 * label:.2f} ms; host ms between waits: {host}")


def _rank_role(app: ConnectedComponents, engine: Engine) -> str | None:
    """The device of a rank that runs CC across ranks: the one that holds the rank's rows
    (:meth:`ConnectedComponents.one_device` on the rank's matrix), else None."""
    return app.one_device(engine.pair, engine.matrix, {"algorithm": "afforest"},
                          engine.options)
