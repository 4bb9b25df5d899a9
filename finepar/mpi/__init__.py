"""Distributed runs: several GPUs and several machines through MPI (DESIGN.md §3, "mpi").

``mpiexec -n P python -m finepar run APP GRAPH ...`` (or :func:`run` under mpi4py)
spreads an app's rows over P ranks, one per GPU, each a FinePar pair of its own:

* :mod:`~finepar.mpi.comm`: the communicator (mpi4py), its collectives and timings;
* :mod:`~finepar.mpi.partition`: contiguous row ranges, by entries or by METIS;
* :mod:`~finepar.mpi.load`, :mod:`~finepar.mpi.kronecker`: each rank reads (or
  generates) only its rows;
* :mod:`~finepar.mpi.matrix`: each rank's rows of the app's matrix;
* :mod:`~finepar.mpi.setup`: each rank's GPU and plan;
* :mod:`~finepar.mpi.engine`, :mod:`~finepar.mpi.halo`: the engine of a rank, whose
  sums, halos, gathers and frontier bitmaps cross the ranks;
* :mod:`~finepar.mpi.runner`, :mod:`~finepar.mpi.report`: the run and its report;
* :mod:`~finepar.mpi.verify`: answers checked by range, each rank against its own rows;
* :mod:`~finepar.cli.mpirun`: ``finepar run`` under ``mpiexec`` (with the other commands).

Nothing here imports MPI until a distributed run starts.
"""

from __future__ import annotations

from .comm import MPI_MISSING, launched_size


def run(app, graph, **kw):
    """Run ``app`` over the ranks (see :func:`finepar.mpi.runner.run`)."""
    from .runner import run as _run
    return _run(app, graph, **kw)


__all__ = ["run", "launched_size", "MPI_MISSING"]
