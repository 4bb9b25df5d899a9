"""Locality-aware throttling (throttling-atc18) on the GPU: every schedule, bisection and
relabelling of FinePar beside cuSPARSE and a CuPy PageRank, in one run per graph.

For SpMV (per product, ``--products`` products a run) and PageRank (per run and per
iteration), on Graph500 scales (``--scales``) and real graphs (``--real``):

* ``default``: FinePar's default (``api.run`` with no plan option: tuned split,
  schedule ``auto``, hot columns ``auto``); ``default, columns none``: the same with the
  GPU share's columns kept in their order (:mod:`finepar.engine.columns`);
* ``unthrottled``: FinePar on the GPU alone, schedule ``none``, no relabelling, columns
  kept in their order;
* ``hot columns``: the GPU alone, unthrottled, its columns renumbered hottest first on
  the device (``--columns hot``);
* ``auto``: the GPU alone, schedule ``auto``, hot columns ``auto``;
* ``none+R``: the GPU alone, unthrottled on the graph relabelled by ``R``
  (``dbwp``: Algorithm 5 over the K-D tiling's partitions; ``degree``);
* ``S B[+R]``: schedule ``S`` (cf, cf-q, sj, sj-q) over the cache-fit partitions of
  bisection ``B`` (``kd``: K-D tiling; ``spac``: coarsened SPAC, only on graphs of at
  most ``--spac-max-nnz`` nonzeros), on the graph relabelled by ``R`` or not (columns
  kept in their order in these rows and the ``none+R`` ones). One
  partitioning per (bisection, relabelling) serves its four schedules; its time and
  the relabelling's are reported apart and as the iterations they take to pay back
  (cost over the saving per iteration against ``unthrottled``).

Peers (:mod:`arraypeers`, ``--array-peers``): cuSPARSE SpMV on the same CSR, and on
the same matrix relabelled by each of FinePar's permutations (applied by CuPy to the
CSR, as a cuSPARSE user would); a CuPy PageRank power iteration with the same
convergence test (L1 change < 1e-6, damping 0.85, dangling mass spread uniformly).

Every answer is checked against the float64 reference (in the input's vertex ids)
before its time is kept; a warm-up, then ``--repeats`` runs: min / median / max.

    python benchmarks/throttle.py --scales 22,23,24,25 --real cnr-2000.mtx.gz \\
        --json throttle.json --md benchmarks/RESULTS.md
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from common import (Budget, Results, choices, fmt, graph_specs, log, main_of, render_docs,
                    ordered, put, script_parser, stat_cell, target_lines)

SCHEDULES = ("cf", "cf-q", "sj", "sj-q")
#: x "fits the L2" when its 4 n bytes fit the share of the cache throttling gives the
#: vectors (ThrottleOptions.fraction): Graph500 scale 22 and below on a 50 MB L2.
X_SHARE = 0.5


def main(argv=None) -> int:
    """Run the benchmark (or ``--render`` earlier runs' JSON); returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The options (default: the command line's).

    Raises
    ------
    UsageError
        A bad option, before any work.
    """
    p = script_parser(__doc__, "throttle")
    p.add_argument("--scales", default="22,23,24,25")
    p.add_argument("--real", default="soc-Slashdot0902.txt.gz,cnr-2000.mtx.gz")
    p.add_argument("--apps", default="spmv,pagerank")
    p.add_argument("--schedules", default=",".join(SCHEDULES))
    p.add_argument("--bisect", default="kd,spac", help="bisections: kd, spac")
    p.add_argument("--remaps", default="none,dbwp,degree")
    p.add_argument("--spac-max-nnz", type=float, default=5e6,
                   help="run SPAC bisection only on graphs of at most this many nonzeros")
    p.add_argument("--cache-bytes", type=int, default=None,
                   help="the cache the partitions fit (default: the GPU's L2)")
    p.add_argument("--products", type=int, default=50, help="SpMV products per timed run")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--array-peers", default="cupy", choices=("cupy", "numpy", "none"),
                   help="cuSPARSE / CuPy peers (numpy: the same code on the host, as scipy)")
    args = p.parse_args(argv)
    if args.render:
        return render_docs(args, render, targets)
    from arraypeers import backend_or_none
    from finepar.api import make_pair
    from finepar import apps as registry
    from finepar.throttle.dbwp import BISECTIONS
    from finepar.throttle.plan import REMAP_CHOICES
    choices("--apps", args.apps, registry.names())
    choices("--schedules", args.schedules, SCHEDULES)
    choices("--bisect", args.bisect, BISECTIONS)
    choices("--remaps", args.remaps, REMAP_CHOICES)
    specs = graph_specs(args.real, args.scales)
    pair = make_pair(memory=args.memory)
    backend = backend_or_none(args.array_peers)
    device = pair.describe() + (f"; array peers: {backend.device}" if backend else "")
    res = Results("throttle.py", args, device, lambda doc: render(doc, args), targets)
    res.doc["cache_bytes"] = args.cache_bytes or pair.gpu.info.cache_bytes
    if backend is None:
        res.note("skip: no cuSPARSE / CuPy peers in this run")
    budget = Budget(args.budget_s)
    for spec in specs:
        if budget.spent():
            res.note(f"budget spent: {spec} and later graphs not run")
            break
        one_graph(spec, args, pair, backend, res, budget)
    return 0


def gpu_plan(wl):
    """The plan of ``api.run(devices='gpu')``: every row on the GPU, its default grouping."""
    from finepar.split.choose import plan_for
    return plan_for(wl.matrix, threshold=None, devices="gpu", grouping="auto")


def one_graph(spec, args, pair, backend, res, budget) -> None:
    """Every app on one graph: its reference, FinePar's configurations, then the peers."""
    from finepar import apps
    from finepar.api import Workload
    from inputs import load_input, reference
    from measure import app_params
    g, info = load_input(spec)
    cache = res.doc["cache_bytes"]
    bisects = args.bisect.split(",")
    if "spac" in bisects and g.nnz > args.spac_max_nnz:
        bisects.remove("spac")
        res.note(f"SPAC not run on {g.name}: {g.nnz:,} nnz > --spac-max-nnz "
                 f"{args.spac_max_nnz:.0e}")
    shared: dict = {}  # partitionings of one matrix, shared by its apps
    for name in args.apps.split(","):
        app = apps.get(name)
        params = app_params(app, g, {"repeat": args.products} if name == "spmv" else {})
        ref, ref_info = reference(app, g, params, backend=backend)
        row = {"graph": g.name, "spec": spec, "n": g.n, "nnz": g.nnz, "app": name,
               "cache_bytes": cache, "x_fits_cache": 4 * g.n <= X_SHARE * cache, "input": info,
               "reference": ref_info, "finepar": {}, "peers": {}, "partitionings": {}}
        res.add(row)
        t0 = time.perf_counter()
        perms = finepar_rows(Workload(name, g), pair, params, ref, args, bisects, row, res,
                             budget, shared)
        if backend is not None:  # the peers run even past the budget: every row keeps them
            peer_rows(app, g, params, ref, args, backend, perms, row, res)
        row["seconds"] = time.perf_counter() - t0
        res.save()
        unit = "per_iteration"
        log(f"{g.name} {name}: " + "; ".join(
            f"{k} {stat_cell(r.get(unit))}" + ("" if r["correct"] else " WRONG")
            for k, r in ordered(row, "finepar") + ordered(row, "peers"))
            + f" ms/iteration ({row['seconds']:.0f} s)")
        if budget.spent():
            res.note(f"budget spent during {g.name} {name}: later configurations not run")
            return


