"""What a library user waits for: ``finepar.run(app, graph)`` called again and again in one
Python process, as a notebook or a script calls it, with no pair or engine passed (issue 29:
the time to answer on small inputs).

For each graph and app, in one process: a first call, then ``--repeats`` more, each timed
whole (from the call to its answer on the host) with its report's phases (``cache``,
``setup``, ``warmup``, ``run``, ``collect``) and whether it took an engine kept from the
call before; every answer checked against the app's reference. Beside them, scipy's call
where scipy has the app (``breadth_first_order``, ``connected_components``, ``dijkstra``,
and ``A @ x`` for SpMV), timed the same way on the same graph. ``--as scipy`` gives the
calls a scipy.sparse CSR instead of the loaded Graph (its content hashed each call).
Writes JSON as it goes and logs one line a pair. Run it from two checkouts
(``PYTHONPATH``) to compare them; give each process its own ``FINEPAR_CACHE_DIR`` so each
starts cold.

    python benchmarks/probe_calls.py --real ca-GrQc,luxembourg --json $OUT/calls.json
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time

from common import load, log, main_of, repeated_calls_args, today, write_json
from measure import answer_problem, params_with_fallback, stats

APPS = ("bfs", "sssp", "cc", "pagerank", "spmv")
PHASES = ("cache", "setup", "warmup", "run", "collect")


def parse_args(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--real", default="USPowerGrid,ca-GrQc,wiki-Vote,luxembourg,cnr-2000",
                    help="real graphs: a comma list, or all")
    ap.add_argument("--scales", default="", help="Graph500 scales, a comma list")
    ap.add_argument("--apps", default=",".join(APPS), help=f"comma list of {', '.join(APPS)}")
    ap.add_argument("--repeats", type=int, default=10, help="calls after the first")
    ap.add_argument("--as", dest="given", choices=("graph", "scipy"), default="graph",
                    help="what the calls are given: the Graph load_graph returns (its file's "
                         "digest known) or a scipy.sparse CSR of it (hashed each call)")
    ap.add_argument("--profile", action="store_true",
                    help="cProfile the later calls of each pair (their busiest functions "
                         "by own and by total time, in the JSON)")
    ap.add_argument("--json", default="probe_calls.json")
    return repeated_calls_args(ap.parse_args(argv), APPS)


def scipy_call(app: str):
    """``fn(g, params) -> seconds`` of scipy's call for ``app``, or None."""
    from hostpeers import scipy_bfs, scipy_cc, scipy_dijkstra
    if app == "spmv":
        def product(g, params) -> float:
            a = g.to_scipy()
            t0 = time.perf_counter()
            a @ params["x"]
            return time.perf_counter() - t0
        return product
    call = {"bfs": scipy_bfs, "cc": scipy_cc, "sssp": scipy_dijkstra}.get(app)
    return None if call is None else (lambda g, params: call(g, params).seconds)


def one_pair(app_name: str, g, repeats: int, given: str = "graph",
             profile: bool = False) -> dict:
    """The first call and ``repeats`` more of ``finepar.run`` on ``g`` or, for ``given``
    ``scipy``, a scipy.sparse CSR of it, then scipy's calls."""
    import finepar
    from finepar import apps
    app = apps.get(app_name)
    params = params_with_fallback(app, g)
    ref = app.reference(g, params)
    calls, phases, kept, problems = [], {p: [] for p in PHASES}, [], []
    arg = g.to_scipy().tocsr() if given == "scipy" else g
    prof = cProfile.Profile() if profile else None
    for i in range(repeats + 1):
        if prof and i == 1:
            prof.enable()
        t0 = time.perf_counter()
        res, rep = finepar.run(app_name, arg, **params)
        calls.append(time.perf_counter() - t0)
        problems.append(answer_problem(app, g, res.values, ref, params, res.extra,
                                       res.iterations))
        kept.append(bool((rep.cache or {}).get("resident")))
        for p in PHASES:
            phases[p].append(float(rep.timings.get(p) or 0.0))
    if prof:
        prof.disable()
    wrong = [p for p in problems if p]
    peer = scipy_call(app_name)
    peer_s = [peer(g, params) for _ in range(repeats + 1)][1:] if peer else []
    return {"app": app_name, "first": calls[0], "call": stats(calls[1:]),
            "phases_first": {p: v[0] for p, v in phases.items()},
            "phases": {p: stats(v[1:]) for p, v in phases.items()},
            "kept": kept, "plan": rep.plan.get("label"), "where": res.extra.get("where", ""),
            "correct": not wrong, "problem": wrong[0] if wrong else "",
            "scipy": stats(peer_s), **({"profile": profile_lines(prof)} if prof else {})}


def profile_lines(prof, top: int = 25) -> dict:
    """cProfile's busiest functions, by their own time and by their total time."""
    out = {}
    for order in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats(order).print_stats(top)
        out[order] = text.getvalue().splitlines()
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    import finepar
    from finepar.api import make_pair
    out = {"script": "benchmarks/probe_calls.py", "date": today(),
           "device": make_pair().describe(), "finepar": finepar.__file__,
           "args": {k: v for k, v in vars(args).items()}, "rows": []}
    log(out["device"])
    for spec in args.specs:
        g, _ = load(spec)
        for app_name in args.apps:
            row = {"graph": spec, "n": int(g.n), "nnz": int(g.nnz),
                   **one_pair(app_name, g, args.repeats, args.given, args.profile)}
            out["rows"].append(row)
            write_json(args.json, out)
            log_row(row)
    return 0


def log_row(row: dict) -> None:
    """One line: the first call, the later calls' median and range, the run, scipy."""
    c, r = row["call"], row["phases"]["run"]
    peer = f", scipy {row['scipy']['median'] * 1e3:.3f} ms" if row["scipy"] else ""
    log(f"{row['app']} on {row['graph']}: first {row['first'] * 1e3:.1f} ms, then "
        f"{c['median'] * 1e3:.2f} ms ({c['min'] * 1e3:.2f}-{c['max'] * 1e3:.2f}), run "
        f"{r['median'] * 1e3:.3f} ms{peer}; kept {sum(row['kept'])}/{len(row['kept'])}; "
        f"{row['where']} ({row['plan']})"
        f"{'' if row['correct'] else ' WRONG: ' + row['problem']}")


if __name__ == "__main__":
    raise SystemExit(main_of(main))
