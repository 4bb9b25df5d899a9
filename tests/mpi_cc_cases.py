"""Runs connected-components cases for tests/test_mpi_cc.py, under ``mpiexec -n P``.

    mpiexec -n P python tests/mpi_cc_cases.py OUT_DIR CASES.json

``CASES.json`` lists cases ``{"id", "graph", "memory", "partition", "params",
"min_records", "peek_records", "exchange"}`` (``min_records``: the records' first buffer,
small enough to overflow; ``peek_records``: the records read with their count, small
enough that the rest take a second read; ``exchange``: the communicator's); every
rank runs every case (:func:`finepar.mpi.run` of ``cc``, the emulated pair, ``T_f`` 64);
rank 0 writes ``OUT_DIR/ID.npy`` (the labels) and ``OUT_DIR/ID.json``: the report, the
partition's bounds and every rank's counts of the exchange (``result.extra['ranks']``,
with the vertices its Afforest's final hooking listed, ``hooked``, ``times``, how
many ranks' timings its ``per_rank`` held, and ``shapes``, the subgraph counts it held).
A failing case is written as ``OUT_DIR/ID.error`` and the others still run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def main(out: str, cases_file: str) -> int:
    from finepar import mpi
    from finepar.apps import ccranks
    from finepar.mpi.comm import Communicator, RankFailure
    comm = Communicator()
    out_dir = Path(out)
    first, peek = ccranks.MIN_RECORDS, ccranks.PEEK_RECORDS
    for case in json.loads(Path(cases_file).read_text()):
        ccranks.MIN_RECORDS = case.get("min_records", first)
        ccranks.PEEK_RECORDS = case.get("peek_records", peek)
        comm.exchange = case.get("exchange", "auto")
        try:
            result, report = mpi.run("cc", case["graph"], comm=comm, memory=case["memory"],
                                      gpu="emulate", threshold=64,
                                      partition=case.get("partition", "nnz"),
                                      **case.get("params", {}))
        except RankFailure as exc:
            if comm.rank == 0:
                (out_dir / f"{case['id']}.error").write_text(str(exc))
            continue
        mine = {k: v for k, v in result.extra.get("ranks", {}).items() if k != "per_rank"}
        mine["hooked"] = result.extra.get("hooked")
        per_rank = result.extra.get("ranks", {}).get("per_rank", [])
        mine["times"] = len(per_rank)
        mine["shapes"] = [{k: t[k] for k in ("listed", "local_entries", "largest_degree")}
                          for t in per_rank]
        every = comm.allgather(mine)
        if comm.rank == 0:
            np.save(out_dir / f"{case['id']}.npy", result.values)
            report.write_json(out_dir / f"{case['id']}.report.json")
            (out_dir / f"{case['id']}.json").write_text(json.dumps(
                {"ranks": every, "iterations": result.iterations,
                 "algorithm": result.extra["algorithm"],
                 "components": result.extra["components"]}))
    comm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