def partitioned(wl, pair, thr, shared: dict):
    """:meth:`Workload.throttled` of the GPU plan under ``thr``, its wall seconds, and
    whether it came from ``shared``: apps whose matrix is the same object (SpMV and
    PageRank on a symmetric graph) share the relabelling and the partitioning."""
    key = (id(wl.matrix), thr)
    t0 = time.perf_counter()
    if key in shared:
        perm, remap_s, spec = shared[key]
        wl_r = wl if perm is None else wl.remapped(perm, remap_s)
        plan = gpu_plan(wl_r)
        plan.throttle = spec
        return (wl_r, plan, perm, remap_s), time.perf_counter() - t0, True
    wl_r, plan, perm, remap_s = wl.throttled(pair, gpu_plan(wl), thr)
    shared[key] = (perm, remap_s, plan.throttle)
    shared.setdefault("keep", []).append(wl.matrix)  # the id stays this matrix's
    return (wl_r, plan, perm, remap_s), time.perf_counter() - t0, False


def finepar_rows(wl, pair, params, ref, args, bisects, row, res, budget, shared) -> dict:
    """FinePar's configurations on one (graph, app); returns the relabellings used,
    ``{label: perm}``, for the peers."""
    from finepar.throttle.plan import ThrottleOptions
    from measure import Config, finepar_config
    perms = {}

    def run(cfg, prepared=None) -> bool:
        if budget.spent():
            return False
        put(row, "finepar", cfg.label, finepar_config(wl, pair, cfg, params, ref,
                                                      repeats=args.repeats, model=args.model,
                                                      prepared=prepared))
        res.save()
        return True

    from finepar.engine import EngineOptions
    opts = dict(cache_bytes=args.cache_bytes)
    kept = EngineOptions(columns="none")
    for cfg in (Config("unthrottled", devices="gpu", throttle=ThrottleOptions(schedule="none"),
                       options=kept),
                Config("hot columns", devices="gpu", throttle=ThrottleOptions(schedule="none"),
                       options=EngineOptions(columns="hot")),
                Config("auto", devices="gpu", throttle=ThrottleOptions(schedule="auto", **opts))):
        if not run(cfg):
            return perms
    explicit_rows(wl, pair, args, bisects, row, budget, shared, opts, run, perms)
    # the default last: its auto decision weighs the partitioning this machine just measured
    for cfg in (Config("default, columns none", options=kept), Config("default"),
                Config("default, 1000-step job", steps=1000)):
        if not run(cfg):
            break
    return perms


