"""Is FinePar's default the best device choice? Its default (``devices="auto"``) beside the
same engine on one device, scipy on one core and CuPy, per app and graph, in one process.

For BFS, SSSP, CC, PageRank and SpMV (``--apps``) on every graph of ``--real`` and
``--scales`` (the specs of :func:`common.graph_specs`), side by side:

* ``finepar default``: ``finepar.run(app, graph, devices="auto")``, the pair opened once,
  the graph already in memory; ``finepar cpu`` and ``finepar gpu``: the same call with
  ``devices="cpu"`` / ``"gpu"``. Each FinePar record keeps two times per call: the run
  time its RunReport gives (``seconds``: the app's run, its results still on the devices)
  and the wall time of the whole call (``call_seconds``: building the app's matrix, the
  plan, the engine, FinePar's own warm-up run, the run and the results to the host: what
  a user waits for once the graph is loaded), and what the report says about its choice
  (``choice``: the devices, the plan and the reason for it, the tuner's figures, the
  result's summary lines and counts over its trace, e.g. levels per device and how often
  the device changed);
* ``scipy`` (one core): ``csgraph.breadth_first_order`` (BFS), ``csgraph.dijkstra`` from
  the root (SSSP), ``csgraph.connected_components`` (CC), a ``scipy.sparse`` power
  iteration with FinePar's convergence test (PageRank: the loop of
  :mod:`arraypeers`, L1 change below ``tol``), ``A @ x`` (SpMV, the app's products per run);
* CuPy where it has the app: the PageRank loop and cuSPARSE SpMV of :mod:`arraypeers`,
  ``cupyx.scipy.sparse.csgraph.connected_components`` (CC); a missing one is skipped with
  one line. Timed by the host's clock from a synchronised start to the end of its work
  (the backend's ``clock='host'``), as FinePar's run times are: CUDA events left out the
  launch of the first product and the wait for the last, which FinePar's times hold.

Every answer is checked against the app's float64 reference (:func:`inputs.reference`)
before its time is kept (scipy's float64 SSSP lengths, which the app's float32 check may
refuse, against the reference's lengths: :func:`peer_check`); a warm-up, then
``--repeats`` timed runs (min / median / max).
Each graph is read once (its load time is reported per graph). The script prints every
(app, graph) where FinePar's default is below 0.95x the best of the others by median run
time, with the reason its report gave for its choice (also ``below_best`` in the JSON).

On the emulated pair (well within a minute on 2 cores; ``--quick`` gives the same inputs):

    python benchmarks/best_device.py --real ca-GrQc,luxembourg --scales 10 --repeats 2 \\
        --json best_device.json --md /tmp/best_device.md

Everything (issue 29, item 3): ``--real all --scales 18,22,24``. On the GPU machine through
``run_gpu.sh``'s ``best_device`` stage (``--md $OUT/RESULTS.md``, ``--json
$OUT/best_device.json`` and ``--budget-s`` given; a later ``--json`` wins), in calls that fit
its time limit, then the runs' JSON merged:

    bash benchmarks/run_gpu.sh best_device --real all --scales 18 --json $OUT/best-real.json
    bash benchmarks/run_gpu.sh best_device --real none --scales 22 --json $OUT/best-s22.json
    bash benchmarks/run_gpu.sh best_device --real none --scales 24 --apps bfs,cc,sssp \\
        --slow-s 5 --json $OUT/best-s24-graph.json
    bash benchmarks/run_gpu.sh best_device --real none --scales 24 --apps pagerank,spmv \\
        --slow-s 5 --json $OUT/best-s24-sparse.json
    python benchmarks/best_device.py --render best-*.json --md benchmarks/RESULTS.md
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from pathlib import Path

import numpy as np

from common import (Budget, Results, choices, fmt, graph_specs, log, main_of, ordered, put,
                    render_docs, script_parser, stat_cell, target_lines)
from measure import app_params_or_fallback, stats

#: The apps compared, in the order they run on each graph.
APPS = ("bfs", "sssp", "cc", "pagerank", "spmv")

#: FinePar's device choices: the default first, then each device alone.
DEVICES = (("finepar default", "auto"), ("finepar cpu", "cpu"), ("finepar gpu", "gpu"))

#: Below this fraction of the best other system's speed, the default's choice is listed.
BELOW = 0.95

#: ``--quick``: options left at their defaults take these (a run of about a minute here).
QUICK = {"real": "ca-GrQc,luxembourg", "scales": "10", "repeats": 2}


def main(argv=None) -> int:
    """Run the benchmark (or ``--render`` earlier runs' JSON); returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The options (default: the command line's).

    Raises
    ------
    UsageError
        A bad option or input, before any work.
    """
    args = parse(argv)
    if args.render:
        return render_docs(args, render, summarise)
    from finepar.api import make_pair
    choices("--apps", args.apps, APPS)
    specs = graph_specs(args.real, args.scales)
    pair = make_pair(memory=args.memory)
    ctx = cupy_peers(args.apps.split(","))
    device = pair.describe() + (f"; CuPy peers: {ctx['gpu'].device}" if ctx["gpu"] else "")
    res = Results("best_device.py", args, device, lambda doc: render(doc, args), summarise)
    res.doc.update(apps=args.apps.split(","), graphs=[], below_best=[])
    for line in ctx["skipped"]:
        res.note(line)
    budget = Budget(args.budget_s)
    for spec in specs:
        if budget.spent():
            res.note(f"budget spent: {spec} and later graphs not run")
            break
        one_graph(spec, args, pair, ctx, res, budget)
    log("\n".join(["", "targets:"] + target_lines(res.doc["targets"])))
    log("\n".join(below_lines(res.doc["below_best"])))
    return 0


def parse(argv):
    """The options (:func:`common.script_parser`'s and this script's), ``--quick`` applied
    to those left at their defaults."""
    p = script_parser(__doc__, "best_device")
    p.add_argument("--real", default="all", help="real graphs: all, none or a comma list")
    p.add_argument("--scales", default="18,22,24", help="Graph500 scales, a comma list")
    p.add_argument("--apps", default=",".join(APPS), help=f"comma list of {', '.join(APPS)}")
    p.add_argument("--repeats", type=int, default=3, help="timed runs after one warm-up")
    p.add_argument("--quick", action="store_true",
                   help="small inputs: " + " ".join(f"--{k} {v}" for k, v in QUICK.items())
                        + " (where not given)")
    p.add_argument("--no-cache", action="store_true",
                   help="FinePar's calls without the prepared-graph cache (cache=False)")
    p.add_argument("--group-loop", default="auto", choices=("auto", "always", "none"),
                   help="FinePar's calls' EngineOptions.group_loop (a small input's form of "
                        "a run: auto, the default, by its size rule; always, to find where "
                        "that rule should stand; none, never)")
    p.add_argument("--columns", default="auto", choices=("auto", "hot", "none"),
                   help="FinePar's calls' EngineOptions.columns (auto, the default: hot "
                        "columns first where x outgrows the GPU's cache; hot: wherever they "
                        "can be; none: never)")
    p.add_argument("--grouping", default="auto",
                   choices=("auto", "none", "pow4", "adaptive", "ell"),
                   help="FinePar's calls' grouping (auto, the default: the tuner's)")
    p.add_argument("--scipy-max-nnz", type=float, default=6e8,
                   help="skip the single-threaded scipy peers above this many nonzeros")
    p.add_argument("--slow-s", type=float, default=20.0,
                   help="a peer whose warm-up took longer gets one timed run")
    args = p.parse_args(argv)
    if args.quick:
        for k, v in QUICK.items():
            if getattr(args, k) == p.get_default(k):
                setattr(args, k, v)
    return args


def cupy_peers(apps: list) -> dict:
    """The CuPy backend and its CC function where present; ``skipped``: one line per CuPy
    peer of ``apps`` that is missing here, saying why."""
    from arraypeers import Backend
    wanted = {"pagerank": "CuPy PageRank loop", "spmv": "cuSPARSE SpMV",
              "cc": "CuPy connected_components"}
    out = {"gpu": None, "cc": None, "skipped": []}
    try:
        out["gpu"] = Backend("cupy")
        out["gpu"].clock = "host"  # what a caller waits, as FinePar's runs are timed
    except Exception as exc:  # noqa: BLE001 - any failure means: no CuPy peer here
        why = f"{type(exc).__name__}: {exc}"
        out["skipped"] = [f"skip {w}: CuPy is not usable here ({why})"
                          for a, w in wanted.items() if a in apps]
        return out
    if "cc" in apps:
        try:
            from cupyx.scipy.sparse.csgraph import connected_components
            out["cc"] = connected_components
        except Exception as exc:  # noqa: BLE001 - an older CuPy without csgraph
            out["skipped"].append(f"skip {wanted['cc']}: cupyx.scipy.sparse.csgraph."
                                  f"connected_components does not import "
                                  f"({type(exc).__name__}: {exc})")
        else:  # it imports without RAPIDS' pylibcugraph, then fails at every call
            import importlib.util
            if importlib.util.find_spec("pylibcugraph") is None:
                out["cc"] = None
                out["skipped"].append(f"skip {wanted['cc']}: it needs pylibcugraph, "
                                      f"which is not installed here")
    return out


# ------------------------------------------------------------------------ measuring


def one_graph(spec, args, pair, ctx, res, budget) -> None:
    """Every app on one graph (read once): FinePar's three device choices, then the peers."""
    from finepar import apps
    from inputs import load_input
    g, info = load_input(spec)
    res.doc["graphs"].append({"graph": g.name, "spec": spec, "n": g.n, "nnz": g.nnz,
                              "load_s": info["load_s"], "input": info})
    log(f"{g.name}: {g.n:,} vertices, {g.nnz:,} nnz, read in {info['load_s']:.2f} s")
    for name in args.apps.split(","):
        if budget.spent():
            res.note(f"budget spent: {name} and later apps on {g.name} not run")
            return
        one_app(apps.get(name), g, spec, info, args, pair, ctx, res)



