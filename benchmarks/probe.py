"""A quick look at one machine: every app checked on a small Graph500 graph in each lowering,
throttled and streamed, then, on larger graphs, FinePar's variants on the GPU alone beside
cuSPARSE and a CuPy PageRank.

Meant for a call on a lent GPU machine after the kernels change: it finds compile errors and
wrong answers on the real driver, and says where the time goes. It writes JSON as it goes
(``--json``), so a run cut off by its time limit keeps what it finished.

    python benchmarks/probe.py --check-scale 16 --time-scales 22,24 --json $OUT/probe.json
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from common import load, log, write_json

CHECKS = (("pow4", {"grouping": "pow4"}), ("adaptive", {"grouping": "adaptive"}),
          ("ell", {"grouping": "ell"}),
          ("cf+degree", {"grouping": "adaptive", "schedule": "cf", "remap": "degree",
                         "cache_bytes": 1 << 20}),
          ("sj-q", {"grouping": "adaptive", "schedule": "sj-q", "cache_bytes": 1 << 20}))


def check_all(pair, g, out: dict) -> None:
    """Every registered app in each lowering, on the GPU alone and split, plus streamed."""
    from finepar import api, apps
    from finepar.engine import EngineOptions
    for name in apps.names():
        app = apps.get(name)
        params = app.reference_params(g, app.check_params(g, {}))
        ref = app.reference(g, params)
        cases = [(label, {**kw, **where}) for label, kw in CHECKS
                 for where in ({"devices": "gpu"}, {"threshold": 64})]
        share = 4 * g.nnz // 10
        cases.append(("streamed", {"devices": "gpu", "grouping": "adaptive",
                                   "options": EngineOptions(chunk_bytes=share,
                                                            gpu_memory=6 * share)}))
        for label, kw in cases:
            t0 = time.perf_counter()
            try:
                res, rep = api.run(name, g, pair=pair, warmup=False, **kw, **params)
                problem = app.check(g, res, ref, params)
            except Exception as exc:  # noqa: BLE001 - a probe records every failure
                problem = f"{type(exc).__name__}: {str(exc)[:300]}"
            key = f"{name} {label} {'gpu' if 'devices' in kw else 'split'}"
            out["check"][key] = problem or "ok"
            log(f"check {key}: {problem or 'ok'} ({time.perf_counter() - t0:.1f} s)")


def timed(fn, repeats: int) -> list:
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


def finepar_times(pair, g, out: dict, repeats: int, tag: str) -> None:
    """Each app on the GPU alone in its variants: run time, kernel time, host time."""
    from dataclasses import replace
    from finepar import api
    from finepar.engine import EngineOptions
    from finepar.throttle.plan import ThrottleOptions
    variants = {
        "spmv": [("adaptive", {"grouping": "adaptive"}), ("pow4", {"grouping": "pow4"}),
                 ("adaptive+degree", {"grouping": "adaptive",
                                      "throttle": ThrottleOptions(schedule="none",
                                                                  remap="degree")}),
                 ("cf+degree", {"grouping": "adaptive",
                                "throttle": ThrottleOptions(schedule="cf", remap="degree")}),
                 ("sj", {"grouping": "adaptive", "throttle": ThrottleOptions(schedule="sj")}),
                 ("streamed", {"grouping": "adaptive",
                               "options": EngineOptions(gpu_memory=g.nnz * 8 // 3)})],
        "pagerank": [("adaptive", {"grouping": "adaptive"}),
                     ("adaptive+degree", {"grouping": "adaptive",
                                          "throttle": ThrottleOptions(schedule="none",
                                                                      remap="degree")})],
        "bfs": [("adaptive", {"grouping": "adaptive"}), ("pow4", {"grouping": "pow4"})],
        "cc": [("adaptive", {"grouping": "adaptive"})],
    }
    for name, vs in variants.items():
        wl = api.Workload(name, g)
        params = {"repeat": 20} if name == "spmv" else {}
        for label, kw in vs:
            kw = dict(kw)
            throttle = kw.pop("throttle", ThrottleOptions(schedule="none"))
            try:
                plan, _, _ = wl.choose_plan(pair, threshold=None, devices="gpu",
                                            grouping=kw.pop("grouping"), model=None, step=64,
                                            calibrate=False)
                on, plan, perm, secs = wl.throttled(pair, plan, throttle)
                # the kernels' times are read: the profiling queues, whatever else is asked
                eng = on.engine(pair, plan, replace(kw.get("options") or EngineOptions(),
                                                    profile="batch"))
                run_params = wl.app.permute_params(params, perm) if perm is not None else params
                results = []

                def once():
                    eng.reset_records()
                    results.append(wl.app.run(eng, on.graph, **run_params))
                ts = timed(once, repeats)
                res = results[-1]
                summ = eng.summary()
                kern = summ["kernel_s"]["gpu"]
                rec = {"seconds": ts, "iterations": res.iterations, "kernel_s": kern,
                       "steps": summ["steps"], "launches": summ["launches"]["gpu"],
                       "work_edges": res.work_edges, "remap_s": secs,
                       "host_per_iteration_s": (float(np.median(ts)) - kern)
                       / max(res.iterations, 1),
                       "streaming": summ.get("streaming"),
                       "partition_s": plan.throttle.seconds if plan.throttle else 0.0,
                       "sj": summ.get("sj")}
                if name == "bfs":
                    rec["gteps"] = res.work_edges / float(np.median(ts)) / 1e9
            except Exception as exc:  # noqa: BLE001
                rec = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
            out["gpu"][f"{tag} {name} {label}"] = rec
            if "error" in rec:
                log(f"{tag} {name} {label}: {rec['error']}")
            else:
                log(f"{tag} {name} {label}: median {np.median(ts) * 1e3:.2f} ms, "
                    f"{res.iterations} it, kernels {kern * 1e3:.2f} ms, host/it "
                    f"{rec['host_per_iteration_s'] * 1e6:.0f} us"
                    + (f", {rec['gteps']:.2f} GTEPS" if "gteps" in rec else "")
                    + (f", stream {rec['streaming']['gpu']['bandwidth'] / 1e9:.1f} GB/s "
                       f"overlap {rec['streaming']['gpu']['overlap']:.2f}"
                       if rec.get("streaming") else ""))


def cupy_times(g, out: dict, tag: str) -> None:
    try:
        import cupy as cp
        import cupyx.scipy.sparse as csp
    except Exception as exc:  # noqa: BLE001
        out["cupy"][tag] = f"unavailable: {exc}"
        return
    A = csp.csr_matrix((cp.asarray(g.data), cp.asarray(g.indices), cp.asarray(g.indptr)),
                       shape=g.shape)
    x = cp.asarray(np.random.default_rng(0).uniform(-1, 1, g.n).astype(np.float32))
    s, e = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(3):
        A @ x
    s.record()
    for _ in range(20):
        A @ x
    e.record()
    e.synchronize()
    spmv = cp.cuda.get_elapsed_time(s, e) / 1e3 / 20
    gt = g.transpose()
    AT = csp.csr_matrix((cp.ones(gt.nnz, dtype=cp.float32), cp.asarray(gt.indices),
                         cp.asarray(gt.indptr)), shape=g.shape)
    outdeg = cp.asarray(np.diff(g.indptr).astype(np.float32))
    inv = cp.where(outdeg > 0, 1.0 / cp.maximum(outdeg, 1), 0).astype(cp.float32)
    dang = outdeg == 0

    def pagerank():
        v = cp.full(g.n, 1.0 / g.n, dtype=cp.float32)
        for it in range(1, 101):
            vn = (0.15 / g.n + 0.85 * (AT @ (v * inv) + v[dang].sum() / g.n)).astype(cp.float32)
            diff = float(cp.abs(vn - v).sum())
            v = vn
            if diff < 1e-6:
                return it
        return 100
    iters = pagerank()
    ts = timed(pagerank, 3)
    out["cupy"][tag] = {"spmv_s": spmv, "pagerank_s": ts, "pagerank_iterations": iters}
    log(f"{tag} cusparse spmv {spmv * 1e3:.3f} ms; cupy pagerank median "
        f"{np.median(ts) * 1e3:.2f} ms ({iters} it)")
    del A, AT
    cp.get_default_memory_pool().free_all_blocks()


def copy_bandwidth(pair, out: dict) -> None:
    """Host-to-device bytes/s of 512 MiB of mapped pinned host memory copied to the GPU (the
    path a streamed chunk takes: finepar.device.transfer.PinnedHost)."""
    from finepar.device import PinnedHost
    from finepar.device import alloc, cl
    mod = cl()
    side = pair.gpu
    n = 1 << 29
    src = PinnedHost(side, np.zeros(n // 4, dtype=np.float32))
    dev = alloc(side, nbytes=n)
    ts = []
    for _ in range(4):
        ev = mod.enqueue_copy(side.queue, dev, src.host, is_blocking=False)
        ev.wait()
        ts.append((ev.profile.end - ev.profile.start) * 1e-9)
    out["h2d_bytes_per_s"] = n / min(ts[1:])
    log(f"pinned host-to-device copy: {out['h2d_bytes_per_s'] / 1e9:.1f} GB/s")


def read_bandwidth(pair, out: dict) -> None:
    """Device-to-host bytes/s of reading a result back: one plain read into pageable memory,
    a read through :func:`finepar.device.transfer.read_staged`, and a read into page-locked
    memory alone; each into a fresh array (as a result is: its pages are first touched by
    the copy) and into one already touched. Median of 5."""
    from finepar.device import PinnedHost, read_staged
    from finepar.device import alloc, cl
    mod, side = cl(), pair.gpu
    res = out.setdefault("d2h_bytes_per_s", {})
    for mib in (64, 256):
        n = mib << 20
        dev = alloc(side, np.arange(n // 4, dtype=np.int32))
        pinned = PinnedHost(side, np.zeros(0, np.uint8), size=n)
        touched = np.ones(n // 4, np.int32)
        ways = {"plain, fresh": lambda: mod.enqueue_copy(side.queue, np.empty(n // 4, np.int32),
                                                         dev, is_blocking=True),
                "plain, touched": lambda: mod.enqueue_copy(side.queue, touched, dev,
                                                           is_blocking=True),
                "staged, fresh": lambda: read_staged(side, np.empty(n // 4, np.int32), dev),
                "staged, touched": lambda: read_staged(side, touched, dev),
                "page-locked": lambda: mod.enqueue_copy(side.queue, pinned.host, dev,
                                                        is_blocking=True),
                "fresh array, first touch": lambda: np.empty(n // 4, np.int32).fill(1)}
        for name, fn in ways.items():
            fn()
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            res[f"{mib} MiB {name}"] = n / float(np.median(ts))
            log(f"d2h {mib} MiB {name}: {res[f'{mib} MiB {name}'] / 1e9:.2f} GB/s")
        dev.release()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check-scale", type=int, default=16)
    ap.add_argument("--time-scales", default="22")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default="probe.json")
    args = ap.parse_args()
    from finepar.api import make_pair
    from finepar.device import host_memory_limit
    pair = make_pair()
    out = {"devices": pair.describe(), "check": {}, "gpu": {}, "cupy": {},
           "host_memory_limit": host_memory_limit()}
    for path in ("/sys/fs/cgroup/memory.max", "/proc/meminfo"):
        try:
            out[path] = open(path).read()[:400]
        except OSError as exc:
            out[path] = str(exc)
    log(pair.describe())
    copy_bandwidth(pair, out)
    read_bandwidth(pair, out)
    write_json(args.json, out)
    if args.check_scale:
        g, _ = load(f"graph500:{args.check_scale}")
        check_all(pair, g, out)
        write_json(args.json, out)
    for scale in [int(s) for s in args.time_scales.split(",") if s]:
        g, secs = load(f"graph500:{scale}")
        tag = f"s{scale}"
        out[f"{tag} graph"] = {"n": g.n, "nnz": g.nnz, "generate_s": secs}
        log(f"{tag}: {g.nnz:,} nnz generated in {secs:.1f} s")
        cupy_times(g, out, tag)
        write_json(args.json, out)
        finepar_times(pair, g, out, args.repeats, tag)
        write_json(args.json, out)
    print(json.dumps({k: v for k, v in out["check"].items() if v != "ok"}, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("FINEPAR_NO_CALIBRATE", "1")
    main()
