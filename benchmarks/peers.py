"""FinePar against the libraries a user would pick instead, on the same graphs, in one run.

Systems, each measured side by side on every graph (a missing one is skipped with a
line saying so, in the output and the JSON):

* **FinePar default**: ``api.run`` with no plan option (the tuner's T_f and
  grouping, throttling ``auto``); **FinePar gpu-only**: the same kernels on the
  GPU alone;
* **cuSPARSE** through CuPy: CSR SpMV (``cupyx.scipy.sparse``) and a PageRank
  power iteration in CuPy on it (:mod:`arraypeers`);
* **scipy**: the same SpMV and PageRank code on the host, ``csgraph`` BFS and
  connected components (single-threaded C);
* **SuiteSparse:GraphBLAS** through python-graphblas: SpMV, PageRank, BFS and
  FastSV connected components (:mod:`hostpeers`).

Every system gets the same float32 data, the same root (the vertex of largest
out-degree) and the same convergence rule (PageRank: damping 0.85, L1 change
below 1e-6, at most 100 iterations, dangling mass spread uniformly), and every
answer is checked against the float64 reference by the app's own check before
its time is kept. Timing: a warm-up, then repeats (min / median / max); CUDA
events for CuPy, OpenCL events and a monotonic clock for FinePar. SpMV is timed
per product (``--products`` products per run), the rest per run.

The device's memory bandwidth is measured with a large device-to-device copy
(bytes read + written), and each SpMV is stated as a fraction of its roofline:
at least 8 bytes per nonzero (value + column index) and 12 bytes per row (row
pointer, x and y entries) must move.

    python benchmarks/peers.py --real soc-Slashdot0902.txt.gz,cnr-2000.mtx.gz \\
        --scales 20,22,24 --md benchmarks/RESULTS.md --json peers.json
"""

from __future__ import annotations

import time

import numpy as np

from common import (Budget, Results, choices, fmt, graph_specs, log, main_of, render_docs,
                    ordered, put, script_parser, stat_cell)

APPS = ("spmv", "pagerank", "bfs", "cc")
PEERS = ("cusparse", "scipy", "graphblas")


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
    p = script_parser(__doc__, "peers")
    p.add_argument("--real", default="soc-Slashdot0902.txt.gz,cnr-2000.mtx.gz")
    p.add_argument("--scales", default="20,22")
    p.add_argument("--apps", default=",".join(APPS))
    p.add_argument("--peers", default=",".join(PEERS),
                   help="comma list of cusparse, scipy, graphblas")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--products", type=int, default=20, help="SpMV products per timed run")
    p.add_argument("--scipy-max-nnz", type=float, default=2e8,
                   help="skip the (single-threaded) scipy peer above this many nonzeros")
    p.add_argument("--title", default="FinePar against cuSPARSE, scipy and GraphBLAS (roofline)",
                   help="heading of the RESULTS.md section")
    args = p.parse_args(argv)
    if args.render:
        return render_docs(args, render)
    from arraypeers import backend_or_none, copy_bandwidth
    from finepar.api import make_pair
    from hostpeers import graphblas_or_none
    choices("--apps", args.apps, APPS)
    wanted = set(choices("--peers", args.peers, PEERS))
    specs = graph_specs(args.real, args.scales)
    pair = make_pair(memory=args.memory)
    gpu = backend_or_none("cupy") if "cusparse" in wanted else None
    host = backend_or_none("numpy") if "scipy" in wanted else None
    gb = graphblas_or_none() if "graphblas" in wanted else None
    device = pair.describe() + (f"; array peers: {gpu.device}" if gpu else "")
    res = Results("peers.py", args, device, lambda doc: render(doc, args))
    for name, ok in (("cusparse", gpu), ("graphblas", gb)):
        if name in wanted and ok is None:
            res.note(f"skip: no {name} peer in this run (not installed or no device)")
    bw = copy_bandwidth(gpu) if gpu else None
    res.doc["bandwidth"] = bw
    if bw:
        log(f"device memory bandwidth (2 GiB copy, read + write): {bw['median'] / 1e9:.0f} GB/s")
    budget = Budget(args.budget_s)
    for spec in specs:
        if budget.spent():
            res.note(f"budget spent: {spec} and later graphs not run")
            break
        one_graph(spec, args, pair, res, gpu, host, gb, budget)
    return 0


def one_graph(spec, args, pair, res, gpu, host, gb, budget) -> None:
    """Every app on one graph: FinePar's two configurations, then each peer."""
    from finepar import apps
    from finepar.api import Workload
    from inputs import load_input, reference
    from measure import Config, app_params, finepar_config
    g, info = load_input(spec)
    for name in args.apps.split(","):
        if budget.spent():
            res.note(f"budget spent: {name} and later apps on {g.name} not run")
            return
        app = apps.get(name)
        over = {"repeat": args.products} if name == "spmv" else {}
        params = app_params(app, g, over)
        ref, ref_info = reference(app, g, params, backend=gpu)
        row = {"graph": g.name, "n": g.n, "nnz": g.nnz, "app": name, "input": info,
               "reference": ref_info, "systems": {}}
        res.add(row)
        t0 = time.perf_counter()
        wl = Workload(name, g)
        for cfg in (Config("finepar default"), Config("finepar gpu-only", devices="gpu")):
            put(row, "systems", cfg.label, finepar_config(wl, pair, cfg, params, ref,
                                                          repeats=args.repeats,
                                                          model=args.model))
            res.save()
        del wl
        for system, rec in peer_records(app, g, params, ref, args, gpu, host, gb):
            put(row, "systems", system, rec)
            res.save()
        if name == "spmv" and res.doc.get("bandwidth"):
            row["roofline_s"] = (8 * g.nnz + 12 * g.n) / res.doc["bandwidth"]["median"]
        row["seconds"] = time.perf_counter() - t0
        res.save()
        log(f"{g.name} {name}: " + "; ".join(
            f"{s} {stat_cell(r.get('per_iteration' if name == 'spmv' else 'seconds'))} ms"
            + ("" if r["correct"] else " WRONG")
            for s, r in ordered(row, "systems")) + f" ({row['seconds']:.0f} s)")


