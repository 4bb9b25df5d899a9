"""A graph no single GPU holds (issue 32): Graph500 generated rank by rank, each app run on
that one load, every answer checked by range.

``mpiexec -n P`` starts this script's worker on every rank. The ranks generate their
rows of ``graph500:SCALE`` (:mod:`finepar.mpi.kronecker`: each rank draws its share of
the edge chunks and routes every entry to its row's owner), then run each app of
``--apps`` on those rows (:func:`finepar.mpi.runner.run_rows`: a warm-up, then
``--runs`` timed runs on one engine) and check each answer against their own rows
(:mod:`finepar.mpi.verify`: Graph500's BFS rules; PageRank's residual under one float64
step, whose ``1 / (1 - d)`` multiple bounds the L1 error). Rank 0 writes the JSON after
every stage, so a run cut short by its limit keeps what it measured.

    python benchmarks/dist_range.py --scale 29 --ranks 4 --apps pagerank,bfs \\
        --json range.json --md benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from base import child_env
from common import (Results, choices, fmt, log, main_of, render_docs,
                    script_parser, write_json)

APPS = ("pagerank", "bfs")


def main(argv=None) -> int:
    """Run the benchmark (or ``--render`` earlier runs' JSON); returns the exit status.

    Raises
    ------
    UsageError
        A bad option, before any work.
    """
    p = script_parser(__doc__, "dist_range")
    p.add_argument("--scale", type=int, default=29, help="Graph500 scale (default 29)")
    p.add_argument("--ranks", type=int, default=4, help="ranks, one GPU each (default 4)")
    p.add_argument("--apps", default=",".join(APPS), help="apps run on the one load, in order")
    p.add_argument("--runs", type=int, default=3, help="timed runs of each app (default 3)")
    p.add_argument("--mpiexec", default=None, help="the launcher (default: beside python, "
                                                   "else on PATH)")
    p.add_argument("--timeout-s", type=float, default=570, help="limit of the whole mpiexec")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args)
    if args.render:
        return render_docs(args, render)
    apps = check_options(args)
    from dist import find_mpiexec
    launcher = find_mpiexec(args.mpiexec)
    res = Results("dist_range.py", args, "", lambda doc: render(doc, args))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "range.json"
        cmd = [launcher, "-n", str(args.ranks), sys.executable, str(Path(__file__).resolve()),
               "--worker", str(out), "--scale", str(args.scale), "--apps", ",".join(apps),
               "--runs", str(args.runs), "--memory", args.memory]
        log("running: " + " ".join(cmd))
        try:
            rc = subprocess.run(cmd, timeout=args.timeout_s, env=child_env()).returncode
            stop = None if rc == 0 else f"the ranks stopped with status {rc}"
        except subprocess.TimeoutExpired:
            stop = f"the ranks ran past --timeout-s {args.timeout_s:g} and were stopped"
        got = json.loads(out.read_text()) if out.exists() else {"rows": []}
    res.doc["device"], res.doc["load"] = got.get("device") or "", got.get("load")
    for row in got["rows"]:
        res.add(row)
    if stop:
        res.note(stop + (f"; measured before it: {', '.join(r['app'] for r in got['rows'])}"
                         if got["rows"] else "; nothing measured"))
    res.save()
    log(table(res.doc))
    return 0 if not stop else 1


def check_options(args) -> list:
    """The apps, or a one-line UsageError naming the option (before any work)."""
    from finepar.errors import UsageError
    if not 1 <= args.scale <= 30:
        raise UsageError(f"--scale: {args.scale} is not a Graph500 scale (1..30)")
    if args.ranks < 1:
        raise UsageError(f"--ranks: {args.ranks} is not a rank count (>= 1)")
    if args.runs < 1:
        raise UsageError(f"--runs: {args.runs} is not a run count (>= 1)")
    return choices("--apps", args.apps, APPS)


# --------------------------------------------------------------------------- worker


def worker(args) -> int:
    """Every rank: generate, then run and check each app; rank 0 writes ``--worker``."""
    from finepar.api import make_pair
    from finepar.mpi.comm import Communicator
    from finepar.mpi.load import load_rows
    from finepar.mpi.setup import local_gpu
    comm = Communicator()
    say = log if comm.rank == 0 else (lambda _: None)
    doc = {"rows": [], "ranks": comm.size, "scale": args.scale}

    def save():
        if comm.rank == 0:
            write_json(args.worker, doc)

    rows = load_rows(f"graph500:{args.scale}", comm, progress=True)  # rank 0 shows stages
    every = comm.allgather({"rows": rows.hi - rows.lo, "nnz": int(rows.indices.size),
                            "seconds": rows.seconds, "stages": rows.stages,
                            "peak_rss_gib": _peak_rss_gib()})
    doc["load"] = {"graph": rows.name, "n": rows.n, "nnz": rows.nnz, "how": rows.how,
                   "seconds": max(e["seconds"] for e in every), "per_rank": every,
                   "notes": rows.notes}
    say(f"generated {rows.name}: {rows.n:,} vertices, {rows.nnz:,} nnz in "
        f"{doc['load']['seconds']:.1f} s (rank 0: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in rows.stages.items())
        + f"); per rank {[e['nnz'] for e in every]} nnz, peak memory "
        f"{max(e['peak_rss_gib'] for e in every):.1f} GiB")
    save()
    pair = make_pair(gpu=local_gpu(comm.local_rank, None), memory=args.memory)
    for app in args.apps.split(","):
        say(f"{app}: running ...")
        doc["rows"].append(measure(comm, app, rows, pair, args.runs))
        doc["device"] = doc["rows"][-1]["device"]
        r = doc["rows"][-1]
        say(f"{app}: runs {[round(s * 1e3, 2) for s in r['runs_s']]} ms, "
            f"{r['check'] or 'correct'} (checked by range in {r['check_s']:.1f} s); stages "
            + ", ".join(f"{k} {v:.1f} s" for k, v in r["stages"].items())
            + f"; peak memory {max(p['peak_rss_gib'] for p in r['per_rank']):.1f} GiB")
        save()
    comm.close()
    return 0


def measure(comm, app: str, rows, pair, runs: int) -> dict:
    """One app on the ranks' rows: its runs (the slowest rank's each), stages, ranks and
    the by-range check."""
    from finepar.mpi.runner import run_rows
    from finepar.mpi.verify import check_answer
    t0 = time.perf_counter()
    result, report = run_rows(app, rows, comm=comm, pair=pair, runs=runs)
    wall = time.perf_counter() - t0
    ranks = report.ranks
    times = [max(r["timings"]["runs"][i] for r in ranks) for i in range(runs)]
    row = {"app": app, "graph": rows.name, "n": rows.n, "nnz": rows.nnz, "runs_s": times,
           "iterations": int(result.iterations), "wall_s": comm.maximum(wall),
           "device": ranks[0]["devices"],
           "gpus": len({(r["host"], r["gpu_address"]) for r in ranks}),
           "stages": {k: max(r["timings"][k] for r in ranks)
                      for k in ("matrix", "partition", "setup", "warmup", "collect")},
           "per_rank": [{"rank": r["rank"], "rows": r["rows"], "nnz": r["nnz"],
                         "plan": r["plan"].get("label"), "compute_s": r["timings"]["compute"],
                         "exchange_s": r["timings"]["exchange"], "mpi_s": r["timings"]["mpi"],
                         "halo_out": r["halo"]["bytes_sent_per_iteration"],
                         "halo_path": r["halo"].get("path"),
                         "bytes_sent": r.get("bytes_sent"),
                         "bytes_received": r.get("bytes_received")} for r in ranks]}
    peaks = comm.allgather(_peak_rss_gib())
    for p, peak in zip(row["per_rank"], peaks):
        p["peak_rss_gib"] = peak
    chk = check_answer(comm, app, rows, result)
    row["check"] = "" if chk["passed"] else chk["detail"]
    if app == "bfs":
        row["reached"] = int((result.values >= 0).sum())
        row["gteps"] = [rows.nnz / 2 / s / 1e9 for s in times]
    else:
        row.update(residual=chk["residual"], bound=chk["bound"])
    row["check_s"] = chk["seconds"]
    return row


def _peak_rss_gib() -> float:
    """This process's peak resident memory, GiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


