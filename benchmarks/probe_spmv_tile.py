"""Where a scale-24 SpMV product's time goes: the hot columns' gathers from L1, L2 or a
work-group's local tile (issue 31, item 4), prototyped in CUDA through CuPy.

FinePar's default product reads ``x`` at hot-first column numbers (engine/columns.py). This
probe asks whether the gathers of the hottest columns are what bounds it, before the OpenCL
kernels change: on the graph's columns renumbered by degree (a symmetric graph's reads per
column), it times one short-row kernel (``LANES`` work-items a row, rows up to
``--long`` entries) as

- ``plain``: gathers through the default load path;
- ``cg``: gathers that skip L1 (``__ldcg``): what L1 gives;
- ``persistent``: the same kernel on a grid of one work-group of 1024 a multiprocessor;
- ``tile H``: that persistent grid with ``x[:H]`` staged in each work-group's shared memory
  and the gathers below ``H`` read from it;
- ``unroll U``: ``U`` index loads, then ``U`` gathers in flight a work-item (the long rows
  too, in blocks of 256 and 1024);
- with ``--sorted``, all of them over each row's entries sorted by renumbered column;

beside cuSPARSE's product on the original and the renumbered columns, every answer checked
against cuSPARSE's on the original columns. The rows longer than ``--long`` run in their own
launch (a block a row), the same in every variant, and are timed apart. It also reports the
share of reads that go to the hottest ``H`` columns. JSON is written as it goes.

    python benchmarks/probe_spmv_tile.py --scale 24 --json $OUT/probe_spmv_tile.json
"""

from __future__ import annotations

import argparse
import time

import numpy as np

#: What every prototype shares: a team's and a block's sums, and the short rows' loop
#: with its gather as ``LOAD`` (of the column ``c``), the column read as ``IDX`` (of the
#: entry ``k``; by default ``indices[k]``).
COMMON = r"""
#ifndef UNROLL
#define UNROLL 4
#endif
#ifndef LANES
#define LANES 8
#endif
#ifndef IDX
#define IDX indices[k]
#endif
__device__ __forceinline__ float red(float s) {
    for (int o = LANES / 2; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o, LANES);
    return s;
}
/* y[r] <- the sum of every work-item's s over the block (a block a row). */
__device__ __forceinline__ void block_store(float s, float* y, int r) {
    __shared__ float part[32];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
        if (threadIdx.x == 0) y[r] = s;
    }
}
#define ROW_LOOP(LOAD)                                                          \
    int lane = threadIdx.x % LANES;                                              \
    int team = (blockIdx.x * blockDim.x + threadIdx.x) / LANES;                   \
    int teams = gridDim.x * blockDim.x / LANES;                                   \
    for (int i = team; i < nrows; i += teams) {                                   \
        int r = rows[i];                                                          \
        int b = indptr[r], e = indptr[r + 1];                                     \
        float s = 0.f;                                                            \
        for (int k = b + lane; k < e; k += LANES) { int c = IDX; s += LOAD; } \
        s = red(s);                                                               \
        if (lane == 0) y[r] = s;                                                  \
    }
"""

KERNELS = r"""
extern "C" {
""" + COMMON + r"""
__global__ void plain(const int* __restrict__ rows, int nrows, const int* __restrict__ indptr,
                      const int* __restrict__ indices, const float* __restrict__ x, float* y) {
    ROW_LOOP(x[c])
}
__global__ void cg(const int* __restrict__ rows, int nrows, const int* __restrict__ indptr,
                   const int* __restrict__ indices, const float* __restrict__ x, float* y) {
    ROW_LOOP(__ldcg(x + c))
}
__global__ void tile(const int* __restrict__ rows, int nrows, const int* __restrict__ indptr,
                     const int* __restrict__ indices, const float* __restrict__ x, float* y,
                     int h) {
    extern __shared__ float sx[];
    for (int k = threadIdx.x; k < h; k += blockDim.x) sx[k] = x[k];
    __syncthreads();
    ROW_LOOP((c < h ? sx[c] : x[c]))
}
__global__ void unrolled(const int* __restrict__ rows, int nrows, const int* __restrict__ indptr,
                         const int* __restrict__ indices, const float* __restrict__ x, float* y) {
    int lane = threadIdx.x % LANES;
    int team = (blockIdx.x * blockDim.x + threadIdx.x) / LANES;
    int teams = gridDim.x * blockDim.x / LANES;
    for (int i = team; i < nrows; i += teams) {
        int r = rows[i];
        int b = indptr[r], e = indptr[r + 1];
        float s = 0.f;
        int k = b + lane;
        for (; k + (UNROLL - 1) * LANES < e; k += UNROLL * LANES) {
            int c[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) c[u] = indices[k + u * LANES];
            float v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) v[u] = x[c[u]];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) s += v[u];
        }
        for (; k < e; k += LANES) s += x[indices[k]];
        s = red(s);
        if (lane == 0) y[r] = s;
    }
}
__global__ void longrows_u(const int* __restrict__ rows, const int* __restrict__ indptr,
                           const int* __restrict__ indices, const float* __restrict__ x, float* y) {
    int r = rows[blockIdx.x];
    float s = 0.f;
    int k = indptr[r] + threadIdx.x, e = indptr[r + 1];
    for (; k + (UNROLL - 1) * (int)blockDim.x < e; k += UNROLL * blockDim.x) {
        int c[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) c[u] = indices[k + u * blockDim.x];
        float v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = x[c[u]];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) s += v[u];
    }
    for (; k < e; k += blockDim.x) s += x[indices[k]];
    block_store(s, y, r);
}
__global__ void longrows(const int* __restrict__ rows, const int* __restrict__ indptr,
                         const int* __restrict__ indices, const float* __restrict__ x, float* y) {
    int r = rows[blockIdx.x];
    float s = 0.f;
    for (int k = indptr[r] + threadIdx.x; k < indptr[r + 1]; k += blockDim.x) s += x[indices[k]];
    block_store(s, y, r);
}
}
"""


