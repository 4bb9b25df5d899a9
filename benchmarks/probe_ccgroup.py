"""CC on small inputs: Afforest's sampled run against its unsampled one (issue 29).

For each graph (default the real graphs under 45,000 entries, where scipy's call took
0.20-0.55 ms and FinePar's sampled run 0.56-0.69 ms on one H200), ``finepar.run("cc")``
on the pair opened once: an untimed call, then ``--repeats`` timed calls with
``group_loop='none'`` (the sampled run: seven launches) and with ``'auto'`` (or
``--group-loop always``, past the size rule: every edge
linked, no sampling: one work-item's loop in one launch on a CPU device, three launches
over a GPU; :func:`finepar.apps.afforest.unsampled_shape`), beside scipy's
``connected_components`` (weak, one core).
Each call builds its engine and runs FinePar's own warm-up run before the timed one, as
``best_device.py``'s calls do, so the run's time leaves out building Afforest's buffers
(about 0.3-0.5 ms of host copies on the 2-core box, which the first form of this probe
counted in every run). Every answer is checked against scipy's components before its time
is kept. Times: the runs' own (the report's run seconds: the run and its end's wait, not
the answer's read) and the whole call's (from the graph in memory to the labels on the
host); min / median / max in ms, and each run's launches. JSON is written as it goes.

    python benchmarks/probe_ccgroup.py --json $OUT/probe_ccgroup.json
"""

from __future__ import annotations

import time

import numpy as np

from common import data_dir, load, log, main_of, today, write_json

GRAPHS = ("USPowerGrid.mtx", "adder_dcop_05.mtx", "ca-GrQc.mtx", "rajat01.mtx")


def parse_args(argv=None):
    import argparse
    from finepar.errors import UsageError
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("graphs", nargs="*", help="inputs (files or graph500:SCALE); default "
                    "the real graphs " + ", ".join(GRAPHS))
    ap.add_argument("--devices", default="auto", choices=("auto", "gpu", "cpu"),
                    help="the run's device (auto: FinePar's default)")
    ap.add_argument("--repeats", type=int, default=15, help="timed runs a setting")
    ap.add_argument("--group-loop", default="auto", choices=("auto", "always"),
                    help="the unsampled setting's group_loop: auto (default: the size "
                         "rule) or always (past it: where the rule should stand)")
    ap.add_argument("--json", default="probe_ccgroup.json")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        raise UsageError(f"--repeats must be at least 1, not {args.repeats}")
    args.graphs = args.graphs or [str(data_dir() / g) for g in GRAPHS]
    return args


def stats(seconds: list) -> dict:
    ms = 1e3 * np.asarray(seconds)
    return {"min": float(ms.min()), "median": float(np.median(ms)), "max": float(ms.max()),
            "runs_ms": ms.round(4).tolist()}


def finepar_runs(g, pair, ref, mode: str, args) -> dict:
    from finepar import api
    from finepar.engine import EngineOptions
    opts, times, calls, launches = EngineOptions(group_loop=mode), [], [], set()
    for i in range(args.repeats + 1):
        t0 = time.perf_counter()
        res, rep = api.run("cc", g, pair=pair, devices=args.devices, options=opts)
        wall = time.perf_counter() - t0
        if not np.array_equal(res.values, ref):
            raise AssertionError(f"cc, group_loop={mode}: labels differ from scipy's")
        if i:  # the first call builds the programs
            times.append(rep.timings["run"])
            calls.append(wall)
            launches.add(sum(rep.timings["launches"].values()))
    return {**stats(times), "call": stats(calls), "launches": sorted(launches),
            "phases": [t["phase"] for t in res.extra["trace"]], "plan": rep.plan}


def scipy_runs(g, repeats: int) -> dict:
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components
    a = sp.csr_matrix((np.ones(g.nnz, np.float32), g.indices, g.indptr), shape=(g.n, g.n))
    times = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        connected_components(a, directed=True, connection="weak")
        if i:
            times.append(time.perf_counter() - t0)
    return stats(times)


def main(argv=None) -> int:
    from finepar.api import make_pair
    from finepar.apps.cc import reference_components
    args = parse_args(argv)
    pair = make_pair()
    out = {"script": "benchmarks/probe_ccgroup.py", "date": today(),
           "device": pair.describe(), "args": vars(args), "graphs": []}
    log(f"{out['device']}")
    for spec in args.graphs:
        g, load_s = load(spec)
        ref = reference_components(g)
        row = {"graph": spec, "n": int(g.n), "nnz": int(g.nnz), "load_s": load_s,
               "sampled": finepar_runs(g, pair, ref, "none", args),
               "unsampled": finepar_runs(g, pair, ref, args.group_loop, args),
               "scipy": scipy_runs(g, args.repeats)}
        out["graphs"].append(row)
        write_json(args.json, out)
        cell = "{median:.3f} ({min:.3f}-{max:.3f})".format
        log(f"{spec.rsplit('/', 1)[-1]}: {g.nnz:,} entries; sampled {cell(**row['sampled'])} ms "
            f"({row['sampled']['launches']} launches), unsampled "
            f"{cell(**row['unsampled'])} ms ({row['unsampled']['launches']}), scipy "
            f"{cell(**row['scipy'])} ms; whole calls {row['sampled']['call']['median']:.3f} "
            f"and {row['unsampled']['call']['median']:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
