"""Run every app on a Graph500 graph on the selected pair and check it against the references.

Prints one line per (app, plan) with the per-iteration time and the check's
verdict; exits 1 if any answer is wrong. Used on the GPU machine before timing.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from finepar import api
from finepar.engine import EngineOptions
from finepar.io.graph500 import kronecker
from finepar.apps.bfs import bfs_levels_fast, validate_bfs
from finepar.apps.cc import reference_components
from finepar.apps.pagerank import reference_pagerank
from finepar.apps.spmv import reference_spmv, spmv_error_bound


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--scale", type=int, default=18)
    p.add_argument("--memory", default="auto")
    p.add_argument("--thresholds", default="16,64,256")
    args = p.parse_args()
    t0 = time.perf_counter()
    g = kronecker(args.scale, seed=1)
    print(f"generated {g.name}: {g.n:,} vertices, {g.nnz:,} nnz in {time.perf_counter() - t0:.1f} s")
    pair = api.make_pair(memory=args.memory)
    print(pair.describe())
    root = int(np.argmax(np.diff(g.indptr)))
    x = np.random.default_rng(0).uniform(-1, 1, g.n).astype(np.float32)
    refs = {"spmv": reference_spmv(g, x), "pagerank": reference_pagerank(g),
            "bfs": bfs_levels_fast(g, root), "cc": reference_components(g)}
    bound = spmv_error_bound(g, x)
    failures = 0
    plans = [{"threshold": int(t)} for t in args.thresholds.split(",")]
    plans += [{"threshold": int(args.thresholds.split(",")[1]), "grouping": "pow4"},
              {"devices": "cpu"}, {"devices": "gpu"}, {"devices": "gpu", "grouping": "pow4"}]
    for app in ("spmv", "pagerank", "bfs", "cc"):
        for kw in plans:
            params = {"x": x} if app == "spmv" else {"root": root} if app == "bfs" else {}
            res, rep = api.run(app, g, pair=pair, **kw, **params,
                               options=EngineOptions(profile="batch"))  # kernels printed
            if app == "spmv":
                ok = bool(np.all(np.abs(res.values - refs[app]) <= bound))
            elif app == "pagerank":
                ok = float(np.abs(res.values - refs[app]).sum()) < 1e-4
            elif app == "bfs":
                ok = np.array_equal(res.values, refs[app]) and not validate_bfs(
                    g, root, res.values, res.extra["parent"])
            else:
                ok = np.array_equal(res.values, refs[app])
            failures += not ok
            t = rep.timings
            print(f"{app:9s} {rep.plan['label']:32s} {'OK ' if ok else 'WRONG'} "
                  f"{t['per_iteration'] * 1e3:9.3f} ms/iter  iters {res.iterations:4d}  "
                  f"kernel cpu {t['kernel']['cpu'] * 1e3:8.2f} gpu {t['kernel']['gpu'] * 1e3:8.2f} "
                  f"exch {t['exchange'] * 1e3:7.2f} ms")
    print("ALL CORRECT" if not failures else f"{failures} WRONG")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
