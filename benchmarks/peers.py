"""FinePar against the libraries a user would pick instead, on the same graphs, in one run.

Peers (each optional: a missing one is skipped with a line saying so):

* **cuSPARSE** through CuPy: CSR matvec (``cupyx.scipy.sparse``), and a
  PageRank power iteration in CuPy on it;
* **scipy**: CSR matvec, the same PageRank iteration, ``csgraph`` BFS and
  connected components (single-threaded);
* **SuiteSparse:GraphBLAS** through python-graphblas: matvec, PageRank, BFS.

Every system gets the same float32 data, the same root (the vertex of largest
out-degree) and the same convergence rule (PageRank: damping 0.85, stop when
the L1 change is below 1e-6, at most 100 iterations, dangling mass spread
uniformly); every answer is checked against the float64 reference. Timing:
a warm-up, then the median of repeats, with device synchronisation (CUDA
events for CuPy, OpenCL events and a monotonic clock for FinePar).

The device's memory bandwidth is measured with a large device-to-device copy
(bytes read + written), and each SpMV is stated as a fraction of its
roofline: at least 8 bytes per nonzero (value + column index) and 12 bytes per
row (row pointer, x and y entries) must move.

    python benchmarks/peers.py --real soc-Slashdot0902.txt.gz,cnr-2000.mtx.gz \
        --scales 20,22,24 --md benchmarks/RESULTS.md --json peers.json
"""

from __future__ import annotations

import time

import numpy as np

from common import (Budget, device_line, fmt, graph_specs, load, log, render_only,
                    script_parser, today, write_json, write_section)

DAMPING, TOL, MAX_ITER = 0.85, 1e-6, 100


