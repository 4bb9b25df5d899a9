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

With ``--timeline`` every rank also records, per step of the timed run, where its GPU's
queue stood (OpenCL profiling times of one queue, so gaps between commands are exact):
the step's kernels, the halo's packing and its unpacking, and the host's time in the
step's parts (the wait for the sums, their allgather, the GPUs' copies, the app between
steps). The per-step gaps and their sums over the run go in each rank's record.

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
#: Per step of the current run, on this rank (``--timeline``): host stamps and events.
TIMELINE: list = []


def record_timeline() -> None:
    """Patch :mod:`finepar.mpi` (this process) to stamp each distributed row operation's
    parts into :data:`TIMELINE`, cleared when a timed run starts (``reset_records``)."""
    from finepar.mpi import engine, halo, peers
    from finepar.mpi.comm import Communicator
    if getattr(engine.DistEngine.rowop, "stamped", False):
        return
    rowop, total = engine.DistEngine.rowop, Communicator.total
    gather, scatter = halo.RankHalo._gather, halo.RankHalo._scatter
    move, reset = peers.PeerExchange.move, engine.DistEngine.reset_records
    now = time.perf_counter

    def step():
        return TIMELINE[-1] if TIMELINE else {}

    def rowop_stamped(self, **kw):
        TIMELINE.append({"enter": now(), "pack": [], "unpack": []})
        out = rowop(self, **kw)
        rec = step()
        rec["exit"] = now()
        rec["kernels"] = [ev for evs in self.last_events.values() for ev in evs]
        return out

    def total_stamped(self, values):
        t0 = now()
        out = total(self, values)
        step().update(total=(t0, now()))
        return out

    def move_stamped(self, pulls, barrier=True):
        t0 = now()
        move(self, pulls, barrier)
        step().update(move=(t0, now()))

    def gather_stamped(self, snd, name, out, at=0):
        gather(self, snd, name, out, at)
        step().setdefault("pack", []).append(self._timed[-1][1])

    def scatter_stamped(self, rcv, name, src):
        ev = scatter(self, rcv, name, src)
        step().setdefault("unpack", []).append(ev)
        return ev

    def reset_stamped(self):
        reset(self)
        TIMELINE.clear()

    rowop_stamped.stamped = True
    engine.DistEngine.rowop, Communicator.total = rowop_stamped, total_stamped
    halo.RankHalo._gather, halo.RankHalo._scatter = gather_stamped, scatter_stamped
    peers.PeerExchange.move, engine.DistEngine.reset_records = move_stamped, reset_stamped


def timeline_summary() -> dict:
    """This rank's timed steps (:data:`TIMELINE`) as gaps, ms: per step and summed.

    Device (one queue's profiling clock): ``kernels`` (first start to last end of the
    step's kernels), ``to_pack`` (kernels' end to the packing's start), ``pack``,
    ``round_trip`` (packing's end to the unpacking's start: the host reads the sums,
    gathers them, the GPUs copy), ``unpack``, ``to_next`` (unpacking's end to the next
    step's first kernel). Host: ``wait`` (entering the step to its sums' collective: the
    enqueues and the wait for the kernels), ``total`` (the collective), ``move`` (the
    copies), ``land`` (the collective's end to the step's end), ``app`` (the step's end
    to the next step's start)."""
    ms = 1e-6
    steps = [r for r in TIMELINE if r.get("kernels")]
    rows = []
    for i, r in enumerate(steps):
        k0 = min(ev.profile.start for ev in r["kernels"])
        k1 = max(ev.profile.end for ev in r["kernels"])
        row = {"kernels": (k1 - k0) * ms}
        if r["pack"]:
            p0, p1 = r["pack"][0].profile.start, r["pack"][-1].profile.end
            row.update(to_pack=(p0 - k1) * ms, pack=(p1 - p0) * ms)
            if r["unpack"]:
                u0, u1 = r["unpack"][0].profile.start, r["unpack"][-1].profile.end
                row.update(round_trip=(u0 - p1) * ms, unpack=(u1 - u0) * ms)
                if i + 1 < len(steps):
                    n0 = min(ev.profile.start for ev in steps[i + 1]["kernels"])
                    row["to_next"] = (n0 - u1) * ms
        if "total" in r:
            row.update(wait=(r["total"][0] - r["enter"]) * 1e3,
                       total=(r["total"][1] - r["total"][0]) * 1e3,
                       land=(r["exit"] - r["total"][1]) * 1e3)
        if "move" in r:
            row["move"] = (r["move"][1] - r["move"][0]) * 1e3
        if i + 1 < len(steps):
            row["app"] = (steps[i + 1]["enter"] - r["exit"]) * 1e3
        rows.append(row)
    keys = dict.fromkeys(k for row in rows for k in row)
    return {"steps": rows, "sum": {k: sum(row.get(k, 0.0) for row in rows) for k in keys}}
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
    p.add_argument("--timeline", action="store_true",
                   help="every rank stamps its timed steps' kernels, packing, unpacking "
                        "and host parts; the gaps go in the JSON (see timeline_summary)")
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
        if args.timeline:
            record_timeline()
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
        timeline = comm.comm.gather(timeline_summary() if args.timeline else None, root=0)
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
        if args.timeline:
            rec["timeline"] = timeline
            for r, t in enumerate(timeline):
                print(f"rank {r} ms over {len(t['steps'])} steps:",
                      {k: round(v, 2) for k, v in t["sum"].items()}, flush=True)
        with open(args.json, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
    comm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
