"""Exchanges between the ranks' GPUs that the GPUs copy themselves (DESIGN.md §3, "mpi").

Where every rank runs on one host and every rank's GPU can share its memory
(:mod:`finepar.device.peer`), a rank's halo is packed into device memory the other ranks
have mapped, and each rank copies what it receives straight out of its peers' memory
into its own, GPU to GPU (NVLink on the lent machines): no host memory, no MPI message
but a barrier before the copies. Elsewhere halos go through page-locked host memory and MPI
(:mod:`finepar.mpi.halo`). On the emulated pair (PoCL), ``--exchange gpu`` runs the same
path with the copies emulated through an MPI shared window, so its layout is tested on
every machine.

BFS's level merges take the same path
(:meth:`finepar.mpi.engine.DistEngine.peer_exchange`).

Paths (:func:`choose`): ``gpu`` (CUDA peer copies), ``emulated`` (the same layout through
host memory; asked for on PoCL only), ``host`` (the pinned host path of
:class:`~finepar.mpi.halo.RankHalo`). A failure on the way on any rank (an allocation, an
import, a mapping, a descriptor that does not arrive within :data:`SOCKET_TIMEOUT_S`) sends
every rank's exchanges through the host, the reason in the report (``--exchange gpu``: an
error on every rank instead).
"""

from __future__ import annotations

import os
import socket
import struct

import numpy as np

from ..device import alloc, cl
from ..device.peer import PeerMemory, PeerUnavailable, PeerView, driver, release, unavailable
from ..errors import UsageError
from .window import NodeWindow

#: ``--exchange``'s choices.
MODES = ("auto", "gpu", "host")


