"""The engine of one rank of a distributed run (DESIGN.md §3, "mpi").

A :class:`DistEngine` is an :class:`~finepar.engine.Engine` over the rank's rows (its
matrix holds only those; row ids and vectors stay global, full length), run by the
rank's own pair as any engine is: its CPU and GPU shares, chunking and throttling. It
changes what crosses the ranks and nothing else, so the apps' code is shared:

* a row operation's two sums are summed over the ranks (the apps' stop tests and
  counts see the whole graph's);
* a vector whose halo a step exchanges (``rowop(exchange=...)``, :meth:`exchange`)
  moves between ranks too (:class:`~finepar.mpi.halo.RankHalo`); on the GPU path a row
  operation's halo is packed behind its kernels, before its sums are read, and the sums'
  collective stands for the exchange's first barrier (:meth:`after_kernels`);
* :meth:`read` gathers each entry from the rank owning its row;
* a frontier bitmap that each rank fills for its own rows is merged
  (:meth:`merge_bits`), sent as a list of vertices or as the rank's words of the
  bitmap, whichever is smaller (BFS merges its levels itself:
  :mod:`finepar.apps.bfsranks`, on :attr:`stats` and the communicator);
* apps iterate on the host step by step (:attr:`device_iterations` is False), gather
  before a one-side phase (:attr:`whole_copies` is False); :meth:`push_roles` is empty
  (no device holds every vertex's out-edges), :meth:`own_push_roles` says which device
  can push from the rank's own vertices' out-edges (BFS's top-down levels).
"""

from __future__ import annotations

import time

import numpy as np

from ..engine import Engine
from ..engine.exchange import Halo
from ..device import cl
from ..throttle.kdcount import popcount
from ..device import PinnedHost
from .comm import Communicator
from ..device.peer import PeerUnavailable
from ..errors import UsageError
from .halo import RankHalo
from .partition import RowPartition
from .peers import PeerExchange, choose

#: Header words of a rank's part of a merged bitmap: its form, then its first word.
_AS_LIST, _AS_WORDS, _AS_PAIRS = 0, 1, 2
_FORMS = {_AS_LIST: "as_list", _AS_WORDS: "as_words", _AS_PAIRS: "as_pairs"}


