"""What bounds the scale-24 product: its stages timed apart, and read by Nsight Compute
(issue 31, item 4), prototyped in CUDA through CuPy.

FinePar's OpenCL kernels are not seen by Nsight Compute, so this probe runs the best
prototype of ``probe_spmv_tile.py`` (columns renumbered hottest first, each row's entries
sorted, ``LANES`` work-items a short row, a block of 1024 a row longer than ``--long``)
and, beside it, the same loops with the gather changed, so that differences of times place
the cost (METHOD: leave a stage out):

- ``gather``: ``x[c]``, the product (its answer checked against cuSPARSE's);
- ``index``: no gather, the column index summed as bits: the index stream and the loop;
- ``l1``: ``x[c & 2047]``: every gather an L1 hit (8 KiB of ``x``);
- ``l2``: ``x[c & (2^21 - 1)]``: gathers from 8 MiB of ``x``, which L2 holds and L1 does not;

and the product with L1 kept for ``x`` (PTX loads with an eviction policy):

- ``gather idx-first`` and ``gather idx-na``: the column indices, read once, loaded
  evict-first or not allocated in L1 at all;
- ``split na H`` and ``split last H``: and the gathers of the columns past the hottest
  ``H`` not allocated in L1, those below ``H`` loaded as usual or evict-last;

for the short rows and the long rows apart, beside cuSPARSE's product on both numberings;
every product's answer is checked against cuSPARSE's (``max_abs_err`` at most
:data:`MAX_ABS_ERR`, else it is listed in ``wrong`` and the exit status is 1).
With ``--once`` each kernel runs once and nothing is timed: the form to run under ``ncu``
(its kernels are named ``short_*`` and ``long_*``)::

    python benchmarks/probe_spmv_bound.py --scale 24 --json $OUT/bound.json
    ncu --clock-control none --set full -k regex:'short_|long_|csrmv|spmv' \\
        -o $OUT/bound python benchmarks/probe_spmv_bound.py --once --json $OUT/once.json
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from common import main_of
from finepar.errors import UsageError
from probe_spmv_tile import COMMON, renumbered, row_sets, timed

#: The variants: each one's gather (of the entry's column ``c``) and its read of the
#: column (of the entry ``k``), by name.
LOADS = {
    "gather": ("x[c]", "indices[k]"),
    "index": ("__int_as_float(c)", "indices[k]"),
    "l1": ("x[c & 2047]", "indices[k]"),
    "l2": ("x[c & 2097151]", "indices[k]"),
    # the index stream kept out of L1, so that L1 holds x
    "gather idx-first": ("x[c]", "__ldcs(indices + k)"),
    "gather idx-na": ("x[c]", "ld_na(indices + k)"),
    # and the columns past the hottest `hot` not allocated in L1 either
    "split na": ("(c < hot ? x[c] : ld_na_f(x + c))", "ld_na(indices + k)"),
    "split last": ("(c < hot ? ld_last(x + c) : ld_na_f(x + c))", "ld_na(indices + k)"),
}
#: The variants that time a stage and compute no product (their answers are not checked).
STAGES = ("index", "l1", "l2")
#: The largest difference from cuSPARSE's float32 product taken as the same answer: the
#: prototypes' sums differ from it by their order only (2e-4 to 4e-4 at scale 24); an entry
#: skipped or read twice moves a row by up to 1.
MAX_ABS_ERR = 1e-2
#: PTX loads with an L1 eviction policy (PTX ISA 7.4, sm_70 on).
PTX = r"""
__device__ __forceinline__ int ld_na(const int* p) {
    int v; asm("ld.global.nc.L1::no_allocate.s32 %0, [%1];" : "=r"(v) : "l"(p)); return v;
}
__device__ __forceinline__ float ld_na_f(const float* p) {
    float v; asm("ld.global.nc.L1::no_allocate.f32 %0, [%1];" : "=f"(v) : "l"(p)); return v;
}
__device__ __forceinline__ float ld_last(const float* p) {
    float v; asm("ld.global.nc.L1::evict_last.f32 %0, [%1];" : "=f"(v) : "l"(p)); return v;
}
"""


def kernel_name(kind: str, name: str) -> str:
    """The CUDA name of a variant's short-row or long-row kernel."""
    return f"{kind}_{name.replace(' ', '_').replace('-', '_')}"


