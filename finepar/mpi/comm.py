"""The communicator of distributed runs: MPI through mpi4py (DESIGN.md §3, "mpi").

Every collective a distributed run makes goes through :class:`Communicator`, which
wraps an mpi4py communicator, times its MPI calls and keeps the reductions that
decide a loop's next step bitwise identical on every rank. A plain run never imports
MPI: :func:`launched_size` reads the launcher's environment.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..errors import BuildError, FineParError, UsageError
from . import window  # window.MIN_BYTES is read at each call (tests lower it)
from .window import NodeWindow

MPI_MISSING = ("distributed runs need mpi4py and an MPI library: pip install 'finepar[mpi]' "
               "(mpi4py and MPICH from PyPI), then mpiexec -n P python -m finepar run ...")

#: Variables MPI launchers set in every process they start: the world size (MPICH's and
#: Intel's hydra, Slurm's PMI, Open MPI, MVAPICH).
SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")


def launched_size() -> int:
    """Processes the MPI launcher started (1 when this one was not started by one).

    Read from the launcher's environment (:data:`SIZE_VARIABLES`) without importing MPI.
    """
    for var in SIZE_VARIABLES:
        value = os.environ.get(var, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def require_mpi():
    """Import mpi4py's MPI module.

    Raises
    ------
    UsageError
        :data:`MPI_MISSING` when mpi4py or its MPI library is missing.
    """
    try:
        from mpi4py import MPI
    except ImportError:
        raise UsageError(MPI_MISSING) from None
    except RuntimeError as exc:  # mpi4py present, no MPI library it can load
        raise UsageError(f"{MPI_MISSING} ({' '.join(str(exc).split())})") from None
    return MPI


class RankFailure(FineParError):
    """An error on one rank, raised on every rank so that all stop at the same point.

    Attributes
    ----------
    rank : int
        The first rank that failed.
    build : bool
        The failure was a kernel build (exit status 1 rather than 2).
    """

    def __init__(self, message: str, rank: int, build: bool = False):
        self.rank, self.build = rank, build
        super().__init__(message)


class Communicator:
    """The ranks of a distributed run, and the collectives FinePar uses.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm, optional
        Default ``MPI.COMM_WORLD``.

    Attributes
    ----------
    rank, size : int
    local_rank, local_size : int
        This process's index among the ranks on its host, and their number (one rank
        per GPU: ``--gpu`` picks by ``local_rank``).
    mpi_seconds : float
        Wall time spent in MPI calls so far (with the window, its copies too).
    window_moves : int
        Collectives that went through the shared window so far.
    window : NodeWindow or None
        The shared-memory window large collectives go through when every rank runs on
        one host (:mod:`finepar.mpi.window`); None across hosts, on one rank, or when
        turned off.
    node : mpi4py.MPI.Comm or None
        The run's ranks, ranked alike, where every rank runs on one host (else None):
        the window's and the GPUs' exchanges (:mod:`finepar.mpi.peers`) synchronise it.
    exchange : str
        How halos move between the ranks (:data:`finepar.mpi.peers.MODES`).

    Parameters
    ----------
    shared_window : bool
        Move large ``alltoallv`` / ``allgatherv`` through a shared-memory window when every
        rank is on one host (default True; False: MPI's own collectives always).
    exchange : {"auto", "gpu", "host"}
        Halos copied GPU to GPU where every rank's GPU can map the others' memory
        (``auto``, the default), always (``gpu``: an error where they cannot, emulated on
        PoCL), or never (``host``: through page-locked host memory).
    """

    def __init__(self, comm=None, shared_window: bool = True, exchange: str = "auto"):
        mpi = self.MPI = require_mpi()
        self.comm = mpi.COMM_WORLD if comm is None else comm
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        local = self.comm.Split_type(mpi.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank, self.local_size = local.Get_rank(), local.Get_size()
        self.window = self.node = None
        self.exchange = exchange
        if self.size > 1 and self.local_size == self.size:
            self.node = local  # local ranks are the run's ranks
            if shared_window:
                self.window = NodeWindow(mpi, local)
        else:
            local.Free()
        self.mpi_seconds = 0.0
        self.window_moves = 0

    def close(self) -> None:
        """Free the shared window and the host's communicator (collective: every rank
        calls it, at the end of a run)."""
        if self.window is not None:
            self.window.free()
            self.window = None
        if self.node is not None:
            self.node.Free()
            self.node = None

    def _timed(self, fn, *args):
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.mpi_seconds += time.perf_counter() - t0

    # ------------------------------------------------------------- small collectives
    def total(self, values) -> np.ndarray:
        """Sum of ``values`` (a small array, the same shape on every rank) over the ranks.

        Integers go through ``MPI_Allreduce``; floats are gathered and summed in rank
        order, so that every rank holds the same bits (an allreduce may round
        differently on different ranks, and a loop's stop test must agree).
        """
        a = np.ascontiguousarray(values)
        if a.dtype.kind in "iub":
            out = np.empty_like(a)
            self._timed(self.comm.Allreduce, a, out, self.MPI.SUM)
            return out
        every = np.empty((self.size,) + a.shape, dtype=a.dtype)
        self._timed(self.comm.Allgather, a, every)
        out = every[0].copy()
        for r in range(1, self.size):
            out += every[r]
        return out

    def allgather_ints(self, values) -> np.ndarray:
        """Every rank's ``values`` (a few integers, as many on every rank) in one
        ``MPI_Allgather``: int64, shape (ranks, len(values)), row ``r`` rank ``r``'s."""
        a = np.ascontiguousarray(values, dtype=np.int64)
        out = np.empty((self.size, a.size), dtype=np.int64)
        self._timed(self.comm.Allgather, a, out)
        return out

    def maximum(self, value: float) -> float:
        """The largest ``value`` over the ranks."""
        return float(self._timed(self.comm.allreduce, float(value), self.MPI.MAX))

    def allgather(self, obj) -> list:
        """Every rank's (small, picklable) ``obj``, in rank order."""
        return self._timed(self.comm.allgather, obj)

    def bcast(self, obj, root: int = 0):
        """``obj`` of rank ``root`` (small, picklable) on every rank."""
        return self._timed(self.comm.bcast, obj, root)

    def barrier(self) -> None:
        self._timed(self.comm.Barrier)

    # ------------------------------------------------------------- arrays
    def bcast_array(self, array: np.ndarray | None, root: int = 0) -> np.ndarray:
        """Rank ``root``'s ``array`` on every rank (others pass None)."""
        meta = self.bcast(None if array is None else (array.dtype.str, array.shape), root)
        out = (np.ascontiguousarray(array) if self.rank == root
               else np.empty(meta[1], dtype=np.dtype(meta[0])))
        self._timed(self.comm.Bcast, out, root)
        return out

    def send_array(self, array: np.ndarray, dest: int) -> None:
        """Send ``array`` to rank ``dest`` (its dtype and shape first)."""
        a = np.ascontiguousarray(array)
        self._timed(self.comm.send, (a.dtype.str, a.shape), dest)
        self._timed(self.comm.Send, a, dest)

    def recv_array(self, source: int) -> np.ndarray:
        """An array :meth:`send_array` sent from rank ``source``."""
        dtype, shape = self._timed(self.comm.recv, None, source)
        out = np.empty(shape, dtype=np.dtype(dtype))
        self._timed(self.comm.Recv, out, source)
        return out

    def allgatherv(self, array: np.ndarray, counts=None, out: np.ndarray | None = None
                   ) -> np.ndarray:
        """Every rank's 1-D ``array`` concatenated in rank order (``counts``: the lengths,
        when every rank knows them; else they are gathered first), into ``out`` when
        given; ``array`` may be ``out``'s own part already (in place)."""
        a = np.ascontiguousarray(array)
        if counts is None:
            counts = np.array(self.allgather(int(a.size)), dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        if out is None:
            out = np.empty(int(counts.sum()), dtype=a.dtype)
        displs = np.concatenate(([0], np.cumsum(counts)[:-1]))
        if self.window is not None and \
                int(counts.max()) * a.itemsize >= window.MIN_BYTES:
            self._timed(self.window.allgatherv, a, out, counts, displs)
            self.window_moves += 1
            return out
        mine = a
        at = int(displs[self.rank])
        if np.shares_memory(a, out[at:at + a.size]):
            mine = self.MPI.IN_PLACE
        self._timed(self.comm.Allgatherv, mine,
                    [out, counts, displs, _mpi_type(self.MPI, out.dtype)])
        return out

    def alltoall_counts(self, send_counts: np.ndarray) -> np.ndarray:
        """What every rank will send to this one, from what this one sends to each."""
        send = np.ascontiguousarray(send_counts, dtype=np.int64)
        recv = np.empty_like(send)
        self._timed(self.comm.Alltoall, send, recv)
        return recv

    def alltoallv(self, send: np.ndarray, send_counts, recv_counts,
                  out: np.ndarray | None = None) -> np.ndarray:
        """``MPI_Alltoallv``: ``send`` holds the entries for rank 0, then rank 1, ...
        (``send_counts`` each); returns (or fills ``out`` with) what the ranks sent here,
        in rank order (``recv_counts`` each)."""
        sc = np.asarray(send_counts, dtype=np.int64)
        rc = np.asarray(recv_counts, dtype=np.int64)
        if out is None:
            out = np.empty(int(rc.sum()), dtype=send.dtype)
        sd = np.concatenate(([0], np.cumsum(sc)[:-1]))
        rd = np.concatenate(([0], np.cumsum(rc)[:-1]))
        if self.window is not None:
            # every rank's byte displacements and size: the same choice on every rank
            meta = np.empty((self.size, self.size + 1), dtype=np.int64)
            mine = np.concatenate((sd * send.itemsize, [int(sc.sum()) * send.itemsize]))
            self._timed(self.comm.Allgather, mine, meta)
            if int(meta[:, -1].max()) >= window.MIN_BYTES:
                self._timed(self.window.alltoallv, send, meta, out, rc, rd)
                self.window_moves += 1
                return out
        typ = _mpi_type(self.MPI, send.dtype)
        self._timed(self.comm.Alltoallv, [send, sc, sd, typ], [out, rc, rd, typ])
        return out

    def route(self, owners: np.ndarray, *arrays: np.ndarray) -> tuple:
        """Send entry ``i`` of every array to rank ``owners[i]``; returns the entries this
        rank received, in rank order (one ``MPI_Alltoallv`` per array)."""
        return self.route_grouped(*self.group_by_rank(owners, *arrays))

    def group_by_rank(self, owners: np.ndarray, *arrays: np.ndarray) -> tuple:
        """``(counts, grouped arrays)``: the entries of every array ordered by the rank
        ``owners[i]`` they go to (stable), and how many go to each rank; no MPI call, so
        a thread may prepare the next round while this one moves."""
        # a radix sort where the ranks fit a byte (numpy sorts 8-bit keys in one pass)
        key = owners.astype(np.uint8) if self.size <= 256 else owners
        order = np.argsort(key, kind="stable")
        del key
        counts = np.bincount(owners, minlength=self.size).astype(np.int64)
        return (counts,) + tuple(np.ascontiguousarray(a[order]) for a in arrays)

    def route_grouped(self, counts: np.ndarray, *grouped: np.ndarray) -> tuple:
        """:meth:`route` of arrays :meth:`group_by_rank` ordered (collective)."""
        recv = self.alltoall_counts(counts)
        return tuple(self.alltoallv(a, counts, recv) for a in grouped)

    # ------------------------------------------------------------- errors
    def agree(self, error: BaseException | None) -> None:
        """Stop every rank together when any failed: a collective that raises, on every
        rank, a :class:`RankFailure` with the first failing rank's message (naming that
        rank unless every rank failed alike), or returns when none failed.

        Parameters
        ----------
        error : exception or None
            This rank's failure (a :class:`~finepar.errors.FineParError`), or None.
        """
        mine = None if error is None else (str(error), isinstance(error, BuildError))
        every = self.allgather(mine)
        for rank, got in enumerate(every):
            if got is not None:
                message, build = got
                alike = all(e == got for e in every)  # every rank met the same: no rank named
                where = "" if alike else f"rank {rank}: "
                raise RankFailure(where + message, rank, build) from (
                    error if rank == self.rank else None)

    def abort(self, code: int = 1) -> None:
        """End every rank at once (after an error that leaves the others waiting)."""
        self.comm.Abort(code)


def _mpi_type(mpi, dtype: np.dtype):
    """The MPI datatype of a numpy dtype (mpi4py's table)."""
    from mpi4py.util.dtlib import from_numpy_dtype
    return from_numpy_dtype(np.dtype(dtype))


def checked(comm: Communicator, fn, /, *args, **kwargs):
    """Call ``fn`` on every rank and :meth:`~Communicator.agree` on the outcome: its value
    where every rank succeeded, else a :class:`RankFailure` on all of them."""
    error = value = None
    try:
        value = fn(*args, **kwargs)
    except FineParError as exc:
        error = exc
    comm.agree(error)
    return value
