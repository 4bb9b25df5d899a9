"""Every registered app at the state of the art: FinePar's default beside the peers a
user would otherwise run, on Graph500 scales and the real graphs, in one run per graph.

The apps are those of :func:`finepar.apps.names` (``--apps``), each with its own
parameters' defaults (roots and seeds: the vertex of largest out-degree). Peers
per app, each skipped with a line where it is not installed:

* ``bfs``: scipy ``csgraph.breadth_first_order``, GraphBLAS (level-synchronous,
  ``any.secondi``), and the previous FinePar (commit 8f3c88e in ``.prev/``, its
  CLI ``python -m finepar run bfs FILE --root R --json F``);
* ``cc``: scipy ``csgraph.connected_components``, GraphBLAS FastSV, the previous
  FinePar;
* ``pagerank``, ``rwr``: a CuPy power iteration with the same convergence test
  (L1 change < tol; RWR restarts at its seed, dangling mass to the restart);
* ``hits``: a float64 power iteration (CuPy, else numpy);
* ``sssp``: ``scipy.sparse.csgraph.dijkstra``;
* ``spmv``: cuSPARSE.

FinePar's other algorithms run beside its default where they differ (``VARIANTS``:
CC by FastSV beside the default Afforest; colouring by Jones-Plassmann beside the
default speculative rounds, up to ``--variant-max-nnz`` entries). BFS and CC are also
given in GTEPS: edges over the run's time, edges = nnz / 2 for an undirected graph
stored both ways (Graph500), nnz otherwise, the same count for every system; FinePar's
own rate (the edges its app reports traversing) beside. Every FinePar record carries
its host syncs (blocking reads of each timed run) and, for BFS and SSSP, the levels per
host round trip. For PageRank the host time per iteration is the run's wall time less
the busiest device's kernel time, over the iterations (from the RunReport). Colourings
give their colours beside greedy largest-first's (``finepar.apps.coloring.greedy_coloring``,
networkx's order, counted once per graph and cached; apps.py skips colouring above
``--coloring-max-nnz`` entries, where that host count takes minutes). Every answer is
checked against the app's reference before its time is kept; a warm-up, then
``--repeats`` runs (min / median / max).

Beside every FinePar figure, its bandwidth floor (:mod:`floor`): ``bytes_floor``, the least
bytes the run must move through device memory (a lower bound: every byte once, perfect
caching; the byte model per app is in ``benchmarks/floor.py``), ``floor_seconds``, those
bytes at the GPU role's copy bandwidth measured at the start of the same run (a
device-to-device copy of ``--copy-bytes`` on FinePar's own queue, best of 5, read plus
written bytes; on the emulated pair, PoCL's memcpy), and ``floor_share``, floor_seconds over
the median time: how far from the limit each app runs.

    python benchmarks/apps.py --scales 20,22,24 --real all --json apps.json \\
        --md benchmarks/RESULTS.md

The graph apps of issue 18 on the GPU machine, two calls of about 5 and 7 minutes:

    bash benchmarks/run_gpu.sh apps --apps bfs,cc,sssp,pagerank,coloring \\
        --real cnr-2000,luxembourg --scales 22 --no-graphblas
    bash benchmarks/run_gpu.sh apps --apps bfs,cc,sssp,pagerank --real none --scales 24 \\
        --no-graphblas --scipy-max-nnz 2e8 --json $OUT/apps-s24.json
"""

from __future__ import annotations

import time

import numpy as np

from common import (Budget, Results, choices, fmt, graph_specs, log, main_of, render_docs,
                    ordered, put, script_parser, stat_cell, target_lines)
from floor import MODEL, copy_bandwidth, floor_record
from measure import stats


