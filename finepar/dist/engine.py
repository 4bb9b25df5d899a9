"""The engine of one rank of a distributed run (DESIGN.md §3, "dist").

A :class:`DistEngine` is an :class:`~finepar.engine.Engine` over the rank's rows (its
matrix holds only those; row ids and vectors stay global, full length), run by the
rank's own pair as any engine is: its CPU and GPU shares, chunking and throttling. It
changes what crosses the ranks and nothing else, so the apps' code is shared:

* a row operation's two sums are summed over the ranks (the apps' stop tests and
  counts see the whole graph's);
* a vector whose halo a step exchanges (``rowop(exchange=...)``, :meth:`exchange`)
  moves between ranks too (:class:`~finepar.dist.halo.RankHalo`);
* :meth:`read` gathers each entry from the rank owning its row;
* a frontier bitmap that each rank fills for its own rows is merged
  (:meth:`merge_bits`), sent as a list of vertices or as the rank's words of the
  bitmap, whichever is smaller;
* apps iterate on the host step by step (:attr:`device_iterations` is False), gather
  before a one-side phase (:attr:`whole_copies` is False), and frontier apps pull
  every iteration (:meth:`push_role` is None: a push from a vertex list needs every
  vertex's out-edges on one device).
"""

from __future__ import annotations

import time

import numpy as np

from ..engine import Engine
from ..engine.exchange import Halo
from .comm import Communicator
from .halo import RankHalo
from .partition import RowPartition

#: Header words of a rank's part of a merged bitmap: its form, then its first word.
_AS_LIST, _AS_WORDS = 0, 1


class DistEngine(Engine):
    """An engine over one rank's rows (see the module's description).

    Parameters
    ----------
    pair, matrix, plan, ops, options
        As :class:`~finepar.engine.Engine`; ``matrix`` holds the rank's rows (the others
        empty) and ``plan`` runs only those.
    comm : Communicator
    partition : RowPartition
        Every rank's rows of ``matrix``.

    Attributes
    ----------
    stats : dict
        ``reductions`` (sums combined); ``gathers``, ``gather_seconds`` and
        ``gather_bytes`` (vectors read whole; bytes this rank sent); ``merges``,
        ``merge_seconds``, ``merge_bytes``, ``as_list`` and ``as_words`` (frontier
        bitmaps merged, bytes this rank sent, in which form).
    """

    def __init__(self, pair, matrix, plan, ops, *, comm: Communicator, partition: RowPartition,
                 options=None):
        super().__init__(pair, matrix, plan, ops, options=options)
        self.comm, self.partition = comm, partition
        self.rank_halo: RankHalo | None = None
        self._mpi_base = comm.mpi_seconds
        self.stats = {"reductions": 0, "gathers": 0, "gather_seconds": 0.0, "gather_bytes": 0,
                      "merges": 0,
                      "merge_seconds": 0.0, "merge_bytes": 0, "as_list": 0, "as_words": 0}

    # ------------------------------------------------------------ what apps ask
    @property
    def device_iterations(self) -> bool:
        return False

    @property
    def whole_copies(self) -> bool:
        return False

    def push_roles(self) -> tuple[str, ...]:
        """None: a rank holds its rows only, so no device pushes from a whole out-edge CSR
        (frontier apps pull every level; one-device algorithms are refused or replaced)."""
        return ()

    # ------------------------------------------------------------ steps and halos
    def rowop(self, *, exchange: str | None = None, **kw):
        """:meth:`Engine.rowop` over this rank's rows; the sums are the ranks' total and
        ``exchange``'s halo also moves between the ranks."""
        total = super().rowop(exchange=exchange, **kw)
        if total is None:
            return None
        total = self.comm.total(total)
        self.stats["reductions"] += 1
        if exchange:
            self._exchange_ranks(exchange)
        return total

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

    def merge_bits(self, name: str) -> None:
        """OR bitmap ``name`` over this rank's sides, then over the ranks: each rank sends
        its vertices' set bits as a list of ids or as its words of the bitmap, whichever
        is smaller (collective)."""
        super().merge_bits(name)
        if self.comm.size == 1:
            return
        t0 = time.perf_counter()
        words = super().read(name, role=self.roles[0])
        lo, hi = (int(b) for b in self.partition.bounds[self.comm.rank:self.comm.rank + 2])
        w0, w1 = lo // 32, -(-hi // 32)
        own = words[w0:w1]
        ids = np.flatnonzero(np.unpackbits(own.view(np.uint8), bitorder="little"))
        if ids.size < own.size:
            part = np.concatenate(([_AS_LIST, w0], ids + 32 * w0)).astype(np.uint32)
            self.stats["as_list"] += 1
        else:
            part = np.concatenate(([_AS_WORDS, w0], own)).astype(np.uint32)
            self.stats["as_words"] += 1
        counts = np.array(self.comm.allgather(int(part.size)), dtype=np.int64)
        every = self.comm.allgatherv(part, counts=counts)
        merged = np.zeros_like(words)
        for start, count in zip(np.concatenate(([0], np.cumsum(counts)[:-1])), counts):
            seg = every[start:start + count]
            body = seg[2:]
            if seg[0] == _AS_LIST:
                np.bitwise_or.at(merged, body >> 5, np.left_shift(np.uint32(1), body & 31))
            else:
                merged[seg[1]:seg[1] + body.size] |= body
        self.write(name, merged)
        self.stats["merges"] += 1
        self.stats["merge_bytes"] += 4 * int(part.size)
        self.stats["merge_seconds"] += time.perf_counter() - t0

    # ------------------------------------------------------------ report
    def rank_summary(self) -> dict:
        """This rank's exchanges: the halo's entries and totals, merges, gathers, MPI time."""
        out = dict(self.stats)
        halo = self.rank_halo
        out["halo"] = ({**halo.entries(), **{k: v for k, v in halo.stats.items()}}
                       if halo is not None else {"sent": 0, "received": 0, "exchanges": 0,
                                                 "seconds": 0.0, "mpi_seconds": 0.0,
                                                 "bytes_sent": 0, "bytes_received": 0})
        out["mpi_seconds"] = self.comm.mpi_seconds - self._mpi_base
        return out

    def reset_records(self) -> None:
        """Forget the steps so far, and this rank's exchange counts (a timed run starts)."""
        super().reset_records()
        self._mpi_base = self.comm.mpi_seconds
        for k in self.stats:
            self.stats[k] = 0.0 if isinstance(self.stats[k], float) else 0
        if self.rank_halo is not None:
            for k in ("exchanges", "seconds", "mpi_seconds", "bytes_sent", "bytes_received"):
                self.rank_halo.stats[k] = 0.0 if "seconds" in k else 0

