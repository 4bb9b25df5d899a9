"""Where a run's time goes before and after the GPU work: `finepar run` under cProfile.

Each app runs as a user runs it, ``finepar run APP FILE --json REPORT``, in a fresh
process under :mod:`cProfile` (the standard library's deterministic profiler), so
imports, device discovery, loading, planning, throttling, the engine's set-up, warm-up,
the run and the copy of the results all count. For every run the script keeps the
report's phase timings (load, partition, setup, warm-up, run, results to the host), the
process's wall time, and the functions with the most time of their own and the most
cumulative time (the top ``--top`` of each), and writes them as JSON as it goes.

Example (the GPU machine; the graph file made once by ``finepar generate``)::

    python3 benchmarks/profile_prep.py /tmp/g24.npz --apps bfs,cc,pagerank,spmv \\
        --json $OUT/profile.json --keep $OUT/pstats

A second pass with ``--again`` runs every app once more in a fresh process (what a
rerun of the same command costs: warm OS page cache, warm program caches).
"""

from __future__ import annotations

import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import choices, log, main_of, today, write_json  # noqa: E402

APPS = ("bfs", "cc", "pagerank", "spmv", "sssp", "rwr", "hits", "coloring")


def _top(stats: pstats.Stats, key: str, top: int) -> list[dict]:
    """The ``top`` functions by ``key`` ('tottime' or 'cumtime') as rows."""
    rows = []
    for (file, line, fn), (cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}({fn})" if line else fn,
                     "calls": nc, "tottime": tt, "cumtime": ct})
    rows.sort(key=lambda r: r[key], reverse=True)
    return rows[:top]


def profile_run(app: str, graph: str, extra: list[str], top: int, keep: Path | None,
                tag: str) -> dict:
    """One ``finepar run`` in a fresh process under cProfile; its report, wall time and
    hottest functions."""
    with tempfile.TemporaryDirectory() as tmp:
        prof, rep = Path(tmp) / "run.pstats", Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "finepar", "run", app,
               graph, "--json", str(rep), "--no-server", *extra]  # this process, profiled
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        row = {"app": app, "graph": graph, "pass": tag, "wall_s": wall, "rc": out.returncode,
               "command": " ".join(cmd[5:])}
        if out.returncode != 0:
            row["stderr"] = out.stderr.strip()[-2000:]
            return row
        report = json.loads(rep.read_text())
        row["timings"] = {k: v for k, v in report.get("timings", {}).items()
                          if isinstance(v, (int, float))}
        row["plan"] = {k: report.get("plan", {}).get(k) for k in ("label", "threshold",
                                                                  "grouping")}
        st = pstats.Stats(str(prof))
        row["total_profiled_s"] = st.total_tt  # type: ignore[attr-defined]
        row["tottime"] = _top(st, "tottime", top)
        row["cumtime"] = _top(st, "cumtime", top)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            prof.replace(keep / f"{app}-{tag}.pstats")
    return row


def summary_line(row: dict) -> str:
    if row["rc"] != 0:
        return f"{row['app']:9s} {row['pass']:5s} FAILED rc={row['rc']}: " \
               f"{row.get('stderr', '').splitlines()[-1:]}"
    t = row["timings"]
    phases = " ".join(f"{k} {t.get(k, 0):.2f}" for k in
                      ("load", "partition", "setup", "warmup", "run", "collect"))
    hot = ", ".join(f"{r['function']} {r['tottime']:.2f}" for r in row["tottime"][:3])
    return f"{row['app']:9s} {row['pass']:5s} wall {row['wall_s']:6.2f} s | {phases} | {hot}"


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("graph", help="a graph file (or graph500:SCALE) as `finepar run` takes it")
    p.add_argument("--apps", default="bfs,cc,pagerank,spmv")
    p.add_argument("--json", default="profile.json")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--keep", default=None, help="folder for the raw .pstats files")
    p.add_argument("--again", action="store_true", help="a second, warm pass of every app")
    p.add_argument("--extra", default="", help="more `finepar run` options, one string")
    args = p.parse_args(argv)
    apps = choices("--apps", args.apps, APPS)
    if not args.graph.startswith("graph500:") and not os.path.exists(args.graph):
        raise SystemExit(f"profile_prep.py: error: {args.graph}: file not found")
    doc = {"script": "profile_prep.py", "date": today(), "graph": args.graph, "runs": []}
    keep = Path(args.keep) if args.keep else None
    for tag in ("first", "again") if args.again else ("first",):
        for app in apps:
            row = profile_run(app, args.graph, args.extra.split(), args.top, keep, tag)
            doc["runs"].append(row)
            write_json(args.json, doc)
            log(summary_line(row))
    return 0


if __name__ == "__main__":
    sys.exit(main_of(main))