def explicit_rows(wl, pair, args, bisects, row, budget, shared, opts, run, perms) -> None:
    """Every --schedules x --bisect x --remaps configuration, each partitioning made once."""
    from finepar.engine import EngineOptions
    from finepar.throttle.plan import ThrottleOptions
    from measure import Config
    for remap in args.remaps.split(","):
        for k, bisect in enumerate(bisects):
            if budget.spent():
                return
            thr = ThrottleOptions(schedule="cf", bisect=bisect, remap=remap, **opts)
            (wl_r, plan, perm, remap_s), wall, reused = partitioned(wl, pair, thr, shared)
            spec = plan.throttle
            tag = f"{bisect}" + ("" if remap == "none" else f"+{remap}")
            row["partitionings"][tag] = {
                "bisect": bisect, "remap": remap, "remap_s": remap_s,
                "partition_s": spec.seconds if spec else 0.0, "wall_s": wall,
                "shared_with_previous_app": reused,
                "partitions": spec.partitioning.n_parts if spec else 0,
                "tree_depth": int(spec.partitioning.tree.max_depth) if spec else 0}
            if perm is not None and (remap == "dbwp" or k == 0):
                perms[remap if remap == "degree" else f"{remap}-{bisect}"] = perm
            if perm is not None and k == 0:  # relabelling alone, unthrottled
                if not run(Config(f"none+{remap}", devices="gpu",
                                  throttle=ThrottleOptions(schedule="none", remap=remap),
                                  options=EngineOptions(columns="none")),
                           (wl_r, gpu_plan(wl_r), perm, remap_s)):
                    return
            for s in args.schedules.split(","):
                plan_s = gpu_plan(wl_r)
                plan_s.throttle = dataclasses.replace(spec, schedule=s)
                cfg = Config(f"{s} {tag}", devices="gpu",
                             throttle=ThrottleOptions(schedule=s, bisect=bisect, remap=remap,
                                                      **opts),
                             options=EngineOptions(columns="none"))
                if not run(cfg, (wl_r, plan_s, perm, remap_s)):
                    return


