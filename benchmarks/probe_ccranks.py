"""Connected components (or BFS, ``--app bfs``) across ranks, run by run (issue 32):
``--runs`` timed runs on one engine in one process, then under ``mpiexec -n P`` on one
load and one engine per rank (:func:`finepar.mpi.runner.run_rows`), each after a warm-up;
every answer of the ranks checked equal to the one-process answer (CC's labels, BFS's
levels). ``benchmarks/dist.py`` times one run a process; a CC run at Graph500 scale 26 is
13-16 ms and a BFS run 8-11, so one run cannot tell a change of half a millisecond from a
lease's noise.

Kept: each run's time (a distributed run's is its slowest rank's), their min / median /
max, the ratio of the medians, and per rank the last run's line (Afforest's kernels,
the cross edges', the host's milliseconds between waits) and its counts (waits, the
giant bits' path).

    python benchmarks/probe_ccranks.py graph500:26 --ranks 2 --runs 9 --json $OUT/probe_ccranks.json

On the lent machine: ``bash benchmarks/run_gpu.sh probe_ccranks graph500:26 --ranks 2``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import replace
from pathlib import Path

import numpy as np

from base import child_env
from common import log, main_of, today, write_json


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graph", help="a graph500:SCALE spec or a file")
    p.add_argument("--app", default="cc", choices=("cc", "bfs"), help="the app (default cc)")
    p.add_argument("--ranks", type=int, default=2, help="ranks of the distributed runs")
    p.add_argument("--runs", type=int, default=9, help="timed runs of each (after a warm-up)")
    p.add_argument("--mpiexec", default="mpiexec", help="the launcher")
    p.add_argument("--exchange", default="auto", choices=("auto", "gpu", "host"),
                   help="the ranks' exchanges (as finepar run's --exchange)")
    p.add_argument("--one-process-only", action="store_true",
                   help="only the one-process runs (a change to Afforest's kernels, timed)")
    p.add_argument("--json", required=True)
    p.add_argument("--worker", nargs=2, metavar=("FILE", "ANSWER"),
                   help=argparse.SUPPRESS)  # under mpiexec: the graph's file, the answer
    args = p.parse_args(argv)
    if args.runs < 1 or args.ranks < 1:
        from finepar.errors import UsageError
        raise UsageError("--runs and --ranks must be at least 1")
    return args


def spread(values: list) -> dict:
    """Min, median and max of ``values`` (seconds), and the values."""
    return {"min": min(values), "median": statistics.median(values), "max": max(values),
            "runs": values}


def one_process(g, runs: int, app: str = "cc") -> tuple[dict, np.ndarray]:
    """The app's default plan on one engine: a warm-up, then ``runs`` timed runs; with
    each run's kernel seconds by kind (``kinds``: Afforest's link, compress, ...)."""
    from finepar import api
    from probe_sssp import engine_for
    wl = api.Workload(app, g)
    params = wl.app.reference_params(g, wl.app.check_params(g, {}))
    wl_run, eng = engine_for(wl, api.make_pair(), argparse.Namespace(devices="auto"),
                             "auto", params)
    eng.options = replace(eng.options, profile="launch")  # each kernel's own time
    times, kinds, labels = [], [], None
    for i in range(runs + 1):
        res, rep = wl_run.run(engine=eng, warmup=(i == 0), **params)
        labels = res.values
        if i:
            times.append(rep.timings["run"])
            kinds.append(kernel_kinds(eng.records))
    return {"plan": rep.plan.get("label"), **spread(times), "kinds": kinds}, np.asarray(labels)


def kernel_kinds(records) -> dict:
    """Kernel seconds of a run's step records, summed by kind."""
    out: dict = {}
    for r in records:
        out[r.kind] = out.get(r.kind, 0.0) + sum(r.kernel.values())
    return out


