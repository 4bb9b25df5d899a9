"""BFS's levels over the ranks of a distributed run (DESIGN.md §3, "mpi").

The 1-D distributed BFS of Buluç and Madduri (SC'11) with Beamer's direction switch
(SC'12), on an engine over one rank's rows (``DistEngine``, more than one rank): every
rank keeps every vertex's level, its own vertices' parents and a frontier list on its
push device holding every frontier vertex (the others' have no out-edges there).

* **top-down**: the rank's push device expands the frontier along the rank's own
  vertices' out-edges (its rows of the graph, ``RankGraph``), claiming unvisited
  vertices anywhere; the claims are merged over the ranks in one collective, as a
  vertex list or a bitmap, whichever is smaller (``DistEngine.merge_claims``), and
  every rank marks their levels (``opencl/apps/bfs/ranks.cl``);
* **bottom-up**: each rank's unvisited rows look for a frontier in-neighbour (the plan's
  row operation), the bits each rank set for its own rows are merged with the level's
  sums in one collective (``DistEngine.merge_frontier``), and every rank marks the
  others' vertices' levels.

The direction is Beamer's rule (:meth:`~finepar.apps.bfs.BFS.wants_pull`) on the merged
frontier's size and edges, which every rank computes alike. A vertex another rank
claimed gets its parent at the end: each rank sends the parents it found for other
ranks' vertices to their owners (``DistEngine.route_to_owners``), once.
"""

from __future__ import annotations

import time

import numpy as np

from ..device import cl
from ..engine import Engine
from ..engine.frontier import PushRun
from ..engine.trace import FrontierTrace

#: The kernels of the levels' marks and the parents' fix-up.
SOURCES = ("apps/bfs/ranks.cl",)


def ranks(engine: Engine) -> int:
    """The ranks a level's frontier is merged over: a distributed engine's, else 1."""
    return getattr(engine, "ranks", 1)


def _kernel(engine: Engine, role: str, name: str):
    return engine.pair.kernel(engine.pair.side(role), SOURCES, {}, name)


def build(engine: Engine, push: str) -> None:
    """Build the levels' kernels on every role before the run (a build in a timed run
    would stall every rank: a PoCL build takes a few hundred milliseconds)."""
    for role in engine.roles:
        for name in ("mark_list", "mark_bits", "set_parents"):
            _kernel(engine, role, name)
    engine.pair.kernel(engine.pair.side(push), ("skeleton/vector.cl",), {"T": "int"}, "gather")


def _level_roles(engine: Engine, st: dict) -> tuple:
    """The roles whose copies of the levels a mark writes (one buffer in shared memory)."""
    return (st["push_role"],) if engine.pair.shared else tuple(engine.roles)


def mark_list(engine: Engine, st: dict, ids: np.ndarray, value: int) -> None:
    """``level[ids] = value`` on every side (a merged frontier's vertices)."""
    if not ids.size:
        return
    for role in _level_roles(engine, st):
        buf = engine.scratch(role, ids)
        engine.launch(role, _kernel(engine, role, "mark_list"), ids.size,
                      (np.int32(ids.size), buf, engine.buffer("level", role), np.int32(value)),
                      kind="queue", wait=False)
    engine.drain()


def mark_bits(engine: Engine, st: dict, name: str, value: int, count: bool
              ) -> tuple[int, int]:
    """``level[v] = value`` for the unvisited vertices set in bitmap ``name`` on every
    side; with ``count``, the set vertices and their out-degrees, counted on the push
    side (else zeros)."""
    nw = (st["n"] + 31) // 32
    push = st["push_role"]
    counts = st["mark_counts"]
    if count:
        cl().enqueue_fill_buffer(engine.pair.side(push).queue, counts, np.zeros(1, np.uint64),
                                 0, 16)
    for role in _level_roles(engine, st):
        mine = count and role == push
        engine.launch(role, _kernel(engine, role, "mark_bits"), nw,
                      (np.int32(nw), np.int32(st["n"]), engine.buffer(name, role),
                       engine.buffer("level", role), engine.buffer("outdeg", role),
                       np.int32(value), np.int32(mine),
                       counts if mine else engine.dummy(role)),
                      kind="queue", wg=256, wait=False)
    engine.drain()
    if not count:
        return 0, 0
    out = np.zeros(2, np.uint64)
    engine.read_buffer(push, out, counts)
    return int(out[0]), int(out[1])


