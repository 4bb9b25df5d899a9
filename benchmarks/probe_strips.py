"""Probe: SpMV's locality in x without K-D partitions, CuPy kernels beside cuSPARSE on one
graph; JSON on the last line of standard output.

* Column strips at run time: each strip's pass finds its part of every row by binary search
  (no preprocessing), rows grouped by length as FinePar's pow4 groups.
* ``--relabel``: the columns renumbered by their reads, hottest first, rows and entry order
  untouched (what :mod:`finepar.engine.columns` does on the device), for cuSPARSE and the
  per-row kernel.

    python3 benchmarks/probe_strips.py graph500:24 [--relabel] [--reps 30]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SRC = r"""
extern "C" __device__ int lower(const int* a, int lo, int hi, int v) {
    while (lo < hi) { int m = (lo + hi) >> 1; if (a[m] < v) lo = m + 1; else hi = m; }
    return lo;
}
// row r's entries with a column in [c0, c1) (all of them when full), summed by `lanes` lanes
extern "C" __device__ void one_row(const long long* indptr, const int* indices, const float* x,
                                   float* y, bool ok, int r, int lane, int lanes, int c0,
                                   int c1, int first, int full) {
    int a = ok ? (int)indptr[r] : 0, b = ok ? (int)indptr[r + 1] : 0;
    if (!full) { a = lower(indices, a, b, c0); b = lower(indices, a, b, c1); }
    float s = 0.f;
    for (int i = a + lane; i < b; i += lanes) s += x[indices[i]];
    for (int o = lanes >> 1; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o, lanes);
    if (ok && lane == 0) y[r] = first ? s : y[r] + s;
}
// every row, `lanes` lanes each
extern "C" __global__ void strip(const long long* indptr, const int* indices,
                                 const float* x, float* y, int n, int c0, int c1,
                                 int first, int lanes, int full) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int r = (int)(t / lanes);
    one_row(indptr, indices, x, y, r < n, r < n ? r : 0, (int)(t % lanes), lanes, c0, c1,
            first, full);
}
// the rows of one length class, listed
extern "C" __global__ void strip_rows(const long long* indptr, const int* indices,
                                      const float* x, float* y, const int* rows, int m,
                                      int c0, int c1, int first, int lanes, int full) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int k = (int)(t / lanes);
    one_row(indptr, indices, x, y, k < m, k < m ? rows[k] : 0, (int)(t % lanes), lanes, c0,
            c1, first, full);
}
"""


def timed(fn, reps: int, cp) -> dict:
    fn()
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(3):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        b.synchronize()
        out.append(cp.cuda.get_elapsed_time(a, b) / reps)
    out.sort()
    return {"min_ms": out[0], "median_ms": out[1], "max_ms": out[2]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("spec")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--relabel", action="store_true",
                    help="also the matrix with its columns renumbered by degree")
    args = ap.parse_args()
    import numpy as np
    import cupy as cp
    import cupyx.scipy.sparse as cps
    from benchmarks.inputs import load_input
    t0 = time.perf_counter()
    g, info = load_input(args.spec)
    res = {"spec": args.spec, "n": int(g.n), "nnz": int(g.nnz), "load_s": time.perf_counter() - t0,
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": []}
    n = g.n
    indptr = cp.asarray(np.asarray(g.indptr, dtype=np.int64))
    indices = cp.asarray(np.asarray(g.indices, dtype=np.int32))
    x = cp.asarray(np.random.default_rng(0).random(n, dtype=np.float32))
    A = cps.csr_matrix((cp.ones(int(g.nnz), cp.float32), indices, indptr.astype(cp.int32)),
                       shape=(n, n))
    ref = A @ x
    y = cp.zeros(n, cp.float32)
    res["rows"].append({"what": "cusparse", **timed(lambda: A @ x, args.reps, cp)})
    print(json.dumps(res["rows"][-1]), file=sys.stderr)
    mod = cp.RawModule(code=SRC, options=("-std=c++11",))
    k_all, k_rows = mod.get_function("strip"), mod.get_function("strip_rows")
    lengths = np.diff(np.asarray(g.indptr, dtype=np.int64))
    # length classes as FinePar's pow4 grouping: lanes 1 / 4 / 16 / 32
    classes = []
    for lo, hi, lanes in ((1, 4, 1), (4, 16, 4), (16, 64, 16), (64, 1 << 62, 32)):
        rows = np.flatnonzero((lengths >= lo) & (lengths < hi)).astype(np.int32)
        classes.append((cp.asarray(rows), int(rows.size), lanes))

    def grouped(strips: int, full: bool):
        bounds = [n * s // strips for s in range(strips + 1)]
        def run():
            for s in range(strips):
                for rows, m, lanes in classes:
                    if m == 0:
                        continue
                    th = m * lanes
                    k_rows(((th + 255) // 256,), (256,),
                           (indptr, indices, x, y, rows, np.int32(m), np.int32(bounds[s]),
                            np.int32(bounds[s + 1]), np.int32(s == 0), np.int32(lanes),
                            np.int32(full)))
        return run

    def plain(strips: int, lanes: int):
        bounds = [n * s // strips for s in range(strips + 1)]
        th = n * lanes
        def run():
            for s in range(strips):
                k_all(((th + 255) // 256,), (256,),
                      (indptr, indices, x, y, np.int32(n), np.int32(bounds[s]),
                       np.int32(bounds[s + 1]), np.int32(s == 0), np.int32(lanes),
                       np.int32(strips == 1)))
        return run

    cases = [("grouped", s, None) for s in (1, 2, 3)]
    if args.relabel:
        cases = [("grouped", 1, None)]
    for kind, strips, lanes in cases:
        y.fill(0)  # rows without entries are never written
        fn = grouped(strips, strips == 1) if kind == "grouped" else plain(strips, lanes)
        fn()
        err = float(cp.abs(y - ref).max() / max(float(cp.abs(ref).max()), 1e-30))
        row = {"what": kind, "strips": strips, "lanes": lanes, "rel_err": err,
               **timed(fn, args.reps, cp)}
        res["rows"].append(row)
        print(json.dumps(row), file=sys.stderr)
    if args.relabel:  # the columns renumbered by degree (most frequent first), rows kept
        t0 = time.perf_counter()
        order = np.argsort(-lengths, kind="stable")  # column c's frequency is its degree
        perm = np.empty(n, np.int32)
        perm[order] = np.arange(n, dtype=np.int32)
        dperm = cp.asarray(perm)
        cp.cuda.Device().synchronize()
        t1 = time.perf_counter()
        new = dperm[indices]  # on the device
        cp.cuda.Device().synchronize()
        res["relabel_s"] = {"perm_host": t1 - t0, "indices_device": time.perf_counter() - t1}
        xr = cp.empty_like(x)
        xr[dperm] = x
        indices[:] = new
        del new
        B = cps.csr_matrix((cp.ones(int(g.nnz), cp.float32), indices, indptr.astype(cp.int32)),
                           shape=(n, n))
        y.fill(0)
        x_saved, x = x, xr
        for name, fn in (("cusparse relabelled columns", lambda: B @ xr),
                         ("grouped relabelled columns", grouped(1, True))):
            out = fn()
            got = out if out is not None else y
            err = float(cp.abs(got - ref).max() / max(float(cp.abs(ref).max()), 1e-30))
            row = {"what": name, "rel_err": err, **timed(fn, args.reps, cp)}
            res["rows"].append(row)
            print(json.dumps(row), file=sys.stderr)
        x = x_saved
    print(json.dumps(res))


if __name__ == "__main__":
    main()