def median_time(fn, repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


# ------------------------------------------------------------------ peers: CuPy
def cupy_available():
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
        return cp
    except Exception as exc:  # noqa: BLE001 - any failure means: no CuPy peer
        log(f"skip: CuPy/cuSPARSE not usable ({type(exc).__name__}: {exc})")
        return None


def cupy_bandwidth(cp) -> float:
    """Bytes per second of a 2 GiB device-to-device copy (read + write counted)."""
    a = cp.ones(2 ** 29, dtype=cp.float32)
    b = cp.empty_like(a)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for i in range(12):
        start.record()
        cp.copyto(b, a)
        end.record()
        end.synchronize()
        if i >= 2:
            ts.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
    del a, b
    cp.get_default_memory_pool().free_all_blocks()
    return 2 * 2 ** 31 / float(np.median(ts))


def cupy_pagerank_f64(cp, g, tol=1e-12):
    """The float64 PageRank reference, computed with CuPy for graphs too large for scipy
    to iterate quickly (same definition as :func:`finepar.reference.pagerank`)."""
    import cupyx.scipy.sparse as csp
    gt = g.transpose()
    at = csp.csr_matrix((cp.ones(gt.nnz, dtype=cp.float64), cp.asarray(gt.indices),
                         cp.asarray(gt.indptr)), shape=g.shape)
    outdeg = cp.asarray(np.diff(g.indptr).astype(np.float64))
    inv = cp.where(outdeg > 0, 1.0 / cp.maximum(outdeg, 1), 0)
    dangling = outdeg == 0
    n = g.n
    x = cp.full(n, 1.0 / n)
    for _ in range(10000):
        xn = (1 - DAMPING) / n + DAMPING * (at @ (x * inv) + x[dangling].sum() / n)
        err = float(cp.abs(xn - x).sum())
        x = xn
        if err < tol:
            break
    out = cp.asnumpy(x)
    del at
    cp.get_default_memory_pool().free_all_blocks()
    return out


class CupyGraph:
    def __init__(self, cp, g):
        import cupyx.scipy.sparse as csp
        self.cp = cp
        self.A = csp.csr_matrix((cp.asarray(g.data), cp.asarray(g.indices),
                                 cp.asarray(g.indptr)), shape=g.shape)
        gt = g.transpose()
        self.AT = csp.csr_matrix((cp.ones(gt.nnz, dtype=cp.float32), cp.asarray(gt.indices),
                                  cp.asarray(gt.indptr)), shape=g.shape)
        outdeg = cp.asarray(np.diff(g.indptr).astype(np.float32))
        self.inv = cp.where(outdeg > 0, 1.0 / cp.maximum(outdeg, 1), 0).astype(cp.float32)
        self.dangling = outdeg == 0
        self.n = g.n

    def spmv_seconds(self, x, repeats=20):
        cp = self.cp
        xd = cp.asarray(x)
        y = self.A @ xd
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(repeats):
            y = self.A @ xd
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / 1e3 / repeats, cp.asnumpy(y)

    def pagerank(self):
        cp, n = self.cp, self.n
        x = cp.full(n, 1.0 / n, dtype=cp.float32)
        it = 0
        for it in range(1, MAX_ITER + 1):
            dang = x[self.dangling].sum()
            xn = (1 - DAMPING) / n + DAMPING * (self.AT @ (x * self.inv) + dang / n)
            diff = float(cp.abs(xn - x).sum())  # the same per-iteration convergence test
            x = xn.astype(cp.float32)
            if diff < TOL:
                break
        return cp.asnumpy(x), it

    def free(self):
        del self.A, self.AT
        self.cp.get_default_memory_pool().free_all_blocks()


# ----------------------------------------------------------------- peers: scipy
def scipy_runs(g, x, root, repeats):
    import scipy.sparse as sp
    from scipy.sparse import csgraph
    A = sp.csr_array((g.data, g.indices, g.indptr), shape=g.shape)
    pat = sp.csr_array((np.ones(g.nnz, dtype=np.float32), g.indices, g.indptr), shape=g.shape)
    AT = pat.T.tocsr()
    outdeg = np.diff(g.indptr).astype(np.float32)
    inv = np.where(outdeg > 0, 1.0 / np.maximum(outdeg, 1), 0).astype(np.float32)
    dangling = outdeg == 0
    n = g.n
    out = {}
    y = A @ x
    out["spmv"] = (median_time(lambda: A @ x, repeats), y)

    def pr():
        v = np.full(n, 1.0 / n, dtype=np.float32)
        it = 0
        for it in range(1, MAX_ITER + 1):
            vn = ((1 - DAMPING) / n + DAMPING * (AT @ (v * inv) + v[dangling].sum() / n)) \
                .astype(np.float32)
            diff = float(np.abs(vn - v).sum())
            v = vn
            if diff < TOL:
                break
        return v, it
    t0 = time.perf_counter()
    v, it = pr()
    out["pagerank"] = (time.perf_counter() - t0, v, it)

    def bfs():
        order, pred = csgraph.breadth_first_order(pat, root, directed=True,
                                                  return_predecessors=True)
        return order, pred
    t0 = time.perf_counter()
    order, pred = bfs()
    t_bfs = time.perf_counter() - t0
    level = np.full(n, -1, dtype=np.int64)
    level[root] = 0
    for v_ in order[1:]:
        level[v_] = level[pred[v_]] + 1
    out["bfs"] = (t_bfs, level)
    t0 = time.perf_counter()
    _, lab = csgraph.connected_components(pat, directed=True, connection="weak")
    out["cc"] = (time.perf_counter() - t0, lab)
    return out


# ------------------------------------------------------------- peers: GraphBLAS
def graphblas_available():
    try:
        import graphblas as gb
        gb.init("suitesparse", blocking=True)
        return gb
    except Exception as exc:  # noqa: BLE001
        log(f"skip: python-graphblas not usable ({type(exc).__name__}: {exc})")
        return None


def graphblas_runs(gb, g, x, root, repeats):
    n = g.n
    A = gb.Matrix.from_csr(g.indptr.astype(np.uint64), g.indices.astype(np.uint64),
                           g.data, nrows=n, ncols=n)
    xv = gb.Vector.from_dense(x)
    out = {}

    def mv():
        return A.mxv(xv, gb.semiring.plus_times).new()
    y = mv()
    out["spmv"] = (median_time(mv, repeats), y.to_dense(fill_value=0.0))
    P = gb.Matrix.from_csr(g.indptr.astype(np.uint64), g.indices.astype(np.uint64),
                           np.ones(g.nnz, dtype=np.float32), nrows=n, ncols=n)
    outdeg = np.diff(g.indptr).astype(np.float32)
    inv = gb.Vector.from_dense(np.where(outdeg > 0, 1.0 / np.maximum(outdeg, 1), 0)
                               .astype(np.float32))
    dmask = outdeg == 0

    def pr():
        v = gb.Vector.from_dense(np.full(n, 1.0 / n, dtype=np.float32))
        it = 0
        for it in range(1, MAX_ITER + 1):
            dense = v.to_dense(fill_value=0.0)
            dang = float(dense[dmask].sum())
            c = (v * inv).new()
            y = c.vxm(P, gb.semiring.plus_times).new(dtype=np.float32)  # y = P^T c
            yd = y.to_dense(fill_value=0.0)
            vn = ((1 - DAMPING) / n + DAMPING * (yd + dang / n)).astype(np.float32)
            diff = float(np.abs(vn - dense).sum())
            v = gb.Vector.from_dense(vn)
            if diff < TOL:
                break
        return v.to_dense(fill_value=0.0), it
    t0 = time.perf_counter()
    v, it = pr()
    out["pagerank"] = (time.perf_counter() - t0, v, it)

    def bfs():
        level = gb.Vector(np.int64, n)
        frontier = gb.Vector(bool, n)
        frontier[root] = True
        d = 0
        while frontier.nvals:
            level(mask=frontier.S) << d
            d += 1
            frontier(~level.S, replace=True) << frontier.vxm(P, gb.semiring.any_pair[bool])
        return level
    t0 = time.perf_counter()
    lv = bfs()
    out["bfs"] = (time.perf_counter() - t0, lv.to_dense(fill_value=-1))
    return out


# ------------------------------------------------------------------- FinePar
def finepar_runs(g, pair, x, root, repeats, model):
    from finepar.api import Workload
    out = {}
    params = {"spmv": {"x": x, "repeat": 20}, "pagerank": {"damping": DAMPING, "tol": TOL,
                                                           "max_iter": MAX_ITER},
              "bfs": {"root": root}, "cc": {}}
    for app in ("spmv", "pagerank", "bfs", "cc"):
        wl = Workload(app, g)
        for label, kw in (("tuned", {"grouping": "pow4", "model": model}),
                          ("gpu-only", {"devices": "gpu", "grouping": "pow4"})):
            ts, res, rep = [], None, None
            for i in range(repeats):
                res, rep = wl.run(pair=pair, warmup=(i == 0), **kw, **params[app])
                ts.append(rep.timings["run"] / (res.iterations if app == "spmv" else 1))
            out[(app, label)] = (float(np.median(ts)), res, rep)
    return out


def check(app, g, values, refs) -> bool:
    """Whether one system's answer equals the reference (same rules as ``finepar compare``)."""
    if app == "spmv":
        exp, bound = refs["spmv"]
        return bool(np.all(np.abs(np.asarray(values, dtype=np.float64) - exp) <= bound))
    if app == "pagerank":
        return float(np.abs(np.asarray(values, dtype=np.float64) - refs["pagerank"]).sum()) < 1e-4
    if app == "bfs":
        return np.array_equal(np.asarray(values, dtype=np.int64), refs["bfs"])
    labels = np.asarray(values)
    ref = refs["cc"]
    # the same partition: relabel each component by the reference label of its first vertex
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return np.array_equal(ref[first][inverse], ref) and len(first) == len(np.unique(ref))


def main() -> int:
    p = script_parser(__doc__, "peers")
    p.add_argument("--real", default="soc-Slashdot0902.txt.gz,cnr-2000.mtx.gz")
    p.add_argument("--scales", default="20,22")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--scipy-max-nnz", type=float, default=2e8,
                   help="skip the (single-threaded) scipy peer above this many nonzeros")
    p.add_argument("--title", default="FinePar against cuSPARSE, scipy and GraphBLAS (roofline)",
                   help="heading of the RESULTS.md section")
    args = p.parse_args()
    if args.render:
        return render_only(args, render, ("repeats",))
    from finepar import reference
    from finepar.api import make_pair
    pair = make_pair(memory=args.memory)
    log(device_line(pair))
    cp = cupy_available()
    gb = graphblas_available()
    bw = cupy_bandwidth(cp) if cp is not None else None
    if bw:
        log(f"device memory bandwidth (2 GiB device copy, read + write): {bw / 1e9:.0f} GB/s")
    budget = Budget(args.budget_s)
    rows = []
    for spec in graph_specs(args.real, args.scales):
        if budget.spent():
            log(f"budget spent; skipping {spec} and after")
            break
        g, _ = load(spec)
        root = int(np.argmax(np.diff(g.indptr)))
        x = np.random.default_rng(0).uniform(-1, 1, g.n).astype(np.float32)
        big = cp is not None and g.nnz > 5e7
        refs = {"spmv": (reference.spmv(g, x), reference.spmv_error_bound(g, x)),
                "pagerank": cupy_pagerank_f64(cp, g) if big else reference.pagerank(g),
                "bfs": reference.bfs_levels_fast(g, root), "cc": reference.components(g)}
        res = {}
        t0 = time.perf_counter()
        fp = finepar_runs(g, pair, x, root, args.repeats, args.model)
        for (app, label), (sec, r, rep) in fp.items():
            res[(app, f"finepar {label}")] = (sec, check(app, g, r.values, refs))
        if cp is not None:
            try:
                cg = CupyGraph(cp, g)
                sec, y = cg.spmv_seconds(x)
                secs = [cg.spmv_seconds(x)[0] for _ in range(args.repeats)]
                res[("spmv", "cusparse")] = (float(np.median(secs)), check("spmv", g, y, refs))
                cg.pagerank()
                ts = []
                for _ in range(args.repeats):
                    t1 = time.perf_counter()
                    v, it = cg.pagerank()
                    ts.append(time.perf_counter() - t1)
                res[("pagerank", "cusparse")] = (float(np.median(ts)),
                                                 check("pagerank", g, v, refs))
                cg.free()
            except Exception as exc:  # noqa: BLE001 - a peer failing is reported, not fatal
                log(f"cusparse peer failed on {g.name}: {type(exc).__name__}: {exc}")
        if g.nnz <= args.scipy_max_nnz:
            s = scipy_runs(g, x, root, args.repeats)
            res[("spmv", "scipy")] = (s["spmv"][0], check("spmv", g, s["spmv"][1], refs))
            res[("pagerank", "scipy")] = (s["pagerank"][0], check("pagerank", g, s["pagerank"][1],
                                                                  refs))
            res[("bfs", "scipy")] = (s["bfs"][0], check("bfs", g, s["bfs"][1], refs))
            res[("cc", "scipy")] = (s["cc"][0], check("cc", g, s["cc"][1], refs))
        else:
            log(f"skip scipy on {g.name}: {g.nnz:,} nnz > --scipy-max-nnz")
        if gb is not None:
            try:
                s = graphblas_runs(gb, g, x, root, args.repeats)
                for app in ("spmv", "pagerank", "bfs"):
                    res[(app, "graphblas")] = (s[app][0], check(app, g, s[app][-2] if app ==
                                                                "pagerank" else s[app][1], refs))
            except Exception as exc:  # noqa: BLE001
                log(f"graphblas peer failed on {g.name}: {type(exc).__name__}: {exc}")
        roof = (8 * g.nnz + 12 * g.n) / bw if bw else None
        row = {"graph": g.name, "n": g.n, "nnz": g.nnz, "bandwidth": bw,
               "spmv_roofline_s": roof,
               "results": {f"{a}|{s_}": {"seconds": v[0], "correct": v[1]}
                           for (a, s_), v in res.items()}}
        rows.append(row)
        log(f"{g.name}: " + "; ".join(f"{a} {s_} {v[0] * 1e3:.3f} ms{'' if v[1] else ' WRONG'}"
                                      for (a, s_), v in sorted(res.items()))
            + f" ({time.perf_counter() - t0:.0f} s)")
        if args.json:
            write_json(args.json, {"device": device_line(pair), "date": today(),
                                   "repeats": args.repeats, "rows": rows})
        if args.md:
            write_section(args.md, args.section, render(rows, pair, args))
    return 0


