"""Where a distributed BFS's host time goes (issue 32): the same run under ``mpiexec -n P``
with each rank's level steps and its parents' step (``bfsranks._finish``) under cProfile,
the functions of most cumulative time printed per rank, the profiles written beside
``--json`` (``JSON.RANK.{levels,parents}.prof``); per rank the levels' records (direction,
wall, exchange, MPI, kernel seconds, host synchronisations) in ``--json``.

With ``--timeline`` (instead of cProfile) each rank records its timed run as a timeline
(:mod:`rankline`): every OpenCL command with its device times, and the host functions of
the levels' protocol; per level, the device's busy time and its idle time charged to the
host function open then (``timeline`` in ``--json``, a table per rank printed).

    mpiexec -n 2 python benchmarks/probe_bfsranks.py graph500:26 --json $OUT/probe_bfsranks.json
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import threading
import time
import traceback


def profiled(module, name: str, prof: cProfile.Profile) -> None:
    """Run ``module.name`` under ``prof`` (this process only)."""
    fn = getattr(module, name)

    def run(*args, **kw):
        prof.enable()
        try:
            return fn(*args, **kw)
        finally:
            prof.disable()
    setattr(module, name, run)


def top(prof: cProfile.Profile, count: int) -> str:
    """The ``count`` functions of most cumulative time in ``prof``."""
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumtime").print_stats(count)
    return out.getvalue()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graph", help="a graph500:SCALE spec or a file")
    p.add_argument("--devices", default="gpu", help="each rank's devices (auto, gpu, cpu)")
    p.add_argument("--top", type=int, default=25, help="functions printed per profile")
    p.add_argument("--timeline", action="store_true",
                   help="record the timed run's commands and host steps (no cProfile)")
    p.add_argument("--switch-interval", type=float, default=None,
                   help="Python's thread switch interval, seconds (sys.setswitchinterval)")
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    if args.timeline:
        return with_timeline(args)
    from finepar import mpi
    from finepar.apps import bfsranks
    from finepar.mpi.comm import Communicator
    comm = Communicator()
    profs = {"levels": cProfile.Profile(), "parents": cProfile.Profile()}
    profiled(bfsranks, "_bottom_up", profs["levels"])
    profiled(bfsranks, "_top_down", profs["levels"])
    profiled(bfsranks, "_finish", profs["parents"])
    try:
        _, report = mpi.run("bfs", args.graph, comm=comm, devices=args.devices)
    except Exception:  # noqa: BLE001 - one rank's error ends every rank, not a hang
        traceback.print_exc()
        comm.abort(1)
    texts = {k: top(v, args.top) for k, v in profs.items()}  # warm-up and timed run alike
    for k, prof in profs.items():
        prof.dump_stats(f"{args.json}.{comm.rank}.{k}.prof")
    every = comm.comm.gather(texts, root=0)
    if comm.rank == 0:
        for r, t in enumerate(every):
            for k, text in t.items():
                print(f"===== rank {r}, {k} (warm-up and timed run)\n{text}", flush=True)
        rec = {"run_s": report.timings["run"],
               "levels": [[{k: l.get(k) for k in ("level", "direction", "wall_s", "exchange_s",
                                                  "mpi_s", "kernel_s", "host_syncs")}
                           for l in r["levels"]] for r in report.ranks]}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rec, f, indent=1)
    comm.close()
    return 0


def timeline_spans() -> list:
    """The host functions :mod:`rankline` stamps: the levels, their protocol's steps."""
    from finepar.apps import bfsranks as b
    from finepar.device import cl as finepar_cl
    from finepar.device.peer import _Driver
    from finepar.engine import Engine
    from finepar.engine.frontier import FrontierQueue
    from finepar.mpi.comm import Communicator
    from finepar.mpi.engine import DistEngine
    from finepar.mpi.peers import PeerExchange
    parts = b.LevelParts
    return [(b, "_bottom_up", "bottom-up"), (b, "_top_down", "top-down"),
            (b, "_finish", "parents"), (parts, "read", "read"),
            (parts, "read_header", "read_header"), (parts, "merge", "merge"),
            (parts, "post", "post"), (parts, "_gpu_to_gpu", "gpu_to_gpu"),
            (parts, "zero_hdr", "zero_hdr"), (parts, "stage", "stage"),
            (b, "_kernel", "kernel"), (b, "bind_changed", "bind"), (Engine, "launch", "launch"),
            (b, "alloc", "alloc"),
            (b, "mark_bits", "mark_bits"), (b, "_merged_size", "merged_size"),
            (b, "_hand_over", "hand_over"), (PeerExchange, "move", "move"),
            (_Driver, "synchronize", "cuda_sync"), (_Driver, "copy", "cuda_copy"),
            (_Driver, "current_again", "cuda_current"),
            (finepar_cl().CommandQueue, "finish", "finish"),
            (Communicator, "allgather_ints", "allgather"),
            (DistEngine, "rowop_local", "rowop"), (Engine, "fill", "fill"),
            (Engine, "read_buffer", "read_buffer"), (Engine, "drain", "drain"),
            (Engine, "write", "write"), (Engine, "read", "read_vector"),
            (FrontierQueue, "run", "queue.run"), (FrontierQueue, "from_bitmap", "from_bitmap")]


