"""Exchanges between the ranks' GPUs that the GPUs copy themselves (DESIGN.md §3, "mpi").

Where every rank runs on one host and every rank's GPU can share its memory
(:mod:`finepar.device.peer`), a rank's halo is packed into device memory the other ranks
have mapped, and each rank copies what it receives straight out of its peers' memory
into its own, GPU to GPU (NVLink on the lent machines): no host memory, no MPI message
but two barriers. Elsewhere halos go through page-locked host memory and MPI
(:mod:`finepar.mpi.halo`). On the emulated pair (PoCL), ``--exchange gpu`` runs the same
path with the copies emulated through an MPI shared window, so its layout is tested on
every machine.

Paths (:func:`choose`): ``gpu`` (CUDA peer copies), ``emulated`` (the same layout through
host memory; asked for on PoCL only), ``host`` (the pinned host path of
:class:`~finepar.mpi.halo.RankHalo`).
"""

from __future__ import annotations

import os
import socket
import struct

import numpy as np

from ..device import alloc, cl
from ..device.peer import PeerMemory, PeerUnavailable, PeerView, driver, unavailable
from ..errors import UsageError
from .window import NodeWindow

#: ``--exchange``'s choices.
MODES = ("auto", "gpu", "host")


def choose(comm, side, in_plan: bool = True) -> tuple[str, str]:
    """The path this run's exchanges take, and why (collective: every rank gets the same).

    Parameters
    ----------
    comm : Communicator
        Its ``exchange`` is the mode asked for (:data:`MODES`).
    side : Side
        The GPU of the rank's pair.
    in_plan : bool
        Whether the rank's plan runs rows on that GPU. ``auto`` takes the GPU path only
        where every rank's does (else the halo would cross the host twice more); ``gpu``
        takes it anyway.

    Raises
    ------
    UsageError
        ``exchange="gpu"`` where some rank's GPU cannot share its memory and the ranks
        are not all on an emulated pair.
    """
    mode = comm.exchange
    if mode == "host" or comm.size == 1:
        return "host", "asked for" if mode == "host" else "one rank"
    if comm.node is None:
        return "host", "the ranks run on more than one host"
    why = None if in_plan or mode == "gpu" else "its plan runs on the CPU alone"
    mine = (why or unavailable(side), side.host_memory)
    every = comm.allgather(mine)
    bad = [(r, why) for r, (why, _) in enumerate(every) if why]
    if not bad:
        return "gpu", "every rank's GPU maps the others' memory"
    rank, why = bad[0]
    if mode == "auto":
        return "host", f"rank {rank}: {why}"
    if all(emulated for _, emulated in every):
        return "emulated", "the pair is emulated: copies through host memory"
    raise UsageError(f"--exchange gpu: rank {rank}: {why}")


