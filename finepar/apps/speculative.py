"""Speculative greedy colouring with conflict resolution on one device (Gebremedhin and
Manne, Concurrency: Pract. Exper. 12(12), 2000; Deveci, Boman, Devine and Rajamanickam,
IPDPS 2016, their vertex-based scheme with a 64-bit window of colours).

Rounds over a worklist of the uncoloured vertices (``opencl/apps/coloring/speculative.cl``): every
vertex of it takes the smallest colour no committed neighbour has; a vertex keeps it unless
a neighbour of the same round took the same colour and outranks it (largest degree first,
ties by a hash of the id, so hubs win as in greedy largest-first); the losers form the
next worklist. The colouring is deterministic (a choice reads only committed colours) and
uses about the colours of greedy largest-first; rounds number about the colours, and each
touches only the worklist's edges. Rows longer than :data:`LONG_ROW` take a work-group
each. Rounds run in batches whose worklist counts stay on the device: one read per batch.
"""

from __future__ import annotations

import numpy as np

from ..engine import Engine
from ..device import cl
from ..device import read_staged
from ..engine.backref import EngineRef

#: Rows with more entries take a work-group each.
LONG_ROW = 256
#: Most rounds of one batch.
MAX_BATCH = 64


class SpeculativeColoring:
    """The worklists, buffers and kernels on one role of an engine (built once per engine).

    Parameters
    ----------
    engine : Engine
        Built on the symmetrised graph.
    role : str
        A role that holds the whole CSR (:meth:`Engine.push_roles`).
    """

    engine = EngineRef()  # weak: the engine's state holds this

    def __init__(self, engine: Engine, role: str):
        sym = engine.matrix
        self.engine, self.role, self.n = engine, role, sym.n
        side = self.side = engine.pair.side(role)
        wide = sym.indptr.dtype == np.int64
        self.indptr, self.indices, _ = engine.global_csr(role, sym, wide=wide)
        n = max(self.n, 1)
        z = np.zeros(n, np.int32)
        self.color, self.tent, self.lo, self.stamp = (engine.scratch(role, z) for _ in range(4))
        # worklists [short, long][parity]: round r reads parity r % 2, fills the other
        self.lists = [[engine.scratch(role, z) for _ in range(2)] for _ in range(2)]
        self.cnt = engine.scratch(role, np.zeros(3 * (MAX_BATCH + 1), np.uint64))
        self.host = np.zeros(3 * (MAX_BATCH + 1), np.uint64)
        prg = engine.pair.program(side, ("apps/coloring/priorities.cl", "apps/coloring/speculative.cl"),
                                  {"OFFSET_T": "long" if wide else "int", "LONG_ROW": LONG_ROW})
        self.kernels = {k: cl().Kernel(prg, f"spec_{k}") for k in
                        ("init", "assign_short", "assign_long", "resolve_short", "resolve_long")}
        self.wg = min(256, side.info.max_work_group_size)
        self.items = max(256, side.info.compute_units * 2048)
        self.groups = max(1, side.info.compute_units * 4)

    def _launch(self, name: str, size: int, args: tuple, *, groups: bool = False) -> None:
        self.engine.launch(self.role, self.kernels[name], size * self.wg if groups else size,
                           args, kind=f"coloring-{name}", wg=self.wg, wait=False)

    def run(self, key: int, max_rounds: int | None) -> list:
        """Colour every vertex (left in :attr:`color` on the device) with priorities keyed by
        ``key``, in at most ``max_rounds`` rounds. Returns per round ``(short, long,
        entries)`` of its worklist."""
        eng, q = self.engine, self.side.queue
        cl().enqueue_fill_buffer(q, self.cnt, np.zeros(1, np.uint64), 0, self.cnt.size)
        self._launch("init", self.n, (np.int32(self.n), self.indptr, self.color, self.lo,
                                      self.stamp, self.lists[0][0], self.lists[1][0], self.cnt))
        rounds, batch, parity, pending = [], 1, 0, (self.n, 0)
        while max_rounds is None or len(rounds) < max_rounds:
            k = min(batch, MAX_BATCH, (max_rounds - len(rounds)) if max_rounds else MAX_BATCH)
            for j in range(k):
                self._round(j, len(rounds) + j, (parity + j) % 2, key, pending[0])
            eng.read_buffer(self.role, self.host, self.cnt, 3 * (k + 1))
            counts = self.host[:3 * (k + 1)].reshape(-1, 3).astype(np.int64)
            empty = np.flatnonzero(counts[:, :2].sum(axis=1) == 0)
            ran = int(empty[0]) if empty.size else k
            rounds += [tuple(int(x) for x in counts[j]) for j in range(ran)]
            if empty.size:
                break
            # round k's worklists carry over: their counts to the front, their lists by parity
            cl().enqueue_copy(q, self.cnt, self.cnt, byte_count=24, src_offset=24 * k,
                              dst_offset=0)
            cl().enqueue_fill_buffer(q, self.cnt, np.zeros(1, np.uint64), 24,
                                     self.cnt.size - 24)
            parity, pending = (parity + k) % 2, (int(counts[k, 0]), int(counts[k, 1]))
            batch = 2 * batch
        return rounds

    def _round(self, j: int, r: int, par: int, key: int, short_hint: int) -> None:
        """Round ``r`` as batch slot ``j``: the worklists of parity ``par`` -> the other."""
        ls, ll = self.lists[0][par], self.lists[1][par]
        ns, nl = self.lists[0][1 - par], self.lists[1][1 - par]
        items = int(min(max(256, short_hint), self.items))
        common = (np.int32(j), np.int32(r))
        self._launch("assign_short", items, (*common, self.indptr, self.indices, self.color,
                                             self.tent, self.lo, self.stamp, ls, self.cnt))
        self._launch("assign_long", self.groups, (*common, self.indptr, self.indices,
                                                  self.color, self.tent, self.lo, self.stamp,
                                                  ll, self.cnt), groups=True)
        res = (*common, np.uint32(key), self.indptr, self.indices, self.color, self.tent,
               self.stamp)
        self._launch("resolve_short", items, (*res, ls, ns, self.cnt))
        self._launch("resolve_long", self.groups, (*res, ll, nl, self.cnt), groups=True)

    def colors(self) -> np.ndarray:
        """The colours on the host (int32, shape (n,))."""
        out = np.empty(self.n, np.int32)
        read_staged(self.side, out, self.color)
        return out