class DistEngine(Engine):
    """An engine over one rank's rows (see the module's description).

    Parameters
    ----------
    pair, matrix, plan, ops, options, column_vectors
        As :class:`~finepar.engine.Engine`; ``matrix`` holds the rank's rows (the others
        empty) and ``plan`` runs only those. A device's columns are renumbered on the
        rank's own reads (:mod:`finepar.engine.columns`); the halo between ranks packs and
        unpacks a renumbered copy at its numbers.
    comm : Communicator
    partition : RowPartition
        Every rank's rows of ``matrix``.

    Attributes
    ----------
    stats : dict
        ``reductions`` (sums combined); ``gathers``, ``gather_seconds`` and
        ``gather_bytes`` (vectors read whole; bytes this rank sent); ``merges``,
        ``merge_seconds``, ``merge_bytes``, ``as_list``, ``as_pairs`` and ``as_words`` (frontier
        bitmaps merged, bytes this rank sent, in which form); ``merge_bytes_received``;
        ``claims`` and ``claim_bytes`` (top-down levels' claims merged, bytes sent),
        ``claim_lists`` (merged as vertex lists on the host); ``routed`` and
        ``routed_bytes`` (parents sent to their owners; BFS's,
        :mod:`finepar.apps.bfsranks`).
    """

    #: A rank's halos and merges are timed from its queues' profiling events.
    PLAIN_QUEUES = False

    def __init__(self, pair, matrix, plan, ops, *, comm: Communicator, partition: RowPartition,
                 options=None, column_vectors: tuple = ()):
        super().__init__(pair, matrix, plan, ops, options=options, column_vectors=column_vectors)
        self.comm, self.partition = comm, partition
        self.rank_halo: RankHalo | None = None
        self._stage: PinnedHost | None = None
        self._exchanges: list = []  # PeerExchange objects apps asked for (closed with us)
        self._packed: str | None = None  # the halo after_kernels packed in this rowop
        self.merge_path = "host"
        self._mpi_base, self._window_base = comm.mpi_seconds, comm.window_moves
        self.stats = {"reductions": 0, "gathers": 0, "gather_seconds": 0.0, "gather_bytes": 0,
                      "merges": 0,
                      "merge_seconds": 0.0, "merge_bytes": 0, "merge_bytes_received": 0,
                      "as_list": 0, "as_pairs": 0, "as_words": 0, "claims": 0,
                      "claim_bytes": 0, "claim_lists": 0, "routed": 0, "routed_bytes": 0}

    # ------------------------------------------------------------ what apps ask
    @property
    def device_iterations(self) -> bool:
        return False

    @property
    def whole_copies(self) -> bool:
        return False

    def push_roles(self) -> tuple[str, ...]:
        """None: a rank holds its rows only, so no device pushes from a whole out-edge CSR
        (one-device algorithms are refused or replaced; BFS asks :meth:`own_push_roles`)."""
        return ()

    @property
    def ranks(self) -> int:
        """The ranks of the run (a frontier level merges its vertices over them)."""
        return self.comm.size

    def own_push_roles(self) -> tuple[str, ...]:
        """The roles that can push from this rank's own vertices' out-edges (a CSR of the
        rank's rows, as :meth:`Engine.push_roles` asks of a whole one): BFS's top-down
        levels (:mod:`finepar.apps.bfsranks`)."""
        return Engine.push_roles(self)

    def rowop_local(self, **kw):
        """:meth:`Engine.rowop` over this rank's rows, its sums this rank's alone (their
        total comes with the level's merge, :mod:`finepar.apps.bfsranks`)."""
        return Engine.rowop(self, **kw)

    # ------------------------------------------------------------ steps and halos
    def rowop(self, *, exchange: str | None = None, **kw):
        """:meth:`Engine.rowop` over this rank's rows; the sums are the ranks' total and
        ``exchange``'s halo also moves between the ranks."""
        self._packed = None
        total = super().rowop(exchange=exchange, **kw)
        if total is None:
            return None
        total = self.comm.total(total)  # every rank's packing done: a collective after it
        self.stats["reductions"] += 1
        if self._packed:
            self.rank_halo.land(self._packed)
        elif exchange:
            self._exchange_ranks(exchange)
        return total

    def after_kernels(self, exchange: str | None) -> None:
        """Pack ``exchange``'s halo for the other ranks behind the step's kernels, before
        its sums are read, where :attr:`RankHalo.pipelined`: the sums' collective then
        stands for the exchange's first barrier, and :meth:`rowop` lands it after."""
        super().after_kernels(exchange)
        if exchange and self.comm.size > 1:
            self.prepare_exchange()
            if self.rank_halo.pack(exchange):
                self._packed = exchange

    def exchange(self, name: str) -> float:
        """Move vector ``name``'s halo between this rank's sides and between the ranks."""
        return super().exchange(name) + self._exchange_ranks(name)

    def prepare_exchange(self) -> None:
        """The halo between the sides (rows of this rank only) and between the ranks
        (collective; idempotent)."""
        if self._needs_halo and self._halo is None:
            t0 = time.perf_counter()
            owner = self.plan.owner()
            owner[~self.partition.mask(self.comm.rank)] = 2  # other ranks' rows: no side's
            self._halo = Halo(self.pair, self.matrix, self.stores, owner)
            self.halo = self._halo.needs
            self.setup_seconds += time.perf_counter() - t0
        if self.rank_halo is None and self.comm.size > 1:
            self.rank_halo = RankHalo(self, self.comm, self.partition)
            self.setup_seconds += self.rank_halo.stats["setup_seconds"]

    def _exchange_ranks(self, name: str) -> float:
        if self.comm.size == 1:
            return 0.0
        self.prepare_exchange()
        return self.rank_halo.exchange(name)

    # ------------------------------------------------------------ whole vectors
    def read(self, name: str, role: str | None = None) -> np.ndarray:
        """Vector ``name`` on the host, each entry from the rank (and side) owning its
        row; with ``role``, that side's copy on this rank as it is. Vectors that are not
        indexed by row (bitmaps) are this rank's copy."""
        local = super().read(name, role)
        if role is not None or local.size != self.n or self.comm.size == 1:
            return local
        t0 = time.perf_counter()
        part, rank = self.partition, self.comm.rank
        mine = np.concatenate([local[lo:hi] for lo, hi in part.ranges(rank)])
        every = self.comm.allgatherv(mine, counts=part.counts())
        out, pos = np.empty_like(local), 0
        for r in range(part.size):
            for lo, hi in part.ranges(r):
                out[lo:hi] = every[pos:pos + hi - lo]
                pos += hi - lo
        self.stats["gathers"] += 1
        self.stats["gather_bytes"] += mine.nbytes * (part.size - 1)
        self.stats["gather_seconds"] += time.perf_counter() - t0
        return out

    def _staging(self, nbytes: int) -> np.ndarray:
        """Page-locked host bytes (uint8, at least ``nbytes``) that gathers and merges
        stage through: the device copies run at DMA speed, not at pageable memory's."""
        if self._stage is None or self._stage.host.size < nbytes:
            side = self.pair.side("gpu" if "gpu" in self.roles else self.roles[0])
            self._stage = PinnedHost(side, np.zeros(0, np.uint8), size=nbytes)
        return self._stage.host

    def make_whole(self, name: str, role: str) -> None:
        """Make ``role``'s copy of vector ``name`` whole across the ranks (collective).

        Where one buffer holds this rank's rows and the ranks own contiguous ranges, only
        this rank's range leaves the device and only the others' ranges are written back,
        through page-locked memory (the gather in place); otherwise a whole :meth:`read`
        and write."""
        part, comm = self.partition, self.comm
        one_copy = self.pair.shared or len(self.roles) == 1
        if comm.size == 1 and one_copy:
            return  # the one rank's one copy holds every row
        if (not one_copy or part.blocks != 1 or self._vectors[name]["size"] != self.n
                or self._by_column(name)):  # a renumbered copy: read and written whole
            super().make_whole(name, role)
            return
        t0 = time.perf_counter()
        dtype = self._vec_dtype[name]
        item, n = dtype.itemsize, self.n
        host = self._staging(n * item)[:n * item].view(dtype)
        lo, hi = (int(b) for b in part.bounds[comm.rank:comm.rank + 2])
        queue, buf, mod = self.pair.side(role).queue, self.buffer(name, role), cl()
        self.drain()
        if hi > lo:
            mod.enqueue_copy(queue, host[lo:hi], buf, src_offset=lo * item, is_blocking=True)
        comm.allgatherv(host[lo:hi], counts=part.counts(), out=host)
        done = [mod.enqueue_copy(queue, buf, host[a:b], dst_offset=a * item, is_blocking=False)
                for a, b in ((0, lo), (hi, n)) if b > a]
        for ev in done:
            ev.wait()
        self.host_syncs += 2
        self.stats["gathers"] += 1
        self.stats["gather_bytes"] += (hi - lo) * item * (comm.size - 1)
        self.stats["gather_seconds"] += time.perf_counter() - t0

    def merge_bits(self, name: str) -> None:
        """OR bitmap ``name`` over this rank's sides, then over the ranks: each rank sends
        its vertices' set bits in the smallest of three forms (:func:`_encode`;
        collective). The words cross the bus through page-locked memory."""
        super().merge_bits(name)
        if self.comm.size == 1:
            return
        t0 = time.perf_counter()
        role = self.roles[0]
        queue, buf = self.pair.side(role).queue, self.buffer(name, role)
        nw = self._vectors[name]["size"]
        words = self._staging(4 * nw)[:4 * nw].view(np.uint32)
        lo, hi = (int(b) for b in self.partition.bounds[self.comm.rank:self.comm.rank + 2])
        w0, w1 = lo // 32, -(-hi // 32)
        own = words[w0:w1]
        self.drain()
        cl().enqueue_copy(queue, own, buf, src_offset=4 * w0, is_blocking=True)
        part = _encode(own, w0)
        self.stats[_FORMS[int(part[0])]] += 1
        counts = np.array(self.comm.allgather(int(part.size)), dtype=np.int64)
        every = self.comm.allgatherv(part, counts=counts)
        words[:] = 0
        for start, count in zip(np.concatenate(([0], np.cumsum(counts)[:-1])), counts):
            _or_segment(words, every[start:start + count])
        self.write(name, words)
        self.stats["merges"] += 1
        self.stats["merge_bytes"] += 4 * int(part.size)
        self.stats["merge_seconds"] += time.perf_counter() - t0

    def rank_summary(self) -> dict:
        """This rank's exchanges: the halo's entries and totals (per role whether it moved
        entries at renumbered columns; its rows and entries that read no other rank's
        column, :func:`~finepar.mpi.halo.row_split`), merges, gathers, MPI time."""
        out = dict(self.stats)
        halo = self.rank_halo
        if halo is not None:
            halo.harvest(wait=True)
        out["halo"] = ({**halo.entries(), **{k: v for k, v in halo.stats.items()},
                        "renumbered": halo.renumbered(), "split": halo.split,
                        "order": halo.order,
                        "path": halo.path, "path_reason": halo.path_reason}
                       if halo is not None else {"sent": 0, "received": 0, "exchanges": 0,
                                                 "pipelined": 0,
                                                 "order": None,
                                                 "pack_kernel_seconds": 0.0,
                                                 "unpack_kernel_seconds": 0.0,
                                                 "seconds": 0.0, "mpi_seconds": 0.0,
                                                 "bytes_sent": 0, "bytes_received": 0,
                                                 "renumbered": {}, "split": None,
                                                 "path": None, "path_reason": None})
        out["merge_path"] = self.merge_path
        out["mpi_seconds"] = self.comm.mpi_seconds - self._mpi_base
        out["window_moves"] = self.comm.window_moves - self._window_base
        return out

    def peer_exchange(self, side, send_bytes: int, recv_bytes: int, what: str):
        """Regions for an app's own exchanges GPU to GPU (BFS's level merges) where the
        run's path is the GPU's (:func:`~finepar.mpi.peers.choose`: ``auto`` where every
        rank's GPU can share its memory, ``gpu`` or its emulation), else None
        (collective).

        Returns
        -------
        PeerExchange or None
            Closed with the engine (:meth:`close`); :attr:`merge_path` says which path.

        Raises
        ------
        RankFailure
            On every rank, where ``--exchange gpu`` asked for the path and it cannot be had.
        """
        comm = self.comm
        if comm.exchange == "host" or comm.size == 1:
            return None
        path, _ = choose(comm, side, "gpu" in self.roles, self.pair.emulated)
        if path == "host":
            return None
        try:
            px = PeerExchange(comm, side, send_bytes, recv_bytes, path)
        except PeerUnavailable as exc:  # raised on every rank alike
            if comm.exchange == "gpu":
                comm.agree(UsageError(f"--exchange gpu ({what}): {exc}"))
            return None
        self._exchanges.append(px)
        self.merge_path = path
        return px

    def close(self, collective: bool = True) -> None:
        """Free what the exchanges between ranks hold outside pyopencl's buffers (the GPU
        regions of :mod:`finepar.mpi.peers`); collective unless ``collective`` is False
        (after an error on this rank alone)."""
        if self.rank_halo is not None:
            self.rank_halo.close(collective)
        for px in self._exchanges:
            px.close(collective)
        self._exchanges = []

    def reset_records(self) -> None:
        """Forget the steps so far, and this rank's exchange counts (a timed run starts)."""
        super().reset_records()
        self._mpi_base, self._window_base = self.comm.mpi_seconds, self.comm.window_moves
        for k in self.stats:
            self.stats[k] = 0.0 if isinstance(self.stats[k], float) else 0
        if self.rank_halo is not None:
            self.rank_halo.harvest(wait=True)  # the warm-up's kernels stay out
            for k in ("exchanges", "pipelined", "seconds", "mpi_seconds", "bytes_sent",
                      "bytes_received", "pack_kernel_seconds", "unpack_kernel_seconds"):
                self.rank_halo.stats[k] = 0.0 if "seconds" in k else 0


