"""Where a PageRank iteration's time goes against one SpMV product (issue 31, item 3).

On one graph (default Graph500 scale 24), FinePar's SpMV (its default, and with the columns
kept in the input's order) and PageRank in each variant the app offers (the contributions in
the input's order or in the device's hot columns, Kahan-compensated or plain sums, its own
grouping or SpMV's), each: the app's run as a user gets it (per iteration, median of the
repeats after a warm-up, the answer checked against the float64 reference and its L1 error
kept), then every kernel of one step timed by OpenCL profiling events (the row operation's
launches, cut rows folded inside them, the two passes summing the L1 change and the
dangling mass), a step at a time, beside CuPy's PageRank and cuSPARSE's product where CuPy
is installed. A PageRank variant without the sums (``no sums``: not a correct step, only the
kernel loop) reads what the L1 change and the dangling mass cost. On one device each
variant's run is also laid out as a timeline (every step's events: the idle gaps inside a
batch and at each read of the sums, the launches past convergence), and the default
variant runs again with the doubling batches that preceded the predicted ones
(``doubling_batches``), with no iteration enqueued behind a batch's read of its sums
(``no_look_ahead``), with the sums read into pageable memory (``pageable_sums``), with a
launch of its own summing a step's sums (``no_fold``) and with that launch's two passes
past 2,048 work-groups (``two_passes``: the loop before 2026-11-29's twenty-first
session), side by side. JSON is written after every measurement.

    python benchmarks/probe_pagerank.py --graph graph500:24 --json $OUT/probe_pagerank.json
"""

from __future__ import annotations

import gc
import time
from dataclasses import replace

import numpy as np

from common import load, log, main_of, probe_parser, probe_start, write_json
from measure import stats

#: PageRank's variants: label, columns mode (``None``: the probe's ``--columns``), sums,
#: grouping (``spmv``: SpMV's default's).
PAGERANK = (("today: columns none, compensated", "none", "compensated", "auto"),
            ("hot columns, compensated", None, "compensated", "auto"),
            ("hot columns, plain sums", None, "plain", "auto"),
            ("columns none, plain sums", "none", "plain", "auto"),
            ("hot columns, compensated, SpMV's grouping", None, "compensated", "spmv"))


def parse_args(argv=None):
    ap = probe_parser(__doc__, "probe_pagerank")
    ap.add_argument("--columns", default="auto", choices=("auto", "hot"),
                    help="the hot-column variants' mode (hot: wherever it can be done, for "
                         "an emulated pair whose cache holds the vector)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each variant")
    ap.add_argument("--steps", type=int, default=10, help="steps of each kernel loop")
    ap.add_argument("--products", type=int, default=20, help="SpMV products a run")
    ap.add_argument("--errors", default="none",
                    help="real graphs (all, none or a comma list) on which to measure "
                         "PageRank's L1 error to the float64 reference with each sums and "
                         "columns choice, on the GPU alone and split at T_f = 64 (last)")
    ap.add_argument("--no-cupy", action="store_true")
    ap.add_argument("--variants", default="all",
                    help="PageRank variants to run: all, or a comma list of their numbers "
                         "(1-%d: %s)" % (len(PAGERANK), "; ".join(
                             f"{i} {v[0]}" for i, v in enumerate(PAGERANK, 1))))
    args = ap.parse_args(argv)
    try:
        picked = (range(1, len(PAGERANK) + 1) if args.variants == "all"
                  else [int(v) for v in args.variants.split(",")])
        if not all(1 <= i <= len(PAGERANK) for i in picked):
            raise ValueError
    except ValueError:
        ap.error(f"--variants: 'all' or numbers 1-{len(PAGERANK)}, got {args.variants!r}")
    args.variants = [PAGERANK[i - 1] for i in picked]
    return args


# ------------------------------------------------------------------------ kernel loop