def level_loop(app, engine: Engine, st: dict, max_iter: int | None
               ) -> tuple[int, FrontierTrace, str]:
    """BFS's levels over the ranks (see the module's description), from ``st`` as
    :meth:`~finepar.apps.bfs.BFS.prepare` and the run made it.

    Returns
    -------
    (int, FrontierTrace, str)
        Levels run, the trace, and ``marks``: every side and every rank holds its own
        rows' levels and parents (``Engine.read`` gathers them).
    """
    size, edges = app.start_host(engine, st)
    app.start_devices(engine, st)
    st["claimed"], st["front_ready"] = [], False
    trace, it, where = FrontierTrace(), 0, "queue"
    while size > 0 and (max_iter is None or it < max_iter):
        t0 = time.perf_counter()
        pull = app.wants_pull(st, size, edges, 0, None, len(engine.roles) == 2)
        if pull:
            found, found_edges = _bottom_up(app, engine, st, it, where)
            where = "marks"
        else:
            found, found_edges = _top_down(app, engine, st, it, where, size, edges)
            where = "queue"
        st["unexplored"] -= found_edges
        here = ("both" if len(engine.roles) == 2 else engine.roles[0]) if pull \
            else st["push_role"]
        run = PushRun("pull" if pull else "step", [(size, edges, found, found_edges)], 1,
                      False, found, found_edges, "empty" if not found else "batch")
        app._record(trace, run, pull, here, it, time.perf_counter() - t0)
        it += 1
        size, edges = found, found_edges
    _finish(app, engine, st, where)
    return it, trace, "marks"


def _move(st: dict, to_push: bool, names: tuple) -> None:
    """The other role's rows of ``names`` to (or from) the push side (split memory with
    two roles; nothing to move otherwise: every side's levels are marked alike)."""
    mover = st.get("mover")
    if mover is not None:
        (mover.to_push if to_push else mover.from_push)(names)


def _bottom_up(app, engine: Engine, st: dict, it: int, where: str) -> tuple[int, int]:
    """One bottom-up level over every rank's rows; the merged frontier's size and edges."""
    if where == "queue":
        _move(st, False, app.sync_vectors)
        if not st["front_ready"]:
            app.marks_from_queue(engine, st)
    sums = engine.rowop_local(x="front", y="parent", s0="level", s1="next", aux="outdeg",
                              ia=it)
    found, found_edges = (int(v) for v in engine.merge_frontier("next", sums))
    engine.swap("front", "next")
    engine.fill("next", 0)
    mark_bits(engine, st, "front", it + 1, count=False)
    st["front_ready"] = True
    return found, found_edges


def _top_down(app, engine: Engine, st: dict, it: int, where: str, size: int, edges: int
              ) -> tuple[int, int]:
    """One top-down level from this rank's own frontier vertices (the frontier of
    ``size`` vertices and ``edges`` out-edges over every rank), its claims merged over
    the ranks; the merged frontier's size and edges."""
    queue, push = st["queue"], st["push_role"]
    if where == "marks":
        _move(st, True, app.sync_vectors)
        queue.from_bitmap(engine.buffer("front", push), size, edges)
    args = (engine.buffer("level", push), engine.buffer("parent", push))
    if not queue.run(it, args, batch=1, cap=1, limit=None, kind="top-down").levels:
        # a local launch that found the list past its work-group's memory ran no level
        queue.run(it, args, batch=1, cap=1, limit=None, kind="top-down", local=False)
    claims = queue.vertices()
    lo, hi = engine.own_range()
    st["claimed"].append(claims[(claims < lo) | (claims >= hi)])
    words = (st["n"] + 31) // 32
    if 8 * claims.size > words:  # the rank sends its claims' bitmap, set on the device
        engine.fill("next", 0, (push,))
        queue.to_bitmap(engine.buffer("next", push))
    ids, bits = engine.merge_claims(claims, "next", push, max(1024, words // 16))
    if bits is None:
        mark_list(engine, st, ids, it + 1)
        queue.load(ids)
        st["front_ready"] = False
        return int(ids.size), int(st["outdeg"][ids].sum())
    engine.write("front", bits)
    engine.fill("next", 0)
    size, edges = mark_bits(engine, st, "front", it + 1, count=True)
    queue.from_bitmap(engine.buffer("front", push), size, edges)
    st["front_ready"] = True
    return size, edges


def _finish(app, engine: Engine, st: dict, where: str) -> None:
    """Parents of the vertices other ranks claimed: each rank sends those it found to
    their owners, who keep them where they found none (collective); then every side
    holds its own rows."""
    push = st["push_role"]
    if where == "marks":
        _move(st, True, app.sync_vectors)
    claimed = (np.concatenate(st["claimed"]) if st["claimed"] else np.zeros(0, np.int32))
    parents = np.empty(claimed.size, np.int32)
    if claimed.size:
        side = engine.pair.side(push)
        idx, out = engine.scratch(push, claimed), engine.scratch(push, parents)
        engine.pair.kernel(side, ("skeleton/vector.cl",), {"T": "int"}, "gather")(
            side.queue, (-(-claimed.size // 64) * 64,), None, np.int32(claimed.size), idx,
            engine.buffer("parent", push), out)
        engine.read_buffer(push, parents, out)
    ids, got = engine.route_to_owners(claimed, parents)
    if ids.size:
        ids, first = np.unique(ids, return_index=True)  # the first rank's parent of each
        got = np.ascontiguousarray(got[first], dtype=np.int32)
        ids = ids.astype(np.int32)
        engine.launch(push, _kernel(engine, push, "set_parents"), ids.size,
                      (np.int32(ids.size), engine.scratch(push, ids), engine.scratch(push, got),
                       engine.buffer("parent", push)), kind="queue")
    _move(st, False, app.sync_vectors)