def one_app(app, g, spec, info, args, pair, ctx, res) -> None:
    """One row: the reference, FinePar's records, the peers', the best of them."""
    from inputs import reference
    params = app_params_or_fallback(app, g, res)
    ref, ref_info = reference(app, g, params, backend=ctx["gpu"])
    row = {"graph": g.name, "spec": spec, "n": g.n, "nnz": g.nnz, "app": app.name,
           "input": info, "reference": ref_info, "systems": {},
           "params": {k: v for k, v in params.items() if np.ndim(v) == 0}}
    res.add(row)
    t0 = time.perf_counter()
    for label, rec in finepar_records(app, g, pair, params, ref, args).items():
        put(row, "systems", label, rec)
    res.save()
    for system, rec in peer_records(app, g, params, ref, args, ctx):
        put(row, "systems", system, rec)
        res.save()
    row["best"] = best_of(row)
    row["seconds"] = time.perf_counter() - t0
    res.save()
    log(f"{g.name} {app.name}: " + "; ".join(
        f"{s} {stat_cell(r.get('seconds'))} ms" + ("" if r["correct"] else " WRONG")
        for s, r in ordered(row, "systems")) + f" ({row['seconds']:.0f} s)")


def finepar_call(app, g, pair, devices: str, params: dict, args):
    """One ``finepar.run`` call with the graph in memory: (wall seconds, result, report)."""
    import finepar
    from finepar.engine import EngineOptions
    given = {k: v for k, v in (("group_loop", args.group_loop), ("columns", args.columns))
             if v != "auto"}
    opts = {"options": EngineOptions(**given)} if given else {}
    if args.grouping != "auto":
        opts["grouping"] = args.grouping
    t0 = time.perf_counter()
    result, report = finepar.run(app.name, g, pair=pair, devices=devices, model=args.model,
                                 cache=not args.no_cache, **opts, **params)
    return time.perf_counter() - t0, result, report