def kernel_loop(eng, op, args: dict, steps: int, before=None) -> dict:
    """Every launch of ``steps`` steps of row operation ``op`` (a RowOp) on each side,
    one step at a time, by profiling events: ``{label: stats of seconds}`` (the
    launches in enqueue order, ``ROLE step`` the first start to the last end). The
    partial-sum passes run as in a device-stepped iteration. ``before()`` runs before
    each step (resetting what a step's convergence test would stop)."""
    from finepar.device import cl
    mod, per = cl(), {}
    for k in range(steps + 1):
        if before is not None:
            before()
        evs = {}
        for r in eng.roles:
            store = eng.stores[r]
            q = store.side.queue
            mod.enqueue_fill_buffer(q, eng.stop[r], np.zeros(1, np.int32), 0, 4)
            ol = store.ops(op, eng.fscal[r], eng.stop[r])
            launched = store.enqueue(ol, eng.step_args(args, r))
            labels = [f"{r} {i}: {L.label}" for i, L in enumerate(ol.launches)]
            if ol.reduce_stage is not None:
                launched.append(ol.reduce_stage.enqueue(q))
                labels.append(f"{r} reduce pass 1")
            if ol.reduce is not None:
                launched.append(ol.reduce.bind(slot=0).enqueue(q))
                labels.append(f"{r} reduce")
            evs[r] = list(zip(labels, launched))
        for r in evs:
            eng.stores[r].side.queue.finish()
        if k == 0:  # the first step warms the kernels
            continue
        for r, done in evs.items():
            for label, ev in done:
                per.setdefault(label, []).append((ev.profile.end - ev.profile.start) * 1e-9)
            per.setdefault(f"{r} step", []).append(
                (done[-1][1].profile.end - done[0][1].profile.start) * 1e-9)
    return {label: stats(v) for label, v in per.items()}


def timeline(wl_run, eng, run_params: dict) -> dict:
    """One more run with every step's launch events kept (one device, batched steps): the
    run's wall time, the device's span from the first launch to the last, the steps'
    own spans, the idle gaps between steps inside a batch and at each read of a batch's
    sums (before the step enqueued first after the read, and before the first the host
    enqueued once it had the sums: with a look-ahead these differ), and the spans of the
    steps enqueued past convergence; seconds. Each gap includes the step's sum
    reduction, which its events do not cover."""
    batches, marks, orig, later = [], set(), eng.drain, eng.sums_later

    def drain():  # the events read once the drain waited for them
        pending = [evs for _, events, _ in eng.pending for evs in events.values() if evs]
        orig()
        batches.append([[(ev.profile.start * 1e-9, ev.profile.end * 1e-9) for ev in evs]
                        for evs in pending])

    def sums_later(*a, **k):
        done = sum(len(b) for b in batches)
        marks.add(done + len(eng.pending))
        wait = later(*a, **k)
        return lambda: (wait(), marks.add(done + len(eng.pending)))[0]
    eng.drain, eng.sums_later = drain, sums_later
    try:
        res, rep = wl_run.run(engine=eng, warmup=False, **run_params)
    finally:
        del eng.drain, eng.sums_later
    steps = [(s[0][0], s[-1][1]) for b in batches for s in b]
    if not steps:
        return {"wall": rep.timings["run"], "steps": 0}
    inside, between = [], []
    for i in range(1, len(steps)):
        (between if i in marks else inside).append(steps[i][0] - steps[i - 1][1])
    spans = [e - s for s, e in steps]
    cuts = sorted(m for m in marks if 0 < m < len(steps))
    return {"wall": rep.timings["run"], "iterations": res.iterations, "steps": len(steps),
            "batches": np.diff([0, *cuts, len(steps)]).tolist(),
            "device_span": steps[-1][1] - steps[0][0],
            "step_spans": float(np.sum(spans)), "useful_step_median": float(np.median(
                spans[:res.iterations])),
            "past_convergence_spans": spans[res.iterations:],
            "gaps_inside_batches": float(np.sum(inside)), "gaps_at_reads": between}


def doubling_batches(trace: list, tol: float, left: int) -> int:
    """The batches before the predicted ones: 1, 2, 4, ... up to ``MAX_BATCH``."""
    from finepar.apps.pagerank import MAX_BATCH
    return max(1, min(len(trace) + 1, MAX_BATCH, left))


def no_sums_op(op):
    """``op`` without the step's two sums (NEED_PARTIALS=0, no reduction): the kernel
    loop's reading of what they cost; not a correct PageRank step."""
    return replace(op, name=op.name + "-nosums", part_dtype=None,
                   defines=tuple(op.defines) + (("NEED_PARTIALS", 0),))


# --------------------------------------------------------------------------- variants


