"""SSSP's pulls before and after their bound (issue 31, item 2), side by side on one graph.

On one input (default Graph500 scale 24, a pattern graph: every length 1), FinePar's SSSP in
four configurations, each a warm-up and ``--repeats`` timed runs on one engine as a default
run prepares it, the answer checked every run:

* ``unbounded, adaptive, near-far``: the pulls read every entry (``unbounded``), the plan
  grouped as the tuner chose before the bound (CSR-adaptive row blocks where it predicts
  them faster), cuGraph's near-far band (32 x the mean length / the mean out-degree);
* ``unbounded, per-row, near-far``: the same on SSSP's own groupings (``none``, ``pow4``);
* ``bounded, per-row, near-far``: the bound on, the old band;
* ``default``: what a run does now (the bound on; delta inf where every edge has one length).

Then BFS's default run on the same graph (the direction-optimising comparison). Each
record keeps the run's time (the report's ``run``: the answer on the devices), the kernels'
span, the host syncs, the plan and every round's direction, frontier, found vertices and
seconds. On a graph where every edge has one length the answer is checked bit for bit
against the breadth-first table (``S_k``, the float32 sum of k lengths, at a vertex k hops
from the root, from a host BFS); on others by the app's check against Dijkstra. JSON is
written after every configuration.

    python benchmarks/probe_sssp.py --scale 24 --json $OUT/probe_sssp.json
"""

from __future__ import annotations

import gc
import time

import numpy as np

from common import log, main_of, probe_parser, probe_start, write_json
from measure import stats

#: The configurations: label, grouping asked, SSSP's parameters (``old_delta``: cuGraph's
#: seed, the default before one length meant inf).
CONFIGS = (("unbounded, adaptive, near-far", "adaptive", {"unbounded": True, "delta": "old"}),
           ("unbounded, per-row, near-far", "auto", {"unbounded": True, "delta": "old"}),
           ("bounded, per-row, near-far", "auto", {"delta": "old"}),
           ("default", "auto", {}))


def parse_args(argv=None):
    ap = probe_parser(__doc__, "probe_sssp")
    ap.add_argument("--weights", default="values", choices=("values", "abs"),
                    help="SSSP's edge lengths: the values, or their magnitudes (signed inputs)")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs of each configuration")
    ap.add_argument("--no-bfs", action="store_true", help="skip BFS's run")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    return args


def breadth_first(g, root: int, w: float) -> np.ndarray:
    """The float32 fixed point where every edge has length ``w`` (see the module)."""
    from finepar.apps.bfs import bfs_levels_fast
    level = bfs_levels_fast(g, root)
    sums = np.zeros(max(int(level.max()), 0) + 1, np.float32)
    for k in range(1, sums.size):
        sums[k] = np.float32(sums[k - 1] + np.float32(w))
    return np.where(level >= 0, sums[np.maximum(level, 0)], np.float32(np.inf))


def checker(app, g, params: dict):
    """``check(result) -> problem`` for ``app``'s runs on ``g`` (one reference, made once),
    and how the reference was made."""
    if app.name == "sssp":
        from finepar.apps.sssp import length_range
        lo, hi = length_range(g, params.get("weights", "values"))
        if lo == hi:
            want = breadth_first(g, params["root"], lo)

            def table(res) -> str:
                bad = np.flatnonzero(res.values != want)
                return f"{bad.size} lengths differ from the breadth-first table" if bad.size else ""
            return table, "the breadth-first table (host BFS)"
    from inputs import reference
    ref, how = reference(app, g, params)
    return (lambda res: app.check(g, res, ref, params)), how.get("how")


def engine_for(wl, pair, args, grouping: str, params: dict):
    """The engine a default run with ``params`` prepares, its plan grouped as asked, its
    teams reducing as ``args.shuffles`` says (``auto`` where ``args`` has none), on the
    profiling queues (``args.profile``, default ``batch``: the probes read device times)."""
    from finepar.engine import EngineOptions
    from finepar.throttle.plan import ThrottleOptions
    options = EngineOptions(shuffles=getattr(args, "shuffles", "auto"),
                            profile=getattr(args, "profile", "batch"))
    wl_run, plan, perm, _, eng, source, _ = wl.prepare(
        pair, throttle=ThrottleOptions().check(), threshold=None, devices=args.devices,
        grouping=grouping, model=None, step=64, calibrate=None, options=options, cache=None,
        steps=wl.app.row_steps(wl.graph, params), params=params)
    if perm is not None:
        raise RuntimeError("the plan relabels the vertices: the probe runs it without")
    return wl_run, eng


