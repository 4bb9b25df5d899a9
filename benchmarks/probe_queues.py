"""Plain queues against profiling queues, and the row operation's trimmed argument list
against its whole one, for runs on one device (issue 29: a small input's host time a
launch).

``EngineOptions.profile`` ``auto`` (the default) runs an engine whose plan runs on one
device, with the static executor, on each device's plain queue (no profiling events kept);
``batch`` keeps the profiling queue and reads each batch's span. ``rowop`` is built with
only the arguments its options use (``launches.TRIM_ARGS``); ``--every-argument`` adds a
third setting, the plain queues with every argument (``TRIM_ARGS`` off: the form before);
``--plain-loads`` instead the plain queues with the entries' plain loads (``memory.PTX_LOADS``
off: no evict-first hint on NVIDIA).
For each graph and app, in one process with one pair: ``finepar.run`` with each setting, a
warm call each, then ``--repeats`` rounds that alternate them (so a drift of the host
touches all alike), each call's run time (its report's ``run``: the app's run, results
still on the device) kept, every answer checked against the app's reference. With two
settings the engines are those the calls keep for a small input (the setting is part of
the prepared entry's key); with three each call makes its own (``cache=False``).

    python benchmarks/probe_queues.py --real ca-GrQc,luxembourg --repeats 3 --json q.json
    python benchmarks/probe_queues.py --real none --scales 24 --apps spmv,pagerank \
        --repeats 3 --plain-loads --json loads.json
"""

from __future__ import annotations

import time

from common import UsageError, load, log, main_of, repeated_calls_args, today, write_json
from measure import answer_problem, params_with_fallback, stats

APPS = ("bfs", "sssp", "cc", "pagerank", "spmv")
#: Each setting's name (the JSON's keys): its ``EngineOptions.profile``,
#: ``launches.TRIM_ARGS`` and ``memory.PTX_LOADS``.
SETTINGS = {"batch": ("batch", True, True), "auto": ("auto", True, True)}
#: The third setting of ``--every-argument``: the plain queues, rowop's whole list.
EVERY = "auto, every argument"
#: The third setting of ``--plain-loads``: the plain queues, the entries loaded as plain
#: OpenCL loads (not evict-first on NVIDIA).
PLAIN_LOADS = "auto, plain entry loads"
THIRD = {EVERY: ("auto", False, True), PLAIN_LOADS: ("auto", True, False)}


def parse_args(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--real", default="USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,luxembourg,"
                                      "cnr-2000", help="real graphs: a comma list, or all")
    ap.add_argument("--scales", default="18", help="Graph500 scales, a comma list")
    ap.add_argument("--apps", default=",".join(APPS), help=f"comma list of {', '.join(APPS)}")
    ap.add_argument("--devices", default="auto", choices=("auto", "cpu", "gpu"),
                    help="the runs' devices (auto: FinePar's choice)")
    ap.add_argument("--repeats", type=int, default=7, help="rounds after the warm calls")
    ap.add_argument("--every-argument", action="store_true",
                    help="a third setting: plain queues, rowop built with every argument")
    ap.add_argument("--plain-loads", action="store_true",
                    help="a third setting: plain queues, the entries loaded without PTX's "
                         "evict-first hint (memory.PTX_LOADS off)")
    ap.add_argument("--json", default="probe_queues.json")
    args = repeated_calls_args(ap.parse_args(argv), APPS)
    if args.every_argument and args.plain_loads:
        raise UsageError("--every-argument and --plain-loads: one third setting at a time")
    args.third = EVERY if args.every_argument else PLAIN_LOADS if args.plain_loads else None
    return args


def one_pair(app_name: str, g, pair, devices: str, repeats: int,
             third: str | None = None) -> dict:
    """Warm calls with each setting, then ``repeats`` alternating rounds; run times and
    the checked answers per setting."""
    import finepar
    from finepar import apps
    from finepar.engine import EngineOptions, launches, memory
    app = apps.get(app_name)
    params = params_with_fallback(app, g)
    ref = app.reference(g, params)
    settings = {**SETTINGS, third: THIRD[third]} if third else SETTINGS
    runs = {s: [] for s in settings}
    before = launches.TRIM_ARGS, memory.PTX_LOADS
    problems, plans, profiles = [], {}, {}
    for i in range(repeats + 1):
        for setting, (profile, trim, loads) in settings.items():
            launches.TRIM_ARGS, memory.PTX_LOADS = trim, loads
            try:
                res, rep = finepar.run(app_name, g, pair=pair, devices=devices,
                                       options=EngineOptions(profile=profile),
                                       **({"cache": False} if third else {}), **params)
            finally:
                launches.TRIM_ARGS, memory.PTX_LOADS = before
            problems.append(answer_problem(app, g, res.values, ref, params, res.extra,
                                           res.iterations))
            plans[setting] = rep.plan.get("label")
            profiles[setting] = rep.timings.get("profile")
            if i:
                runs[setting].append(float(rep.timings["run"]))
    wrong = [p for p in problems if p]
    st = {s: stats(v) for s, v in runs.items()}
    return {"app": app_name, "runs": st, "plan": plans, "profile": profiles,
            "ratio": st["batch"]["median"] / st["auto"]["median"],
            **({"third": third, "ratio_third": st[third]["median"] / st["auto"]["median"]}
               if third else {}),
            "correct": not wrong, "problem": wrong[0] if wrong else ""}


def main(argv=None) -> int:
    args = parse_args(argv)
    import finepar
    from finepar.api import make_pair
    pair = make_pair()
    out = {"script": "benchmarks/probe_queues.py", "date": today(),
           "device": pair.describe(), "finepar": finepar.__file__,
           "args": {k: v for k, v in vars(args).items()}, "rows": []}
    log(out["device"])
    t0 = time.perf_counter()
    for spec in args.specs:
        g, _ = load(spec)
        for app_name in args.apps:
            row = {"graph": spec, "n": int(g.n), "nnz": int(g.nnz),
                   **one_pair(app_name, g, pair, args.devices, args.repeats,
                              args.third)}
            out["rows"].append(row)
            out["seconds"] = time.perf_counter() - t0
            write_json(args.json, out)
            b, a = row["runs"]["batch"], row["runs"]["auto"]
            log(f"{app_name} on {spec}: profiling queue {b['median'] * 1e3:.3f} ms "
                f"({b['min'] * 1e3:.3f}-{b['max'] * 1e3:.3f}), default "
                f"({row['profile']['auto']}) {a['median'] * 1e3:.3f} ms "
                f"({a['min'] * 1e3:.3f}-{a['max'] * 1e3:.3f}): {row['ratio']:.2f}x"
                + (f"; {row['third']} {row['runs'][row['third']]['median'] * 1e3:.3f} ms: "
                   f"{row['ratio_third']:.2f}x" if "third" in row else "")
                + ("" if row["correct"] else f"; WRONG: {row['problem']}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
