"""Distributed runs (finepar.mpi): PageRank, BFS and CC on Graph500 over P ranks (MPI)
beside one process.

For each scale and app: ``finepar run APP FILE`` in one process (today's FinePar, one
pair), then ``mpiexec -n P python -m finepar run APP FILE`` for each P of ``--ranks``,
every rank reading its rows of the cached uncompressed ``.npz`` (``benchmarks/inputs.py``
generates it once). Reported: the run's time (the slowest rank's) and per iteration,
its speedup over one process, and per rank the halo bytes per iteration, the time of
the exchanges between ranks and their share of the run, the time in MPI, the compute
time; every answer checked by the app's check against its (cached) reference. On a
machine with fewer GPUs than ranks the ranks share GPUs (``gpus`` says how many were
used): the run shows the exchange working on that driver, not a speedup.

    python benchmarks/dist.py --scales 22 --ranks 1,2 --apps pagerank,bfs,cc \\
        --json dist.json --md benchmarks/RESULTS.md
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from base import child_env
from common import (Budget, Results, choices, fmt, log, main_of, render_docs,
                    script_parser, target_lines)

APPS = ("pagerank", "bfs", "cc")
#: ``--transports``: each one's label suffix and ``finepar run`` options.
TRANSPORTS = {"auto": ("", []), "gpu": (" (GPU to GPU)", ["--exchange", "gpu"]),
              "window": (" (host path)", ["--exchange", "host"]),
              "mpi": (" (MPI collectives)", ["--exchange", "host", "--no-shared-window"])}
#: Issue 32's two-GPU targets at Graph500 scale 26: two ranks (two GPUs) over one process.
SPEEDUP_TARGETS = {"pagerank": 1.8, "bfs": 1.2, "cc": 1.2}
#: Issue 32's four-GPU targets: four ranks over one process at Graph500 scale 28.
FOUR_GPU_TARGETS = {"pagerank": 3.2, "bfs": 2.0}


def main(argv=None) -> int:
    """Run the benchmark (or ``--render`` earlier runs' JSON); returns the exit status.

    Raises
    ------
    UsageError
        A bad option, before any work.
    """
    p = script_parser(__doc__, "dist")
    p.add_argument("--scales", default="22", help="Graph500 scales, e.g. 22,24")
    p.add_argument("--ranks", default="1,2", help="rank counts, e.g. 1,2 (each an mpiexec)")
    p.add_argument("--apps", default=",".join(APPS))
    p.add_argument("--partition", default="nnz", choices=("nnz", "metis"))
    p.add_argument("--mpiexec", default=None, help="the launcher (default: beside python, "
                                                   "else on PATH)")
    p.add_argument("--check", default="reference", choices=("reference", "one-process", "none"),
                   help="what the answers are checked against: the app's host reference "
                        "(minutes at scale 26), the one-process run's answer, or nothing")
    p.add_argument("--transports", default="auto",
                   help="for P > 1, one run each: auto (FinePar's default: halos GPU to GPU "
                        "where every rank's GPU can, the rest through the ranks' shared-memory "
                        "window), gpu (--exchange gpu), window (--exchange host: halos through "
                        "pinned host memory and the window) and/or mpi (--exchange host "
                        "--no-shared-window: MPI's own collectives)")
    p.add_argument("--timeout-s", type=float, default=900, help="limit of one run")
    args = p.parse_args(argv)
    if args.render:
        return render_docs(args, render, targets)
    scales, ranks = check_options(args)
    choices("--transports", args.transports, TRANSPORTS)  # a bad one before any work
    launcher = find_mpiexec(args.mpiexec)
    res = Results("dist.py", args, "", lambda doc: render(doc, args), targets)
    if args.check == "one-process":
        res.note("answers checked against the one-process run's answer (integer apps equal, "
                 "PageRank within the app's L1 tolerance), not the host reference")
    budget = Budget(args.budget_s)
    for scale in scales:
        for app in choices("--apps", args.apps, APPS):
            if budget.spent():
                res.note(f"budget spent: {app} on graph500:{scale} and later not run")
                return 0
            res.add(measure_one(scale, app, ranks, launcher, args, res))
    log(table(res.doc))
    return 0


def check_options(args):
    """The scales and rank counts, or a one-line UsageError before any work."""
    from finepar.errors import UsageError
    scales, ranks = [], []
    for s in args.scales.split(","):
        if not (s.strip().isdigit() and 1 <= int(s) <= 30):
            raise UsageError(f"--scales: {s.strip()!r} is not a Graph500 scale (1..30)")
        scales.append(int(s))
    for r in args.ranks.split(","):
        if not (r.strip().isdigit() and int(r) >= 1):
            raise UsageError(f"--ranks: {r.strip()!r} is not a rank count (>= 1)")
        ranks.append(int(r))
    return scales, ranks


def find_mpiexec(given: str | None) -> str:
    from finepar.errors import UsageError
    for cand in (given, str(Path(sys.executable).parent / "mpiexec"), shutil.which("mpiexec")):
        if cand and Path(cand).exists():
            return cand
    raise UsageError("--mpiexec: no MPI launcher found (pip install 'finepar[mpi]')")


def finepar_run(cmd: list, app: str, path: str, out: Path, timeout: float,
                extra: list) -> dict:
    """Run ``cmd + [finepar run APP PATH EXTRA --json ... -o ...]``; the report and the
    answer, or the error's last line."""
    report, answer = out / "report.json", out / "answer.npy"
    full = cmd + [sys.executable, "-m", "finepar", "run", app, path, *extra, "-q", "--force",
                  "--json", str(report), "-o", str(answer)]
    env = child_env()
    t0 = time.perf_counter()
    proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1][:300],
                "command": " ".join(full[:8])}
    return {"report": json.loads(report.read_text()), "answer": np.load(answer),
            "process_s": wall, "command": " ".join(full[:len(cmd) + 6 + len(extra)])}