def app_names(spec: str) -> tuple:
    """The apps ``--apps`` names (a comma list, or ``all``: every registered app)."""
    from finepar import apps
    return apps.names() if spec == "all" else tuple(choices("--apps", spec, apps.names()))

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
    p = script_parser(__doc__, "apps")
    p.add_argument("--scales", default="20,22,24")
    p.add_argument("--real", default="all")
    p.add_argument("--apps", default="all", help="comma list, or all (every registered app)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--prev-repeats", type=int, default=2,
                   help="timed runs of the previous FinePar after one warm-up run (each a "
                        "process: load, its own warm-up, one timed run)")
    p.add_argument("--array-peers", default="cupy", choices=("cupy", "numpy", "none"),
                   help="CuPy / cuSPARSE peers (numpy: the same code on the host)")
    p.add_argument("--no-graphblas", action="store_true")
    p.add_argument("--scipy-max-nnz", type=float, default=6e8,
                   help="skip the single-threaded scipy peers above this many nonzeros")
    p.add_argument("--slow-s", type=float, default=20.0,
                   help="a host peer whose warm-up took longer gets one timed run")
    p.add_argument("--variant-max-nnz", type=float, default=2e7,
                   help="FinePar's slow variants (Jones-Plassmann colouring) only up to this "
                        "many nonzeros")
    p.add_argument("--coloring-max-nnz", type=float, default=2e8,
                   help="skip colouring above this many nonzeros (its greedy largest-first "
                        "count on the host takes minutes there)")
    p.add_argument("--copy-bytes", type=float, default=float(1 << 30),
                   help="bytes of the buffer whose device-to-device copy on the GPU role "
                        "measures the copy bandwidth of the floor (1 GiB; less where the "
                        "device has less memory)")
    args = p.parse_args(argv)
    if args.render:
        return render_docs(args, render, targets)
    from arraypeers import backend_or_none
    from finepar.api import make_pair
    from hostpeers import graphblas_or_none, prev_available
    names = app_names(args.apps)
    specs = graph_specs(args.real, args.scales)
    pair = make_pair(memory=args.memory)
    backend = backend_or_none(args.array_peers)
    gb = None if args.no_graphblas else graphblas_or_none()
    device = pair.describe() + (f"; array peers: {backend.device}" if backend else "")
    res = Results("apps.py", args, device, lambda doc: render(doc, args), targets)
    res.doc["apps"] = list(names)
    bw = copy_bandwidth(pair, int(args.copy_bytes))
    res.doc["copy_bandwidth"] = bw
    if bw["bytes_per_s"]:
        log(f"copy bandwidth of the gpu role: {bw['bytes_per_s'] / 1e9:.1f} GB/s "
            f"({bw['buffer_bytes']:,} bytes, best of {len(bw['seconds'])})")
    else:
        res.note(f"no copy bandwidth measured ({bw['problem']}): no floor shares")
    for what, missing in (("CuPy / cuSPARSE", backend is None and args.array_peers == "cupy"),
                          ("GraphBLAS", gb is None and not args.no_graphblas)):
        if missing:
            res.note(f"skip: no {what} peers in this run (not installed or no device)")
    why = prev_available()
    if why:
        res.note(why)
    ctx = {"backend": backend, "gb": gb, "prev": why is None, "bandwidth": bw["bytes_per_s"]}
    budget = Budget(args.budget_s)
    for spec in specs:
        if budget.spent():
            res.note(f"budget spent: {spec} and later graphs not run")
            break
        one_graph(spec, names, args, pair, ctx, res, budget)
    log("\n".join(["", "targets:"] + target_lines(res.doc["targets"])))
    return 0


#: FinePar's algorithms beside its default, per app: (label, parameters, slow).
VARIANTS = {"cc": (("finepar fastsv", {"algorithm": "fastsv"}, False),),
            "coloring": (("finepar jp", {"algorithm": "jp"}, True),)}