def finepar_records(app, g, pair, params: dict, ref, args) -> dict:
    """Every FinePar device choice of :data:`DEVICES`: a warm-up call of each, then
    ``--repeats`` rounds of one timed call of each in turn, each answer checked (a wrong one
    ends that choice's record, with no time kept). In turn, not one choice's calls after
    another's: on the H100's host the first choice timed in a process ran 0.4-1 ms slower
    than the same calls later (luxembourg's BFS 6.19 ms first against 5.42 ms second, the
    same plan), which a fixed order charged to the default; each round starts with the next
    choice (on one H200 the default and the GPU alone, on one plan, ran CC 6-11% apart in
    five graphs with the default always first).

    Returns
    -------
    dict
        ``{label: record}``; a record has ``system``, ``config``, ``correct``, ``problem``;
        ``seconds`` (the reports' run times) and ``call_seconds`` (each call's wall time),
        :func:`measure.stats` or None when wrong; ``iterations``, ``timings`` (each timed
        call's report, its numbers), ``warmup`` (the first call's two times), ``choice``
        (:func:`choice`, last call).
    """
    recs = {label: {"system": label, "config": {"devices": devices}, "correct": False,
                    "problem": "", "seconds": None, "call_seconds": None, "iterations": [],
                    "timings": [], "calls": []} for label, devices in DEVICES}
    for i in range(args.repeats + 1):
        k = i % len(DEVICES)  # each round starts with the next choice: no fixed position
        for label, devices in DEVICES[k:] + DEVICES[:k]:
            if not recs[label]["problem"]:
                finepar_call_checked(recs[label], app, g, pair, devices, params, ref, args, i)
    for rec in recs.values():
        calls = rec.pop("calls")
        rec["correct"] = not rec["problem"]
        if rec["correct"]:
            rec.update(seconds=stats([rep.timings["run"] for _, _, rep in calls]),
                       call_seconds=stats([w for w, _, _ in calls]),
                       iterations=[it for _, it, _ in calls],
                       timings=[report_numbers(rep.timings) for _, _, rep in calls])
    gc.collect()  # the engines' device buffers go before the next app
    return recs