def _encode(own: np.ndarray, w0: int) -> np.ndarray:
    """A rank's words of a frontier bitmap (``own``, uint32, from word ``w0``): the set
    bits' vertex ids (4 bytes a bit) where they are fewer than the next form's and at
    most a sixteenth of the words hold any (their unpacking is cheap), else the nonzero
    words with their indices (8 bytes a word) where they are at most half of every word,
    else every word (4 bytes a word); a header of the form and ``w0`` first. Bits are
    counted, never unpacked, but for the ids of a sparse frontier."""
    nz = np.flatnonzero(own)
    bits = int(popcount(own[nz]).sum())
    if bits <= 2 * nz.size and 16 * nz.size <= own.size:  # an unpack of few words
        r, c = np.nonzero(np.unpackbits(own[nz].view(np.uint8), bitorder="little")
                          .reshape(-1, 32))
        return np.concatenate(([_AS_LIST, w0], (nz[r] + w0) * 32 + c)).astype(np.uint32)
    if 4 * nz.size <= own.size:
        return np.concatenate(([_AS_PAIRS, w0], nz + w0, own[nz])).astype(np.uint32)
    return np.concatenate(([_AS_WORDS, w0], own)).astype(np.uint32)


def _or_segment(words: np.ndarray, seg: np.ndarray) -> None:
    """OR one rank's part of a merged bitmap (:func:`_encode`) into ``words``: a sorted
    list of vertex ids (the bits of each word OR-ed together first), word indices then
    their words, or a run of words from word ``seg[1]``."""
    body = seg[2:]
    if seg[0] == _AS_WORDS:
        words[seg[1]:seg[1] + body.size] |= body
    elif seg[0] == _AS_PAIRS:
        k = body.size // 2
        words[body[:k]] |= body[k:]
    elif body.size:
        w = body >> 5
        starts = np.concatenate(([0], np.flatnonzero(w[1:] != w[:-1]) + 1))
        words[w[starts]] |= np.bitwise_or.reduceat(np.left_shift(np.uint32(1), body & 31),
                                                   starts)