def worker(args) -> int:
    """Every rank: its rows of the file, CC's runs on one engine; rank 0 checks the
    answer and writes ``--json``."""
    from finepar.mpi.comm import Communicator
    from finepar.mpi.load import load_rows
    from finepar.mpi.runner import run_rows
    comm = Communicator()
    comm.exchange = args.exchange
    try:
        rows = load_rows(args.worker[0], comm)
        result, report = run_rows(args.app, rows, comm=comm, runs=args.runs)
    except Exception:  # noqa: BLE001 - one rank's error ends every rank, not a hang
        traceback.print_exc()
        comm.abort(1)
    ranks = report.ranks
    if comm.rank == 0:
        want = np.load(args.worker[1])
        times = [max(r["timings"]["runs"][i] for r in ranks) for i in range(args.runs)]
        lines = {k: v for k, v in report.result.get("summary") or []
                 if k.startswith("rank ") or k == "ranks"}
        write_json(args.json, {
            **spread(times), "correct": bool(np.array_equal(result.values, want)),
            "lines": lines, "device": ranks[0].get("devices"),
            "counts": {k: (result.extra.get("ranks") or {}).get(k) for k in
                       ("bits_path", "waits", "records", "records_gathered", "hooks")}})
    comm.close()
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    from inputs import graph500_file, load_input
    g, info = load_input(args.graph)
    path = info.get("file") or (str(graph500_file(int(args.graph.split(":")[1])))
                                if args.graph.startswith("graph500:") else args.graph)
    out = {"script": "benchmarks/probe_ccranks.py", "date": today(), "graph": args.graph,
           "n": int(g.n), "nnz": int(g.nnz), "args": vars(args)}
    write_json(args.json, out)
    out["one_process"], labels = one_process(g, args.runs, args.app)
    kinds = out["one_process"]["kinds"]
    log(f"{args.app} on {args.graph}, one process ({out['one_process']['plan']}): "
        + _line(out["one_process"]) + "; kernels ms by median: " + ", ".join(
            f"{k} {1e3 * statistics.median(r.get(k, 0.0) for r in kinds):.2f}"
            for k in sorted({k for r in kinds for k in r})))
    write_json(args.json, out)
    if args.one_process_only:
        return 0
    import inputs
    del g
    inputs._LAST.clear()  # the ranks read their own rows
    with tempfile.TemporaryDirectory() as tmp:
        answer, part = Path(tmp) / "labels.npy", Path(tmp) / "ranks.json"
        np.save(answer, labels)
        t0 = time.perf_counter()
        proc = subprocess.run([args.mpiexec, "-n", str(args.ranks), sys.executable, __file__,
                               args.graph, "--app", args.app, "--runs", str(args.runs),
                               "--json", str(part),
                               "--exchange", args.exchange,
                               "--worker", str(path), str(answer)],
                              capture_output=True, text=True, env=child_env())
        if proc.returncode != 0 or not part.exists():
            out["error"] = (proc.stderr.strip().splitlines() or ["failed"])[-1][:300]
            write_json(args.json, out)
            log(f"{args.ranks} ranks: {out['error']}")
            return 1
        ranks = json.loads(part.read_text())
    ranks["process_s"] = time.perf_counter() - t0
    out["ranks"] = ranks
    out["ratio"] = out["one_process"]["median"] / ranks["median"]
    write_json(args.json, out)
    counts = f"; {ranks['counts']}" if any(ranks["counts"].values()) else ""  # CC's
    log(f"{args.ranks} ranks: {_line(ranks)}, {'correct' if ranks['correct'] else 'WRONG'}; "
        f"{out['ratio']:.2f}x the one process's median{counts}")
    for k, v in ranks["lines"].items():
        log(f"  {k}: {v}")
    return 0


def _line(rec: dict) -> str:
    return (f"median {1e3 * rec['median']:.2f} ms ({1e3 * rec['min']:.2f}-"
            f"{1e3 * rec['max']:.2f}), runs "
            + ", ".join(f"{1e3 * s:.2f}" for s in rec["runs"]))


if __name__ == "__main__":
    raise SystemExit(main_of(main))