def stats(v):
    v = sorted(v)
    return {"min": v[0], "median": v[len(v) // 2], "max": v[-1], "n": len(v)}


def timed(cp, fn, reps):
    fn()
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(cp.cuda.get_elapsed_time(a, b))
    return stats(out)


def renumbered(cp, g, sort: bool) -> dict:
    """The graph's pattern on the device with its columns renumbered hottest first (by
    degree: a symmetric graph's reads a column), each row's entries sorted by the new
    number where ``sort``.

    Returns a dict: ``indptr``, ``indices`` (int32, device), ``x`` (float32, device, in the
    new numbering), ``ref`` (cuSPARSE's ``A x`` on the original columns: rows keep their
    numbers), ``deg`` (int64, host: each row's entries), ``hot_share`` (the share of the
    reads that go to the hottest ``H`` columns, by ``H``), and the callables ``cusparse
    original`` and ``cusparse renumbered`` (one product each).
    """
    import cupyx.scipy.sparse as cps
    n, nnz = g.n, g.nnz
    deg = np.diff(g.indptr).astype(np.int64)
    order = np.argsort(-deg, kind="stable")  # new number -> old column
    new_of = np.empty(n, np.int32)
    new_of[order] = np.arange(n, dtype=np.int32)
    cum = np.cumsum(deg[order])
    hot = {h: float(cum[min(h, n) - 1] / nnz)
           for h in [1024, 4096, 16384, 32768, 49152, 65536, 262144, 1 << 20, 6553600]}
    x = np.random.default_rng(0).uniform(-1, 1, n).astype(np.float32)
    d_indptr = cp.asarray(g.indptr.astype(np.int32))
    d_idx = cp.asarray(g.indices.astype(np.int32))
    d_x = cp.asarray(x)
    ones = cp.ones(nnz, cp.float32)
    a0 = cps.csr_matrix((ones, d_idx, d_indptr), shape=(n, n))
    d_new = cp.asarray(new_of)
    d_idx2 = d_new[d_idx]
    x2 = cp.empty_like(d_x)
    x2[d_new] = d_x
    a1 = cps.csr_matrix((ones, d_idx2, d_indptr), shape=(n, n))
    if sort:  # each row's entries in ascending renumbered column
        rows_of = cp.repeat(cp.arange(n, dtype=cp.int64), cp.asarray(deg))
        key = (rows_of << 32) | d_idx2.astype(cp.int64)
        del rows_of
        key.sort()
        d_idx2 = (key & 0xFFFFFFFF).astype(cp.int32)
        del key
    return {"indptr": d_indptr, "indices": d_idx2, "x": x2, "ref": a0 @ d_x, "deg": deg,
            "hot_share": hot, "cusparse original": lambda: a0 @ d_x,
            "cusparse renumbered": lambda: a1 @ x2}


def row_sets(cp, deg: np.ndarray, long: int):
    """The rows of 1 to ``long`` entries and the longer ones (int32, host), and both on
    the device: ``(short, longr, d_short, d_long)``."""
    short = np.flatnonzero((deg > 0) & (deg <= long)).astype(np.int32)
    longr = np.flatnonzero(deg > long).astype(np.int32)
    return short, longr, cp.asarray(short), cp.asarray(longr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, default=24)
    ap.add_argument("--lanes", default="4,8", help="work-items a short row (comma list)")
    ap.add_argument("--long", type=int, default=1024, help="rows longer run a block each")
    ap.add_argument("--tiles", default="16384,32768,49152", help="H values (floats)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--unrolls", default="2,4,8", help="entries in flight a work-item")
    ap.add_argument("--sorted", action="store_true",
                    help="sort each row's entries by their renumbered column first")
    ap.add_argument("--json", required=True)
    args = ap.parse_args(argv)
    for name in ("lanes", "tiles", "unrolls"):
        try:
            vals = [int(v) for v in getattr(args, name).split(",") if v]
            if not vals or min(vals) < 1:
                raise ValueError
        except ValueError:
            ap.error(f"--{name}: a comma list of positive integers, got "
                     f"{getattr(args, name)!r}")
    if args.lanes and any(int(v) & (int(v) - 1) or int(v) > 32 for v in args.lanes.split(",")):
        ap.error(f"--lanes: powers of two up to 32, got {args.lanes!r}")
    import cupy as cp
    from common import load, write_json
    out = {"script": "benchmarks/probe_spmv_tile.py", "date": time.strftime("%Y-%m-%d"),
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "args": vars(args), "results": {}}

    def save():
        write_json(args.json, out)
    g, load_s = load(f"graph500:{args.scale}")
    n, nnz = g.n, g.nnz
    out.update(n=int(n), nnz=int(nnz), load_s=load_s)
    d = renumbered(cp, g, args.sorted)
    d_indptr, d_idx2, x2, ref, deg = d["indptr"], d["indices"], d["x"], d["ref"], d["deg"]
    out["hot_share"] = d["hot_share"]
    out["results"]["cusparse original"] = timed(cp, d["cusparse original"], args.reps)
    out["results"]["cusparse renumbered"] = timed(cp, d["cusparse renumbered"], args.reps)
    out["sorted"] = args.sorted
    save()
    short, longr, d_short, d_long = row_sets(cp, deg, args.long)
    out["rows"] = {"short": int(short.size), "long": int(longr.size),
                   "long_nnz": int(deg[longr].sum())}
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    y = cp.zeros(n, cp.float32)

    def full_of(lanes):
        return (-(-short.size * lanes // 256),)
    for u in [int(v) for v in args.unrolls.split(",")]:
        mod = cp.RawModule(code=KERNELS, options=(f"-DUNROLL={u}", "-arch=sm_90"))
        for block in (256, 1024):
            kl = mod.get_function("longrows_u")
            out["results"][f"long rows unroll {u} block {block}"] = timed(
                cp, lambda: kl((int(longr.size),), (block,), (d_long, d_indptr, d_idx2, x2, y)),
                args.reps)
            print(f"long rows unroll {u} block {block}", out["results"][f"long rows unroll {u} block {block}"], flush=True)
    for lanes in [int(v) for v in args.lanes.split(",")]:
        mod = cp.RawModule(code=KERNELS, options=(f"-DLANES={lanes}", "-arch=sm_90"))
        kl = mod.get_function("longrows")

        def run_long():
            if longr.size:
                kl((int(longr.size),), (1024,), (d_long, d_indptr, d_idx2, x2, y))
        out["results"]["long rows"] = timed(cp, run_long, args.reps)
        for u in [int(v) for v in args.unrolls.split(",")]:
            mu = cp.RawModule(code=KERNELS, options=(f"-DLANES={lanes}", f"-DUNROLL={u}",
                                                      "-arch=sm_90"))
            ku = mu.get_function("unrolled")
            key = f"lanes {lanes} unroll {u}"
            y.fill(0)
            run_long()
            ku(full_of(lanes), (256,), (d_short, np.int32(short.size), d_indptr, d_idx2, x2, y))
            err = float(cp.max(cp.abs(y - ref)))
            out["results"][key] = {**timed(cp, lambda: ku(full_of(lanes), (256,), (
                d_short, np.int32(short.size), d_indptr, d_idx2, x2, y)), args.reps),
                "max_abs_err": err}
            print(key, out["results"][key], flush=True)
            save()
        teams = short.size
        full = (-(-teams * lanes // 256),)
        variants = {
            "plain": (mod.get_function("plain"), full, 256, 0, ()),
            "cg": (mod.get_function("cg"), full, 256, 0, ()),
            "persistent": (mod.get_function("plain"), (sms * 2,), 1024, 0, ()),
        }
        for h in [int(v) for v in args.tiles.split(",")]:
            variants[f"tile {h}"] = (mod.get_function("tile"), (sms,), 1024, 4 * h, (np.int32(h),))
        for name, (k, grid, block, shm, extra) in variants.items():
            if shm > 48 * 1024:
                k.max_dynamic_shared_size_bytes = shm

            def go(k=k, grid=grid, block=block, shm=shm, extra=extra):
                k(grid, (block,), (d_short, np.int32(short.size), d_indptr, d_idx2, x2, y,
                                   *extra), shared_mem=shm)
            key = f"lanes {lanes} {name}"
            try:
                y.fill(0)
                run_long()
                go()
                got = y  # rows keep their numbers
                err = float(cp.max(cp.abs(got - ref)))
                out["results"][key] = {**timed(cp, go, args.reps), "max_abs_err": err}
            except Exception as exc:  # noqa: BLE001 - a probe records every failure
                out["results"][key] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            print(key, out["results"][key], flush=True)
            save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