def one_graph(spec, names, args, pair, ctx, res, budget) -> None:
    """Every app on one graph: its reference, FinePar's default, then each peer; a row of
    ``res`` per app, saved after every measurement."""
    from finepar import apps
    from finepar.api import Workload
    from inputs import load_input, reference, undirected_edges
    from measure import Config, app_params_or_fallback, finepar_config
    g, info = load_input(spec)
    for name in names:
        if budget.spent():
            res.note(f"budget spent: {name} and later apps on {g.name} not run")
            return
        if name == "coloring" and g.nnz > args.coloring_max_nnz:
            res.note(f"skip coloring on {g.name}: {g.nnz:,} nnz > --coloring-max-nnz")
            continue
        app = apps.get(name)
        params = app_params_or_fallback(app, g, res)
        ref, ref_info = reference(app, g, params, backend=ctx["backend"])
        row = {"graph": g.name, "spec": spec, "n": g.n, "nnz": g.nnz, "app": name,
               "edges": undirected_edges(g), "rate_unit": app.rate_unit, "input": info,
               "reference": ref_info, "params": {k: v for k, v in params.items()
                                                 if np.ndim(v) == 0}, "systems": {}}
        if name == "coloring":
            row["greedy_colors"] = int(ref)  # greedy largest-first's count (the reference)
        res.add(row)
        t0 = time.perf_counter()
        wl = Workload(name, g)
        for label, extra, slow in (("finepar default", {}, False), *VARIANTS.get(name, ())):
            if slow and g.nnz > args.variant_max_nnz:
                continue
            rec = finepar_config(wl, pair, Config(label), {**params, **extra}, ref,
                                 repeats=args.repeats, model=args.model)
            rec["host_per_iteration"] = host_per_iteration(rec)
            rec["host_syncs"] = stats([t.get("host_syncs", 0) for t in rec.get("timings") or []])
            rec["app_params"] = extra
            rec.update(floor_record(name, g, rec, ctx.get("bandwidth")))
            put(row, "systems", label, rec)
            res.save()
        del wl
        for system, prec in peer_records(app, g, params, ref, args, ctx):
            put(row, "systems", system, prec)
            res.save()
        row["seconds"] = time.perf_counter() - t0
        res.save()
        log(f"{g.name} {name}: " + "; ".join(
            f"{s} {stat_cell(r.get('seconds'))} ms" + ("" if r["correct"] else " WRONG")
            for s, r in ordered(row, "systems")) + f" ({row['seconds']:.0f} s)")


def colours(rec: dict | None) -> int | None:
    """The colours of a correct colouring record (its summary's first number)."""
    if not rec or not rec.get("correct"):
        return None
    line = dict((rec.get("result") or {}).get("summary") or []).get("colours", "")
    return int(line.split()[0]) if line[:1].isdigit() else None


def floor_cell(rec: dict) -> str:
    """``floor ms (share %)`` of a FinePar record (:func:`floor.floor_record`), or ``-``."""
    fs, share = rec.get("floor_seconds"), rec.get("floor_share")
    if fs is None or share is None:
        return "-"
    return f"{fs * 1e3:.3g} ms ({share * 100:.2g}%)"


def levels_per_round_trip(rec: dict | None) -> float | None:
    """Levels per host round trip of a frontier app's last timed run."""
    runs = ((rec or {}).get("result") or {}).get("launches")
    if not runs:
        return None
    return sum(x["levels"] for x in runs) / len(runs)


def host_per_iteration(rec: dict) -> dict | None:
    """Seconds per iteration the host adds: (wall - the busiest device's kernel time) /
    iterations, for every timed run (:func:`measure.stats`); None where the runs kept no
    device times (one device on plain queues, ``EngineOptions.profile`` ``none``)."""
    from measure import stats
    vals = [(t["run"] - max(t["kernel"].values())) / max(it, 1)
            for t, it in zip(rec.get("timings") or [], rec.get("iterations") or [])
            if t.get("profile") != "none"]
    return stats(vals)


