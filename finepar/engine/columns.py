"""Hot columns first: a device's share's columns renumbered by how often its entries read them.

A row operation gathers the vector it reads by column (SpMV's ``x``) at every entry. When
that vector is larger than the GPU's L2 and a few columns take most reads (a power-law
graph), the hot entries lie scattered among cold ones, every cache line holding a few of
each, and most gathers miss. Numbering the columns in descending classes of reads (class
``c``: ``2**(c-1) <= reads < 2**c``; columns no entry reads last) puts the entries most reads
touch in the vector's first megabytes, which the L2 keeps: the locality the throttling
paper (ATC'18) gets from cache-fit partitions, here without cutting rows, from one counting
pass and one rewrite of the share's column indices, both on the device
(``opencl/skeleton/columns.cl``). Measured beside cuSPARSE on Graph500 scale 24
(``benchmarks/probe_strips.py``, H100): a product over the renumbered columns took 4.20 ms
against 6.31 ms with cuSPARSE, and 6.29 against 8.71 ms with a plain per-row kernel.

Only that device's copy changes (each device's share is renumbered, or not, on its own): the
rows, their entries' order (so every row's sum, bit for bit) and the host's arrays stay as
they are. The vectors read by
column (:attr:`finepar.apps.base.App.column_vectors`) are scattered into the new numbering
as they are written to that device and gathered back when read from it
(:class:`finepar.engine.Engine`); a step writes them only through an op's
:attr:`~finepar.engine.RowOp.column_writes`, at each row's number in that device's numbering
(PageRank's contributions ``pr / outdeg``, ``opencl/apps/pagerank/rowop.cl``'s
``HOT_CONTRIB``), and the halo moves them at those numbers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..device import alloc, cl
from ..errors import DeviceError
from .binding import call

#: Read classes: 0 for columns no entry reads, ``c`` for ``2**(c-1) <= reads < 2**c``.
CLASSES = 33
#: ``auto`` renumbers where the hottest columns whose entries fill half the cache take at
#: least this share of the reads.
MIN_HOT_SHARE = 0.5
#: ``auto`` renumbers a GPU's columns where x is at least this share of its cache (a CPU's:
#: the whole cache). x need not outgrow the L2 for its gathers to miss: each reads 4 bytes
#: of a 32-byte sector. One H200 (60 MB L2), SpMV with and without renumbering, 10
#: products (``benchmarks/runs/h200-2026-11-28s``): Graph500 scale 20 (x 4 MB) 2.459 ->
#: 2.243 ms, scale 22 (16 MB) 9.478 -> 8.468 ms, scale 18 (1 MB) 0.764 against 0.779.
GPU_X_CACHE_SHARE = 1 / 16
_WG = 256


@dataclass
class ColumnOrder:
    """What :func:`order_columns` did on one device.

    Attributes
    ----------
    role : str
    applied : bool
        Whether the columns were renumbered.
    reason : str
        Why (or why not), one line.
    names : frozenset of str
        The vectors read by column (scattered on write, gathered on read).
    perm : pyopencl.Buffer or None
        int32, shape (n,): column ``c``'s new number (on the device).
    hot_share : float
        Lower bound of the share of the reads that go to the hottest columns whose
        entries fill half the cache (0 where not counted).
    seconds : float
        The counting, numbering and rewriting, wall time.
    """

    role: str
    applied: bool
    reason: str
    names: frozenset = frozenset()
    perm: Any = None
    hot_share: float = 0.0
    seconds: float = 0.0
    _perm_host: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        return {"role": self.role, "applied": self.applied, "reason": self.reason,
                "vectors": sorted(self.names), "hot_share": self.hot_share,
                "seconds": self.seconds}

    def perm_host(self, side) -> np.ndarray:
        """The permutation on the host (read once, on first use)."""
        if self._perm_host is None:
            n = self.perm.size // 4
            self._perm_host = np.empty(n, np.int32)
            cl().enqueue_copy(side.queue, self._perm_host, self.perm, is_blocking=True)
        return self._perm_host


def index_buffers(store) -> list | None:
    """``[(piece, entries)]`` of a store's pieces, whose ``indices`` buffers hold its column
    indices, or None where they cannot be renumbered on the device (streamed chunks, padded
    ELL slots). A share indexing the whole CSR on its device holds every row's entries:
    they are all counted and renumbered (the other device's rows among them)."""
    if store.low.ell is not None or any(p.streamed for p in store.pieces):
        return None
    from .memory import _WholePiece
    return [(piece, store.matrix.nnz if isinstance(piece, _WholePiece)
             else piece.entries[1] - piece.entries[0]) for piece in store.pieces]


def hot_share(hist: np.ndarray, cache_bytes: int, itemsize: int, nnz: int) -> float:
    """Lower bound of the share of ``nnz`` reads that go to the hottest columns whose
    vector entries (``itemsize`` bytes) fill half of ``cache_bytes``, from the columns of
    each read class (``hist``, shape (CLASSES,))."""
    room = max(cache_bytes // (2 * itemsize), 1)
    reads = 0
    for c in range(CLASSES - 1, 0, -1):
        take = min(int(hist[c]), room)
        reads += take * (1 << (c - 1))
        room -= take
        if room <= 0:
            break
    return min(reads / max(nnz, 1), 1.0)


def hot_room(x_bytes: int, cache_bytes: int) -> int:
    """The cache :func:`hot_share` asks the hottest columns to fill half of: the device's,
    or a quarter of x where x fits it (half of the cache would then hold every column, and
    every column's class bound passes half its reads: a road network would pass). Graph500
    scales 18 and 20: the hottest eighth of x's columns take at least 63% of the reads;
    luxembourg 13%, memplus 34%, soc-Slashdot0902 49%."""
    return cache_bytes if x_bytes > cache_bytes else x_bytes // 4


def order_columns(engine, names: tuple, mode: str = "auto", role: str = "gpu") -> ColumnOrder:
    """Renumber the columns of ``role``'s share hottest first on its device, where ``mode``
    asks for it (``hot``: wherever it can be done; ``auto``: where the vector read by
    column passes a GPU's :data:`GPU_X_CACHE_SHARE` of its cache or a CPU's cache, and the
    hottest columns take most reads, :func:`hot_room`; ``none``).

    Parameters
    ----------
    engine : finepar.engine.Engine
        Its stores made, no vector written yet.
    names : tuple of str
        The vectors the row operations read by column.

    Returns
    -------
    ColumnOrder
    """
    t0 = time.perf_counter()

    def kept(reason: str, share: float = 0.0) -> ColumnOrder:
        return ColumnOrder(role, False, reason, hot_share=share,
                           seconds=time.perf_counter() - t0)
    if mode == "none" or not names:
        return kept("not asked for" if names else "the app reads no vector by column")
    if engine.pair.shared or role not in engine.stores:
        return kept("one memory for both devices" if engine.pair.shared
                    else f"no {role} share")
    if engine.plan.method == "dynamic" and any(op.column_writes for op in engine.ops):
        return kept("the dynamic baseline copies the written vectors by row ranges")
    store, side = engine.stores[role], engine.pair.side(role)
    x_bytes = engine.n * 4
    room = side.info.cache_bytes * (GPU_X_CACHE_SHARE if side.info.kind == "gpu" else 1)
    if mode == "auto" and x_bytes <= room:
        return kept(f"x ({x_bytes / 2**20:.1f} MiB) is within "
                    f"{'a sixteenth of ' if room < side.info.cache_bytes else ''}the cache "
                    f"({side.info.cache_bytes / 2**20:.1f} MiB)")
    held = index_buffers(store)
    if held is None:
        return kept("the share's indices stream from the host or are ELL slots")
    entries = sum(count for _, count in held)
    if not _fits(engine, role, side, entries):
        return kept("no room in the device's budget for a renumbered copy of the indices")
    try:
        counts, hist = _count(engine, side, held)
        share = hot_share(hist, hot_room(x_bytes, side.info.cache_bytes), 4, entries)
        if mode == "auto" and share < MIN_HOT_SHARE:
            return kept(f"the hottest columns that fill half the cache (an eighth of x where x "
                        f"fits it) take {share:.0%} of the reads (< {MIN_HOT_SHARE:.0%})",
                        share)
        perm, renumbered = _renumber(engine, side, held, counts, hist)
    except (cl().Error, MemoryError):  # the device refused the room: the share stays as it is
        return kept("no room on the device for a renumbered copy of the indices")
    for (piece, _), indices in zip(held, renumbered):
        engine.replace_indices(role, piece, indices)
    return ColumnOrder(role, True, f"the hottest columns that fill half the cache take "
                       f">= {share:.0%} of the reads", frozenset(names), perm, share,
                       time.perf_counter() - t0)


def _fits(engine, role: str, side, entries: int) -> bool:
    """Whether the device's budget holds the share's indices twice (old and new, while they
    are rewritten) beside its other arrays, the numbering and a vector's scratch copy."""
    store = engine.stores[role]
    held = sum(p.nbytes for p in store.pieces) or 4 * entries * (2 if store.has_data else 1)
    return held + 4 * entries + 12 * engine.n <= engine.options.budget(role, side)


def _kernel(engine, side, name: str):
    return engine.pair.kernel(side, ("skeleton/columns.cl",), {}, name)


def _local(engine, side, name: str) -> int:
    """The work-group size of a columns kernel with local memory: 256 or the largest power
    of two the device runs it with (its loops stride by the work-group's size)."""
    k = _kernel(engine, side, name)
    limit = k.get_work_group_info(cl().kernel_work_group_info.WORK_GROUP_SIZE,
                                  side.queue.device)
    return 1 << (min(_WG, max(int(limit), 1)).bit_length() - 1)


def _count(engine, side, held: list) -> tuple:
    """The reads of every column by the pieces' entries (a device buffer, int32, n) and the
    columns of each read class (on the host, shape (CLASSES,))."""
    mod, n, q = cl(), engine.n, side.queue
    counts = alloc(side, nbytes=n * 4)
    mod.enqueue_fill_buffer(q, counts, np.zeros(1, np.int32), 0, n * 4)
    for piece, count in held:
        call(_kernel(engine, side, "count_columns"), q, (_round(count),), None, piece.indices,
             np.uint64(count), counts)
    hist = np.zeros(CLASSES, np.int32)
    hist_buf = alloc(side, hist)
    wg = _local(engine, side, "class_histogram")
    call(_kernel(engine, side, "class_histogram"), q, (_round(n, wg),), (wg,), counts,
         np.int32(n), hist_buf)
    mod.enqueue_copy(q, hist, hist_buf, is_blocking=True)
    engine.host_syncs += 1
    return counts, hist


def _renumber(engine, side, held: list, counts, hist: np.ndarray) -> tuple:
    """The new numbering (a device buffer, int32, n: hottest class first, never-read
    columns last) and each piece's indices in it (new buffers; the old ones untouched)."""
    n, q = engine.n, side.queue
    order = list(range(CLASSES - 1, 0, -1)) + [0]
    base = np.zeros(CLASSES, np.int32)
    base[order] = np.concatenate(([0], np.cumsum(hist[order])[:-1])).astype(np.int32)
    perm = alloc(side, nbytes=n * 4)
    wg = _local(engine, side, "assign_columns")
    call(_kernel(engine, side, "assign_columns"), q, (_round(n, wg),), (wg,), counts,
         np.int32(n), alloc(side, base), perm)
    out = []
    for piece, count in held:
        out.append(alloc(side, nbytes=max(count, 1) * 4))
        call(_kernel(engine, side, "relabel_columns"), q, (_round(count),), None,
             piece.indices, np.uint64(count), perm, out[-1])
    q.finish()
    engine.host_syncs += 1
    return perm, out


def scatter(engine, order: ColumnOrder, name: str) -> None:
    """Put vector ``name``'s copy on ``order.role`` into the new numbering, on the device."""
    from .exchange import _TYPES
    side = engine.pair.side(order.role)
    buf = engine.buffer(name, order.role)
    dtype = engine._vec_dtype[name]
    n = engine._vectors[name]["size"]
    tmp = alloc(side, nbytes=n * dtype.itemsize)
    cl().enqueue_copy(side.queue, tmp, buf)
    k = engine.pair.kernel(side, ("skeleton/columns.cl",), {"T": _TYPES[dtype]}, "scatter_columns")
    call(k, side.queue, (_round(n),), None, tmp, order.perm, np.int32(n), buf)


def programs(pair, names: tuple) -> list:
    """``(role, sources, defines)`` of the programs :func:`order_columns` and :func:`scatter`
    build on the GPU for an app reading ``names`` by column (float vectors), to start early
    (:func:`finepar.engine.frontier.early_build`); none on one shared memory."""
    if not names or pair.shared:
        return []
    return [("gpu", ("skeleton/columns.cl",), {}), ("gpu", ("skeleton/columns.cl",), {"T": "float"})]


def _round(count: int, wg: int = _WG) -> int:
    """``count`` work-items rounded up to whole work-groups of ``wg`` (at least one)."""
    return max(-(-int(count) // wg) * wg, wg)


def check_step_numbering(columns: dict, roles: tuple, op, args: dict,
                         exchange: str | None) -> None:
    """Refuse a step of ``op`` (:class:`~finepar.engine.RowOp`, its vector arguments
    ``args``) that would read its ``x`` in another numbering than a renumbered device's
    columns (``columns``: role -> :class:`ColumnOrder`), or write a vector kept in that
    numbering by row; its column writes land in each device's own numbering.

    Raises
    ------
    DeviceError
        Naming the device and the vector.
    """
    x, by_row = args["x"], None
    for r in roles:
        c = columns.get(r)
        if c is None or not c.applied:
            continue
        if by_row is None:
            by_column = {args[k] for k in op.column_writes}
            by_row = tuple(v for k, v in args.items() if k not in op.column_writes
                           and k not in ("x", "ia")) + (exchange,) * (exchange not in by_column)
        if x is not None and x not in c.names:
            raise DeviceError(f"the {r}'s columns are renumbered for {sorted(c.names)}: a "
                              f"step cannot gather {x!r} by column there (columns='none')")
        for name in by_row:
            if name and name in c.names:
                raise DeviceError(f"vector {name!r} is kept in the renumbered columns' "
                                  f"order on the {r}: a step cannot write it by row")
