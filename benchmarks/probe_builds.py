"""What a warm ``finepar.run`` call waits for before its run: the builds started ahead of
their use (``DevicePair.start_build``, ``guess_build``) and the settle that waits for them
(issue 29: a GPU-alone call's warm-up took 80-290 ms on each call on one H200, the default
call's 1 ms, 2026-11-28).

For one app and graph, ``--calls`` calls of ``finepar.run`` with each ``--devices`` in turn
(the pair opened once, the graph in memory), every build job stamped: its kind, the program
(sources and options) it asked for, whether the memo held it, its seconds, and whether a
later ``drop_guesses`` cancelled it. Writes JSON and logs one line a call.

    python benchmarks/probe_builds.py --graph USPowerGrid --app pagerank --json $OUT/b.json
"""

from __future__ import annotations

import time

from common import load, log, main_of, today, write_json


def parse_args(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graph", default="USPowerGrid", help="a real graph of the data folder "
                    "(default USPowerGrid)")
    ap.add_argument("--app", default="pagerank")
    ap.add_argument("--devices", default="gpu,auto", help="comma list of devices choices")
    ap.add_argument("--scale", default="", help="a Graph500 scale instead of --graph")
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--json", default="probe_builds.json")
    args = ap.parse_args(argv)
    from common import graph_specs
    args.spec = graph_specs("none" if args.scale else args.graph, args.scale)[0]
    return args


class BuildLog:
    """Wraps the pair's ``start_build`` / ``guess_build`` jobs and ``settle``: each job's
    program and time, each settle's wait."""

    def __init__(self, pair_cls):
        self.cls, self.jobs, self.settles = pair_cls, [], []
        self.saved = {n: getattr(pair_cls, n) for n in ("start_build", "guess_build",
                                                        "settle")}

    def __enter__(self):
        log_ = self

        def wrap(kind):
            real = self.saved[kind]

            def submit(pair, fn, *args):
                rec = {"kind": kind, "program": describe(args), "ran": False}
                log_.jobs.append(rec)

                def job(*a):
                    rec["ran"] = True
                    memo = len(pair.build_log)
                    t0 = time.perf_counter()
                    try:
                        return fn(*a)
                    finally:
                        rec["seconds"] = time.perf_counter() - t0
                        rec["built"] = len(pair.build_log) > memo
                return real(pair, job, *args)
            return submit

        def settle(pair):
            t0 = time.perf_counter()
            self.saved["settle"](pair)
            log_.settles.append(time.perf_counter() - t0)

        self.cls.start_build = wrap("start_build")
        self.cls.guess_build = wrap("guess_build")
        self.cls.settle = settle
        return self

    def __exit__(self, *exc):
        for n, f in self.saved.items():
            setattr(self.cls, n, f)


def describe(args) -> str:
    """The program a build job asks for: its sources and options (the side's role)."""
    if len(args) >= 3 and hasattr(args[0], "role"):
        return f"{args[0].role}: {'+'.join(args[1])} {sorted((args[2] or {}).items())}"
    return repr(args)[:200]


def main(argv=None) -> int:
    args = parse_args(argv)
    import finepar
    from finepar.api import make_pair
    from finepar.device.pair import DevicePair
    from common import device_line
    pair = make_pair()
    g, _ = load(args.spec)
    out = {"script": "benchmarks/probe_builds.py", "date": today(), "device": device_line(pair),
           "args": vars(args), "calls": []}
    log(out["device"])
    with BuildLog(DevicePair) as bl:
        for i in range(args.calls):
            for dev in args.devices.split(","):
                bl.jobs, bl.settles = [], []
                t0 = time.perf_counter()
                _, rep = finepar.run(args.app, g, pair=pair, devices=dev)
                call = {"devices": dev, "call_s": time.perf_counter() - t0,
                        "warmup_s": rep.timings["warmup"], "run_s": rep.timings["run"],
                        "setup_s": rep.timings["setup"], "cache_s": rep.timings["cache"],
                        "settle_s": bl.settles, "jobs": bl.jobs, "plan": rep.plan.get("label")}
                out["calls"].append(call)
                write_json(args.json, out)
                built = [j for j in bl.jobs if j.get("built")]
                log(f"call {i} {dev}: {1e3 * call['call_s']:.1f} ms, set-up "
                    f"{1e3 * call['setup_s']:.1f}, warm-up {1e3 * call['warmup_s']:.1f}, run "
                    f"{1e3 * call['run_s']:.1f} ms, settle "
                    f"{', '.join(f'{1e3 * s:.1f}' for s in bl.settles)} ms; {len(bl.jobs)} "
                    f"jobs, {sum(j['ran'] for j in bl.jobs)} ran, {len(built)} built: "
                    + "; ".join(f"{j['kind']} {j['program']} {1e3 * j['seconds']:.0f} ms"
                                for j in built))
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