def prepared(wl, pair, args, *, grouping: str, columns: str, params: dict):
    """The engine of one configuration as a default run makes it (plan, throttling as
    ``auto`` decides, engine); returns ``(workload run, plan, perm, engine)``."""
    from finepar.engine import EngineOptions
    from finepar.throttle.plan import ThrottleOptions
    wl_run, plan, perm, _, eng, source, _ = wl.prepare(
        pair, throttle=ThrottleOptions().check(), threshold=None, devices=args.devices,
        grouping=grouping, model=None, step=64, calibrate=None,
        options=EngineOptions(columns=columns, shuffles=args.shuffles, profile="batch"),
        cache=None,
        steps=wl.app.row_steps(wl.graph, params), params=params)
    return wl_run, plan, perm, eng


def app_runs(wl, wl_run, eng, perm, params: dict, ref, repeats: int) -> dict:
    """A warm-up and ``repeats`` timed runs on ``eng``: per iteration, kernel span per
    iteration, the answer's check and (PageRank) L1 error to the reference."""
    app = wl.app
    run_params = app.permute_params(params, perm) if perm is not None else dict(params)
    per_it, span, runs, rep = [], [], [], None
    res = None
    for i in range(repeats + 1):
        res, rep = wl_run.run(engine=eng, warmup=(i == 0), **run_params)
        if i == 0:
            continue
        per_it.append(rep.timings["per_iteration"])
        it = max(res.iterations, 1)
        span.append(sum(rep.timings["kernel"].values()) / it)
        runs.append(res.iterations)
    if perm is not None:
        res = app.unpermute(res, perm)
    out = {"per_iteration": stats(per_it), "kernel_span_per_iteration": stats(span),
           "iterations": runs, "problem": app.check(wl.graph, res, ref, params),
           "plan": rep.plan.get("label"), "grouping": rep.plan.get("grouping"),
           "columns": rep.plan.get("columns"), "lowering": rep.plan.get("lowering"),
           "ops": res.extra.get("ops")}
    if app.name == "pagerank":
        out["l1_error"] = float(np.abs(res.values.astype(np.float64) - ref).sum())
    return out


def spmv_variants(g, pair, args, out, budget, save) -> str:
    """SpMV's default and its columns kept; returns the default's grouping."""
    from finepar import api
    from inputs import reference
    wl = api.Workload("spmv", g)
    params = wl.app.reference_params(g, wl.app.check_params(g, {"repeat": args.products}))
    ref, how = reference(wl.app, g, params)
    out["references"]["spmv"] = how
    grouping = "auto"
    for label, columns in (("default", "auto" if args.columns == "auto" else "hot"),
                           ("columns none", "none")):
        if budget.spent():
            break
        t0 = time.perf_counter()
        try:
            wl_run, _, perm, eng = prepared(wl, pair, args, grouping="auto", columns=columns,
                                            params=params)
            rec = app_runs(wl, wl_run, eng, perm, params, ref, args.repeats)
            rec["kernels"] = kernel_loop(eng, eng.op("spmv"), {"x": "x", "y": "y", "ia": 0},
                                         args.steps)
            if label == "default":
                grouping = rec["grouping"] or "auto"
            eng = wl_run = None
        except Exception as exc:  # noqa: BLE001 - a probe records every failure
            rec = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
        rec["seconds"] = time.perf_counter() - t0
        out["spmv"][label] = rec
        say("spmv", label, rec)
        gc.collect()
        save()
    return grouping