def peer_rows(app, g, params, ref, args, backend, perms, row, res) -> None:
    """cuSPARSE SpMV on the CSR and on each relabelled CSR, or the CuPy PageRank."""
    from arraypeers import ArrayGraph, power_record, spmv_record
    from measure import answer_problem

    def check(a):
        return answer_problem(app, g, a.values, ref, params, a.extra, a.iterations)

    ag, name = ArrayGraph(backend, g), backend.name(app.name)
    if app.name == "spmv":
        x = params["x"]
        put(row, "peers", name, spmv_record(name, ag, x, args.products, args.repeats, check))
        res.save()
        for label, perm in perms.items():
            t0 = time.perf_counter()
            agp = ag.permuted(perm)
            secs = time.perf_counter() - t0
            xp = np.empty_like(x)
            xp[perm] = x
            put(row, "peers", f"{name} {label}", spmv_record(
                f"{name} {label}", agp, xp, args.products, args.repeats, check, back=perm,
                detail={"permute_s": secs}))
            agp.free()
            res.save()
    elif app.name == "pagerank":
        put(row, "peers", name, power_record(name, ag, check, args.repeats,
                                             damping=params["damping"], tol=params["tol"],
                                             max_iter=params.get("max_iter") or 100))
        res.save()
    ag.free()


# ------------------------------------------------------------------------- targets


def _med(rec, key="per_iteration"):
    from measure import median
    return median(rec, key)


def _scale(row) -> int | None:
    spec = row.get("spec", "")
    return int(spec.split(":")[1]) if spec.startswith("graph500:") else None


def best(row, remap: str | None = None, key: str = "per_iteration"):
    """(label, median ``key``) of the fastest correct FinePar configuration (with
    relabelling ``remap``, if given); (None, None) if none."""
    cands = [(k, _med(r, key)) for k, r in ordered(row, "finepar")
             if _med(r, key) is not None and (remap is None or (r.get("remap") or {}).get("kind")
                                              == remap)]
    return min(cands, key=lambda kv: kv[1]) if cands else (None, None)


def targets(doc, args) -> list:
    """The issue's targets, each met, missed or not measured, with the numbers."""
    from measure import Targets
    t = Targets()
    rows = doc["rows"]
    big = [r for r in rows if _scale(r) in (24, 25)]
    if not big:
        t.add("at scales 24-25: SpMV and PageRank against cuSPARSE / CuPy", None,
              "no Graph500 scale 24 or 25 in this run")
    for r in big:
        _peer_targets(t, r, _scale(r))
    for r in big:
        _prep_targets(t, r, _scale(r))
    for r in rows:
        if r.get("x_fits_cache"):
            auto, un = _med(r["finepar"].get("auto")), _med(r["finepar"].get("unthrottled"))
            t.ratio(f"{r['graph']} {r['app']} (x fits the L2): auto loses at most 5% "
                    f"against unthrottled", auto / un if auto and un else None, 1.05,
                    f"auto {fmt(auto * 1e3, 3) if auto else '-'} ms vs unthrottled "
                    f"{fmt(un * 1e3, 3) if un else '-'} ms per iteration: "
                    f"{fmt(100 * (auto / un - 1), 1) if auto and un else '-'}%",
                    "auto or unthrottled not measured", at_most=True)
        if r["app"] == "pagerank":
            part = r["partitionings"].get("kd+dbwp")
            un = _med(r["finepar"].get("unthrottled"))
            cost = part["partition_s"] + part["remap_s"] if part else None
            t.ratio(f"{r['graph']}: K-D tiling plus remapping costs at most 10 PageRank "
                    f"iterations", cost / un if cost is not None and un else None, 10,
                    f"{fmt(cost, 3) if cost is not None else '-'} s = "
                    f"{fmt(cost / un, 1) if cost is not None and un else '-'} unthrottled "
                    f"iterations of {fmt(un * 1e3, 3) if un else '-'} ms",
                    "kd+dbwp or unthrottled not measured", at_most=True)
    return t.items


