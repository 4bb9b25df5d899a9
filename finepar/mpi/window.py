"""Collectives through a shared-memory window when every rank runs on one host
(DESIGN.md §3, "mpi").

MPICH moves a large message between two processes of one host through its
shared-memory cells, one 2-3 GB/s stream at a time (measured on the two-H100 machine:
54 MB of PageRank's halo took 18.7 ms an ``MPI_Alltoallv``). An MPI-3 shared window
(``MPI_Win_allocate_shared``, the "MPI + MPI" model of Hoefler et al., Computing 2013)
lets a rank copy its peers' data straight out of their memory instead: each rank
writes what it sends into its own slot of the window, the ranks synchronise, and each
copies what it receives out of its peers' slots with the host's threads, then the ranks
synchronise again before a slot is reused. MPI still allocates the memory and orders the
ranks; no transport of our own.
"""

from __future__ import annotations

import numpy as np

from ..parallel import copy_spans

#: Messages (bytes one rank sends in one collective) below this go through MPI's own
#: collectives: for them the two synchronisations cost more than a copy saves.
MIN_BYTES = 1 << 20


def as_bytes(a: np.ndarray) -> np.ndarray:
    """A contiguous array's bytes (uint8 view, no copy)."""
    return a.reshape(-1).view(np.uint8)


class NodeWindow:
    """One slot a rank in a shared-memory window over the ranks of one host; grows
    when a collective needs more.

    Parameters
    ----------
    mpi : module
        mpi4py's ``MPI``.
    local : mpi4py.MPI.Comm
        The ranks of this host (``COMM_TYPE_SHARED``), ranked as the run's ranks.
    """

    def __init__(self, mpi, local):
        self.MPI, self.local = mpi, local
        self.rank, self.size = local.Get_rank(), local.Get_size()
        self.win, self.nbytes, self.slots = None, 0, []

    def ensure(self, nbytes: int) -> list[np.ndarray]:
        """Every rank's slot (uint8, at least ``nbytes`` each). Collective: every rank
        must pass the same ``nbytes``."""
        if self.win is None or self.nbytes < nbytes:
            self.free()
            size = max(int(nbytes), 1 << 20)
            self.win = self.MPI.Win.Allocate_shared(size, 1, comm=self.local)
            self.win.Lock_all(self.MPI.MODE_NOCHECK)
            self.nbytes = size
            self.slots = [np.frombuffer(self.win.Shared_query(r)[0], dtype=np.uint8, count=size)
                          for r in range(self.size)]
        return self.slots

    def fence(self) -> None:
        """Every rank's stores to its slot are visible to the others, and every rank got
        here (the unified model's sync, barrier, sync)."""
        self.win.Sync()
        self.local.Barrier()
        self.win.Sync()

    def free(self) -> None:
        if self.win is not None:
            self.slots = []
            self.win.Unlock_all()
            self.win.Free()
            self.win, self.nbytes = None, 0

    def _move(self, mine: np.ndarray, slot_bytes: int, wanted: list) -> None:
        """The exchange both collectives make (collective): ``mine`` into this rank's slot
        (every slot at least ``slot_bytes``), sync, then each ``(dst, rank, offset)`` of
        ``wanted`` copied out of that rank's slot from byte ``offset``, sync again."""
        slots = self.ensure(slot_bytes)
        mb = as_bytes(mine)
        copy_spans([(slots[self.rank][:mb.size], mb)])
        self.fence()
        copy_spans([(dst, slots[r][at:at + dst.size]) for dst, r, at in wanted])
        self.fence()

    def alltoallv(self, send: np.ndarray, meta: np.ndarray, out: np.ndarray,
                  recv_counts: np.ndarray, recv_displs: np.ndarray) -> None:
        """``MPI_Alltoallv`` through the window (collective).

        Parameters
        ----------
        send : ndarray
            What this rank sends, rank 0's entries first.
        meta : ndarray of int64, shape (P, P + 1)
            Row ``r``: rank ``r``'s send displacements in bytes, then its send size in
            bytes (an ``MPI_Allgather`` of them).
        out, recv_counts, recv_displs
            As ``MPI_Alltoallv``'s receiving side (counts and displacements in entries).
        """
        item, ob = out.dtype.itemsize, as_bytes(out)
        wanted = [(ob[int(recv_displs[r]) * item:int(recv_displs[r] + recv_counts[r]) * item],
                   r, int(meta[r, self.rank])) for r in range(self.size) if recv_counts[r]]
        self._move(send, int(meta[:, -1].max()), wanted)

    def allgatherv(self, mine: np.ndarray, out: np.ndarray, counts: np.ndarray,
                   displs: np.ndarray) -> None:
        """``MPI_Allgatherv`` through the window (collective); ``mine`` may already be
        ``out``'s part of this rank (in place), then it is not copied there."""
        item, ob, mb = out.dtype.itemsize, as_bytes(out), as_bytes(mine)
        wanted = [(ob[int(displs[r]) * item:int(displs[r] + counts[r]) * item], r, 0)
                  for r in range(self.size) if counts[r]]
        wanted = [w for w in wanted if not (w[1] == self.rank and np.shares_memory(w[0], mb))]
        self._move(mine, int(counts.max()) * item, wanted)