def peer_records(app, g, params, ref, args, gpu, host, gb):
    """(system, record) of every peer of ``app`` that is present here."""
    from arraypeers import ArrayGraph, power_record, spmv_record
    from hostpeers import GraphBLASGraph, scipy_bfs, scipy_cc
    from measure import Answer, answer_problem, peer_runs, peer_times

    def check(a):
        return answer_problem(app, g, a.values, ref, params, a.extra, a.iterations)

    for backend in (b for b in (gpu, host) if b is not None):
        if not backend.on_gpu and g.nnz > args.scipy_max_nnz:
            log(f"skip scipy on {g.name}: {g.nnz:,} nnz > --scipy-max-nnz")
            continue
        if app.name not in ("spmv", "pagerank"):
            continue
        ag, name = ArrayGraph(backend, g), backend.name(app.name)
        if app.name == "spmv":
            yield name, spmv_record(name, ag, params["x"], args.products, args.repeats, check)
        else:
            yield name, power_record(name, ag, check, args.repeats, damping=params["damping"],
                                     tol=params["tol"], max_iter=params.get("max_iter") or 100)
        ag.free()
    if host is not None and g.nnz <= args.scipy_max_nnz and app.name in ("bfs", "cc"):
        fn = scipy_bfs if app.name == "bfs" else scipy_cc
        yield "scipy", peer_runs("scipy", lambda: fn(g, params), check, repeats=args.repeats)
    if gb is not None and app.name in APPS:
        gg = GraphBLASGraph(gb, g)
        if app.name == "spmv":
            times, y = gg.spmv(params["x"], args.products, args.repeats)
            yield "graphblas", peer_times("graphblas", [t * args.products for t in times],
                                          check(Answer(y, 0.0, args.products)),
                                          iterations=args.products)
        else:
            fn = getattr(gg, app.name)
            yield "graphblas", peer_runs("graphblas", lambda: fn(params), check,
                                         repeats=args.repeats)
        del gg


def render(doc, args) -> str:
    """The RESULTS.md section: one table per app (median (min-max) ms)."""
    rows = doc["rows"]
    bw = doc.get("bandwidth")
    lines = [f"## {args.title}", "",
             f"Device: {doc['device']}. Date: {doc['date']}. `benchmarks/peers.py`, one run, "
             f"every system side by side on each graph. Times in ms, median (min-max) of "
             f"{doc['args']['repeats']} runs after a warm-up: SpMV per product "
             f"({doc['args']['products']} products a run), PageRank to convergence (L1 change "
             f"< 1e-6, damping 0.85), BFS from the vertex of largest out-degree, CC (weak "
             f"components). `finepar default`: `api.run` with no plan option; `gpu-only`: "
             f"FinePar's kernels on the GPU alone. Speedup: the peer's median over FinePar "
             f"default's (above 1: FinePar faster). WRONG: the answer failed the check, so "
             f"no time is kept.", ""]
    if bw:
        lines += [f"Measured device memory bandwidth: {bw['median'] / 1e9:.0f} GB/s (2 GiB "
                  f"device copy, read + write). SpMV roofline: (8 nnz + 12 n) bytes / "
                  f"bandwidth.", ""]
    lines += [f"- {n}" for n in doc.get("notes", [])] + ([""] if doc.get("notes") else [])
    for app in dict.fromkeys(r["app"] for r in rows):
        ds = [r for r in rows if r["app"] == app]
        systems = list(dict.fromkeys(s for r in ds for s, _ in ordered(r, "systems")))
        peers = [s for s in systems if not s.startswith("finepar")]
        lines += [f"### {app}", "", "| graph | nnz | " + " | ".join(systems) + " | "
                  + " | ".join(f"speedup over {s}" for s in peers)
                  + " | FinePar default ran | roofline |",
                  "|---|---|" + "---|" * (len(systems) + len(peers)) + "---|---|"]
        key = "per_iteration" if app == "spmv" else "seconds"  # SpMV: per product
        for r in ds:
            sy = r["systems"]

            def cell(s):
                v = sy.get(s)
                if v is None:
                    return "-"
                return "WRONG" if not v["correct"] else stat_cell(v.get(key))
            fp = sy.get("finepar default") or {}
            base = fp.get(key) or {}
            sp_cells = []
            for s in peers:
                v = sy.get(s)
                ok = v and v["correct"] and v.get(key) and base and fp.get("correct")
                sp_cells.append(fmt(v[key]["median"] / base["median"]) if ok else "-")
            rn = fp.get("ran") or {}
            what = (f"T_f={rn.get('T_f')} {rn.get('grouping')}, {rn.get('schedule')}, "
                    f"iters {rn.get('iterations')}, model {rn.get('model')}"
                    + ("" if rn.get("model_exact") in (True, None) else " (not exact)")
                    if fp.get("correct") else fp.get("problem", "-")[:60])
            roof = ""
            if r.get("roofline_s") and base and fp.get("correct"):
                per = fp["per_iteration"]["median"]
                roof = f"{100 * r['roofline_s'] / per:.1f}%"
            lines.append(f"| {r['graph']} | {r['nnz']:,} | " + " | ".join(cell(s) for s in systems)
                         + " | " + " | ".join(sp_cells) + f" | {what} | {roof} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main_of(main))
