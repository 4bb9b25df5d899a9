"""Runs the by-range checks and one load for several apps for tests/test_mpi_verify.py,
under ``mpiexec -n P``.

    mpiexec -n P python tests/mpi_verify_cases.py OUT_DIR

Every rank checks BFS answers (scipy's, and with planted faults) and PageRank scores
against its own rows of Graph500 scale 10 (generated rank by rank) and of a directed
Kronecker graph, and also against all the rows on its own (one rank, ``COMM_SELF``);
then runs PageRank and BFS on one load and each on a load of its own (the emulated pair,
``T_f`` 64). Each rank also compares its generated rows of Graph500 scale 17 with the
whole generator's. Rank 0 writes ``OUT_DIR/verify.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from test_mpi_verify import _planted, scipy_bfs


def main(out: str) -> int:
    from finepar import mpi
    from finepar.apps.pagerank import reference_pagerank
    from finepar.io.graph500 import kronecker
    from finepar.mpi.comm import Communicator
    from finepar.mpi.load import load_rows
    from finepar.mpi.runner import run_rows
    from finepar.mpi.verify import check_bfs, pagerank_residual
    comm = Communicator()
    alone = Communicator(comm.MPI.COMM_SELF)
    graph, directed = kronecker(10), kronecker(10, seed=3, symmetric=False)
    rows, rows_dir = load_rows("graph500:10", comm), load_rows(directed, comm)
    whole, whole_dir = load_rows(graph, alone), load_rows(directed, alone)
    got = {"ranks": comm.size}
    # scale 17: two chunks of edges, so with three ranks one rank draws none
    mine, whole17 = load_rows("graph500:17", comm), kronecker(17)
    lo, hi = mine.lo, mine.hi
    equal = bool(
        np.array_equal(mine.indptr, whole17.indptr[lo:hi + 1] - whole17.indptr[lo])
        and np.array_equal(mine.indices, whole17.indices[whole17.indptr[lo]:whole17.indptr[hi]]))
    got["generated_rows_equal"] = all(comm.allgather(equal))
    del mine, whole17
    root = int(np.argmax(np.diff(graph.indptr)))
    level, parent = scipy_bfs(graph, root)
    got["bfs_right"] = check_bfs(comm, rows, level, parent, root)
    got["bfs_parent_fault"] = check_bfs(comm, rows, *_planted(graph, level, parent, root,
                                                              "parent"), root)
    got["bfs_dropped"] = check_bfs(comm, rows, *_planted(graph, level, parent, root,
                                                         "unreached"), root)
    droot = int(np.argmax(np.diff(directed.indptr)))
    got["bfs_directed_right"] = check_bfs(comm, rows_dir, *scipy_bfs(directed, droot), droot)
    exact = reference_pagerank(graph, 0.85, tol=1e-14)
    got["pagerank_exact"] = pagerank_residual(comm, rows, exact)
    noisy = np.abs(exact + 1e-3 * np.random.default_rng(1).standard_normal(graph.n) / graph.n)
    got["pagerank_noisy"] = pagerank_residual(comm, rows, noisy)
    got["pagerank_noisy_one_rank"] = pagerank_residual(alone, whole, noisy)
    noisy_dir = np.full(directed.n, 1.0 / directed.n)
    got["directed_noisy"] = pagerank_residual(comm, rows_dir, noisy_dir)
    got["directed_noisy_one_rank"] = pagerank_residual(alone, whole_dir, noisy_dir)
    kw = {"comm": comm, "gpu": "emulate", "memory": "split", "threshold": 64}
    shared = {app: run_rows(app, rows, **kw)[0] for app in ("pagerank", "bfs")}
    own = {app: mpi.run(app, "graph500:10", **kw)[0] for app in ("pagerank", "bfs")}
    got["one_load_equal"] = {
        "pagerank": bool(np.abs(shared["pagerank"].values.astype(np.float64)
                                - own["pagerank"].values).sum() < 1e-6),
        "bfs": bool(np.array_equal(shared["bfs"].values, own["bfs"].values))}
    b = shared["bfs"]
    got["finepar_bfs"] = check_bfs(comm, rows, b.values, b.extra["parent"], b.extra["root"])
    got["finepar_pagerank_bound"] = pagerank_residual(comm, rows,
                                                      shared["pagerank"].values) / 0.15
    if comm.rank == 0:
        (Path(out) / "verify.json").write_text(json.dumps(got))
    comm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
