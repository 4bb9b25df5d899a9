"""What one kernel launch costs the host: pyopencl's enqueue on each device, bare and as
FinePar's row operation makes it (issue 29: SpMV's products on small graphs, where the host's
enqueues, not the device, set the pace).

Part one times ``--launches`` enqueues of a one-argument kernel on each device's queue, in a
row, then one wait: on the pair's own (profiling) queue and on a plain one, with and without
a flush after each, and the same launch with 22 arguments of which one is set before each
enqueue (as a row operation's step sets ``x`` and ``y``). Part two runs ``spmv`` with
``--repeat`` products on each input (``--devices``, ``--grouping``): the run's time a product,
and cProfile's busiest functions over one run. JSON is written as it goes.

    python benchmarks/probe_enqueue.py --graphs USPowerGrid.mtx,graph500:18 --json $OUT/enq.json
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time

import numpy as np

from common import input_list, load, log, main_of, today, write_json

#: 22 parameters: the output, 17 pointers and 4 ints.
PARAMS = ("__global float *y, "
          + "".join(f"__global const float *a{i}, " for i in range(1, 18))
          + "int i1, int i2, int i3, int i4")
SRC = f"""
__kernel void one(__global float *y) {{ if (get_global_id(0) == 0) y[0] += 1.0f; }}
__kernel void many({PARAMS})
{{ if (get_global_id(0) == 0) y[0] += a1[0] + (float)(i1 + i2 + i3 + i4); }}
__kernel void unused({PARAMS})
{{ if (get_global_id(0) == 0) y[0] += (float)(i1 + i2 + i3 + i4); }}
"""


def parse_args(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", default="USPowerGrid.mtx,graph500:18",
                    help="inputs of part two, a comma list (files in the data folder or "
                         "graph500:SCALE); none: part one only")
    ap.add_argument("--launches", type=int, default=2000, help="enqueues a case (2000)")
    ap.add_argument("--repeat", type=int, default=1000, help="SpMV products a run (1000)")
    ap.add_argument("--devices", default="gpu", choices=("auto", "cpu", "gpu"))
    ap.add_argument("--grouping", default="auto",
                    choices=("auto", "none", "pow4", "adaptive", "ell"))
    ap.add_argument("--no-bare", action="store_true", help="part two only")
    ap.add_argument("--json", default="probe_enqueue.json")
    args = ap.parse_args(argv)
    from finepar.errors import UsageError
    if args.launches < 1 or args.repeat < 1:
        raise UsageError("--launches and --repeat must be at least 1")
    return args


def bare_cases(side, launches: int) -> dict:
    """Host microseconds an enqueue (median of 3 rounds of ``launches``) and the wait."""
    import pyopencl as cl
    prg = cl.Program(side.context, SRC).build()
    y = cl.Buffer(side.context, cl.mem_flags.READ_WRITE, 64)
    plain = cl.CommandQueue(side.context, side.queue.device)
    out = {}
    for qname, q in (("profiling", side.queue), ("plain", plain)):
        one = cl.Kernel(prg, "one")
        one.set_arg(0, y)
        many = cl.Kernel(prg, "many")
        many.set_args(y, *([y] * 17), *(np.int32(i) for i in range(4)))
        unused = cl.Kernel(prg, "unused")  # its 17 pointers never read: given NULL
        unused.set_args(y, *([None] * 17), *(np.int32(i) for i in range(4)))
        for case, knl, per in (("one arg", one, None), ("22 args, none set", many, None),
                               ("22 args, 17 of them NULL, none set", unused, None),
                               ("22 args, 1 set each", many, y)):
            for flush in (False, True):
                rounds, waits = [], []
                for _ in range(3):
                    q.finish()
                    t0 = time.perf_counter()
                    for _ in range(launches):
                        if per is not None:
                            knl.set_arg(0, per)
                        cl.enqueue_nd_range_kernel(q, knl, (64,), (64,))
                        if flush:
                            q.flush()
                    t1 = time.perf_counter()
                    q.finish()
                    rounds.append(1e6 * (t1 - t0) / launches)
                    waits.append(1e6 * (time.perf_counter() - t1) / launches)
                key = f"{qname} queue, {case}{', flush each' if flush else ''}"
                out[key] = {"enqueue_us": float(np.median(rounds)), "rounds": rounds,
                            "then_wait_us_per_launch": float(np.median(waits))}
                log(f"  {side.role} {key}: {out[key]['enqueue_us']:.1f} us an enqueue, "
                    f"{out[key]['then_wait_us_per_launch']:.1f} us a launch waiting after")
    out["set_arg"] = set_arg_cases(prg, y, side.context, launches)
    return out


def set_arg_cases(prg, y, context, calls: int) -> dict:
    """Host microseconds a ``set_arg`` (median of 3 rounds of ``calls``), no enqueue: a
    buffer argument given two buffers in turn (a double-buffered loop's swap), and an int
    argument given a new value each call (a step's slot), by pyopencl's ``Kernel.set_arg``
    and by FinePar's :func:`finepar.engine.binding.set_arg` (a scalar's bytes given
    directly)."""
    import pyopencl as cl
    from finepar.engine import binding
    many = cl.Kernel(prg, "many")
    many.set_args(y, *([y] * 17), *(np.int32(i) for i in range(4)))
    z = cl.Buffer(context, cl.mem_flags.READ_WRITE, 64)
    ints = [np.int32(i) for i in range(calls)]
    out = {}
    for case, index, values, how in (
            ("buffer, two in turn", 1, [y, z] * (calls // 2), many.set_arg),
            ("int, a new value each", 18, ints, many.set_arg),
            ("int, a new value each, FinePar's set_arg", 18, ints,
             lambda i, v: binding.set_arg(many, i, v))):
        rounds = []
        for _ in range(3):
            t0 = time.perf_counter()
            for v in values:
                how(index, v)
            rounds.append(1e6 * (time.perf_counter() - t0) / len(values))
        out[case] = {"set_arg_us": float(np.median(rounds)), "rounds": rounds}
        log(f"  set_arg of a {case}: {out[case]['set_arg_us']:.2f} us")
    return out


def spmv_case(spec: str, args) -> dict:
    """SpMV's run time a product on one input, and a profile of one run."""
    from finepar.api import Workload
    g, load_s = load(spec)
    wl = Workload("spmv", g)
    kw = {"devices": args.devices, "repeat": args.repeat}
    if args.grouping != "auto":
        kw["grouping"] = args.grouping
    wl.run(**kw)
    time.sleep(1.0)  # the engine's own build threads done
    per = []
    for _ in range(3):
        _, rep = wl.run(**kw)
        per.append(1e6 * rep.to_dict()["timings"]["run"] / args.repeat)
    d = rep.to_dict()
    prof = cProfile.Profile()
    prof.enable()
    _, rep = wl.run(**kw)
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(20)
    rec = {"graph": spec, "n": int(g.n), "nnz": int(g.nnz), "us_per_product": per,
           "profiled_us_per_product": 1e6 * rep.to_dict()["timings"]["run"] / args.repeat,
           "plan": d["plan"].get("label"), "kernel_s": d["timings"].get("kernel"),
           "profile": text.getvalue()}
    log(f"  spmv {spec}: {', '.join(f'{v:.1f}' for v in per)} us a product "
        f"({rec['plan']}); profiled {rec['profiled_us_per_product']:.1f}")
    return rec


def main(argv=None) -> int:
    args = parse_args(argv)
    from finepar.api import make_pair
    pair = make_pair()
    out = {"script": "benchmarks/probe_enqueue.py", "date": today(),
           "device": pair.describe(), "args": vars(args), "bare": {}, "spmv": []}
    log(out["device"])
    for role in () if args.no_bare else ("gpu", "cpu"):
        out["bare"][role] = bare_cases(pair.side(role), args.launches)
        write_json(args.json, out)
    for spec in input_list(args.graphs):
        out["spmv"].append(spmv_case(spec, args))
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