def timed_runs(wl_run, eng, params: dict, check, repeats: int) -> dict:
    """A warm-up and ``repeats`` runs on ``eng``, each answer checked; the last run's trace."""
    runs, span, syncs, problems = [], [], [], []
    res = rep = None
    for i in range(repeats + 1):
        res, rep = wl_run.run(engine=eng, warmup=(i == 0), **params)
        problems.append(check(wl_run.app.collect(eng, wl_run.graph, res)
                              if res.values is None else res))
        if i == 0:
            continue
        runs.append(rep.timings["run"])
        span.append(sum(rep.timings["kernel"].values()))
        syncs.append(rep.timings.get("host_syncs"))
    ex = res.extra
    return {"run": stats(runs), "kernel_span": stats(span), "host_syncs": syncs,
            "iterations": res.iterations, "problem": "; ".join(p for p in problems if p),
            "plan": rep.plan.get("label"), "grouping": rep.plan.get("grouping"),
            "delta": ex.get("delta"), "steps": ex.get("steps"),
            "trace": [{k: s.get(k) for k in ("direction", "where", "frontier",
                                              "frontier_edges", "found", "seconds")}
                      for s in ex.get("trace", [])]}


def say(label: str, rec: dict) -> None:
    if "error" in rec:
        log(f"{label}: {rec['error']}")
        return
    med = (rec.get("run") or {}).get("median")
    log(f"{label}: {rec.get('plan')}, {med * 1e3:.3f} ms a run "
        f"({rec.get('iterations')} rounds: {rec.get('steps')}), "
        f"{rec.get('problem') or 'answer ok'}")


def main(argv=None) -> int:
    args = parse_args(argv)
    from finepar import api
    budget, pair, g, out = probe_start(args, "probe_sssp")
    out.update(pattern=bool(g.pattern), sssp={}, bfs={})
    wl = api.Workload("sssp", g)
    base = wl.app.reference_params(g, wl.app.check_params(g, {"weights": args.weights}))
    # cuGraph's seed (32 x the mean length / the mean out-degree), whatever the lengths
    w = np.abs(g.data) if base["weights"] == "abs" else g.data
    mean = 1.0 if g.pattern else float(w.mean(dtype=np.float64))
    old_delta = 32.0 * mean / max(g.nnz / max(g.n, 1), 1e-30) or float("inf")
    out["old_delta"] = old_delta
    out["default_delta"] = wl.app.default_delta(g, {"mean_length": {}}, base["weights"])
    check, out["reference"] = checker(wl.app, g, base)
    engines = {}
    for label, grouping, extra in CONFIGS:
        if budget.spent():
            out["notes"].append(f"budget spent before {label!r}")
            break
        params = {**base, **{k: (old_delta if v == "old" else v) for k, v in extra.items()}}
        t0 = time.perf_counter()
        try:
            if grouping not in engines:
                engines.clear()  # one engine's buffers at a time
                gc.collect()
                engines[grouping] = engine_for(wl, pair, args, grouping, params)
            rec = timed_runs(*engines[grouping], params, check, args.repeats)
        except Exception as exc:  # noqa: BLE001 - a probe records every failure
            rec = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
        rec.update(seconds=time.perf_counter() - t0, grouping_asked=grouping,
                   params={k: v for k, v in params.items() if k != "root"})
        out["sssp"][label] = rec
        say(f"sssp {label}", rec)
        write_json(args.json, out)
    engines.clear()
    gc.collect()
    if not args.no_bfs and not budget.spent():
        t0 = time.perf_counter()
        try:
            bw = api.Workload("bfs", g)
            bp = bw.app.reference_params(g, bw.app.check_params(g, {"root": base["root"]}))
            levels = breadth_first(g, base["root"], 1.0)

            def bfs_check(res) -> str:
                got = np.where(res.values >= 0, res.values, np.inf).astype(np.float32)
                return "" if np.array_equal(got, levels) else "levels differ from the host BFS"
            rec = timed_runs(*engine_for(bw, pair, args, "auto", bp), bp, bfs_check,
                             args.repeats)
        except Exception as exc:  # noqa: BLE001
            rec = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
        rec["seconds"] = time.perf_counter() - t0
        out["bfs"]["default"] = rec
        say("bfs default", rec)
    write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