def finepar_call_checked(rec: dict, app, g, pair, devices: str, params: dict, ref, args,
                         i: int) -> None:
    """Call ``i`` of one device choice (0: the warm-up) into ``rec``: its answer checked
    (``rec['problem']`` on a wrong one or an error), its times kept after the warm-up."""
    from measure import answer_problem
    try:
        wall, result, last = finepar_call(app, g, pair, devices, params, args)
        problem = answer_problem(app, g, result.values, ref, params, result.extra,
                                 result.iterations)
        if i == 0:
            rec["warmup"] = {"call_s": wall, "run_s": last.timings["run"]}
        elif not problem:
            rec["calls"].append((wall, result.iterations, last))
        rec["choice"] = choice(last, result.extra)
    except Exception as exc:  # noqa: BLE001 - a failing choice is reported, not fatal
        problem = f"{type(exc).__name__}: {str(exc)[:400]}"
    rec["problem"] = problem


def report_numbers(timings: dict) -> dict:
    """A report's timings without its lists (the seconds and counts, ``kernel`` per role)."""
    return {k: v for k, v in timings.items()
            if isinstance(v, (int, float)) or (k == "kernel" and isinstance(v, dict))}


def peer_records(app, g, params, ref, args, ctx):
    """(system, record) of every peer of ``app`` present here: scipy, then CuPy."""
    from arraypeers import ArrayGraph, Backend
    from hostpeers import scipy_bfs, scipy_cc, scipy_dijkstra
    from measure import peer_runs
    check = peer_check(app, g, ref, params)
    host_ok = g.nnz <= args.scipy_max_nnz
    if not host_ok:
        log(f"skip scipy {app.name} on {g.name}: {g.nnz:,} nnz > --scipy-max-nnz")
    fn = {"bfs": scipy_bfs, "cc": scipy_cc, "sssp": scipy_dijkstra}.get(app.name)
    if fn is not None and host_ok:
        rec = peer_runs("scipy", lambda: fn(g, params), check, repeats=args.repeats,
                        slow_s=args.slow_s)
        if check.refused:
            rec["check"] = (f"float64 lengths against the reference's, within float64 "
                            f"rounding (the app's float32 check: {check.refused[0]})")
        yield "scipy", rec
    backends = [b for b in (Backend("numpy") if host_ok else None, ctx["gpu"]) if b]
    for backend in backends if app.name in ("pagerank", "spmv") else ():
        ag = ArrayGraph(backend, g)
        yield backend.name(app.name), array_record(app, ag, params, check, args)
        ag.free()
    if app.name == "cc" and ctx["cc"] is not None:
        ag = ArrayGraph(ctx["gpu"], g)
        yield "cupy", peer_runs("cupy", lambda: cupy_cc(ag, ctx["cc"]), check,
                                repeats=args.repeats, slow_s=args.slow_s)
        ag.free()