def pagerank_variants(g, pair, args, out, budget, save, spmv_grouping: str) -> None:
    from finepar import api
    from inputs import reference
    wl = api.Workload("pagerank", g)
    base = wl.app.reference_params(g, wl.app.check_params(g, {}))
    backend = None
    if not args.no_cupy:  # a float64 reference on the GPU for the largest graphs
        from arraypeers import backend_or_none
        backend = backend_or_none("cupy", "the float64 reference")
    ref, how = reference(wl.app, g, base, backend=backend)
    out["references"]["pagerank"] = how
    hot = "auto" if args.columns == "auto" else "hot"
    for label, columns, sums, grouping in args.variants:
        if budget.spent():
            out["notes"].append(f"budget spent before pagerank {label!r}")
            break
        grouping = spmv_grouping if grouping == "spmv" else grouping
        params = {**base, "sums": sums}
        t0 = time.perf_counter()
        try:
            wl_run, _, perm, eng = prepared(wl, pair, args, grouping=grouping,
                                            columns=columns or hot, params=params)
            rec = app_runs(wl, wl_run, eng, perm, params, ref, args.repeats)
            app, n = wl.app, eng.n
            op = eng.op(rec["ops"])
            step_args = {**app._args(False, eng), "ia": 0}

            def restart():  # a first iteration's work every step (no convergence stop)
                eng.fill("pr", np.float32(1.0 / n))
                app.start(eng, n)
                eng.scalars([0.15 / n, 0.85, 0.15 / n, 0.85 / n, 1e-6])
            rec["kernels"] = kernel_loop(eng, op, step_args, args.steps, restart)
            run_params = app.permute_params(params, perm) if perm is not None else params
            if eng.device_iterations:
                rec["timeline"] = timeline(wl_run, eng, run_params)
            if label == PAGERANK[1][0] and eng.device_iterations:
                for key, changes in LOOP_VARIANTS:
                    rec[key] = loop_variant(wl, wl_run, eng, perm, params, ref, args,
                                            run_params, changes)
            if label == PAGERANK[1][0]:
                rec["kernels_no_sums"] = kernel_loop(eng, no_sums_op(op), step_args,
                                                     args.steps, restart)
            eng = wl_run = None  # its buffers go before the next variant's
        except Exception as exc:  # noqa: BLE001
            rec = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
        rec.update(seconds=time.perf_counter() - t0, sums=sums, grouping_asked=grouping)
        out["pagerank"][label] = rec
        say("pagerank", label, rec)
        gc.collect()
        save()


#: The default variant's loop run again with module attributes changed: key, and each
#: attribute (``module:name``) with its value. The store's launches are rebuilt for it.
LOOP_VARIANTS = (
    ("doubling_batches", (("finepar.apps.pagerank:next_batch", doubling_batches),)),
    ("no_look_ahead", (("finepar.apps.pagerank:LOOK_AHEAD", 0),)),
    ("pageable_sums", (("finepar.engine.core:PINNED_SUMS", False),)),
    ("no_fold", (("finepar.engine.memory:FOLD_STEP_SUMS", False),)),
    ("two_passes", (("finepar.engine.memory:FOLD_STEP_SUMS", False),
                    ("finepar.engine.memory:REDUCE_ONE_PASS", 2048))),
    ("generic_set_arg", (("finepar.engine.binding:FAST_SCALARS", False),)))


def loop_variant(wl, wl_run, eng, perm, params: dict, ref, args, run_params: dict,
                 changes: tuple) -> dict:
    """The app's runs and a run's timeline with each attribute of ``changes`` (``module:name``:
    the batch rule, the look-ahead, the sums' page-locked reads, the fold of a step's sums,
    its passes, how a scalar argument is set) set to its value, the store's launches
    rebuilt; restored after."""
    import importlib
    saved = []
    for where, value in changes:
        module, _, attr = where.partition(":")
        mod = importlib.import_module(module)
        saved.append((mod, attr, getattr(mod, attr)))
        setattr(mod, attr, value)
    try:
        for st in eng.stores.values():
            st._ops.clear()
        rec = app_runs(wl, wl_run, eng, perm, params, ref, args.repeats)
        rec["timeline"] = timeline(wl_run, eng, run_params)
        return rec
    finally:
        for mod, attr, value in saved:
            setattr(mod, attr, value)
        for st in eng.stores.values():
            st._ops.clear()


