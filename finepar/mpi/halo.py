"""The halo between ranks: vector entries a rank's rows read from other ranks' rows
(DESIGN.md §3, "mpi").

Once per engine, each rank lists the columns its rows read that other ranks own and
asks their owners for them (``MPI_Alltoallv`` of the ids); each owner orders what it
sends by asker and, within an asker, by the side (CPU or GPU share) whose rows hold
the entries, and tells the askers that order. Each exchange then:

1. packs the asked entries on the side that wrote them (``gather`` of
   ``opencl/skeleton/vector.cl``) and copies them into page-locked host memory (a mapped
   ``ALLOC_HOST_PTR`` buffer: the device-to-host DMA of NVIDIA's driver);
2. moves them with one ``MPI_Alltoallv`` from pinned memory to pinned memory;
3. copies what arrived to every side of the rank and unpacks it (``scatter``).

Entries are moved as 32-bit words whatever the vector's type. Where a device keeps the
vector in its renumbered columns (:mod:`finepar.engine.columns`: PageRank's contributions
on a device whose columns go hottest first), that device packs and unpacks entry ``v`` at
``perm[v]`` (index lists renumbered once, on first use); what crosses the ranks is in the
input's numbering. Frontier bitmaps are merged separately
(:meth:`finepar.mpi.engine.DistEngine.merge_bits`).
"""

from __future__ import annotations

import time

import numpy as np

from ..device import PinnedHost
from ..device import alloc, cl
from ..engine.binding import call
from ..parallel import chunked
from ..device.peer import PeerUnavailable
from ..errors import UsageError
from .comm import Communicator
from .partition import RowPartition
from .peers import PeerExchange, choose