def peer_records(app, g, params, ref, args, ctx):
    """(system, record) of every peer of ``app`` present here."""
    from arraypeers import ArrayGraph, Backend, hits_record, power_record, spmv_record
    from hostpeers import (PREV_APPS, GraphBLASGraph, prev_run, scipy_bfs, scipy_cc,
                           scipy_dijkstra, scipy_npz)
    from inputs import cache_dir
    from measure import answer_problem, peer_runs

    def check(a):
        return answer_problem(app, g, a.values, ref, params, a.extra, a.iterations)

    name, backend = app.name, ctx["backend"]
    host_ok = g.nnz <= args.scipy_max_nnz
    if name in ("bfs", "cc", "sssp") and not host_ok:
        log(f"skip scipy {name} on {g.name}: {g.nnz:,} nnz > --scipy-max-nnz")
    if name in ("bfs", "cc", "sssp") and host_ok:
        fn = {"bfs": scipy_bfs, "cc": scipy_cc, "sssp": scipy_dijkstra}[name]
        yield "scipy", peer_runs("scipy", lambda: fn(g, params), check, repeats=args.repeats,
                                 slow_s=args.slow_s)
    if name in ("bfs", "cc") and ctx["gb"] is not None:
        gg = GraphBLASGraph(ctx["gb"], g)
        fn = getattr(gg, name)
        yield "graphblas", peer_runs("graphblas", lambda: fn(params), check,
                                     repeats=args.repeats, slow_s=args.slow_s)
        del gg
    if name in PREV_APPS and ctx["prev"]:
        path = scipy_npz(g, cache_dir())
        yield "finepar 8f3c88e", peer_runs(
            "finepar 8f3c88e", lambda: prev_run(name, path, params), check,
            repeats=args.prev_repeats)
    max_iter = params.get("max_iter") or 100
    if name in ("pagerank", "rwr", "spmv") and backend is not None:
        ag, label = ArrayGraph(backend, g), backend.name(name)
        if name == "spmv":
            yield label, spmv_record(label, ag, params["x"], params.get("repeat", 10),
                                     args.repeats, check)
        else:
            yield label, power_record(
                label, ag, check, args.repeats, tol=params["tol"], max_iter=max_iter,
                damping=params["damping"] if name == "pagerank" else 1 - params["restart_prob"],
                restart=app.restart(g, params) if name == "rwr" else None)
        ag.free()
    if name == "hits":
        be = backend or Backend("numpy")
        ag = ArrayGraph(be, g)
        label = f"float64 ({'cupy' if be.on_gpu else 'numpy'})"
        yield label, hits_record(label, ag, check, args.repeats, tol=params["tol"],
                                 max_iter=max_iter, slow_s=args.slow_s)
        ag.free()


# ------------------------------------------------------------------------- targets


def _scale(row) -> int | None:
    spec = row.get("spec", "")
    return int(spec.split(":")[1]) if spec.startswith("graph500:") else None


def gteps(row, rec) -> float | None:
    """Edges (``row['edges']``) over the median run, in billions per second."""
    from measure import median
    m = median(rec)
    return row["edges"] / m / 1e9 if m else None


