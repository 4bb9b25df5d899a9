"""Where a walked run's time goes: each phase of a BFS or SSSP run whose frontiers run on the
CPU's walk (``finepar/engine/walk.py``), beside the cost of one OpenCL command on each device.

For each app and device choice: the run's time (the report's ``run``), the walk's kernel
time, and the wall time of the start (fills and writes), the walk's launch and read, the
trace, and the rest; then a cProfile of one run (the 25 costliest calls). The command costs:
an empty kernel with a blocking read, a fill and a 4-byte blocking write, on each side.

    python benchmarks/probe_walk.py --graph .data/luxembourg.mtx --json probe_walk.json
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import time

import numpy as np


def command_costs(pair) -> dict:
    """Least seconds of one OpenCL command (and its wait) on each side, of 20."""
    import pyopencl as cl
    out = {}
    for role in ("cpu", "gpu"):
        side = pair.side(role)
        buf = cl.Buffer(side.context, cl.mem_flags.READ_WRITE, 4 << 20)
        host = np.zeros(1, np.int32)
        k = pair.kernel(side, ("skeleton/vector.cl",), {"T": "int"}, "iota")
        cases = {"kernel+read": lambda: (k(side.queue, (64,), None, np.int32(1), buf),
                                         cl.enqueue_copy(side.queue, host, buf)),
                 "fill 4 MiB+finish": lambda: (cl.enqueue_fill_buffer(
                     side.queue, buf, np.zeros(1, np.int32), 0, 4 << 20), side.queue.finish()),
                 "write 4 B": lambda: cl.enqueue_copy(side.queue, buf, host, is_blocking=True)}
        for name, fn in cases.items():
            best = float("inf")
            for _ in range(20):
                t0 = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t0)
            out[f"{role} {name}"] = best
    return out


def phases(app: str, wl, pair, devices: str, repeats: int) -> dict:
    """Per-phase wall time of ``repeats`` runs (the least of each)."""
    import finepar
    from finepar.apps import get
    from finepar.engine import EngineOptions
    from finepar.engine import walk as walk_mod
    from finepar.engine import frontier
    timed = {}
    cls = type(get(app))
    targets = [(cls, "start"), (frontier.FrontierApp, "_record"),
               (walk_mod.SerialWalk, "run")]
    try:
        from finepar.engine.heapwalk import HeapWalk
        targets.append((HeapWalk, "run"))
    except ImportError:
        pass
    originals = []
    for owner, name in targets:
        orig = owner.__dict__.get(name)
        if orig is None:
            continue
        key = f"{owner.__name__}.{name}"

        def wrapped(*a, _orig=orig, _key=key, **k):
            t0 = time.perf_counter()
            try:
                return _orig(*a, **k)
            finally:
                timed[_key] = timed.get(_key, 0.0) + time.perf_counter() - t0
        originals.append((owner, name, orig))
        setattr(owner, name, wrapped)
    best: dict = {}
    try:
        timed_queues = EngineOptions(profile="batch")  # the kernels' times are read
        finepar.run(app, wl, pair=pair, devices=devices, warmup=True, options=timed_queues)
        for _ in range(repeats):
            timed.clear()
            _, rep = finepar.run(app, wl, pair=pair, devices=devices, warmup=False,
                                 options=timed_queues)
            row = {"run": rep.timings["run"], **{k: v for k, v in timed.items()},
                   "kernel_cpu": rep.timings["kernel"].get("cpu", 0.0),
                   "kernel_gpu": rep.timings["kernel"].get("gpu", 0.0),
                   "host_syncs": rep.timings["host_syncs"]}
            for k, v in row.items():
                best[k] = min(best.get(k, float("inf")), v)
        prof = cProfile.Profile()
        prof.enable()
        finepar.run(app, wl, pair=pair, devices=devices, warmup=False, options=timed_queues)
        prof.disable()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
        best["profile"] = s.getvalue()
    finally:
        for owner, name, orig in originals:
            setattr(owner, name, orig)
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", default=".data/luxembourg.mtx")
    p.add_argument("--apps", default="bfs,sssp")
    p.add_argument("--devices", default="auto,cpu")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    from finepar.api import Workload, make_pair
    from finepar.io import load
    pair = make_pair()
    g = load(args.graph)
    doc = {"graph": args.graph, "commands": command_costs(pair), "runs": {}}
    print(json.dumps({k: f"{1e6 * v:.0f} us" for k, v in doc["commands"].items()}))
    for app in args.apps.split(","):
        wl = Workload(app, g)
        for dev in args.devices.split(","):
            row = phases(app, wl, pair, dev, args.repeats)
            doc["runs"][f"{app} {dev}"] = row
            print(app, dev, {k: (f"{1e3 * v:.3f} ms" if isinstance(v, float) else v)
                             for k, v in row.items() if k != "profile"})
            print(row["profile"][:3500])
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