def sum_errors(pair, args, out, budget, save) -> None:
    """PageRank's L1 error to the float64 reference on each graph of ``--errors``, with
    compensated and plain sums, the contributions in the input's order and in hot
    columns (``hot``: wherever it can be done), on the GPU alone and split at T_f = 64."""
    from finepar import api, apps
    from finepar.engine import EngineOptions
    from common import graph_specs
    from inputs import reference
    app = apps.get("pagerank")
    for spec in graph_specs(args.errors, ""):
        g, _ = load(spec)
        base = app.reference_params(g, app.check_params(g, {}))
        ref, _ = reference(app, g, base)
        row = out["errors"].setdefault(g.name, {"n": int(g.n), "nnz": int(g.nnz)})
        for where, kw in (("gpu", {"devices": "gpu"}), ("split T_f=64", {"threshold": 64})):
            for sums in ("compensated", "plain"):
                for columns in ("none", "hot"):
                    if budget.spent():
                        return
                    try:
                        res, rep = api.run("pagerank", g, pair=pair, cache=False, warmup=False,
                                           options=EngineOptions(columns=columns), sums=sums,
                                           **kw)
                        rec = {"l1_error": float(np.abs(res.values.astype(np.float64)
                                                        - ref).sum()),
                               "sum": float(res.values.astype(np.float64).sum()),
                               "iterations": res.iterations, "ops": res.extra["ops"],
                               "plan": rep.plan.get("label")}
                    except Exception as exc:  # noqa: BLE001
                        rec = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
                    row[f"{where}, {sums}, columns {columns}"] = rec
            log(f"errors {g.name} {where}: " + ", ".join(
                f"{k.split(', ', 1)[1]} {v.get('l1_error', float('nan')):.2e}"
                for k, v in row.items() if k.startswith(where)))
        save()


def say(app: str, label: str, rec: dict) -> None:
    if "error" in rec:
        log(f"{app} {label}: {rec['error']}")
        return
    med = (rec.get("per_iteration") or {}).get("median")
    step = next((v["median"] for k, v in rec.get("kernels", {}).items() if k.endswith(" step")),
                None)
    log(f"{app} {label}: {rec.get('plan')} ({rec.get('ops')}), "
        f"{med * 1e3:.3f} ms an iteration, kernels of a step {step * 1e3:.3f} ms, "
        f"{rec.get('problem') or 'answer ok'}"
        + (f", L1 error {rec['l1_error']:.2e}" if "l1_error" in rec else ""))


def ratios(out: dict) -> dict:
    """Each PageRank variant's iteration over SpMV's default product (the app's runs and
    the kernel loops' steps), and CuPy's PageRank iteration over it."""
    def med(rec, key="per_iteration"):
        return ((rec or {}).get(key) or {}).get("median")

    def step(rec):
        return next((v["median"] for k, v in (rec or {}).get("kernels", {}).items()
                     if k.endswith(" step")), None)
    spmv = out["spmv"].get("default")
    cupy = out.get("cupy", {}).get("graph")
    cupy_it = (float(np.median(cupy["pagerank_s"])) / cupy["pagerank_iterations"]
               if isinstance(cupy, dict) else None)
    res, recs = {}, {}
    for label, rec in out["pagerank"].items():
        recs[label] = rec
        for key, _ in LOOP_VARIANTS:
            if isinstance(rec.get(key), dict):
                recs[f"{label}, {key.replace('_', ' ')}"] = {**rec[key],
                                                             "kernels": rec.get("kernels", {})}
    for label, rec in recs.items():
        it, prod = med(rec), med(spmv)
        res[label] = {"iteration_over_product": it / prod if it and prod else None,
                      "step_over_product_step": (step(rec) / step(spmv)
                                                 if step(rec) and step(spmv) else None),
                      "cupy_over_iteration": cupy_it / it if cupy_it and it else None}
    return res


def main(argv=None) -> int:
    args = parse_args(argv)
    budget, pair, g, out = probe_start(args, "probe_pagerank")
    out.update(references={}, spmv={}, pagerank={}, errors={})

    def save():
        out["ratios"] = ratios(out)
        write_json(args.json, out)
    grouping = spmv_variants(g, pair, args, out, budget, save)
    pagerank_variants(g, pair, args, out, budget, save, grouping)
    if not args.no_cupy and not budget.spent():
        from probe import cupy_times
        holder = {"cupy": {}}
        cupy_times(g, holder, "graph")
        out["cupy"] = holder["cupy"]
    save()
    if args.errors != "none":
        del g
        gc.collect()
        sum_errors(pair, args, out, budget, save)
    for label, r in out["ratios"].items():
        log(f"pagerank {label}: iteration / SpMV product "
            f"{r['iteration_over_product'] or float('nan'):.3f} (kernel steps "
            f"{r['step_over_product_step'] or float('nan'):.3f}); CuPy / FinePar "
            f"{r['cupy_over_iteration'] or float('nan'):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