def render(rows, pair, args, date=None) -> str:
    peers = ("cusparse", "scipy", "graphblas")
    device = pair if isinstance(pair, str) else device_line(pair)
    lines = [f"## {args.title}", "",
             f"Device: {device}. Date: {date or today()}. `benchmarks/peers.py`, one run. "
             f"Times: SpMV per product (20 products), PageRank to convergence (L1 change < "
             f"{TOL:g}, damping {DAMPING}), BFS from the vertex of largest out-degree, CC "
             f"(weak components); median of {args.repeats}. `tuned`: FinePar's default "
             f"(tuned split and grouping); `gpu-only`: FinePar's kernels on the GPU "
             f"alone. A ratio below 1 means FinePar is faster. WRONG: the answer failed the "
             f"check, so the time is not used.", ""]
    if rows and rows[0].get("bandwidth"):
        lines.append(f"Measured device memory bandwidth: {rows[0]['bandwidth'] / 1e9:.0f} GB/s "
                     f"(2 GiB device copy, read + write). Roofline of SpMV: "
                     f"(8 nnz + 12 n) bytes / bandwidth.")
        lines.append("")
    lines += ["| graph | app | FinePar tuned ms | FinePar gpu-only ms | " +
              " | ".join(f"{p} ms" for p in peers) + " | best FinePar / " +
              " / ".join(peers) + " | SpMV roofline |",
              "|---|---|---|---|" + "---|" * len(peers) + "---|---|"]
    for r in rows:
        res = r["results"]
        for app in ("spmv", "pagerank", "bfs", "cc"):
            def cell(sys_):
                v = res.get(f"{app}|{sys_}")
                if v is None:
                    return "-"
                return f"{v['seconds'] * 1e3:.3f}" + ("" if v["correct"] else " WRONG")
            fps = [res.get(f"{app}|finepar {k}") for k in ("tuned", "gpu-only")]
            fps = [v for v in fps if v and v["correct"]]
            best = min((v["seconds"] for v in fps), default=None)
            ratios = []
            for p_ in peers:
                v = res.get(f"{app}|{p_}")
                ratios.append(fmt(best / v["seconds"]) if best and v and v["correct"] else "-")
            roof = ""
            if app == "spmv" and r.get("spmv_roofline_s") and best:
                roof = f"{100 * r['spmv_roofline_s'] / best:.1f}%"
            lines.append(f"| {r['graph']} | {app} | {cell('finepar tuned')} | "
                         f"{cell('finepar gpu-only')} | " + " | ".join(cell(p_) for p_ in peers)
                         + " | " + " / ".join(ratios) + f" | {roof} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
