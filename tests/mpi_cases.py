"""Runs distributed cases for tests/test_mpi.py, under ``mpiexec -n P``.

    mpiexec -n P python tests/mpi_cases.py OUT_DIR CASES.json

``CASES.json`` lists cases ``{"id", "app", "graph", "memory", "partition", "params",
"in_memory"}``; ``in_memory``: every rank loads the graph itself and passes the Graph (the
API's in-memory path). A case with ``"argv"`` instead runs that ``finepar run`` command
line on every rank (``finepar.cli.main``, ``--distributed``), rank 0 writing ``ID.npy`` and
``ID.json``. A case with ``"share"`` sends each rank a memory file's descriptor to every other
(:func:`finepar.mpi.peers._share`) and rank 0 writes what each read from them. A case's
``"exchange"`` is the communicator's for its run, its ``"devices"`` the run's. Every rank runs
every case (:func:`finepar.mpi.run`, the emulated
pair, ``T_f`` 64); rank 0 writes ``OUT_DIR/ID.npz`` (the answer's vectors) and ``OUT_DIR/ID.json`` (the
report). A failing case is written as ``OUT_DIR/ID.error`` and the others still run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def main(out: str, cases_file: str) -> int:
    from finepar import mpi
    from finepar.mpi import window
    from finepar.mpi.comm import Communicator, RankFailure
    comm = Communicator()
    min_bytes = window.MIN_BYTES
    out_dir = Path(out)
    cases = json.loads(Path(cases_file).read_text())
    for case in cases:
        if "argv" in case:
            _command_line(case, out_dir, comm.rank)
            continue
        if case.get("share"):
            _share_descriptors(comm, out_dir / f"{case['id']}.json")
            continue
        comm.exchange = case.get("exchange", "auto")
        graph = case["graph"]
        if case.get("in_memory"):
            from finepar.io import load
            graph = load(graph)
        # "window": every collective through the shared window, however small (else the
        # small test graphs' messages go through MPI's own collectives)
        window.MIN_BYTES = 0 if case.get("window") else min_bytes
        try:
            result, report = mpi.run(case["app"], graph, comm=comm,
                                      memory=case["memory"], gpu="emulate", threshold=64,
                                      partition=case.get("partition", "nnz"),
                                      **case.get("params", {}),
                                      **({"devices": case["devices"]} if "devices" in case
                                         else {}))
        except RankFailure as exc:
            if comm.rank == 0:
                (out_dir / f"{case['id']}.error").write_text(str(exc))
            continue
        if comm.rank == 0:
            arrays = {"values": result.values}
            for key in ("parent", "authorities"):
                if key in result.extra:
                    arrays[key] = result.extra[key]
            np.savez(out_dir / f"{case['id']}.npz", **arrays)
            report.write_json(out_dir / f"{case['id']}.json")
    comm.close()
    return 0


def _command_line(case: dict, out_dir: Path, rank: int) -> None:
    """``finepar run ARGV`` on this rank, as ``mpiexec ... python -m finepar run`` runs it."""
    from finepar.cli import main
    ident = case["id"]
    code = main(["run", *case["argv"], "--distributed", "--gpu", "emulate", "-q",
                 "-o", str(out_dir / f"{ident}.npy"), "--json", str(out_dir / f"{ident}.json")])
    if code and rank == 0:
        (out_dir / f"{ident}.error").write_text(f"exit status {code}")


def _share_descriptors(comm, path: Path) -> None:
    """Each rank writes its rank into a memory file and shares its descriptor; every rank
    reads its peers' files: ``{rank: {peer: (what it read, the size sent)}}``."""
    import os
    from finepar.mpi.peers import _share
    if comm.node is None:
        got = {}
    else:
        fd = os.memfd_create("share-test")
        os.write(fd, str(comm.rank).encode())
        got = {}
        for peer, (theirs, size) in _share(comm.node, fd, 1000 + comm.rank).items():
            got[peer] = [os.pread(theirs, 16, 0).decode(), size]
            os.close(theirs)
        os.close(fd)
    every = comm.allgather(got)
    if comm.rank == 0:
        path.write_text(json.dumps(every))


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