def peer_check(app, g, ref, params: dict):
    """The check of a peer's answer (:func:`measure.answer_problem`: the app's own).

    The app's SSSP check proves a float32 fixed point, which exact float64 lengths
    (scipy's Dijkstra) rounded to float32 need not be: a float64 SSSP answer it refuses is
    checked by :func:`lengths_problem` instead, the refusal kept in ``check.refused``.
    """
    from measure import answer_problem

    def check(a) -> str:
        problem = answer_problem(app, g, a.values, ref, params, a.extra, a.iterations)
        if problem and app.name == "sssp" and np.asarray(a.values).dtype == np.float64:
            check.refused.append(problem)
            return lengths_problem(a.values, *ref)
        return problem
    check.refused = []
    return check


def lengths_problem(values, dist: np.ndarray, hops: np.ndarray) -> str:
    """'' if float64 path lengths are the reference's (``dist``, Dijkstra in float64) within
    Dijkstra's own float64 rounding, ``hops * 2**-53`` relative, else the problem."""
    d = np.asarray(values, dtype=np.float64)
    reached = np.isfinite(dist)
    if not np.array_equal(np.isfinite(d), reached):
        return (f"the reached set differs from the reference's at "
                f"{int(np.count_nonzero(np.isfinite(d) != reached))} vertices")
    bound = np.maximum(hops[reached], 1) * 2.0 ** -53 * dist[reached]
    off = int(np.count_nonzero(np.abs(d[reached] - dist[reached]) > bound))
    return f"{off} lengths off the reference's by more than float64 rounding" if off else ""


def array_record(app, ag, params: dict, check, args) -> dict:
    """SpMV (``A @ x``, the app's products per run) or PageRank (the power iteration of
    :mod:`arraypeers`, FinePar's damping and L1 tolerance) on an array backend."""
    from arraypeers import power_iteration, spmv_record, timed
    from measure import Answer, peer_runs
    name = ag.b.name(app.name)
    if app.name == "spmv":
        return spmv_record(name, ag, params["x"], params.get("repeat", 10), args.repeats,
                           check)

    def run():
        secs, (x, it, _) = timed(ag.b, lambda: power_iteration(
            ag, damping=params["damping"], tol=params["tol"],
            max_iter=params.get("max_iter") or 100))
        return Answer(x, secs, it)
    return peer_runs(name, run, check, repeats=args.repeats, slow_s=args.slow_s)


def cupy_cc(ag, connected_components):
    """Weak components with ``cupyx.scipy.sparse.csgraph`` (CUDA events), labels renamed
    to each component's smallest vertex id as scipy's (:func:`hostpeers.scipy_cc`)."""
    from arraypeers import timed
    from hostpeers import smallest_id_labels
    from measure import Answer
    mat = ag.pattern()
    secs, (k, lab) = timed(ag.b, lambda: connected_components(mat, directed=True,
                                                               connection="weak"))
    return Answer(smallest_id_labels(ag.b.host(lab)), secs, 1, {"components": int(k)})


# ------------------------------------------------------------------ FinePar's choice


def choice(report, extra: dict) -> dict:
    """What a FinePar run's report says about its choice, its own keys kept: the devices
    (their roles named), the plan (its lowering left out) and the reason
    (``threshold_source``), the tuner's figures, the prepared-graph cache, the result's
    lines, and :func:`compact` summaries of the result and of ``result.extra`` (its keys
    that the result does not repeat)."""
    d = report.to_dict()
    extra = {k: v for k, v in extra.items() if k not in d["result"]}  # not twice
    dev = {k: (v.get("name") if isinstance(v, dict) and "name" in v else v)
           for k, v in d["devices"].items()}
    return {"devices": dev, "reason": d["threshold_source"],
            "plan": compact({k: v for k, v in d["plan"].items() if k != "lowering"}),
            "tuning": compact(d.get("tuning")), "cache": compact(d.get("cache")),
            "result": compact(d["result"]), "extra": compact(extra)}


