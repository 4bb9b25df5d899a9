"""K-D grid tiling of a GPU share (:mod:`finepar.throttle.kdgrid`), stage by stage, by threads.

For each Graph500 scale, the share is cut into cache-fit partitions of ``--cache-bytes``
(the H100's 50 MB L2 by default, half of it for x and y entries, as ``finepar run`` does)
in a fresh process per thread count (its CPU affinity set before numpy's and FinePar's
pools start), and each stage's seconds are kept: the histogram, the tree, and the
segments (with the partitions' distinct columns, counted in the same pass). Two shares:

- ``whole``: every row, as a GPU-only run partitions it (a symmetric matrix: the column
  counts are the row counts transposed);
- ``default``: every row but the ``--hubs`` heaviest, as the default split leaves the GPU
  at scale 24 (117 rows went to the CPU on the H100), cut as ``finepar run`` cuts it: with
  the whole matrix's tree, the hubs' segments dropped
  (:func:`finepar.throttle.plan.of_whole`), else as a compacted share of its own.

The time of a share is the whole call (the stages, and for ``default`` building the share
where it is cut on its own).

The histogram is counted where ``--counts`` says: on the GPU (``device``, what ``finepar
run`` does where the GPU has memory of its own; the upload of the column indices counted
in), or on the host (``numpy``: FinePar's host pass, whose ``bincount`` holds the GIL;
``scipy``: the same counts through scipy's sparse product, which leaves it free). The runs of
2026-11-25 (b2fe5cb to 9bc8646) counted FinePar's host pass through scipy; on the H100's 16
threads that was no faster (1.67 against 1.70 s at scale 24), so numpy's call came back.

Every partitioning is checked: its nonzeros add up to the share's and every partition's
exact distinct x plus y entries fit the capacity.

  python benchmarks/tiling.py --scales 24 --threads 1,all --json $OUT/tiling.json --md RESULTS.md
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import (Budget, Results, choices, device_line, fmt, load, log,  # noqa: E402
                    main_of, render_docs, script_parser, stat_cell, target_lines)
from measure import Targets, stats  # noqa: E402

SHARES = ("whole", "default")
STAGES = ("histogram", "tree", "segments")


def scipy_bincount(keys, size):
    """The histogram's counts through scipy's sparse product, which leaves the GIL free
    (``--counts scipy``; FinePar's host pass counts with numpy's ``bincount``, which holds
    it): a vector of ones times the one-key-a-row matrix of the keys."""
    import numpy as np
    from scipy.sparse import csr_array
    a = csr_array((np.ones(keys.size), keys, np.arange(keys.size + 1)),
                  shape=(keys.size, size))
    return (np.ones(keys.size) @ a).astype(np.int64)


def worker(spec: str, share: str, repeats: int, cache_bytes: int, hubs: int,
           count: str = "numpy") -> dict:
    """In this process: the share of ``spec`` tiled ``repeats`` times; stages and checks."""
    import numpy as np

    from finepar.throttle import kdgrid
    from finepar.throttle.dbwp import capacity_from_cache, dbwp
    counter = None
    if count == "scipy":
        kdgrid._bincount = scipy_bincount
    elif count == "device":
        from finepar.api import make_pair
        from finepar.throttle.plan import device_counter
        counter = device_counter(make_pair())
    from finepar.throttle.plan import of_whole, share_csr
    g, _ = load(spec)
    capacity = capacity_from_cache(cache_bytes, 0.5)
    if share == "whole":
        rows = None
    else:
        rows = np.sort(np.argsort(np.diff(g.indptr), kind="stable")[:g.n - hubs])
    runs, how = [], "share"
    for _ in range(repeats):
        t0 = time.perf_counter()
        part = of_whole(g, rows, capacity, counter) if rows is not None else None
        if part is not None:
            how = "whole matrix's tree, hubs dropped"
        elif rows is not None:
            part = dbwp(*share_csr(g, rows), g.n, capacity, checked=True)
        else:
            part = dbwp(g.indptr, g.indices, g.n, capacity, checked=True,
                        symmetric=g.symmetric, counter=counter)
        runs.append({"seconds": time.perf_counter() - t0,
                     **part.extra.get("stage_seconds", {})})  # none: exact bisection
    nnz = int(g.nnz if rows is None else np.diff(g.indptr)[rows].sum())
    ok = int(part.nnz.sum()) == nnz and part.over_capacity().size == 0
    return {"graph": spec, "share": share, "threads": len(os.sched_getaffinity(0)),
            "count": count if count != "device" or counter else "device (host: no GPU memory)",
            "nnz": nnz, "rows": int(part.n_rows), "capacity": int(capacity),
            "how": how if "grid" in part.extra else "exact bisection (below the grid's size)",
            "partitions": part.n_parts, "segments": part.n_segments, "grid": part.extra.get("grid"),
            "valid": bool(ok), "seconds": stats([r["seconds"] for r in runs]),
            "stages": {s: stats([r[s] for r in runs]) for s in runs[0] if s != "seconds"}}


def run_worker(spec, share, threads, repeats, args, count) -> dict:
    """:func:`worker` in a fresh process pinned to ``threads`` CPUs (``all``: every one)."""
    cpus = sorted(os.sched_getaffinity(0))
    use = cpus if threads == "all" else cpus[:int(threads)]
    code = ("import os, sys, json; os.sched_setaffinity(0, %r); sys.path.insert(0, %r); "
            "import tiling; print('@@' + json.dumps(tiling.worker(%r, %r, %d, %d, %d, %r)))"
            % (use, str(HERE), spec, share, repeats, args.cache_bytes, args.hubs, count))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    line = [x for x in out.stdout.splitlines() if x.startswith("@@")]
    if out.returncode or not line:
        return {"graph": spec, "share": share, "threads": len(use), "count": count, "error":
                (out.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(line[0][2:])


def targets(doc: dict, args) -> list:
    t = Targets()
    rows = [r for r in doc["rows"] if r.get("graph") == "graph500:24" and "seconds" in r
            and r.get("count", "scipy") == "device"]
    if not rows:
        return []  # host passes only: FinePar's own (device) tiling not in this run
    most = max(r["threads"] for r in rows)
    for share in SHARES:
        r = next((r for r in rows if r["share"] == share and r["threads"] == most), None)
        med = r["seconds"]["median"] if r else None
        t.ratio(f"K-D tiling of the scale-24 GPU share ({share}) <= 2 s", med, 2.0,
                f"{fmt(med, 2) if med else '-'} s on {most} threads", "scale 24 not measured",
                at_most=True)
    return t.items


def render(doc: dict, args=None) -> str:
    stages = [*STAGES, *(["distinct"] if any("distinct" in r.get("stages", {})
                                             for r in doc["rows"]) else [])]  # on the GPU
    lines = [f"{doc['device']} · {doc['date']} · `benchmarks/tiling.py` "
             "(seconds, min / median / max of the repeats; stages: medians)", "",
             "| graph | share | cut as | nnz | counts | threads | tiling (s) | "
             + " | ".join(stages) + " | partitions | segments | valid |",
             "|---|---|---|---|---|---|---|" + "---|" * len(stages) + "---|---|---|"]
    for r in doc["rows"]:
        if "error" in r:
            lines.append(f"| {r['graph']} | {r['share']} | - | - | {r.get('count', 'scipy')} | "
                         f"{r['threads']} | failed: {r['error']} |" + " |" * (len(stages) + 3))
            continue
        cells = [fmt(r["stages"][s]["median"], 2) if s in r["stages"] else "-" for s in stages]
        lines.append(f"| {r['graph']} | {r['share']} | {r.get('how', 'share')} | {r['nnz']:,} | "
                     f"{r.get('count', 'scipy')} | {r['threads']} | "
                     f"{stat_cell(r['seconds'], 1, 2)} | " + " | ".join(cells)
                     + f" | {r['partitions']} | {r['segments']:,} | {r['valid']} |")
    lines += ["", *(f"- {n}" for n in doc.get("notes", []))]
    lines += target_lines(doc.get("targets", []))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = script_parser(__doc__, "tiling")
    p.add_argument("--scales", default="24", help="Graph500 scales (24)")
    p.add_argument("--threads", default="1,all", help="thread counts, 'all' for every CPU")
    p.add_argument("--shares", default=",".join(SHARES))
    p.add_argument("--repeats", type=int, default=3, help="tilings per process on all CPUs (3)")
    p.add_argument("--cache-bytes", type=int, default=50 << 20, help="the L2 (50 MiB)")
    p.add_argument("--hubs", type=int, default=117, help="rows the default share leaves out")
    p.add_argument("--counts", default="device,numpy",
                   help="where the histogram is counted: device (FinePar's default: the GPU's "
                        "kernel where the GPU has its own memory), numpy (FinePar's host "
                        "pass), scipy (the host pass through scipy's GIL-free product)")
    args = p.parse_args(argv)
    if args.render:
        return render_docs(args, render, targets)
    shares = choices("--shares", args.shares, SHARES)
    counts = choices("--counts", args.counts, ("device", "scipy", "numpy"))
    threads = [t.strip() for t in args.threads.split(",") if t.strip()]
    for t in threads:
        if t != "all" and (not t.isdigit() or int(t) < 1):
            p.error(f"--threads: {t!r} is not a positive count or 'all'")
    scales = [int(s) for s in args.scales.split(",") if s.strip()]
    from finepar.api import make_pair
    res = Results("tiling.py", args, device_line(make_pair()), render, targets)
    budget = Budget(args.budget_s)
    for scale in scales:
        load(f"graph500:{scale}")  # generated (once) here, read by the workers
        for t, share, count in ((t, s, c) for c in counts for t in threads for s in shares):
            if budget.spent():
                res.note(f"budget spent: scale {scale}, {t} threads, {share}, {count} not run")
                continue
            row = run_worker(f"graph500:{scale}", share, t,
                             args.repeats if t == "all" else 1, args, count)
            res.add(row)
            log(f"scale {scale} {share} {count} threads {row['threads']}: "
                + (row.get("error") or f"{row['seconds']['median']:.2f} s "
                   + json.dumps({s: round(row['stages'][s]['median'], 2) for s in row['stages']})))
    return 0


if __name__ == "__main__":
    sys.exit(main_of(main))