def choose(comm, side, in_plan: bool = True, emulated: bool = False) -> tuple[str, str]:
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
    emulated : bool
        The rank's pair is emulated (PoCL plays the GPU): ``gpu`` then emulates the path.

    Raises
    ------
    RankFailure
        On every rank, with a usage error's message: ``exchange="gpu"`` where some rank's
        GPU cannot share its memory and the ranks are not all on emulated pairs.
    """
    mode = comm.exchange
    if mode == "host" or comm.size == 1:
        return "host", "asked for" if mode == "host" else "one rank"
    if comm.node is None:
        if mode == "gpu":
            comm.agree(UsageError("--exchange gpu: the ranks run on more than one host"))
        return "host", "the ranks run on more than one host"
    why = None if in_plan or mode == "gpu" else "its plan runs on the CPU alone"
    every = comm.allgather((why or unavailable(side), bool(emulated)))
    bad = [(r, why) for r, (why, _) in enumerate(every) if why]
    if not bad:
        return "gpu", "every rank's GPU maps the others' memory"
    release()  # CUDA's context, if this rank's check made one, holds device memory
    rank, why = bad[0]
    if mode == "auto":
        return "host", f"rank {rank}: {why}"
    if all(emulated for _, emulated in every):
        return "emulated", "the pair is emulated: copies through host memory"
    comm.agree(UsageError(f"--exchange gpu: rank {rank}: {why}"))  # every rank alike
    raise AssertionError("agree returns only where no rank failed")


class PeerExchange:
    """A send and a receive region on this rank's GPU, and the peers' send regions
    mapped for it (collective to make: every rank of the host, in rank order).

    The send region is double: exchanges alternate between its two halves (every rank
    in step, as every exchange is collective), so a rank may pack its next exchange
    while a slower peer still copies out of the last one, and :meth:`move` needs no
    barrier after the copies: a half is written again only two exchanges later, after
    a synchronisation every peer enters once its copies are done. Writers address the
    current half by its byte offset :attr:`at` (no sub-buffers: the region is one
    buffer, imported or not).

    Parameters
    ----------
    comm : Communicator
        All its ranks on one host (``comm.node`` not None).
    side : Side
        The rank's GPU side: kernels write :attr:`send` and read :attr:`recv` there.
    send_bytes, recv_bytes : int
        Sizes of the two regions (the send region's, each half).
    path : str
        ``gpu`` or ``emulated`` (:func:`choose`).

    Attributes
    ----------
    send : pyopencl.Buffer
        The send region, on ``side``: both halves.
    at : int
        Byte offset in :attr:`send` of the half the next exchange packs into.
    halves : list of int
        Every rank's half, in bytes (a peer's halves lie at its own offsets).
    recv : pyopencl.Buffer
        The receive region, on ``side``.

    Raises
    ------
    PeerUnavailable
        On every rank, where some rank failed to allocate, export or map (the caller
        falls back to the host path).
    """

    def __init__(self, comm, side, send_bytes: int, recv_bytes: int, path: str):
        self.comm, self.side, self.path = comm, side, path
        self.mems, self.views, self.window = [], {}, None
        self.half = -(-max(int(send_bytes), 1) // 64) * 64
        self.halves = [int(h) for h in comm.allgather(self.half)]  # every rank's: its layout
        self.parity = 0
        if path == "emulated":
            self.send = alloc(side, nbytes=2 * self.half)
            self.recv = alloc(side, nbytes=recv_bytes)
            self.window = NodeWindow(comm.MPI, comm.node)
            self.window.ensure(2 * max(self.halves))
            self._host = np.empty(max(int(recv_bytes), 1), np.uint8)
            return
        self._agree(self._allocate, recv_bytes)
        try:
            got = _share(comm.node, self.mems[0].fd, self.mems[0].size)
        except PeerUnavailable:
            self.close()
            raise
        self._agree(self._map, got)

    @property
    def at(self) -> int:
        return self.parity * self.half

    def peer_at(self, rank: int) -> int:
        """Byte offset in ``rank``'s send region of the half this exchange reads (each
        rank's halves are as long as its own sends)."""
        return self.parity * self.halves[rank]

    def _allocate(self, recv_bytes: int) -> None:
        self.mems.append(PeerMemory(self.side, 2 * self.half))
        self.mems.append(PeerMemory(self.side, recv_bytes))
        self.mems[1].forget_descriptor()  # the receive region is this rank's alone
        self.send, self.recv = (m.buffer for m in self.mems)

    def _map(self, got: dict) -> None:
        pending = dict(got)
        try:
            for rank, (fd, size) in got.items():
                del pending[rank]
                self.views[rank] = PeerView(fd, size)  # closes fd
        finally:
            for fd, _ in pending.values():
                os.close(fd)

    def _agree(self, step, *args) -> None:
        """Run ``step`` here; where it failed on any rank, free everything on every rank
        and raise :class:`PeerUnavailable` with the first failure (any error of the
        route: the run then goes through the host)."""
        try:
            step(*args)
            mine = None
        except Exception as exc:  # noqa: BLE001 - agreed on, then the host path
            mine = str(exc) if isinstance(exc, PeerUnavailable) else \
                f"{type(exc).__name__}: {exc}"
        every = self.comm.allgather(mine)
        for rank, why in enumerate(every):
            if why:
                self.close()
                raise PeerUnavailable(f"rank {rank}: {why}")

    def move(self, pulls: list[tuple[int, int, int, int]], barrier: bool = True) -> None:
        """Copy each ``(rank, src, dst, nbytes)`` of ``pulls`` from byte ``src`` of
        ``rank``'s :attr:`send` into byte ``dst`` of this rank's receive region
        (collective), then turn to the other half of the send region.

        Every write to :attr:`send` must be finished, on every rank: ``barrier=False``
        where a collective since those writes has made sure of it (the sums' allgather
        of a row operation, :meth:`finepar.mpi.halo.RankHalo.land`). On return the
        receive region holds the copies for this rank's queue."""
        if self.window is not None:
            self._move_emulated(pulls)
        else:
            if barrier:
                self.comm.node.Barrier()
            if pulls:  # nothing to copy: no call into CUDA
                drv = driver()
                drv.current_again()
                dst0 = self.mems[1].ptr
                for rank, src, dst, nbytes in pulls:
                    drv.copy(dst0 + dst, self.views[rank].ptr + self.peer_at(rank) + src,
                             nbytes)
                drv.synchronize()
        self.parity ^= 1

    def _move_emulated(self, pulls) -> None:
        """:meth:`move` through the window: each rank's whole send region (both halves,
        the layout the GPUs' copies address) into its slot, the pulls out of the peers'."""
        win, mod, queue = self.window, cl(), self.side.queue
        mod.enqueue_copy(queue, win.slots[win.rank][:2 * self.half], self.send,
                         is_blocking=True)
        win.fence()
        for rank, src, dst, nbytes in pulls:
            at = self.peer_at(rank) + src
            self._host[dst:dst + nbytes] = win.slots[rank][at:at + nbytes]
        win.fence()
        if pulls:
            mod.enqueue_copy(queue, self.recv, self._host, is_blocking=True)

    def close(self, collective: bool = True) -> None:
        """Free the regions and the peers' mappings; the emulated path's window too where
        ``collective`` (every rank calls it then: after an error on one rank, pass False
        and leave the window to MPI's end)."""
        for view in self.views.values():
            view.close()
        for mem in self.mems:
            mem.close()
        self.views, self.mems = {}, []
        if self.window is not None and collective:
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
    server.settimeout(SOCKET_TIMEOUT_S)
    got: dict = {}
    try:
        server.bind(name(token, rank))
        server.listen(ranks)
        why = None
    except OSError as exc:
        why = f"a Unix socket for the memory's descriptors: {exc}"
    _agree_or_close(node, why, server, got)  # every rank listens, or none goes on
    try:
        for peer in range(ranks):
            if peer != rank:
                with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as out:
                    out.settimeout(SOCKET_TIMEOUT_S)
                    out.connect(name(token, peer))
                    socket.send_fds(out, [struct.pack("<qq", rank, size)], [fd])
        for _ in range(ranks - 1):
            conn, _ = server.accept()
            with conn:
                conn.settimeout(SOCKET_TIMEOUT_S)
                msg, fds, _, _ = socket.recv_fds(conn, 16, 1)
            if len(msg) != 16 or len(fds) != 1:
                raise OSError("a peer's message came without its descriptor")
            peer, peer_size = struct.unpack("<qq", msg)
            got[peer] = (fds[0], peer_size)
    except OSError as exc:
        why = f"sending the memory's descriptors: {exc}"
    _agree_or_close(node, why, server, got)
    server.close()
    return got


#: Seconds a rank waits for a peer's descriptor before the exchange goes through the host.
SOCKET_TIMEOUT_S = 60.0


def _agree_or_close(node, why: str | None, server, got: dict) -> None:
    """Every rank's ``why`` (collective); where any is set, close ``server`` and the
    descriptors received, and raise :class:`PeerUnavailable` with the first."""
    for peer, failed in enumerate(node.allgather(why)):
        if failed:
            server.close()
            for fd, _ in got.values():
                os.close(fd)
            raise PeerUnavailable(f"rank {peer}: {failed}")