def compact(obj, depth: int = 4):
    """``obj`` small enough to keep per row: numbers, strings and short lists as they are,
    dicts to ``depth`` levels, arrays left out, lists of dicts as :func:`list_counts`,
    other long lists as their length, first and last items."""
    if isinstance(obj, np.ndarray):
        return None
    if isinstance(obj, dict):
        if depth <= 0:
            return f"{len(obj)} keys"
        return {str(k): compact(v, depth - 1) for k, v in obj.items()
                if not isinstance(v, np.ndarray)}
    if isinstance(obj, (list, tuple)):
        if obj and all(isinstance(x, dict) for x in obj):
            return list_counts(obj)
        if len(obj) <= 16 and all(not isinstance(x, (dict, np.ndarray)) for x in obj):
            return [compact(x, depth - 1) for x in obj]
        return {"entries": len(obj), "first": compact(obj[0], 1), "last": compact(obj[-1], 1)}
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def list_counts(items: list, most: int = 16) -> dict:
    """Counts over a list of records (a trace): ``entries``; per key whose values are
    strings (at most ``most`` distinct), each value's ``counts`` and the ``changes`` from
    one entry to the next (e.g. levels per device and hand-overs); per numeric key, the
    ``sums``."""
    out: dict = {"entries": len(items)}
    for k in dict.fromkeys(k for it in items for k in it):
        vals = [it.get(k) for it in items]
        if all(isinstance(v, str) for v in vals) and len(set(vals)) <= most:
            out.setdefault("counts", {})[k] = dict(Counter(vals))
            out.setdefault("changes", {})[k] = sum(a != b for a, b in zip(vals, vals[1:]))
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            out.setdefault("sums", {})[k] = float(sum(vals))
    return out


# ------------------------------------------------------------- best of, and targets


def best_of(row: dict) -> dict:
    """The default's median run time against the fastest correct other system's:
    ``default_s``, ``system``, ``best_s``, ``ratio`` (best / default: below 1, the default is
    slower), ``below`` (``ratio < BELOW``, or the default wrong), ``reason``."""
    from measure import median
    fp = row["systems"].get("finepar default") or {}
    others = [(median(r), s) for s, r in ordered(row, "systems") if s != "finepar default"]
    others = sorted((t, s) for t, s in others if t)
    d = median(fp)
    best_s, system = others[0] if others else (None, None)
    ratio = best_s / d if best_s and d else None
    ch = fp.get("choice") or {}
    reason = (f"ran {(ch.get('plan') or {}).get('label')}: {ch.get('reason')}"
              if fp.get("correct") else f"no correct answer ({fp.get('problem')})")
    return {"default_s": d, "system": system, "best_s": best_s, "ratio": ratio,
            "below": (not fp.get("correct")) or (ratio is not None and ratio < BELOW),
            "overlap": _overlap(fp.get("seconds"), (row["systems"].get(system) or {}).get(
                "seconds") if system else None),
            "reason": reason}


def _overlap(a: dict | None, b: dict | None) -> bool:
    """Whether two records' min-max ranges of run times overlap (a median's difference
    inside them is within the runs' spread)."""
    if not a or not b:
        return False
    return a["min"] <= b["max"] and b["min"] <= a["max"]


def summarise(doc, args) -> list:
    """The targets (``Results``' callable, at every write); sets ``doc['below_best']``, the
    (app, graph) pairs where the default is below :data:`BELOW` of the best, with why."""
    from measure import Targets, median
    rows = [r for r in doc["rows"] if "best" in r]
    for r in rows:  # again, so a rendered earlier run's JSON gets today's fields
        r["best"] = best_of(r)
    doc["below_best"] = [{"app": r["app"], "graph": r["graph"], **r["best"]}
                         for r in rows if r["best"]["below"]]
    t = Targets()
    for r in doc["rows"]:
        bound = {"bfs": 4e-3, "sssp": 5e-3}.get(r["app"])
        if r["graph"] == "luxembourg" and bound:
            ft = median(r["systems"].get("finepar default"))
            t.ratio(f"luxembourg: FinePar {r['app'].upper()} <= {bound * 1e3:g} ms", ft,
                    bound, f"{fmt(ft * 1e3 if ft else None, 3)} ms (median run time)",
                    f"no correct FinePar {r['app']}", at_most=True)
    compared = [r for r in rows if r["best"]["ratio"] is not None or r["best"]["below"]]
    worst = sorted(doc["below_best"], key=lambda b: b["ratio"] or 0)[:5]
    spread = sum(1 for b in doc["below_best"] if b.get("overlap"))
    t.add(f"FinePar's default >= {BELOW}x the best of cpu, gpu, scipy, CuPy everywhere",
          (not doc["below_best"]) if compared else None,
          f"{len(doc['below_best'])} of {len(compared)} (app, graph) below ({spread} of them "
          f"with overlapping min-max ranges)"
          + "".join(f"; {b['app']} {b['graph']} {fmt(b['ratio'])}x" for b in worst)
          if compared else "nothing compared")
    return t.items


