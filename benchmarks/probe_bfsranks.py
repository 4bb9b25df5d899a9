"""Where a distributed BFS's host time goes (issue 32): the same run under ``mpiexec -n P``
with each rank's level steps and its parents' step (``bfsranks._finish``) under cProfile,
the functions of most cumulative time printed per rank, the profiles written beside
``--json`` (``JSON.RANK.{levels,parents}.prof``); per rank the levels' records (direction,
wall, exchange, MPI, kernel seconds, host synchronisations) in ``--json``.

    mpiexec -n 2 python benchmarks/probe_bfsranks.py graph500:26 --json $OUT/probe_bfsranks.json
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
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
    p.add_argument("--json", required=True)
    args = p.parse_args(argv)
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


if __name__ == "__main__":
    raise SystemExit(main())