def _round_up(x: int, m: int = 64) -> int:
    return -(-int(x) // m) * m


class RankHalo:
    """Who sends which vector entries to whom, the buffers that move them, and what the
    exchanges cost.

    Parameters
    ----------
    engine : DistEngine
        Its matrix holds this rank's rows; its plan says which side holds each row.
    comm : Communicator
    partition : RowPartition

    Attributes
    ----------
    send_counts, recv_counts : ndarray of int64, shape (P,)
        Entries sent to / received from each rank per exchange.
    stats : dict
        ``exchanges``, ``pipelined`` (those packed behind a row operation's kernels:
        :meth:`pack`), ``seconds`` (wall, packing to unpacking; a pipelined one: its
        packing's enqueue, copies and unpacking's enqueue), ``mpi_seconds`` (the
        ``MPI_Alltoallv``; on the GPU path its barriers and the GPUs' copies),
        ``pack_kernel_seconds`` and ``unpack_kernel_seconds`` (the device's time in
        the packing and unpacking kernels, from their events: :meth:`harvest`),
        ``bytes_sent``, ``bytes_received`` (totals over the exchanges).
    path, path_reason : str
        How the exchanges go (``gpu``, ``emulated``, ``host``:
        :func:`~finepar.mpi.peers.choose`) and why.
    order : str
        How the entries a rank receives from each owner are ordered: ``gpu columns``
        (by their place in this rank's GPU's renumbered columns) or ``ids``.
    pipelined : bool
        A row operation's exchange is packed behind its kernels and landed after its
        sums' collective (:meth:`pack`, :meth:`land`): the GPU path, every rank running
        its rows on its GPU's queue alone.
    """

    def __init__(self, engine, comm: Communicator, partition: RowPartition):
        self.engine, self.comm = engine, comm
        self._timed: list = []  # (stats key, event) of packing and unpacking kernels
        t0 = time.perf_counter()
        cols = np.flatnonzero(_read_columns(engine.matrix))
        owners = partition.owner(cols)
        far = owners != comm.rank
        need, need_owner = cols[far], owners[far]
        order = np.argsort(need_owner, kind="stable")
        need = self._receiver_order(need[order].astype(np.int32), need_owner[order])
        self.recv_counts = np.bincount(need_owner, minlength=comm.size).astype(np.int64)
        self.send_counts = comm.alltoall_counts(self.recv_counts)
        asked = comm.alltoallv(need, self.recv_counts, self.send_counts)
        asker = np.repeat(np.arange(comm.size), self.send_counts)
        side = self._side_codes(asked)
        order = np.lexsort((side, asker))
        asked, side, asker = asked[order], side[order], asker[order]
        self.recv_idx = comm.alltoallv(asked, self.send_counts, self.recv_counts)
        self._buffers(asked, side, asker)
        self._peers()
        self.split = row_split(engine.matrix, partition.mask(comm.rank))
        self.stats = {"exchanges": 0, "pipelined": 0, "seconds": 0.0, "mpi_seconds": 0.0,
                      "pack_kernel_seconds": 0.0, "unpack_kernel_seconds": 0.0,
                      "bytes_sent": 0, "bytes_received": 0,
                      "setup_seconds": time.perf_counter() - t0}

    def _receiver_order(self, need: np.ndarray, owner: np.ndarray) -> np.ndarray:
        """``need`` (int32, grouped by ``owner``) ordered within each owner's group by
        where this rank's GPU keeps each entry in its renumbered columns, so that its
        unpacking writes in ascending order (owners keep the order they are asked in);
        as it is (ascending ids) where the GPU's columns keep their numbers."""
        eng = self.engine
        c = getattr(eng, "columns", {}).get("gpu")
        self.order = "ids"
        if c is None or not c.applied or not need.size:
            return need
        self.order = "gpu columns"
        at = c.perm_host(eng.pair.side("gpu"))[need].astype(np.int64)
        return need[np.argsort((owner.astype(np.int64) << 32) | at)]

    def _side_codes(self, rows: np.ndarray) -> np.ndarray:
        """0 where the CPU's share holds a row, 1 where the GPU's does (one code when one
        buffer holds every row: shared memory or one role)."""
        eng = self.engine
        if eng.pair.shared or len(eng.roles) < 2:
            return np.zeros(rows.size, dtype=np.int8)
        return eng.plan.owner()[rows]

    def _buffers(self, asked: np.ndarray, side: np.ndarray, asker: np.ndarray) -> None:
        """Device index lists per side, the pinned host buffers, and where each side's
        packed entries go in the send buffer."""
        eng, P = self.engine, self.comm.size
        roles = (("cpu", "gpu") if not (eng.pair.shared or len(eng.roles) < 2)
                 else (eng.roles[0],))
        host_side = eng.pair.side("gpu" if "gpu" in eng.roles else eng.roles[0])
        self._pinned = (PinnedHost(host_side, np.zeros(max(asked.size, 1), np.uint32)),
                        PinnedHost(host_side, np.zeros(max(self.recv_idx.size, 1), np.uint32)))
        self.send_host, self.recv_host = (p.host for p in self._pinned)
        starts = np.concatenate(([0], np.cumsum(self.send_counts)[:-1]))
        done = np.zeros(P, dtype=np.int64)  # entries of each asker's segment placed so far
        self.senders = []
        for code, role in enumerate(roles):
            pick = side == code if len(roles) == 2 else np.ones(asked.size, bool)
            idx = asked[pick]
            if not idx.size:
                continue
            per = np.bincount(asker[pick], minlength=P).astype(np.int64)
            src = np.concatenate(([0], np.cumsum(per)[:-1]))
            runs = [(int(src[a]), int(starts[a] + done[a]), int(per[a]))
                    for a in range(P) if per[a]]
            done += per
            s = eng.pair.side(role)
            self.senders.append({"role": role, "side": s, "count": int(idx.size), "runs": runs,
                                 "rows": idx, "idx": alloc(s, idx, read_only=True),
                                 "out": alloc(s, nbytes=4 * idx.size)})
        self.receivers = {}
        if self.recv_idx.size:
            for role in dict.fromkeys(eng.roles):
                s = eng.pair.side(role)
                key = "shared" if eng.pair.shared else role
                if key not in self.receivers:
                    self.receivers[key] = {"side": s, "role": role, "rows": self.recv_idx,
                                           "idx": alloc(s, self.recv_idx, read_only=True),
                                           "in": alloc(s, nbytes=4 * self.recv_idx.size)}

    def _peers(self) -> None:
        """Whether the exchanges go GPU to GPU (:mod:`finepar.mpi.peers`; collective), and
        if so the regions and, per rank this one receives from, the bytes it copies:
        ``(rank, offset in that rank's send region, offset here, bytes)``."""
        eng, comm = self.engine, self.comm
        side = eng.pair.side("gpu")
        self.path, self.path_reason = choose(comm, side, "gpu" in eng.roles, eng.pair.emulated)
        self.peers, self.pipelined, self._packed = None, False, None
        if self.path == "host":
            return
        total = int(self.send_counts.sum())
        try:
            self.peers = PeerExchange(comm, side, 4 * total, 4 * int(self.recv_counts.sum()),
                                      self.path)
        except PeerUnavailable as exc:  # raised on every rank alike
            if comm.exchange == "gpu":
                comm.agree(UsageError(f"--exchange gpu: {exc}"))
            self.path, self.path_reason = "host", str(exc)
            return
        for snd in self.senders:  # on the GPU's context; alone: it packs in place
            snd["near"] = snd["side"].context == side.context
            snd["direct"] = snd["near"] and snd["count"] == total
        # one queue for every role: the unpacking, left in flight, is in order before the
        # next step's kernels (two queues of one context, shared memory, are not)
        mine = all(eng.pair.side(r).queue == side.queue for r in eng.roles)
        self.pipelined = all(comm.allgather(mine))  # every rank, or none: barriers pair up
        starts = np.concatenate(([0], np.cumsum(self.send_counts)[:-1]))
        every = comm.allgather_ints(starts)  # row r: where rank r's part for each rank starts
        at = np.concatenate(([0], np.cumsum(self.recv_counts)[:-1]))
        self.pulls = [(r, 4 * int(every[r, comm.rank]), 4 * int(at[r]),
                       4 * int(self.recv_counts[r]))
                      for r in range(comm.size) if self.recv_counts[r]]

    def close(self, collective: bool = True) -> None:
        """Free the GPU regions of the exchange (see :meth:`PeerExchange.close`)."""
        if self.peers is not None:
            self.peers.close(collective)
            self.peers = None

    def _index(self, end: dict, name: str):
        """The index list of one sender or receiver ``end`` for vector ``name``: its rows,
        or their numbers in the device's renumbered columns where that device keeps
        ``name`` there (made once)."""
        eng, role = self.engine, end["role"]
        if not eng._by_column(name, role):
            return end["idx"]
        if "renumbered" not in end:
            perm = eng.columns[role].perm_host(end["side"])
            end["renumbered"] = alloc(end["side"], np.ascontiguousarray(perm[end["rows"]]),
                                      read_only=True)
        return end["renumbered"]

    def renumbered(self) -> dict:
        """Per role, whether its packed or unpacked entries were moved at renumbered
        positions by some exchange so far."""
        return {e["role"]: "renumbered" in e for e in (*self.senders,
                                                       *self.receivers.values())}

    def entries(self) -> dict:
        """Entries sent and received per exchange."""
        return {"sent": int(self.send_counts.sum()), "received": int(self.recv_counts.sum())}

    def _gather(self, snd: dict, name: str, out, at: int = 0) -> None:
        """Enqueue sender ``snd``'s packing of vector ``name``'s asked entries into
        ``out`` from byte ``at``."""
        eng, s = self.engine, snd["side"]
        gather = eng.pair.kernel(s, ("skeleton/vector.cl",), {"T": "uint"}, "gather_to")
        self._timed.append(("pack_kernel_seconds", call(
            gather, s.queue, (_round_up(snd["count"]),), None, np.int32(snd["count"]),
            self._index(snd, name), eng.buffer(name, snd["role"]), out, np.int32(at // 4))))

    def _scatter(self, rcv: dict, name: str, src):
        """Enqueue receiver ``rcv``'s unpacking of ``src`` into vector ``name``; its
        event."""
        eng, s, count = self.engine, rcv["side"], int(self.recv_idx.size)
        scatter = eng.pair.kernel(s, ("skeleton/vector.cl",), {"T": "uint"}, "scatter")
        ev = call(scatter, s.queue, (_round_up(count),), None, np.int32(count),
                  self._index(rcv, name), src, eng.buffer(name, rcv["role"]))
        self._timed.append(("unpack_kernel_seconds", ev))
        return ev

    def harvest(self, wait: bool = False) -> None:
        """Add the packing and unpacking kernels' device seconds (their profiling
        events) to :attr:`stats`: those finished, or all of them after waiting
        (``wait``)."""
        done, keep = cl().command_execution_status.COMPLETE, []
        for key, ev in self._timed:
            if wait:
                ev.wait()
            if ev.command_execution_status == done:
                self.stats[key] += (ev.profile.end - ev.profile.start) * 1e-9
            else:
                keep.append((key, ev))
        self._timed = keep

    def exchange(self, name: str) -> float:
        """Move vector ``name``'s halo between the ranks now (collective). Returns the
        exchange's wall seconds."""
        self.harvest()
        if self.peers is not None:
            return self._exchange_peers(name)
        mod = cl()
        t0 = time.perf_counter()
        copies = []
        for snd in self.senders:
            s = snd["side"]
            self._gather(snd, name, snd["out"])
            for src, dst, k in snd["runs"]:
                copies.append(mod.enqueue_copy(s.queue, self.send_host[dst:dst + k], snd["out"],
                                               src_offset=4 * src, is_blocking=False))
        for ev in copies:
            ev.wait()
        t1 = time.perf_counter()
        self.comm.alltoallv(self.send_host, self.send_counts, self.recv_counts,
                            out=self.recv_host)
        t2 = time.perf_counter()
        done, count = [], int(self.recv_idx.size)
        for rcv in self.receivers.values():
            mod.enqueue_copy(rcv["side"].queue, rcv["in"], self.recv_host[:count],
                             is_blocking=False)
            done.append(self._scatter(rcv, name, rcv["in"]))
        for ev in done:
            ev.wait()
        return self._count(t0, t1, t2)

    def _count(self, t0: float, t1: float, t2: float) -> float:
        """Add one exchange (packed from ``t0``, moved from ``t1`` to ``t2``, unpacked
        until now) to :attr:`stats`; its wall seconds."""
        seconds = time.perf_counter() - t0
        st = self.stats
        st["exchanges"] += 1
        st["seconds"] += seconds
        st["mpi_seconds"] += t2 - t1
        st["bytes_sent"] += 4 * int(self.send_counts.sum())
        st["bytes_received"] += 4 * int(self.recv_counts.sum())
        return seconds

    def _exchange_peers(self, name: str) -> float:
        """:meth:`exchange` GPU to GPU: each side packs into the GPU's send region (a CPU
        share through the host), the GPUs copy (:meth:`PeerExchange.move`), each side
        unpacks from the receive region (a CPU share through the host)."""
        t0 = time.perf_counter()
        for q in self._pack_peers(name):
            q.finish()
        t1 = time.perf_counter()
        self.peers.move(self.pulls)
        t2 = time.perf_counter()
        for ev in self._unpack_peers(name):
            ev.wait()
        return self._count(t0, t1, t2)

    def _pack_peers(self, name: str) -> list:
        """Enqueue every side's packing of ``name``'s halo into the send region (a CPU
        share of split memory through the host, blocking); the queues that do it."""
        mod, px = cl(), self.peers
        queues = {id(px.side.queue): px.side.queue}
        for snd in self.senders:
            s, near, direct = snd["side"], snd["near"], snd["direct"]
            if direct:
                self._gather(snd, name, px.send, px.at)
            else:
                self._gather(snd, name, snd["out"])
            for src, dst, k in ([] if direct else snd["runs"]):
                if near:
                    mod.enqueue_copy(s.queue, px.send, snd["out"], src_offset=4 * src,
                                     dst_offset=px.at + 4 * dst, byte_count=4 * k)
                else:  # a CPU share of split memory: through the host
                    mod.enqueue_copy(s.queue, self.send_host[dst:dst + k], snd["out"],
                                     src_offset=4 * src, is_blocking=True)
                    mod.enqueue_copy(px.side.queue, px.send, self.send_host[dst:dst + k],
                                     dst_offset=px.at + 4 * dst)
            queues[id(s.queue)] = s.queue
        return list(queues.values())

    def _unpack_peers(self, name: str) -> list:
        """Enqueue every side's unpacking of the receive region into ``name`` (a CPU
        share of split memory through the host); their events."""
        mod, px = cl(), self.peers
        done, count = [], int(self.recv_idx.size)
        for rcv in self.receivers.values():
            src = px.recv
            if rcv["side"].context != px.side.context:  # a CPU share of split memory
                mod.enqueue_copy(px.side.queue, self.recv_host[:count], px.recv,
                                 is_blocking=True)
                mod.enqueue_copy(rcv["side"].queue, rcv["in"], self.recv_host[:count])
                src = rcv["in"]
            done.append(self._scatter(rcv, name, src))
        return done

    # ------------------------------------------------- a row operation's halo, pipelined
    def pack(self, name: str) -> bool:
        """Enqueue the packing of vector ``name``'s halo now, behind the row operation's
        kernels and before its sums are read, where the exchange can be pipelined with
        the step (:attr:`pipelined`); then :meth:`land` after the sums' collective.

        Returns
        -------
        bool
            Whether it was packed (else the caller runs :meth:`exchange` after the sums).
        """
        if not self.pipelined:
            return False
        t0 = time.perf_counter()
        self.harvest()  # the last exchange's kernels, while the device runs this step's
        self._pack_peers(name)
        self._packed = (name, time.perf_counter() - t0)
        return True

    def land(self, name: str) -> float:
        """The rest of :meth:`pack`'s exchange, after a collective every rank entered once
        its packing was done (the row operation's sums: each rank's read of them waited
        for its packing, in order on its GPU's queue): the GPUs' copies with no barrier,
        then the unpacking enqueued, not waited for (the next step's kernels follow it in
        order on the same queue). Returns the exchange's host seconds."""
        packed, self._packed = self._packed, None
        if packed is None or packed[0] != name:
            raise RuntimeError(f"land({name!r}) without pack({name!r})")
        t1 = time.perf_counter()
        self.peers.move(self.pulls, barrier=False)
        t2 = time.perf_counter()
        self._unpack_peers(name)
        self.peers.side.queue.flush()  # NVIDIA's driver holds commands until a flush
        self.stats["pipelined"] += 1
        return self._count(t1 - packed[1], t1, t2)


def _read_columns(matrix) -> np.ndarray:
    """Mask of the columns ``matrix``'s entries read, shape (n,): a mask, not a sort of
    every entry, set by the pool's threads a span of entries each (byte stores of one
    value, so threads may share a byte)."""
    read = np.zeros(matrix.n, dtype=bool)
    indices = matrix.indices

    def mark(lo: int, hi: int) -> None:
        read[indices[lo:hi]] = True
    chunked(mark, indices.size, 1 << 24)
    return read


def row_split(matrix, own: np.ndarray) -> dict:
    """How much of a rank's product could run before its halo lands, counted.

    Parameters
    ----------
    matrix : Graph
        The rank's rows (the others empty), global column ids.
    own : ndarray of bool, shape (n,)
        The columns (vertices) this rank owns.

    Returns
    -------
    dict
        ``interior_rows`` and ``interior_nnz``: rows with entries that read no other
        rank's column, and their entries (a product cut by rows can run these before the
        halo lands); ``boundary_rows`` and ``boundary_nnz``: the others; ``local_nnz``:
        entries whose column the rank owns (a product cut by columns can run these before
        the halo lands); ``remote_nnz``: the others.
    """
    indptr, indices = matrix.indptr, matrix.indices

    def count(lo: int, hi: int) -> np.ndarray:
        a, b = int(indptr[lo]), int(indptr[hi])
        if b == a:
            return np.zeros(4, np.int64)
        remote = ~own[indices[a:b]]
        lens = np.diff(indptr[lo:hi + 1])
        full = lens > 0
        inner = ~np.logical_or.reduceat(remote, (indptr[lo:hi][full] - a).astype(np.int64))
        return np.array([int(inner.sum()), int(lens[full][inner].sum()),
                         int(full.sum()), int(np.count_nonzero(remote))], np.int64)

    total = np.sum(chunked(count, matrix.n, 1 << 20), axis=0)
    inner_rows, inner_nnz, rows, remote = (int(v) for v in total)
    return {"interior_rows": inner_rows, "interior_nnz": inner_nnz,
            "boundary_rows": rows - inner_rows, "boundary_nnz": int(matrix.nnz) - inner_nnz,
            "local_nnz": int(matrix.nnz) - remote, "remote_nnz": remote}