def below_lines(below: list) -> list:
    """The printed list of (app, graph) pairs where the default is below the best."""
    out = ["", f"FinePar's default below {BELOW}x the best (median run time): {len(below)}"]
    for b in below:
        ms = lambda v: fmt(v * 1e3 if v else None, 3)  # noqa: E731
        spread = ", the ranges overlap" if b.get("overlap") else ""
        out.append(f"- {b['app']} on {b['graph']}: default {ms(b['default_s'])} ms, "
                   f"{b['system']} {ms(b['best_s'])} ms ({fmt(b['ratio'])}x{spread}); "
                   f"{b['reason']}")
    return out


# -------------------------------------------------------------------------- render


def render(doc, args) -> str:
    """The Markdown section: the graphs read, the targets, the default's losses, and a table
    per app (run times, the default's call time, the best other system, the choice)."""
    lines = ["## FinePar's default against each device alone, scipy and CuPy", "",
             f"Device: {doc['device']}. Date: {doc['date']}. `benchmarks/best_device.py`: "
             f"`finepar.run` with `devices=auto` (default), `cpu` and `gpu`, the pair "
             f"opened once and the graph in memory, beside scipy (one core) and CuPy, in one "
             f"process. Times in ms, median (min-max) of {doc['args']['repeats']} runs after "
             f"a warm-up: FinePar's run time from its report; *default call*: the whole "
             f"`finepar.run` call. *vs best*: the best other system's median over the "
             f"default's (below {BELOW}: listed). Every answer was checked against the app's "
             f"float64 reference (WRONG: failed, no time); scipy's float64 SSSP lengths, where the "
             f"app's check (a float32 fixed point) refuses them, against the reference's "
             f"within float64 rounding (the record's `check`).", ""]
    lines += [f"- {n}" for n in doc.get("notes", [])] + ([""] if doc.get("notes") else [])
    graphs = {r["graph"]: r for r in doc["rows"]}.values()  # merged runs' too (--render)
    lines += ["| graph | input | n | nnz | read s |", "|---|---|---|---|---|"]
    lines += [f"| {r['graph']} | {Path(r['spec']).name} | {r['n']:,} | {r['nnz']:,} | "
              f"{r['input']['load_s']:.3f} |" for r in graphs] + [""]
    if doc.get("targets"):
        lines += ["Targets:", ""] + target_lines(doc["targets"]) + [""]
    lines += below_lines(doc.get("below_best") or [])[1:] + [""]
    for app in dict.fromkeys(r["app"] for r in doc["rows"]):
        lines += app_table([r for r in doc["rows"] if r["app"] == app], app)
    return "\n".join(lines)


def app_table(rows: list, app: str) -> list:
    """One app's table: a line per graph."""
    systems = list(dict.fromkeys(s for r in rows for s, _ in ordered(r, "systems")))
    head = ["graph", "nnz", *systems, "default call", "best other", "vs best",
            "default's choice"]
    out = [f"### {app}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        sy, b = r["systems"], r.get("best") or {}
        fp = sy.get("finepar default") or {}
        cells = [r["graph"], f"{r['nnz']:,}"]
        cells += ["-" if sy.get(s) is None else "WRONG" if not sy[s]["correct"]
                  else stat_cell(sy[s].get("seconds")) for s in systems]
        ratio = fmt(b.get("ratio"))
        cells += [stat_cell(fp.get("call_seconds")), b.get("system") or "-",
                  f"**{ratio}**" if b.get("below") else ratio, choice_cell(fp)]
        out.append("| " + " | ".join(cells) + " |")
    return out + [""]


def choice_cell(rec: dict) -> str:
    """The default's plan, the first clause of its reason, and its trace's counts."""
    ch = rec.get("choice")
    if not rec.get("correct") or not ch:
        return (rec.get("problem") or "-")[:60]
    text = f"{(ch.get('plan') or {}).get('label')} ({str(ch.get('reason')).split(':')[0]})"
    counts = ((ch.get("result") or {}).get("trace") or {}).get("counts") or {}
    for key in sorted(counts):  # the JSON's order is sorted: most entries first
        vals = sorted(counts[key].items(), key=lambda vn: (-vn[1], vn[0]))
        text += f"; {key} " + ", ".join(f"{v} {n}" for v, n in vals)
    return text.replace("|", "/")


if __name__ == "__main__":
    raise SystemExit(main_of(main))