# --------------------------------------------------------------------------- render


def _stats(values: list) -> str:
    return (f"{statistics.median(values) * 1e3:.1f} ({min(values) * 1e3:.1f}-"
            f"{max(values) * 1e3:.1f})")


def table(doc) -> str:
    """A short plain-text table of the rows (printed at the end)."""
    lines = [f"{'graph':<26} {'app':<9} {'ms, median (min-max)':<28} {'GTEPS':>7} check"]
    for r in doc["rows"]:
        gteps = fmt(statistics.median(r["gteps"]), 1) if r.get("gteps") else "-"
        lines.append(f"{r['graph']:<26} {r['app']:<9} {_stats(r['runs_s']):<28} {gteps:>7} "
                     f"{r['check'] or 'correct'}")
    return "\n".join(lines)


def render(doc, args) -> str:
    """The RESULTS.md section: the load, then one line per app."""
    load = doc.get("load") or {}
    a = doc["args"]
    lines = [f"## A graph no single GPU holds: Graph500 scale {a['scale']} on {a['ranks']} "
             f"ranks (issue 32)", "",
             f"Device (rank 0): {doc['device'] or 'none measured'}. Date: {doc['date']}. "
             f"`benchmarks/dist_range.py --scale {a['scale']} --ranks {a['ranks']} --apps "
             f"{a['apps']} --runs {a['runs']}`: every rank generates its rows, then each app "
             f"runs on that one load (a warm-up, then the timed runs on one engine: the "
             f"slowest rank's time of each), and each answer is checked by range: BFS by "
             f"Graph500's rules, PageRank by its residual under one float64 step (the L1 "
             f"error is at most residual / (1 - d)). GTEPS: nnz / 2 edges a run. The app's "
             f"wall: from the rows in memory to the answer on every rank (its matrix, tuner, "
             f"engine, warm-up, the timed runs, the gather), the slowest rank's; a user's "
             f"wait adds the generation.", ""]
    lines += [f"- {n}" for n in doc.get("notes", [])] + ([""] if doc.get("notes") else [])
    if load:
        per = load.get("per_rank") or []
        lines += [f"Generation: {load['graph']}, {load['n']:,} vertices, {load['nnz']:,} nnz, "
                  f"{load['seconds']:.1f} s (the slowest rank); per rank "
                  + ", ".join(f"{e['nnz']:,}" for e in per) + " nnz; peak memory a rank "
                  f"{max((e['peak_rss_gib'] for e in per), default=0):.1f} GiB.", ""]
    lines += ["| app | run, ms: median (min-max) | GTEPS | iterations | per rank: compute, "
              "exchange (MPI), ms | tuner, setup, warm-up, s | the app's wall, s | check |",
              "|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        ranks = "; ".join(f"{p['rank']}: {p['compute_s'] * 1e3:.1f}, {p['exchange_s'] * 1e3:.1f} "
                          f"({p['mpi_s'] * 1e3:.1f})" for p in r["per_rank"])
        check = r["check"] or "correct"
        if r["app"] == "pagerank":
            check += f" (residual {r['residual']:.2e}, bound {r['bound']:.2e})"
        gteps = _gteps(r)
        lines.append(f"| {r['app']} | {_stats(r['runs_s'])} | {gteps} | {r['iterations']} | "
                     f"{ranks} | {r['stages']['partition']:.1f}, {r['stages']['setup']:.1f}, "
                     f"{r['stages']['warmup']:.1f} | {r['wall_s']:.1f} | "
                     f"{check} (by range, {r['check_s']:.1f} s) |")
    return "\n".join(lines) + "\n"


def _gteps(r: dict) -> str:
    g = r.get("gteps")
    return f"{statistics.median(g):.1f} ({min(g):.1f}-{max(g):.1f})" if g else "-"


if __name__ == "__main__":
    raise SystemExit(main_of(main))
