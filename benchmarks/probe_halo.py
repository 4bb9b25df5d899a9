"""Which part of the GPU path's halo exchange a wrong or slow distributed PageRank comes
from (issue 32): the same run under ``mpiexec -n P``, once per variant of the exchange,
each variant made by replacing one method of :mod:`finepar.mpi` in this process only.

Variants (``--variants``, in order):

* ``default``: the library as it is (packed behind the step's kernels where the GPU runs
  the rank's rows alone, the send region's halves alternating, no barrier after the copies);
* ``unpipelined``: every exchange after the step's sums (:meth:`RankHalo.pack` refuses);
* ``barriers``: a barrier after the GPUs' copies too (as before the halves alternated);
* ``waited``: the pipelined unpacking waited for before the next step is enqueued;
* ``ids``: what a rank receives in ascending ids, not in its GPU's renumbered order;
* ``unflushed``: a step's launches submitted only when the host waits for its sums (no
  flush as each is enqueued: ``finepar.engine.executors.FLUSH_EACH_LAUNCH`` off).

Per variant, rank 0 records the iterations, whether the run converged, the run's seconds and
the L1 distance of the scores from the first variant's that converged. One JSON line per variant in ``--json``'s file as it goes.

    mpiexec -n 2 python benchmarks/probe_halo.py graph500:22 --json $OUT/probe_halo.json
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
import traceback

import numpy as np

VARIANTS = ("default", "unpipelined", "barriers", "waited", "unflushed", "ids")


def patch(variant: str) -> None:
    """Replace the method ``variant`` changes (this process only), the others restored."""
    from finepar.engine import executors
    from finepar.mpi import halo, peers
    for cls, name, fn in ORIGINALS:
        setattr(cls, name, fn)
    if variant == "unflushed":
        executors.FLUSH_EACH_LAUNCH = False
    elif variant == "ids":
        def in_ids(self, need, owner):
            self.order = "ids"
            return need
        halo.RankHalo._receiver_order = in_ids
    elif variant == "unpipelined":
        halo.RankHalo.pack = lambda self, name: False
    elif variant == "barriers":
        move = peers.PeerExchange.move

        def move_then_barrier(self, pulls, barrier=True):
            move(self, pulls, barrier)
            if self.window is None:
                self.comm.node.Barrier()
        peers.PeerExchange.move = move_then_barrier
    elif variant == "waited":
        land = halo.RankHalo.land

        def land_and_wait(self, name):
            out = land(self, name)
            self.peers.side.queue.finish()
            return out
        halo.RankHalo.land = land_and_wait


def _originals() -> list:
    from finepar.engine import executors
    from finepar.mpi import halo, peers
    return [(executors, "FLUSH_EACH_LAUNCH", executors.FLUSH_EACH_LAUNCH),
            (halo.RankHalo, "pack", halo.RankHalo.pack),
            (halo.RankHalo, "_receiver_order", halo.RankHalo._receiver_order),
            (halo.RankHalo, "land", halo.RankHalo.land),
            (peers.PeerExchange, "move", peers.PeerExchange.move)]


ORIGINALS: list = []
#: The profile of the last PageRank iterations (the timed run's), where asked for.
PROFILED: list = []


def profile_iterations() -> None:
    """Run each call of PageRank's step-by-step iterations under a fresh cProfile (the
    last one, the timed run's, is kept in :data:`PROFILED`)."""
    from finepar.apps.pagerank import PageRank
    loop = PageRank._host_iterations
    if getattr(loop, "profiled", False):
        return

    def profiled(self, *args, **kw):
        prof = cProfile.Profile()
        PROFILED[:] = [prof]
        prof.enable()
        try:
            return loop(self, *args, **kw)
        finally:
            prof.disable()
    profiled.profiled = True
    PageRank._host_iterations = profiled


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("graph", help="a graph500:SCALE spec or a file")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--devices", default="auto", help="each rank's devices (auto, gpu, cpu)")
    p.add_argument("--profile", action="store_true",
                   help="rank 0 profiles each variant's timed iterations (cProfile): "
                        "JSON.VARIANT.prof beside --json, the 25 functions of most own time "
                        "printed")
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
    from finepar import mpi
    from finepar.mpi.comm import Communicator
    comm = Communicator()
    ORIGINALS[:] = _originals()
    base = None
    for variant in args.variants.split(","):
        if variant not in VARIANTS:
            raise SystemExit(f"--variants: {variant!r} is not one of {', '.join(VARIANTS)}")
        patch(variant)
        if args.profile and comm.rank == 0:
            profile_iterations()
        t0 = time.perf_counter()
        try:
            result, report = mpi.run("pagerank", args.graph, comm=comm, devices=args.devices)
        except Exception:  # noqa: BLE001 - one rank's error ends every rank, not a hang
            traceback.print_exc()
            comm.abort(1)
        wall = time.perf_counter() - t0
        if PROFILED:
            prof = PROFILED.pop()
            prof.dump_stats(f"{args.json}.{variant}.prof")
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        if comm.rank:
            continue
        scores = np.asarray(result.values, np.float64)
        if base is None and result.converged:
            base = scores
        rec = {"variant": variant, "iterations": result.iterations,
               "converged": bool(result.converged), "run_s": report.timings["run"],
               "wall_s": wall, "l1_to_first_converged": (float(np.abs(scores - base).sum())
                                                         if base is not None else None),
               "halo": [{k: r["halo"].get(k) for k in ("path", "pipelined", "exchanges",
                                                        "order", "pack_kernel_seconds",
                                                        "unpack_kernel_seconds", "seconds")}
                        for r in report.ranks],
               "compute_s": [r["timings"]["compute"] for r in report.ranks]}
        print(json.dumps(rec), flush=True)
        with open(args.json, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
    comm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
