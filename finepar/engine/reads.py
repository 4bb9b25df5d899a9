"""Reads of the engine's vectors and sums (DESIGN.md §3, "engine"): several vectors
brought to the host in one wait, a split vector from both sides, a read waited for later.

:meth:`finepar.engine.Engine.read` waits once a vector. An app that reads two or more at
the end of a small run (BFS's levels and parents) pays that wait each time: on PoCL a
blocking read's wake-up is tens of microseconds, a share of a run of a few hundred.
"""

from __future__ import annotations

import numpy as np

from ..device import alloc, cl, read_staged, staged
from .binding import call


def read_buffers(engine, role: str, copies) -> None:
    """Blocking reads of ``(host array, buffer)`` pairs on ``role``'s queue, enqueued
    together and waited for once: one host synchronisation (counted), however many."""
    read_later(engine, role, copies)()


def read_later(engine, role: str, copies):
    """Reads of ``(host array, buffer)`` pairs on ``role``'s queue, enqueued now; the call
    it returns waits for them (one host synchronisation, counted). Commands enqueued after
    them run while the host waits."""
    mod, queue = cl(), engine.pair.side(role).queue
    evs = [mod.enqueue_copy(queue, out, buf, is_blocking=False) for out, buf in copies]

    def wait() -> None:
        evs[-1].wait()
        engine.host_syncs += 1
    return wait


def read_split(engine, out: np.ndarray, name: str) -> None:
    """:meth:`Engine.read` of a vector each side writes its own rows of (split memory):
    the whole copy from the side owning more rows, then the other side's rows, taken from
    its mapped buffer where it lives in host memory (a CPU: no kernel to build), else
    gathered on that device and read packed, the two reads waited for together."""
    small = min(("cpu", "gpu"), key=lambda r: engine.plan.shares[r].nrows)
    big = "gpu" if small == "cpu" else "cpu"
    rows = engine.plan.shares[small].rows
    if not rows.size:
        read_staged(engine.pair.side(big), out, engine.buffer(name, big))
        engine.host_syncs += 1
    elif engine.pair.side(small).host_memory:
        _read_mapped(engine, out, name, small, big, rows)
    else:
        _read_gathered(engine, out, name, small, big, rows)


def _read_gathered(engine, out: np.ndarray, name: str, small: str, big: str,
                   rows: np.ndarray) -> None:
    """:func:`read_split` through a gather of ``small``'s rows on its device (its index
    and output buffers and kernel kept by the engine, per side and type)."""
    from .exchange import _TYPES
    mod, side = cl(), engine.pair.side(small)
    pk = engine._read_pack.get((small, out.dtype.str))
    if pk is None:
        pk = engine._read_pack[(small, out.dtype.str)] = {
            "idx": alloc(side, np.ascontiguousarray(rows, dtype=np.int32), read_only=True),
            "out": alloc(side, nbytes=rows.size * 4),
            "host": np.empty(rows.size, dtype=out.dtype),
            "gather": engine.pair.kernel(side, ("skeleton/vector.cl",),
                                         {"T": _TYPES[out.dtype]}, "gather")}
    call(pk["gather"], side.queue, (-(-rows.size // 64) * 64,), None, np.int32(rows.size),
         pk["idx"], engine.buffer(name, small), pk["out"])
    ev_small = mod.enqueue_copy(side.queue, pk["host"], pk["out"], is_blocking=False)
    read_staged(engine.pair.side(big), out, engine.buffer(name, big))
    ev_small.wait()
    out[rows] = pk["host"]
    engine.host_syncs += 2


def _read_mapped(engine, out: np.ndarray, name: str, small: str, big: str,
                 rows: np.ndarray) -> None:
    """:func:`read_split` where ``small`` keeps its buffers in host memory (a CPU): the
    whole copy from the other side, then those rows taken from the mapped buffer."""
    mod, side = cl(), engine.pair.side(small)
    mapped, _ = mod.enqueue_map_buffer(side.queue, engine.buffer(name, small),
                                       mod.map_flags.READ, 0, out.shape, out.dtype,
                                       is_blocking=True)
    try:
        read_staged(engine.pair.side(big), out, engine.buffer(name, big))
        out[rows] = mapped[rows]
    finally:
        mapped.base.release(side.queue)
    engine.host_syncs += 2


def read_many(engine, names: tuple, role: str | None = None) -> list:
    """Vectors ``names`` on the host, each as :meth:`Engine.read` gives it.

    Where every one is a single plain copy of one side's buffer (small, in the input's
    numbering, one side holding it whole, one process: a distributed run's read gathers
    every rank's rows), the copies are enqueued together and waited for once: one host
    synchronisation, not one a vector.

    Parameters
    ----------
    engine : Engine
    names : tuple of str
        Vectors of the engine.
    role : str, optional
        The side to read from, as for :meth:`Engine.read`.

    Returns
    -------
    list of ndarray
        In the order of ``names``.
    """
    r = role or engine.roles[0]
    side = engine.pair.side(r)
    outs = [np.empty(engine._vectors[n]["size"], dtype=engine._vec_dtype[n]) for n in names]
    one_copy = ((engine.pair.shared or role is not None or len(engine.roles) == 1
                 or engine.plan.method == "dynamic")
                and getattr(engine, "comm", None) is None)  # a rank's read gathers
    if not one_copy or any(engine._by_column(n) or staged(side, o)
                           for n, o in zip(names, outs)):
        return [engine.read(n, role) for n in names]
    engine.drain()
    read_buffers(engine, r, [(o, engine.buffer(n, r)) for n, o in zip(names, outs)])
    return outs


def walked(st: dict, where: str, names: tuple) -> list | None:
    """Vectors ``names`` as the run's last walk read them with its own results
    (:meth:`~finepar.engine.walk.CpuWalk.read_out`), where the run ended on the walk
    (``where == 'walk'``: nothing wrote them after); else None (read them anew). Each
    walk's reads serve one answer."""
    walker = st.get("walker")
    got = getattr(walker, "fetched", None) if where == "walk" else None
    if not got or any(n not in got for n in names):
        return None
    walker.fetched = None
    return [got[n] for n in names]