def _prep_targets(t, r, s: int) -> None:
    """Scale 24 SpMV: K-D tiling of the GPU share within 2 s, the default (and a
    1000-product job's default) at least 1.2x cuSPARSE per product, and the partitioning
    paid back within 100 products by SJ's saving over the unthrottled product."""
    if r["app"] != "spmv" or s != 24:
        return
    kd = r["partitionings"].get("kd")
    t.ratio("K-D tiling of the scale-24 GPU share <= 2 s", kd["partition_s"] if kd else None,
            2.0, f"{fmt(kd['partition_s'], 2) if kd else '-'} s", "kd not measured",
            at_most=True)
    plain = next((rec for k, rec in ordered(r, "peers") if " " not in k), None)
    cus = _med(plain, "per_iteration")
    for label in ("default", "default, 1000-step job"):
        ours = _med(r["finepar"].get(label), "per_iteration")
        t.ratio(f"SpMV {label} >= 1.2x cuSPARSE per product at scale 24",
                cus / ours if cus and ours else None, 1.2,
                f"{fmt(ours * 1e3, 3) if ours else '-'} ms vs cuSPARSE "
                f"{fmt(cus * 1e3, 3) if cus else '-'} ms", "not measured")
    un = _med(r["finepar"].get("unthrottled"), "per_iteration")
    sj = _med(r["finepar"].get("sj kd"), "per_iteration")
    saving = un - sj if un and sj else None
    t.ratio("K-D partitioning paid back within 100 products (its seconds over SJ's saving "
            "per product)", kd["partition_s"] / saving if kd and saving and saving > 0 else None,
            100, f"{fmt(kd['partition_s'], 2) if kd else '-'} s over "
            f"{fmt(saving * 1e3, 3) if saving else '-'} ms saved per product",
            "sj kd or unthrottled not measured, or SJ saved nothing", at_most=True)
    _columns_payback(t, r)


def _columns_payback(t, r) -> None:
    """The default's hot columns (their seconds, from its report) paid back within 100
    products by what they save per product against the default with columns kept."""
    d = r["finepar"].get("default")
    cols = (((d or {}).get("plan") or {}).get("columns") or {}).values()
    kept, hot = _med(r["finepar"].get("default, columns none"), "per_iteration"), \
        _med(d, "per_iteration")
    saving = kept - hot if kept and hot else None
    cost = sum(c["seconds"] for c in cols if c["applied"]) or None
    t.ratio("the default's hot columns paid back within 100 products (their seconds over "
            "the saving per product against the default with columns kept)",
            cost / saving if cost and saving and saving > 0 else None, 100,
            f"{fmt(cost * 1e3, 1) if cost else '-'} ms over "
            f"{fmt(saving * 1e3, 3) if saving else '-'} ms saved per product",
            "not renumbered, not measured, or nothing saved", at_most=True)


def _peer_targets(t, r, s: int) -> None:
    """Scale ``s``: FinePar (its default and its best configuration) against the plain
    peer (SpMV 1.3x cuSPARSE, PageRank 1.3x CuPy), and SpMV against cuSPARSE on each
    relabelled matrix (1.0x, FinePar's best with the same relabelling)."""
    peers = ordered(r, "peers")
    plain = next(((k, rec) for k, rec in peers if " " not in k), (None, None))
    if r["app"] == "spmv":
        key, unit = "per_iteration", " per product"
    elif r["app"] == "pagerank":
        key, unit = "seconds", " per run"
    else:
        return
    theirs = (plain[0] or "the peer", _med(plain[1], key))
    for which, ours in (("default", ("default", _med(r["finepar"].get("default"), key))),
                        ("best configuration", best(r, key=key))):
        t.speedup(f"scale {s}: FinePar {r['app']} ({which}) >= 1.3x plain {theirs[0]}", ours,
                  theirs, 1.3, unit)
    for name, rec in peers:
        if " " in name:  # the peer on a relabelled matrix
            remap = name.split(" ", 1)[1].split("-")[0]
            t.speedup(f"scale {s}: FinePar SpMV >= 1.0x {name} (the same relabelled matrix)",
                      best(r, remap=remap), (name, _med(rec)), 1.0, unit)