def targets(doc, args) -> list:
    """Issue 18's targets, each met, missed or not measured, with the numbers."""
    from measure import Targets, median
    t = Targets()
    rows = doc["rows"]
    by = {(r["graph"], r["app"]): r for r in rows}
    ms = lambda v: fmt(v * 1e3 if v else None, 3)  # noqa: E731
    for r in rows:
        fp = r["systems"].get("finepar default")
        s, real = _scale(r), not r.get("spec", "").startswith("graph500:")
        if r["app"] == "bfs" and s == 24:
            v = gteps(r, fp)
            t.ratio(f"scale {s}: FinePar BFS >= 50 GTEPS", v, 50.0,
                    f"{fmt(v)} GTEPS ({r['edges']:,} edges / {ms(median(fp))} ms)",
                    "no correct FinePar BFS")
        if r["app"] == "cc" and (s in (22, 24) or real):
            bound = 1.5 if real else 2.0
            b = by.get((r["graph"], "bfs"))
            bfs_t = median(b["systems"].get("finepar default")) if b else None
            cc_t = median(fp)
            fast = median(r["systems"].get("finepar fastsv"))
            ratio = cc_t / bfs_t if cc_t and bfs_t else None
            t.ratio(f"{r['graph']}: CC time <= {bound}x BFS time", ratio, bound,
                    f"CC {ms(cc_t)} ms (FastSV {ms(fast)} ms), BFS {ms(bfs_t)} ms: "
                    f"{fmt(ratio)}x", "CC or BFS not measured", at_most=True)
        if r["app"] in ("bfs", "sssp") and r["graph"] == "luxembourg":
            ft, sc = median(fp), median(r["systems"].get("scipy"))
            if r["app"] == "bfs":
                t.ratio("luxembourg: BFS <= 6 ms", ft, 6e-3, f"{ms(ft)} ms",
                        "no correct FinePar BFS", at_most=True)
                t.ratio("luxembourg: BFS <= 1.5x scipy", ft / sc if ft and sc else None, 1.5,
                        f"{ms(ft)} ms vs scipy {ms(sc)} ms", "FinePar or scipy not measured",
                        at_most=True)
                lv = ft / max(min((fp or {}).get("iterations") or [1]), 1) if ft else None
                t.ratio("luxembourg: BFS <= 10 us per level", lv, 10e-6,
                        f"{fmt(lv * 1e6 if lv else None, 1)} us per level, "
                        f"{fmt(levels_per_round_trip(fp), 1)} levels per host round trip",
                        "no correct FinePar BFS", at_most=True)
            else:
                t.ratio("luxembourg: SSSP <= scipy's Dijkstra", ft / sc if ft and sc else None,
                        1.0, f"{ms(ft)} ms vs {ms(sc)} ms", "FinePar or scipy not measured",
                        at_most=True)
        if r["app"] == "pagerank":
            h = (fp or {}).get("host_per_iteration")
            hv = h["median"] if h and fp.get("correct") else None
            syncs = ((fp or {}).get("host_syncs") or {}).get("median")
            if s == 22:
                t.ratio(f"{r['graph']}: PageRank host time per iteration <= 30 us", hv, 30e-6,
                        f"{fmt(hv * 1e6 if hv is not None else None, 1)} us (median; min-max "
                        f"{fmt(h['min'] * 1e6 if h else None, 1)}-"
                        f"{fmt(h['max'] * 1e6 if h else None, 1)}), {fmt(syncs, 0)} host syncs",
                        "no correct FinePar PageRank", at_most=True)
            peer = next((k for k, _ in ordered(r, "systems") if k in ("cupy", "numpy")), None)
            pt, ft = median(r["systems"].get(peer)) if peer else None, median(fp)
            if s == 24:
                t.ratio(f"{r['graph']}: FinePar PageRank >= 1.3x {peer or 'CuPy'}",
                        pt / ft if pt and ft else None, 1.3,
                        f"{ms(ft)} ms vs {ms(pt)} ms: {fmt(pt / ft) if pt and ft else '-'}x",
                        "no correct FinePar or CuPy PageRank")
        if r["app"] == "coloring" and s == 22:
            ft, k, lf = median(fp), colours(fp), r.get("greedy_colors")
            t.ratio("scale 22: colouring <= 1 s", ft, 1.0, f"{ms(ft)} ms",
                    "no correct FinePar colouring", at_most=True)
            t.ratio("scale 22: colours <= 1.3x greedy largest-first", k / lf if k and lf else None,
                    1.3, f"{k} colours, greedy largest-first {lf}", "not measured", at_most=True)
    return t.items


# -------------------------------------------------------------------------- render


