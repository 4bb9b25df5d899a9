"""Several vectors brought to the host in one wait (DESIGN.md §3, "engine").

:meth:`finepar.engine.Engine.read` waits once a vector. An app that reads two or more at
the end of a small run (BFS's levels and parents) pays that wait each time: on PoCL a
blocking read's wake-up is tens of microseconds, a share of a run of a few hundred.
"""

from __future__ import annotations

import numpy as np

from ..device import cl, staged


def read_buffers(engine, role: str, copies) -> None:
    """Blocking reads of ``(host array, buffer)`` pairs on ``role``'s queue, enqueued
    together and waited for once: one host synchronisation (counted), however many."""
    mod, queue = cl(), engine.pair.side(role).queue
    evs = [mod.enqueue_copy(queue, out, buf, is_blocking=False) for out, buf in copies]
    evs[-1].wait()
    engine.host_syncs += 1


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
