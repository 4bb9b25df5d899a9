"""A small input's run in one work-group's launch, by FinePar's default and by the loop
forced, beside scipy's, in turn (issue 29: BFS's and SSSP's levels,
``finepar/engine/grouplevels.py``; PageRank's iterations, ``finepar/apps/powerloop.py``).

For each graph and app: a warm-up, then ``--repeats`` rounds, each one run of every
``--configs`` entry (the graph in memory; the report's ``run`` time and its launches' device
time, its answer checked) and one scipy call where the app has one (``breadth_first_order``,
``dijkstra``), in turn, so a lease's drift falls on all. Configurations: ``default``
(FinePar's own plan), ``loop`` (the GPU alone, ``group_loop='always'``: the one
work-group's form at any size) and ``gpu`` (``devices='gpu'``, as a user asks for it).
Writes JSON as it goes and logs one line a pair.

    python benchmarks/probe_group.py --real USPowerGrid,adder_dcop_05,luxembourg \\
        --json $OUT/group.json
"""

from __future__ import annotations

import time

from common import choices, graph_specs, load, log, main_of, today, write_json
from measure import answer_problem, params_with_fallback, stats

APPS = ("bfs", "sssp", "pagerank")
CONFIGS = ("default", "loop", "gpu")


def parse_args(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--real", default="USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,"
                    "memplus,luxembourg", help="real graphs: a comma list, or all")
    ap.add_argument("--scales", default="", help="Graph500 scales, a comma list")
    ap.add_argument("--apps", default="bfs,sssp", help=f"comma list of {', '.join(APPS)}")
    ap.add_argument("--configs", default="default", help=f"comma list of {', '.join(CONFIGS)}")
    ap.add_argument("--repeats", type=int, default=15, help="timed rounds after a warm-up")
    ap.add_argument("--json", default="probe_group.json")
    args = ap.parse_args(argv)
    args.apps = choices("--apps", args.apps, APPS)
    args.configs = choices("--configs", args.configs, CONFIGS)
    args.specs = graph_specs(args.real, args.scales)
    return args


def scipy_call(app: str):
    """The scipy peer of ``app`` (:mod:`hostpeers`), or None."""
    from hostpeers import scipy_bfs, scipy_dijkstra
    return {"bfs": scipy_bfs, "sssp": scipy_dijkstra}.get(app)


def config_kwargs(config: str) -> dict:
    """``finepar.run``'s keywords for a configuration of :data:`CONFIGS`."""
    from finepar.engine import EngineOptions
    if config == "loop":
        return {"devices": "gpu", "options": EngineOptions(group_loop="always", profile="batch")}
    if config == "gpu":
        return {"devices": "gpu"}
    return {}


def one_pair(app_name: str, g, pair, repeats: int, configs: list) -> dict:
    """``repeats`` rounds of a run of each configuration and a scipy call, in turn."""
    from finepar import apps
    app = apps.get(app_name)
    params = params_with_fallback(app, g)
    ref = app.reference(g, params)
    peer = scipy_call(app_name)
    recs = {c: {"run": [], "kernel": [], "problems": []} for c in configs}
    peer_s = []
    for i in range(repeats + 1):
        for c in configs:
            one_run(recs[c], app, g, pair, params, ref, c, timed=i > 0)
        if peer is not None:
            ans = peer(g, params)
            if i:
                peer_s.append(ans.seconds)
    out = {"app": app_name, "scipy": stats(peer_s)}
    for c, rec in recs.items():
        wrong = [p for p in rec.pop("problems") if p]
        out[c] = {**rec, "correct": not wrong, "problem": wrong[0] if wrong else "",
                  "run": stats(rec["run"]), "kernel": stats(rec["kernel"])}
    return out


def one_run(rec: dict, app, g, pair, params: dict, ref, config: str, timed: bool) -> None:
    """One run of ``config`` into ``rec``: its answer's problem, its plan, and its times
    where ``timed``."""
    import finepar
    res, rep = finepar.run(app.name, g, pair=pair, **config_kwargs(config), **params)
    rec["problems"].append(answer_problem(app, g, res.values, ref, params, res.extra,
                                          res.iterations))
    rec.update(where=res.extra.get("where", ""), plan=rep.plan.get("label"),
               iterations=res.iterations)
    if timed:
        rec["run"].append(rep.timings["run"])
        rec["kernel"].append(sum(rep.timings["kernel"].values()))


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
                   **one_pair(app_name, g, pair, args.repeats, args.configs)}
            row["seconds"] = time.perf_counter() - t0
            out["rows"].append(row)
            write_json(args.json, out)
            log_row(row, args.configs)
    return 0


def log_row(row: dict, configs: list) -> None:
    """One line a configuration (and scipy's median where it ran)."""
    peer = row["scipy"]["median"] * 1e3 if row["scipy"] else None
    for c in configs:
        rec = row[c]
        r, k = (rec[x]["median"] * 1e3 if rec[x] else float("nan") for x in ("run", "kernel"))
        vs = f", scipy {peer:.3f} ms, {peer / r:.2f}x" if peer else ""
        log(f"{row['app']} on {row['graph']} [{c}]: run {r:.3f} ms (kernel {k:.3f}){vs}; "
            f"{rec['where']} ({rec['plan']}), {rec['iterations']} iterations"
            f"{'' if rec['correct'] else ' WRONG: ' + rec['problem']}")


if __name__ == "__main__":
    raise SystemExit(main_of(main))