def render(doc, args) -> str:
    """The RESULTS.md section of a run's document: the targets, then a table per app."""
    from measure import median
    lines = ["## The apps at the state of the art", "",
             f"Device: {doc['device']}. Date: {doc['date']}. `benchmarks/apps.py`: FinePar's "
             f"default (`api.run`, no plan option) beside each app's peers, side by side in one "
             f"run per graph. Times in ms, median (min-max) of {doc['args']['repeats']} runs "
             f"after a warm-up (the previous FinePar: {doc['args']['prev_repeats']} runs of its "
             f"CLI after one, each its report's run time). GTEPS: edges (nnz / 2 for Graph500's undirected "
             f"graphs) over the median time, the same edges for every system; *own rate*: "
             f"the edges FinePar's app reports traversing. PageRank's host time per "
             f"iteration: (wall - the busiest device's kernels) / iterations. *Host syncs*: "
             f"the blocking reads of a timed run (median); *levels / round trip*: the levels "
             f"of a frontier app per host round trip. Colours beside greedy largest-first's "
             f"(networkx's order, on the host). Every answer "
             f"was checked against the app's reference before its time was kept (WRONG: "
             f"failed, no time).", ""]
    bw = (doc.get("copy_bandwidth") or {}).get("bytes_per_s")
    if "copy_bandwidth" in doc:
        lines += [f"*Floor (share of copy BW)*: FinePar's default's bandwidth floor, its "
                  f"bytes at the copy bandwidth measured in the same run (a device-to-device "
                  f"copy on the GPU role, read + written bytes: "
                  f"{fmt(bw / 1e9 if bw else None, 1)} GB/s), in ms, and that time's share "
                  f"of the median time. The {MODEL}.", ""]
    lines += [f"- {n}" for n in doc.get("notes", [])] + ([""] if doc.get("notes") else [])
    if doc.get("targets"):
        lines += ["Targets:", ""] + target_lines(doc["targets"]) + [""]
    rows = doc["rows"]
    for app in dict.fromkeys(r["app"] for r in rows):
        ds = [r for r in rows if r["app"] == app]
        systems = list(dict.fromkeys(s for r in ds for s, _ in ordered(r, "systems")))
        rate = app in ("bfs", "cc")
        head = ["graph", "nnz", *systems, "FinePar iterations", "FinePar ran"]
        if rate:
            head += [f"GTEPS {s}" for s in systems] + ["FinePar own rate GTEPS"]
        head += ["host syncs"]
        if app in ("bfs", "sssp"):
            head += ["levels / round trip"]
        if app == "cc":
            head += ["CC / BFS time", "FastSV / BFS time"]
        if app == "pagerank":
            head += ["host us / iteration"]
        if app == "coloring":
            head += [f"colours {s}" for s in systems] + ["greedy largest-first colours"]
        head += ["floor (share of copy BW)"]
        lines += [f"### {app}", "", "| " + " | ".join(head) + " |",
                  "|" + "---|" * len(head)]
        for r in ds:
            sy = r["systems"]
            fp = sy.get("finepar default") or {}
            rn = fp.get("ran") or {}
            cells = [r["graph"], f"{r['nnz']:,}"]
            for s in systems:
                v = sy.get(s)
                cells.append("-" if v is None else "WRONG" if not v["correct"]
                             else stat_cell(v.get("seconds")))
            cells += [str(rn.get("iterations")),
                      (f"{rn.get('plan')}" + (f", model {rn['model']}" if rn.get("model") else "")
                       + (" (not exact)" if rn.get("model_exact") is False else ""))
                      if fp.get("correct") else (fp.get("problem") or "-")[:60]]
            if rate:
                cells += [fmt(gteps(r, sy.get(s)), 3) for s in systems]
                own = (fp.get("throughput") or {}).get("teps")
                cells.append(fmt(own / 1e9, 3) if own else "-")
            cells.append(fmt((fp.get("host_syncs") or {}).get("median"), 0))
            if app in ("bfs", "sssp"):
                cells.append(fmt(levels_per_round_trip(fp), 1))
            if app == "cc":
                b = next((x for x in rows if x["app"] == "bfs" and x["graph"] == r["graph"]), None)
                bt = median((b or {}).get("systems", {}).get("finepar default"))
                for label in ("finepar default", "finepar fastsv"):
                    ct = median(sy.get(label))
                    cells.append(fmt(ct / bt) if ct and bt else "-")
            if app == "pagerank":
                h = fp.get("host_per_iteration")
                cells.append(stat_cell(h, scale=1e6, digits=1) if fp.get("correct") else "-")
            if app == "coloring":
                cells += [str(colours(sy.get(s)) or "-") for s in systems]
                cells.append(str(r.get("greedy_colors", "-")))
            cells.append(floor_cell(fp))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main_of(main))