# --------------------------------------------------------------------------- render


def amortised(row, rec) -> str:
    """Iterations a configuration's partitioning and relabelling take to pay back
    against ``unthrottled`` ('never' without a saving, '-' without a cost)."""
    prep = rec.get("prepare") or {}
    cost = prep.get("partition_s", 0.0) + prep.get("remap_s", 0.0)
    un, me = _med(row["finepar"].get("unthrottled")), _med(rec)
    if not cost or un is None or me is None:
        return "-"
    return f"{cost / (un - me):.1f}" if un > me else "never"


def render(doc, args) -> str:
    """The RESULTS.md section of a run's document: the targets, then a table per graph
    and app."""
    lines = ["## Locality-aware throttling on the GPU (throttling-atc18)", "",
             f"Device: {doc['device']}. Date: {doc['date']}. `benchmarks/throttle.py`, each "
             f"graph's configurations side by side in one run. Times in ms, median (min-max) "
             f"of {doc['args']['repeats']} runs after a warm-up: SpMV per product "
             f"({doc['args']['products']} a run), PageRank per iteration and per run. Cache "
             f"for the partitions: {doc.get('cache_bytes', 0):,} bytes. `unthrottled`: "
             f"the GPU alone, no schedule, no relabelling; `S B+R`: schedule S over the "
             f"partitions of bisection B on the graph relabelled by R; `none+R`: relabelled, "
             f"unthrottled. x fits the L2 when its 4 n bytes fit the half of it throttling "
             f"gives the vectors (`dbwp` relabels by Algorithm 5 over the partitions of the bisection "
             f"named, `none+dbwp` over the first one's). Partitionings of one matrix are shared "
             f"by its apps (SpMV and PageRank on a symmetric graph) and reported with their "
             f"own cost. *Pays back after*: (partitioning + relabelling seconds) / (the "
             f"per-iteration saving against `unthrottled`). Every answer was checked against "
             f"the float64 reference before its time was kept (WRONG: failed, no time).", ""]
    lines += [f"- {n}" for n in doc.get("notes", [])] + ([""] if doc.get("notes") else [])
    if doc.get("targets"):
        lines += ["Targets:", ""] + target_lines(doc["targets"]) + [""]
    for r in doc["rows"]:
        lines += [f"### {r['app']} on {r['graph']} ({r['n']:,} vertices, {r['nnz']:,} nnz"
                  f"{', x fits the L2' if r.get('x_fits_cache') else ''})", "",
                  "| configuration | ms / iteration | ms / run | iterations | partitions | "
                  "partition s | relabel s | pays back after | what ran |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for label, rec in ordered(r, "finepar"):
            rn = rec.get("ran") or {}
            prep = rec.get("prepare") or {}
            if not rec.get("correct"):
                lines.append(f"| {label} | WRONG | | | | | | | {rec.get('problem', '')[:80]} |")
                continue
            what = (f"{rn.get('plan')}" + (f"; model {rn['model']}" if rn.get("model") else "")
                    + (f"; SJ kept {len(rn['sj_cover'])} launches" if rn.get("sj_cover") else ""))
            lines.append(
                f"| {label} | {stat_cell(rec.get('per_iteration'))} | "
                f"{stat_cell(rec.get('seconds'), digits=2)} | {rn.get('iterations')} | "
                f"{rn.get('partitions') or '-'} | {fmt(prep.get('partition_s'), 3)} | "
                f"{fmt(prep.get('remap_s'), 3)} | {amortised(r, rec)} | {what} |")
        for label, rec in ordered(r, "peers"):
            if not rec.get("correct"):
                lines.append(f"| {label} | WRONG | | | | | | | {rec.get('problem', '')[:80]} |")
                continue
            lines.append(f"| {label} | {stat_cell(rec.get('per_iteration'))} | "
                         f"{stat_cell(rec.get('seconds'), digits=2)} | {rec.get('iterations')}"
                         f" | | | {fmt((rec.get('detail') or {}).get('permute_s'), 3)} | | |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main_of(main))
