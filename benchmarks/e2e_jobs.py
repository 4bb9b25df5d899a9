"""The jobs `e2e.py` times beside FinePar's CLI, written as a user of CuPy or scipy writes them.

Run as a fresh process, like the CLI::

    python3 benchmarks/e2e_jobs.py {cupy,scipy} APP GRAPH.npz --out ANSWER.npy [--root R]

Each job reads the ``.npz`` (``indptr`` / ``indices`` / ``data``, ones for a pattern graph),
builds the library's CSR, runs the app, copies the answer back and saves it; it prints one
JSON line with its phases (seconds): ``import`` (the library and, for CuPy, the CUDA
context), ``load``, ``build`` (the CSR on the device or host), ``run``, ``copy`` (the answer
to host memory), ``iterations``. The loops are the plain ones:

* BFS: a frontier vector times the transposed matrix per level (``A^T f > 0`` on unvisited
  vertices), one host read of the frontier's size per level; scipy:
  ``csgraph.breadth_first_order``.
* CC: min-label propagation over the edge list with pointer jumping until nothing changes;
  scipy: ``csgraph.connected_components`` (weak), labels renamed to the smallest vertex id.
* PageRank: the power iteration of :mod:`arraypeers` (cuSPARSE / scipy SpMV, dangling mass
  spread uniformly, L1 change below 1e-6).
* SpMV: ``y = A x`` ten times, ``x`` uniform in [-1, 1) from seed 0 (FinePar's default).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

T0 = time.perf_counter()


def load_csr(path: str):
    """``(n, indptr, indices, data or None)`` of a FinePar or scipy ``.npz``."""
    with np.load(path) as z:
        n = int(np.atleast_1d(z["shape"])[0])
        data = z["data"] if "data" in z.files else None
        return n, z["indptr"], z["indices"], data


def cupy_job(app: str, path: str, root: int | None) -> tuple[np.ndarray, dict]:
    import cupy as cp
    import cupyx.scipy.sparse as cps
    cp.cuda.Device(0).synchronize()
    t = {"import": time.perf_counter() - T0}
    t0 = time.perf_counter()
    n, indptr, indices, data = load_csr(path)
    t["load"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    vals = cp.ones(indices.size, cp.float32) if data is None else cp.asarray(data, cp.float32)
    a = cps.csr_matrix((vals, cp.asarray(indices), cp.asarray(indptr)), shape=(n, n))
    cp.cuda.Device(0).synchronize()
    t["build"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out, iters = _CUPY[app](cp, cps, a, n, root)
    cp.cuda.Device(0).synchronize()
    t["run"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    host = cp.asnumpy(out)
    t["copy"] = time.perf_counter() - t0
    t["iterations"] = iters
    return host, t


def _cupy_bfs(cp, cps, a, n, root):
    at = a.T.tocsr()
    level = cp.full(n, -1, cp.int32)
    level[root] = 0
    front = cp.zeros(n, cp.float32)
    front[root] = 1
    depth = 0
    while True:
        reach = (at @ front) > 0
        new = reach & (level < 0)
        depth += 1
        if not bool(new.any()):
            return level, depth
        level[new] = depth
        front = new.astype(cp.float32)


def _cupy_cc(cp, cps, a, n, root):
    import cupyx
    coo = a.tocoo()
    rows, cols = coo.row.astype(cp.int32), coo.col.astype(cp.int32)
    label = cp.arange(n, dtype=cp.int32)
    rounds = 0
    while True:
        rounds += 1
        old = label.copy()
        lo = cp.minimum(label[rows], label[cols])
        cupyx.scatter_min(label, rows, lo)  # hook both ends of every edge to the smaller label
        cupyx.scatter_min(label, cols, lo)
        while True:  # pointer jumping
            nxt = label[label]
            if bool((nxt == label).all()):
                break
            label = nxt
        if bool((label == old).all()):
            return label, rounds


def _cupy_pagerank(cp, cps, a, n, root):
    return _power(cp, a, n)


def _power(xp, a, n, damping=0.85, tol=1e-6, max_iter=100):
    outdeg = xp.diff(a.indptr).astype(xp.float64)
    inv = xp.where(outdeg > 0, 1.0 / xp.maximum(outdeg, 1), 0.0)
    dangling = outdeg == 0
    at = a.T.tocsr().astype(xp.float64)
    x = xp.full(n, 1.0 / n)
    for k in range(1, max_iter + 1):
        y = damping * (at @ (x * inv)) + (damping * float(x[dangling].sum()) + 1 - damping) / n
        change = float(xp.abs(y - x).sum())
        x = y
        if change < tol:
            return x, k
    return x, max_iter


def _cupy_spmv(cp, cps, a, n, root):
    x = cp.asarray(np.random.default_rng(0).uniform(-1.0, 1.0, n).astype(np.float32))
    for _ in range(10):
        y = a @ x
    return y, 10


_CUPY = {"bfs": _cupy_bfs, "cc": _cupy_cc, "pagerank": _cupy_pagerank, "spmv": _cupy_spmv}


def scipy_job(app: str, path: str, root: int | None) -> tuple[np.ndarray, dict]:
    import scipy.sparse as sp
    from scipy.sparse import csgraph
    t = {"import": time.perf_counter() - T0}
    t0 = time.perf_counter()
    n, indptr, indices, data = load_csr(path)
    t["load"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    vals = np.ones(indices.size, np.float32) if data is None else data.astype(np.float32)
    a = sp.csr_matrix((vals, indices, indptr), shape=(n, n))
    t["build"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    iters = 1
    if app == "bfs":
        from hostpeers import levels_from_parents
        _, pred = csgraph.breadth_first_order(a, root, directed=True, return_predecessors=True)
        parent = np.where(pred >= 0, pred, -1)
        parent[root] = root
        out = levels_from_parents(parent, root)
        iters = int(out.max()) + 1
    elif app == "cc":
        _, lab = csgraph.connected_components(a, directed=True, connection="weak")
        first = np.full(lab.max() + 1, n, np.int64)
        np.minimum.at(first, lab, np.arange(n))
        out = first[lab].astype(np.int32)
    elif app == "pagerank":
        out, iters = _power(np, a, n)
    else:
        x = np.random.default_rng(0).uniform(-1.0, 1.0, n).astype(np.float32)
        for _ in range(10):
            out = a @ x
        iters = 10
    t["run"] = time.perf_counter() - t0
    t["copy"] = 0.0
    t["iterations"] = iters
    return out, t


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("library", choices=("cupy", "scipy"))
    p.add_argument("app", choices=tuple(_CUPY))
    p.add_argument("graph")
    p.add_argument("--out", required=True, help="the answer, .npy")
    p.add_argument("--root", type=int, default=None, help="BFS source vertex")
    args = p.parse_args(argv)
    job = cupy_job if args.library == "cupy" else scipy_job
    out, t = job(args.app, args.graph, args.root)
    t0 = time.perf_counter()
    np.save(Path(args.out), out)
    t["save"] = time.perf_counter() - t0
    print(json.dumps(t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