def source() -> str:
    """A short-row and a long-row kernel for each of :data:`LOADS`."""
    out = ['extern "C" {', COMMON, PTX]
    for name, (load, idx) in LOADS.items():
        out.append(f"""
#undef IDX
#define IDX {idx}
__global__ void {kernel_name("short", name)}(const int* __restrict__ rows, int nrows,
        const int* __restrict__ indptr, const int* __restrict__ indices,
        const float* __restrict__ x, float* y, int hot) {{
    ROW_LOOP({load})
}}
__global__ void {kernel_name("long", name)}(const int* __restrict__ rows,
        const int* __restrict__ indptr, const int* __restrict__ indices,
        const float* __restrict__ x, float* y, int hot) {{
    int r = rows[blockIdx.x];
    float s = 0.f;
    for (int k = indptr[r] + threadIdx.x; k < indptr[r + 1]; k += blockDim.x) {{
        int c = IDX;
        s += {load};
    }}
    block_store(s, y, r);
}}""")
    out.append("}")
    return "\n".join(out)


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, default=24)
    ap.add_argument("--lanes", type=int, default=8, help="work-items a short row (8)")
    ap.add_argument("--long", type=int, default=1024, help="rows longer run a block each")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--hot", default="16384,32768,65536",
                    help="the split variants' hottest columns kept in L1 (comma list)")
    ap.add_argument("--once", action="store_true",
                    help="each kernel once, nothing timed (the form to run under ncu)")
    ap.add_argument("--json", required=True)
    args = ap.parse_args(argv)
    if args.lanes < 1 or args.lanes > 32 or args.lanes & (args.lanes - 1):
        raise UsageError(f"--lanes: a power of two up to 32, got {args.lanes}")
    if args.long < 1 or args.reps < 1:
        raise UsageError("--long and --reps must be at least 1")
    text = args.hot
    try:
        args.hot = [int(v) for v in text.split(",") if v]
        if not args.hot or min(args.hot) < 1:
            raise ValueError
    except ValueError:
        raise UsageError(f"--hot: a comma list of positive integers, got {text!r}") from None
    return args


def main(argv=None) -> int:
    args = parse(argv)
    import cupy as cp
    from common import load, write_json
    out = {"script": "benchmarks/probe_spmv_bound.py", "date": time.strftime("%Y-%m-%d"),
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "args": vars(args), "loads": LOADS, "results": {}}
    g, out["load_s"] = load(f"graph500:{args.scale}")
    d = renumbered(cp, g, sort=True)
    short, longr, d_short, d_long = row_sets(cp, d["deg"], args.long)
    out.update(n=int(g.n), nnz=int(g.nnz), hot_share=d["hot_share"],
               rows={"short": int(short.size), "long": int(longr.size),
                     "short_nnz": int(d["deg"][short].sum()),
                     "long_nnz": int(d["deg"][longr].sum())})
    mod = cp.RawModule(code=source(), options=(f"-DLANES={args.lanes}", "-arch=sm_90"))
    y = cp.zeros(g.n, cp.float32)
    grid = (-(-short.size * args.lanes // 256),)
    runs = {"cusparse original": d["cusparse original"],
            "cusparse renumbered": d["cusparse renumbered"]}
    for name in LOADS:
        ks = mod.get_function(kernel_name("short", name))
        kl = mod.get_function(kernel_name("long", name))
        for hot in (args.hot if name.startswith("split") else [0]):
            tag = f"{name} {hot}" if hot else name
            runs[f"short {tag}"] = lambda k=ks, h=hot: short.size and k(grid, (256,), (
                d_short, np.int32(short.size), d["indptr"], d["indices"], d["x"], y,
                np.int32(h)))
            runs[f"long {tag}"] = lambda k=kl, h=hot: longr.size and k(
                (int(longr.size),), (1024,), (d_long, d["indptr"], d["indices"], d["x"], y,
                                              np.int32(h)))
    out["max_abs_err"], out["wrong"] = {}, []
    for key in [k[6:] for k in runs if k.startswith("short ")]:
        if key in STAGES:
            continue
        y.fill(0)
        runs[f"short {key}"]()
        runs[f"long {key}"]()
        out["max_abs_err"][key] = err = float(cp.max(cp.abs(y - d["ref"])))
        if not err <= MAX_ABS_ERR:
            out["wrong"].append(key)
            print(f"WRONG: {key}: max |y - cuSPARSE's| = {err:.3g}", flush=True)
    if args.once:
        for key, fn in runs.items():
            # the products ran for the check, cuSPARSE's on the original columns for the
            # reference
            if key.split(" ", 1)[1] in STAGES or key == "cusparse renumbered":
                fn()
        cp.cuda.Device().synchronize()
    else:
        for key, fn in runs.items():
            out["results"][key] = timed(cp, fn, args.reps)
            print(key, out["results"][key], flush=True)
            write_json(args.json, out)
    write_json(args.json, out)
    return 1 if out["wrong"] else 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
