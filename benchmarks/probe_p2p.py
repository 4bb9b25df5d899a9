"""Whether two GPUs of one OpenCL context copy to each other faster than through the host
(issue 32: on the two- and four-GPU machines every exchange between ranks goes device ->
host -> host -> device, and is most of a distributed PageRank's or BFS's time).

One context holding the first two GPUs of one platform, a queue on each. For each size
(default 4 and 54 MB) and ``--repeats`` times, the buffer ``a`` is rewritten by a kernel on
GPU 0 (so GPU 0 holds its only current copy), then moved to GPU 1 three ways, each timed
on the host and checked word by word:

* ``copy``: ``clEnqueueCopyBuffer`` on GPU 1's queue from ``a`` into ``b``;
* ``kernel``: a kernel on GPU 1 that reads ``a`` (the runtime migrates it);
* ``host``: ``a`` read on GPU 0 into pinned memory, written into ``b`` on GPU 1 (what
  ``finepar.mpi`` does today, without MPI between).

GB/s, min / median / max. Where the platform has one GPU, both queues go to it (the code
path runs; the rates say nothing about a second device). JSON is written as it goes.

    python benchmarks/probe_p2p.py --json $OUT/probe_p2p.json
"""

from __future__ import annotations

import time

import numpy as np

from common import log, main_of, rate_stats, today, transfer_probe_args, write_json

KERNEL = """
__kernel void touch(__global uint *a, const uint v) {
    const size_t i = get_global_id(0);
    a[i] = v + (uint)i;
}
__kernel void pull(__global const uint *a, __global uint *b) {
    const size_t i = get_global_id(0);
    b[i] = a[i];
}
"""
WAYS = ("copy", "kernel", "host")


def parse_args(argv=None):
    return transfer_probe_args(__doc__, "probe_p2p", 8, argv)


def two_devices():
    """The first platform's first two GPUs (else its only device, twice), and a line
    naming them."""
    from finepar.device import cl
    from finepar.device.discovery import _cl_device, list_devices
    infos = list_devices()
    gpus = [d for d in infos if d.kind == "gpu"]
    same = [d for d in gpus if d.platform_index == gpus[0].platform_index] if gpus else []
    if len(same) >= 2:
        devs = [_cl_device(same[0]), _cl_device(same[1])]
        return cl(), devs, f"{same[0].name} and {same[1].name} ({same[0].platform})"
    one = _cl_device((same or infos)[0])
    return cl(), [one], f"{one.name}, one device: both queues on it"


def move(mod, ctx, queues, way: str, a, b, pinned: np.ndarray, prg, words: int) -> float:
    """Move ``a`` (current on queue 0's device) into ``b`` on queue 1's; seconds."""
    t0 = time.perf_counter()
    if way == "copy":
        mod.enqueue_copy(queues[1], b, a).wait()
    elif way == "kernel":
        prg["pull"](queues[1], (words,), None, a, b).wait()
    else:
        mod.enqueue_copy(queues[0], pinned, a, is_blocking=True)
        mod.enqueue_copy(queues[1], b, pinned, is_blocking=True)
    return time.perf_counter() - t0


def case(mod, ctx, queues, prg, nbytes: int, repeats: int) -> dict:
    words = nbytes // 4
    mf = mod.mem_flags
    a = mod.Buffer(ctx, mf.READ_WRITE, size=4 * words)
    b = mod.Buffer(ctx, mf.READ_WRITE, size=4 * words)
    pin = mod.Buffer(ctx, mf.READ_WRITE | mf.ALLOC_HOST_PTR, size=4 * words)
    pinned, _ = mod.enqueue_map_buffer(queues[0], pin, mod.map_flags.WRITE, 0, (words,),
                                       np.uint32, is_blocking=True)
    out, check = {}, np.empty(words, np.uint32)
    for way in WAYS:
        secs, right = [], True
        for k in range(repeats + 1):
            prg["touch"](queues[0], (words,), None, a, np.uint32(k)).wait()
            secs.append(move(mod, ctx, queues, way, a, b, pinned, prg, words))
            mod.enqueue_copy(queues[1], check, b, is_blocking=True)
            right &= bool(check[0] == k and check[-1] == np.uint32(k + words - 1))
        out[way] = {**rate_stats(secs[1:], nbytes), "right": right}
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    mod, devs, line = two_devices()
    ctx = mod.Context(devs)
    queues = [mod.CommandQueue(ctx, devs[i % len(devs)]) for i in (0, 1)]
    built = mod.Program(ctx, KERNEL).build()
    prg = {k: mod.Kernel(built, k) for k in ("touch", "pull")}
    report = {"script": "benchmarks/probe_p2p.py", "date": today(), "devices": line,
              "two_devices": len(devs) == 2, "args": vars(args), "cases": []}
    log(line)
    for mb in args.sizes:
        nbytes = int(mb * 1e6) // 4 * 4
        res = case(mod, ctx, queues, prg, nbytes, args.repeats)
        report["cases"].append({"mb": mb, **res})
        log(f"{mb:g} MB: " + ", ".join(f"{w} {r['gbps_median']:.1f} GB/s"
                                        f"{'' if r['right'] else ' WRONG'}"
                                        for w, r in res.items()))
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