#: The recording :func:`stamp_set_args` adds its slow calls to (set by ``--timeline``).
SLOW_ARGS: list = []


def stamp_set_args(module, slow_s: float = 2e-5) -> None:
    """``module.bind_changed`` given each kernel through a proxy whose argument sets
    (``set_arg``, and ``_set_arg_buf`` for a scalar) of ``slow_s`` seconds or more become
    host spans ``set_arg KERNEL[i] TYPE`` of the recording (an argument's set has stalled
    until the device went idle: which one)."""
    real = module.bind_changed

    class Timed:
        """The kernel, its ``set_arg`` timed; every other attribute the kernel's."""

        def __init__(self, kernel):
            object.__setattr__(self, "kernel", kernel)

        def __getattr__(self, name):
            return getattr(self.kernel, name)

        def __setattr__(self, name, value):
            setattr(self.kernel, name, value)

        def _timed(self, how, i, a):
            t0 = time.perf_counter()
            getattr(self.kernel, how)(i, a)
            t1 = time.perf_counter()
            if t1 - t0 >= slow_s and SLOW_ARGS and SLOW_ARGS[0].on:
                what = f"{type(a).__name__}" + (f" {a.size} B" if hasattr(a, "size") else "")
                SLOW_ARGS[0].host.append([f"set_arg {self.kernel.function_name}[{i}] {what}",
                                          t0, t1, SLOW_ARGS[0].depth])

        def set_arg(self, i, a):
            self._timed("set_arg", i, a)

        def _set_arg_buf(self, i, a):  # a scalar's bytes (binding.set_arg)
            self._timed("_set_arg_buf", i, a)

    module.bind_changed = lambda kernel, args: real(Timed(kernel), args)


def with_timeline(args) -> int:
    """``--timeline``: the run with :class:`rankline.Timeline` recording each call of
    ``bfsranks.level_loop`` (the last one kept: the timed run's)."""
    from rankline import Timeline
    from finepar import mpi
    from finepar.apps import bfsranks
    from finepar.mpi.comm import Communicator
    comm = Communicator()
    stamp_set_args(bfsranks)
    tl = Timeline(timeline_spans(), ("bottom-up", "top-down", "parents"))
    SLOW_ARGS.append(tl)
    loop = bfsranks.level_loop

    def recorded(*a, **k):
        tl.start()
        try:
            return loop(*a, **k)
        finally:
            tl.stop()
    bfsranks.level_loop = recorded
    try:
        _, report = mpi.run("bfs", args.graph, comm=comm, devices=args.devices)
        mine = tl.summary()
        threads = [t.name for t in threading.enumerate()]  # Python's, after the runs
    except Exception:  # noqa: BLE001 - one rank's error ends every rank, not a hang
        traceback.print_exc()
        comm.abort(1)
    every = comm.comm.gather(mine, root=0)
    if comm.rank == 0:
        for r, t in enumerate(every):
            print(f"===== rank {r}: level, kind, wall, device busy, commands; idle by host step (ms)")
            for row in t["levels"]:
                idle = ", ".join(f"{k} {v:.3f}" for k, v in
                                 sorted(row["idle_ms"].items(), key=lambda kv: -kv[1]))
                print(f"{row['level']} {row['kind']}: wall {row['wall_ms']:.3f}, busy "
                      f"{row['busy_ms']:.3f}, {row['commands']} commands; idle: {idle}",
                      flush=True)
        rec = {"run_s": report.timings["run"], "timeline": every, "threads": threads,
               "levels": [r["levels"] for r in report.ranks]}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rec, f, indent=1, default=float)
    comm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