def measure_one(scale: int, app: str, ranks: list, launcher: str, args, res) -> dict:
    """One app on one scale: one process, then each rank count; a row of the document."""
    from finepar import apps
    from inputs import graph500_file, load_input, reference
    spec = f"graph500:{scale}"
    g, info = load_input(spec)  # generated once into the cache; the runs read the file
    path = str(graph500_file(scale))
    the_app = apps.get(app)
    params = the_app.reference_params(g, the_app.check_params(g, {}))
    ref = reference(the_app, g, params)[0] if args.check == "reference" else None
    row = {"scale": scale, "graph": g.name, "n": g.n, "nnz": g.nnz, "app": app, "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        plan = [("1 process", [], 0, "")]
        for p in ranks:
            for tr in (choices("--transports", args.transports, TRANSPORTS)
                       if p > 1 else ("auto",)):
                plan.append((f"{p} ranks{TRANSPORTS[tr][0]}", [launcher, "-n", str(p)], p, tr))
        for label, cmd, p, tr in plan:
            extra = ["--distributed", "--partition", args.partition] if p else []
            extra += TRANSPORTS[tr][1] if p else []
            rec = finepar_run(cmd, app, path, Path(tmp), args.timeout_s, extra)
            answer = rec.get("answer")
            rec = _summarise(rec, label, p, the_app, g, params, ref)
            if not p and args.check == "one-process" and answer is not None:
                # this run's answer is what the ranks' answers are checked against
                ref, rec["check"], rec["reference"] = answer, "", "checks the ranks' runs"
            if not res.doc["device"] and rec.get("device"):
                res.doc["device"] = rec["device"]
            row["runs"].append(rec)
            log(f"graph500:{scale} {app} {label}: "
                + (rec.get("error") or f"{rec['run_s'] * 1e3:.1f} ms, {rec['check'] or 'correct'}"))
            for line in level_lines(rec):
                log("  " + line)
    return row


def _summarise(rec: dict, label: str, ranks: int, app, g, params, ref) -> dict:
    """What a row keeps of a run: times, per-rank exchanges, the check."""
    out = {"label": label, "ranks": ranks, "command": rec.get("command")}
    if "error" in rec:
        return {**out, "error": rec["error"]}
    rep = rec["report"]
    t = rep["timings"]
    out.update(run_s=t["run"], per_iteration_s=t["per_iteration"],
               iterations=rep["result"]["iterations"], process_s=rec["process_s"])
    if ref is not None:
        from finepar.apps.base import AppResult
        result = AppResult(values=rec["answer"], iterations=out["iterations"])
        out["check"] = app.check(g, result, ref, params) if app.name != "bfs" else (
            "" if np.array_equal(rec["answer"], ref) else "levels differ from the reference")
    else:
        out["check"] = "not checked"
    if "ranks" in rep:  # a distributed run
        out["device"] = rep["ranks"][0]["devices"]
        out["gpus"] = len({(r["host"], r["gpu_address"]) for r in rep["ranks"]})
        out["per_rank"] = [{k: r[k] for k in ("rank", "rows", "nnz", "plan")}
                           | {"halo_out": r["halo"]["bytes_sent_per_iteration"],
                              "halo_in": r["halo"]["bytes_received_per_iteration"],
                              "other_out": r["other_bytes_sent_per_iteration"],
                              "exchange_s": r["timings"]["exchange"],
                              "exchange_fraction": r["timings"]["exchange_fraction"],
                              "mpi_s": r["timings"]["mpi"], "compute_s": r["timings"]["compute"],
                              "run_s": r["timings"]["run"], "bytes_sent": r.get("bytes_sent"),
                              "bytes_received": r.get("bytes_received"),
                              "frontier": r["frontier"], "columns": r.get("columns"),
                              "halo_split": r["halo"].get("split"),
                              "halo_path": r["halo"].get("path"),
                              "halo_path_reason": r["halo"].get("path_reason"),
                              "halo_pipelined": r["halo"].get("pipelined"),
                              "halo_order": r["halo"].get("order"),
                              "pack_kernel_s": r["halo"].get("pack_kernel_seconds"),
                              "unpack_kernel_s": r["halo"].get("unpack_kernel_seconds"),
                              # BFS: each level's direction, frontier, part, kernel,
                              # exchange and MPI seconds, bytes, host synchronisations
                              "levels": r.get("levels", [])} for r in rep["ranks"]]
        # BFS: top-down and bottom-up levels (the summary's line), the same on every rank
        out["levels"] = dict(rep["result"]["summary"]).get("levels")
        # CC: each rank's kernels by phase and host seconds between waits ('rank R' lines)
        out["app_lines"] = {k: v for k, v in rep["result"]["summary"] if k.startswith("rank ")}
    else:
        out["device"] = rep["devices"]["describe"]
        out["gpus"] = 1
        out["plan"] = rep["plan"]["label"]
    return out


def level_lines(rec: dict) -> list:
    """A distributed run's levels, one line a level and rank (BFS's record): direction,
    frontier, the rank's part, kernel / exchange / MPI milliseconds, MB sent and received,
    host synchronisations."""
    out = []
    for p in rec.get("per_rank") or []:
        for lv in p.get("levels") or []:
            out.append(f"rank {p['rank']} level {lv['level']} {lv['direction']:<9} "
                       f"frontier {lv.get('frontier', 0):>11,} found {lv.get('found', 0):>11,} "
                       f"part {lv['form']:<5} {lv['part']:>10,}: kernels "
                       f"{lv['kernel_s'] * 1e3:.2f} ms, exchange {lv['exchange_s'] * 1e3:.2f} "
                       f"ms (MPI {lv['mpi_s'] * 1e3:.2f}), {lv['bytes_sent'] / 1e6:.2f} MB out, "
                       f"{lv['bytes_received'] / 1e6:.2f} MB in, {lv['host_syncs']} syncs, "
                       f"wall {lv['wall_s'] * 1e3:.2f} ms")
    return out


# ------------------------------------------------------------------------- targets


def targets(doc, args) -> list:
    """The issue's targets: two GPUs against one process, and PageRank's exchange share."""
    from measure import Targets
    t = Targets()
    for r in doc["rows"]:
        runs = {x["label"]: x for x in r["runs"] if "run_s" in x and not x.get("check")}
        one, two = runs.get("1 process"), runs.get("2 ranks")
        bound = SPEEDUP_TARGETS.get(r["app"])
        if bound and r["scale"] == 26:
            if two is not None and two.get("gpus", 1) < 2:
                t.add(f"{r['app']} on graph500:26, two GPUs >= {bound}x one", None,
                      "the two ranks shared one GPU: no two-GPU machine measured")
            else:
                t.speedup(f"{r['app']} on graph500:26, two GPUs >= {bound}x one",
                          ("2 ranks", two and two["run_s"]), ("1 process", one and one["run_s"]),
                          bound)
        four, bound4 = runs.get("4 ranks"), FOUR_GPU_TARGETS.get(r["app"])
        if bound4 and r["scale"] == 28:
            what = f"{r['app']} on graph500:28, four GPUs >= {bound4}x one"
            if four is not None and four.get("gpus", 1) < 4:
                t.add(what, None, "the four ranks shared GPUs: no four-GPU machine measured")
            else:
                t.speedup(what, ("4 ranks", four and four["run_s"]),
                          ("1 process", one and one["run_s"]), bound4)
        if r["app"] == "pagerank" and r["scale"] == 26:
            share = max((p["exchange_fraction"] for p in two["per_rank"]), default=None) \
                if two else None
            t.ratio("PageRank on graph500:26, two ranks: halo exchange <= 30% of the iteration",
                    share, 0.30, f"{fmt(100 * share if share is not None else None, 1)}% of the "
                                 f"run on the slowest rank", "no correct two-rank run",
                    at_most=True)
    return t.items


# -------------------------------------------------------------------------- render


def table(doc) -> str:
    """A short plain-text table of the rows (printed at the end)."""
    lines = [f"{'graph':<26} {'app':<9} {'run':<28} {'ms':>10} {'x 1 proc':>9} "
             f"{'halo MB/it':>10} {'exch %':>7} {'gpus':>4}  check"]
    for r in doc["rows"]:
        base = next((x.get("run_s") for x in r["runs"] if x["label"] == "1 process"), None)
        for x in r["runs"]:
            if "error" in x:
                lines.append(f"{r['graph']:<26} {r['app']:<9} {x['label']:<28} {x['error']}")
                continue
            pr = x.get("per_rank") or []
            halo = max((p["halo_out"] + p["other_out"] for p in pr), default=0) / 1e6
            exch = max((p["exchange_fraction"] for p in pr), default=0) * 100
            lines.append(f"{r['graph']:<26} {r['app']:<9} {x['label']:<28} "
                         f"{x['run_s'] * 1e3:>10.2f} {fmt(base / x['run_s'] if base else None):>9} "
                         f"{halo:>10.2f} {exch:>7.1f} {x.get('gpus', 1):>4}  "
                         f"{x.get('check') or 'correct'}")
    return "\n".join(lines)


def render(doc, args) -> str:
    """The RESULTS.md section: the targets, then one table per graph and app."""
    lines = ["## Distributed runs: P ranks over MPI against one process", "",
             f"Device (rank 0): {doc['device']}. Date: {doc['date']}. `benchmarks/dist.py`: "
             f"`finepar run` in one process, then `mpiexec -n P python -m finepar run` (each "
             f"rank reading its rows of the uncompressed .npz; {doc['args']['partition']} "
             f"partition). Run: the slowest rank's wall time of the timed run, one run after "
             f"a warm-up. Per rank: halo bytes sent and received per iteration (GPU to "
             f"GPU where the rank says `halo gpu`, else through pinned host memory, then "
             f"MPI's Alltoallv or, where the ranks share a host and the run does not say MPI "
             f"collectives, their shared-memory window), other "
             f"bytes (frontier merges, vector gathers), "
             f"the exchanges' time and share of the run, MPI time, compute (the longer "
             f"device's kernels per step), bytes sent and received in all; BFS's levels "
             f"by direction. GPUs: distinct GPUs the ranks used (ranks sharing "
             f"one GPU show the exchange working, not a speedup). Every answer checked by the "
             f"app's check against its reference, or as a note says.", ""]
    lines += [f"- {n}" for n in doc.get("notes", [])] + ([""] if doc.get("notes") else [])
    if doc.get("targets"):
        lines += ["Targets:", ""] + target_lines(doc["targets"]) + [""]
    for r in doc["rows"]:
        base = next((x.get("run_s") for x in r["runs"] if x["label"] == "1 process"), None)
        lines += [f"### {r['app']} on {r['graph']} ({r['n']:,} vertices, {r['nnz']:,} nnz)", "",
                  "| run | GPUs | ms | ms / iteration | vs 1 process | rank: rows, halo out / in "
                  "per iteration, other out, exchange (% of run), MPI, compute | check |",
                  "|---|---|---|---|---|---|---|"]
        for x in r["runs"]:
            if "error" in x:
                lines.append(f"| {x['label']} | | | | | failed: {x['error']} | |")
                continue
            ranks = "; ".join(
                f"{p['rank']}: {p['rows']:,} rows, {p['halo_out'] / 1e6:.2f} / "
                f"{p['halo_in'] / 1e6:.2f} MB, {p['other_out'] / 1e6:.2f} MB, "
                f"{p['exchange_s'] * 1e3:.1f} ms ({100 * p['exchange_fraction']:.0f}%), "
                f"MPI {p['mpi_s'] * 1e3:.1f} ms, compute {p['compute_s'] * 1e3:.1f} ms"
                + (f", halo {p['halo_path']}" if p.get("halo_path") else "")
                + (f" ({p['halo_pipelined']} pipelined)" if p.get("halo_pipelined") else "")
                + (f", pack / unpack kernels {p['pack_kernel_s'] * 1e3:.1f} / "
                   f"{p['unpack_kernel_s'] * 1e3:.1f} ms" if p.get("pack_kernel_s") else "")
                + (f", {p['bytes_sent'] / 1e6:.2f} MB sent / {p['bytes_received'] / 1e6:.2f} "
                   f"MB received in all" if p.get("bytes_sent") is not None else "")
                for p in x.get("per_rank") or []) or x.get("plan", "")
            if x.get("levels"):
                ranks += f"; levels {x['levels']}"
            lines.append(f"| {x['label']} | {x.get('gpus', 1)} | {x['run_s'] * 1e3:.2f} | "
                         f"{x['per_iteration_s'] * 1e3:.3f} | "
                         f"{fmt(base / x['run_s'] if base else None)}x | {ranks} | "
                         f"{x.get('check') or 'correct'} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main_of(main))
