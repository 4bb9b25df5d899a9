"""A small input's BFS and SSSP run by FinePar's default beside scipy's, in turn (issue 29:
the one work-group's levels, ``finepar/engine/grouplevels.py``).

For each graph and app: a warm-up, then ``--repeats`` rounds of one FinePar default run (the
graph in memory, the report's ``run`` time and the launch's device time, its answer checked)
and one scipy call (``breadth_first_order``, ``dijkstra``), in turn, so a lease's drift
falls on both. Writes JSON as it goes and logs one line a pair.

    python benchmarks/probe_group.py --real USPowerGrid,adder_dcop_05,luxembourg \\
        --json $OUT/group.json
"""

from __future__ import annotations

import time

from common import choices, graph_specs, load, log, main_of, today, write_json
from measure import FALLBACK_PARAMS, answer_problem, app_params, stats

APPS = ("bfs", "sssp")


def parse_args(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--real", default="USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,"
                    "memplus,luxembourg", help="real graphs: a comma list, or all")
    ap.add_argument("--scales", default="", help="Graph500 scales, a comma list")
    ap.add_argument("--apps", default=",".join(APPS), help="comma list of bfs, sssp")
    ap.add_argument("--repeats", type=int, default=15, help="timed rounds after a warm-up")
    ap.add_argument("--json", default="probe_group.json")
    args = ap.parse_args(argv)
    args.apps = choices("--apps", args.apps, APPS)
    args.specs = graph_specs(args.real, args.scales)
    return args


def scipy_call(app: str):
    """The scipy peer of ``app`` (:mod:`hostpeers`)."""
    from hostpeers import scipy_bfs, scipy_dijkstra
    return {"bfs": scipy_bfs, "sssp": scipy_dijkstra}[app]


def one_pair(app_name: str, g, pair, repeats: int) -> dict:
    """``repeats`` rounds of a FinePar default run and a scipy call, in turn."""
    import finepar
    from finepar import apps
    from finepar.errors import FineParError
    app = apps.get(app_name)
    try:
        params = app_params(app, g)
    except FineParError:  # SSSP on signed values: their magnitudes
        params = app_params(app, g, FALLBACK_PARAMS.get(app_name))
    ref = app.reference(g, params)
    peer = scipy_call(app_name)
    run_s, kernel_s, peer_s, problems = [], [], [], []
    where = ""
    for i in range(repeats + 1):
        res, rep = finepar.run(app_name, g, pair=pair, **params)
        problems.append(answer_problem(app, g, res.values, ref, params, res.extra,
                                       res.iterations))
        ans = peer(g, params)
        where = res.extra.get("where", "")
        if i:
            run_s.append(rep.timings["run"])
            kernel_s.append(sum(rep.timings["kernel"].values()))
            peer_s.append(ans.seconds)
    wrong = [p for p in problems if p]
    return {"app": app_name, "where": where, "plan": rep.plan.get("label"),
            "levels": res.iterations, "correct": not wrong, "problem": wrong[0] if wrong else "",
            "run": stats(run_s), "kernel": stats(kernel_s), "scipy": stats(peer_s)}


def main(argv=None) -> int:
    args = parse_args(argv)
    from finepar.api import make_pair
    from common import device_line
    pair = make_pair()
    out = {"script": "benchmarks/probe_group.py", "date": today(), "device": device_line(pair),
           "args": {k: v for k, v in vars(args).items()}, "rows": []}
    log(out["device"])
    for spec in args.specs:
        g, _ = load(spec)
        for app_name in args.apps:
            t0 = time.perf_counter()
            row = {"graph": spec, "n": int(g.n), "nnz": int(g.nnz),
                   **one_pair(app_name, g, pair, args.repeats)}
            row["seconds"] = time.perf_counter() - t0
            out["rows"].append(row)
            write_json(args.json, out)
            r, k, s = (row[x]["median"] * 1e3 for x in ("run", "kernel", "scipy"))
            log(f"{app_name} on {spec}: run {r:.3f} ms (kernel {k:.3f}), scipy {s:.3f} ms, "
                f"{s / r:.2f}x; {row['where']} ({row['plan']}), {row['levels']} levels"
                f"{'' if row['correct'] else ' WRONG: ' + row['problem']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
