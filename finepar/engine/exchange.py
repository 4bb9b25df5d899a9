"""The halo exchange of split memory (DESIGN.md §3, "engine").

Each side writes the rows of its share and reads, through its share's column
indices, vector entries that the other side may own. Once per plan the halo is
computed: per direction, the vertices one side reads and the other side writes.
After a step only those entries move: packed on the writer (``gather``),
copied through the host, unpacked on the reader (``scatter``). Nothing else
crosses the bus. In shared memory there is nothing to exchange.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, RowEntries
from ..device import DevicePair, alloc, cl
from .binding import call

_TYPES = {np.dtype(np.float32): "float", np.dtype(np.int32): "int", np.dtype(np.uint32): "uint"}


def read_columns(matrix: Graph, store) -> np.ndarray:
    """Columns the share of ``store`` reads (its compacted indices, or its rows' entries
    of the whole CSR)."""
    if store.share_indices is not None:
        return store.share_indices
    rows = store.low.rows
    return RowEntries.of_rows(matrix.indptr, rows).take(matrix.indices) if rows.size else rows


class Halo:
    """Per direction, the vertices one side reads that the other side writes, and the
    buffers that move them.

    Parameters
    ----------
    pair : DevicePair
        In split memory.
    matrix : Graph
    stores : dict
        ``{'cpu': SideStore, 'gpu': SideStore}``.
    owner : ndarray of int8, shape (n,)
        0 where the CPU's share holds the row, 1 for the GPU.

    Attributes
    ----------
    needs : dict
        ``needs[role]``: int32 vertex ids ``role`` reads and the other side writes.
    """

    def __init__(self, pair: DevicePair, matrix: Graph, stores: dict, owner: np.ndarray):
        self.pair = pair
        n = matrix.n
        mask = np.zeros(n, dtype=bool)
        self.needs = {}
        for role, other_code in (("cpu", 1), ("gpu", 0)):
            mask[:] = False
            cols = read_columns(matrix, stores[role])
            if cols.size:
                mask[cols] = True
            self.needs[role] = np.flatnonzero(mask & (owner == other_code)).astype(np.int32)
        for st in stores.values():
            st.share_indices = None  # no longer needed
        self._bufs = {}
        for role in ("cpu", "gpu"):
            other = "gpu" if role == "cpu" else "cpu"
            idx = self.needs[role]
            safe = idx if idx.size else np.zeros(1, np.int32)
            self._bufs[role] = {
                "count": int(idx.size),
                "idx_src": alloc(pair.side(other), safe, read_only=True),
                "idx_dst": alloc(pair.side(role), safe, read_only=True),
                "send": {}, "recv": {}, "host": {}, "pending": None, "kernels": {}}

    def entries(self) -> dict:
        """Entries each role receives per exchange."""
        return {r: int(v.size) for r, v in self.needs.items()}

    def enqueue(self, dtype: np.dtype, buffers: dict, perms: dict | None = None) -> list:
        """Move one vector's halo both ways; returns the events (pack, copies, unpack).

        Parameters
        ----------
        dtype : numpy.dtype
            float32, int32 or uint32.
        buffers : dict
            ``{'cpu': buffer, 'gpu': buffer}``: the vector on each side.
        perms : dict, optional
            ``{role: ndarray of int32, shape (n,)}``: the sides whose copy is kept in
            their renumbered columns (:mod:`finepar.engine.columns`), with vertex ``v`` at
            ``perm[v]``; entries are packed and unpacked there.
        """
        mod = cl()
        tname = _TYPES[np.dtype(dtype)]
        perms = perms or {}
        evs, staged = [], []
        for role in ("cpu", "gpu"):  # role = the reader
            hb = self._bufs[role]
            cnt = hb["count"]
            if cnt == 0:
                continue
            other = "gpu" if role == "cpu" else "cpu"
            src, dst = self.pair.side(other), self.pair.side(role)
            if tname not in hb["send"]:
                hb["send"][tname] = alloc(src, nbytes=cnt * 4)
                hb["recv"][tname] = alloc(dst, nbytes=cnt * 4)
                hb["host"][tname] = np.empty(cnt, dtype=dtype)
            if hb["pending"] is not None:
                hb["pending"].wait()
            gather = self._kernel(hb, src, "gather", tname)
            g = call(gather, src.queue, (_round_up(cnt, 64),), None, np.int32(cnt),
                     self._index(role, "idx_src", src, perms.get(other)),
                     buffers[other], hb["send"][tname])
            c = mod.enqueue_copy(src.queue, hb["host"][tname], hb["send"][tname],
                                 is_blocking=False)
            evs += [g, c]
            staged.append((role, c))
        for role, c in staged:
            hb = self._bufs[role]
            dst = self.pair.side(role)
            c.wait()
            w = mod.enqueue_copy(dst.queue, hb["recv"][tname], hb["host"][tname],
                                 is_blocking=False)
            scatter = self._kernel(hb, dst, "scatter", tname)
            s = call(scatter, dst.queue, (_round_up(hb["count"], 64),), None,
                     np.int32(hb["count"]), self._index(role, "idx_dst", dst, perms.get(role)),
                     hb["recv"][tname], buffers[role])
            hb["pending"] = w
            evs += [w, s]
        return evs

    def _index(self, role: str, which: str, side, perm: np.ndarray | None):
        """Direction ``role``'s index buffer ``which`` (``idx_src`` on the writer,
        ``idx_dst`` on the reader), or its entries renumbered by ``perm`` (made once)."""
        hb = self._bufs[role]
        if perm is None:
            return hb[which]
        key = which + "_renumbered"
        if key not in hb:
            hb[key] = alloc(side, np.ascontiguousarray(perm[self.needs[role]], dtype=np.int32),
                            read_only=True)
        return hb[key]

    def _kernel(self, hb: dict, side, name: str, tname: str):
        k = hb["kernels"].get((name, tname))
        if k is None:
            k = hb["kernels"][(name, tname)] = self.pair.kernel(side, ("skeleton/vector.cl",),
                                                                {"T": tname}, name)
        return k


def _round_up(x: int, m: int) -> int:
    return -(-int(x) // m) * m