class PeerExchange:
    """A send and a receive region on this rank's GPU, and the peers' send regions
    mapped for it (collective to make: every rank of the host, in rank order).

    Parameters
    ----------
    comm : Communicator
        All its ranks on one host (``comm.node`` not None).
    side : Side
        The rank's GPU side: kernels write :attr:`send` and read :attr:`recv` there.
    send_bytes, recv_bytes : int
        Sizes of the two regions.
    path : str
        ``gpu`` or ``emulated`` (:func:`choose`).

    Attributes
    ----------
    send, recv : pyopencl.Buffer
        The regions, on ``side``.

    Raises
    ------
    PeerUnavailable
        On every rank, where some rank failed to allocate, export or map (the caller
        falls back to the host path).
    """

    def __init__(self, comm, side, send_bytes: int, recv_bytes: int, path: str):
        self.comm, self.side, self.path = comm, side, path
        self.mems, self.views, self.window = [], {}, None
        if path == "emulated":
            self.send = alloc(side, nbytes=send_bytes)
            self.recv = alloc(side, nbytes=recv_bytes)
            self.window = NodeWindow(comm.MPI, comm.node)
            self.window.ensure(max(int(comm.maximum(send_bytes)), 1))
            self._host = np.empty(max(int(recv_bytes), 1), np.uint8)
            self._sent = int(send_bytes)
            return
        self._agree(self._allocate, send_bytes, recv_bytes)
        try:
            got = _share(comm.node, self.mems[0].fd, self.mems[0].size)
        except PeerUnavailable:
            self.close()
            raise
        self._agree(self._map, got)

    def _allocate(self, send_bytes: int, recv_bytes: int) -> None:
        for nbytes in (send_bytes, recv_bytes):
            self.mems.append(PeerMemory(self.side, nbytes))
        self.send, self.recv = (m.buffer for m in self.mems)

    def _map(self, got: dict) -> None:
        for rank, (fd, size) in got.items():
            self.views[rank] = PeerView(fd, size)

    def _agree(self, step, *args) -> None:
        """Run ``step`` here; where it failed on any rank, free everything on every rank
        and raise :class:`PeerUnavailable` with the first failure."""
        try:
            step(*args)
            mine = None
        except PeerUnavailable as exc:
            mine = str(exc)
        every = self.comm.allgather(mine)
        for rank, why in enumerate(every):
            if why:
                self.close()
                raise PeerUnavailable(f"rank {rank}: {why}")

    def move(self, pulls: list[tuple[int, int, int, int]]) -> None:
        """Copy each ``(rank, src, dst, nbytes)`` of ``pulls`` from byte ``src`` of
        ``rank``'s send region into byte ``dst`` of this rank's receive region
        (collective). Every write to :attr:`send` must be finished; on return the
        receive region holds the copies for this rank's queue, and every peer has
        finished copying out of this rank's send region."""
        node = self.comm.node
        if self.window is not None:
            self._move_emulated(pulls)
            return
        node.Barrier()
        drv = driver()
        dst0 = self.mems[1].ptr
        for rank, src, dst, nbytes in pulls:
            drv.copy(dst0 + dst, self.views[rank].ptr + src, nbytes)
        drv.synchronize()
        node.Barrier()

    def _move_emulated(self, pulls) -> None:
        win, mod, queue = self.window, cl(), self.side.queue
        if self._sent:
            mod.enqueue_copy(queue, win.slots[win.rank][:self._sent], self.send,
                             is_blocking=True)
        win.fence()
        for rank, src, dst, nbytes in pulls:
            self._host[dst:dst + nbytes] = win.slots[rank][src:src + nbytes]
        win.fence()
        if pulls:
            mod.enqueue_copy(queue, self.recv, self._host, is_blocking=True)

    def close(self) -> None:
        """Free the regions, the peers' mappings and (emulated) the window (collective
        where emulated)."""
        for view in self.views.values():
            view.close()
        for mem in self.mems:
            mem.close()
        self.views, self.mems = {}, []
        if self.window is not None:
            self.window.free()
            self.window = None


def _share(node, fd: int, size: int) -> dict[int, tuple[int, int]]:
    """Send ``fd`` (memory of ``size`` bytes) to every other rank of ``node`` and receive
    theirs, over Unix sockets in the abstract namespace (``SCM_RIGHTS``; MPI cannot carry
    a descriptor): ``{rank: (fd, size)}`` (collective).

    Raises
    ------
    PeerUnavailable
        On every rank, where some rank could not listen for the descriptors.
    """
    rank, ranks = node.Get_rank(), node.Get_size()
    token = node.bcast(os.urandom(8).hex() if rank == 0 else None, root=0)
    name = "\0finepar-peers-{}-{}".format
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        server.bind(name(token, rank))
        server.listen(ranks)
        why = None
    except OSError as exc:
        why = f"a Unix socket for the memory's descriptors: {exc}"
    for peer, failed in enumerate(node.allgather(why)):  # every rank listens, or none goes on
        if failed:
            server.close()
            raise PeerUnavailable(f"rank {peer}: {failed}")
    for peer in range(ranks):
        if peer != rank:
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as out:
                out.connect(name(token, peer))
                socket.send_fds(out, [struct.pack("<qq", rank, size)], [fd])
    got = {}
    for _ in range(ranks - 1):
        conn, _ = server.accept()
        with conn:
            msg, fds, _, _ = socket.recv_fds(conn, 16, 1)
        peer, peer_size = struct.unpack("<qq", msg)
        got[peer] = (fds[0], peer_size)
    server.close()
    node.Barrier()
    return got
