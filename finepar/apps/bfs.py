"""Breadth-first search, direction-optimising (Beamer, Asanović and Patterson, SC'12).

Levels and parents from one root. Two kinds of step, chosen per level:

* **top-down** (push): the frontier, a vertex list kept on one device, claims
  its unvisited out-neighbours (a load-balanced advance over the frontier's
  edges). Small frontiers; it runs on the push role alone (FinePar TKDE §4.2).
* **bottom-up** (pull): every unvisited vertex looks among its in-neighbours for
  one in the frontier, a bitmap, stopping at the first: the masked (min, second)
  row operation on ``A^T`` over the plan, both devices at once.

Beamer's heuristic switches: top-down to bottom-up once the frontier's edges
exceed the unexplored edges over ``alpha`` (and ``n / beta``: a bottom-up level
visits every unvisited row, a cost a handful of frontier edges never pays back, as
at the tail of a road network); back once the frontier holds fewer than
``n / beta`` vertices and shrinks. Top-down levels run in batches whose stop test
(an empty frontier, Beamer's switch) is on the device, and small frontiers run many
levels in one work-group-local launch (:mod:`finepar.engine.frontier`): the host reads
a tally per batch, not per level; a bottom-up level reads one. The frontier stays on
the devices. Levels are exact and parents form a valid BFS tree (checked by the
Graph500 rules).
"""

from __future__ import annotations

import math

import numpy as np

from ..engine import Engine, RowOp
from ..graph import Graph
from . import bfsranks, register
from .base import MAX_ITER, App, AppResult, Param, positive, vertex_label
from ..engine.frontier import STATE, FrontierApp, FrontierQueue, PushRun, queue_defines
from ..engine.binding import enqueue_bound
from ..engine import grouplevels
from ..engine.reads import read_many, walked
from ..engine.trace import by_device_line, launch_line, push_line

DIRECTIONS = ("auto", "top-down", "bottom-up")
#: Bottom-up steps of a first chain on one device (:meth:`BFS.pull_chain`), and at most.
#: A step past the stop still launches its whole grid (0.39 ms at Graph500 scale 24 on the
#: H100): two first, the usual count of bottom-up levels of a Kronecker graph.
FIRST_CHAIN, MAX_CHAIN = 2, 16
#: The run's first top-down level enqueues a chain behind it where it likely switches
#: (:meth:`BFS.speculation`), judged from this many of the root's neighbours.
SPECULATE, SPECULATE_SAMPLE = True, 64
#: Team sizes a bottom-up step picks from (:func:`bottom_up_lanes`): 2 work-items a row,
#: the longest rows' too, or (None) the plan's own teams, up to a sub-group (32 work-items
#: on the GPUs measured) and a work-group a row of 1,024 entries or more.
BOTTOM_UP_LANES = (2, None)
#: A step runs teams of 2 where a row expects its first hit within this many entries, or
#: where the unexplored edges are at most this share of all (nearly every row visited).
NARROW_SCAN, NARROW_UNEXPLORED = 4.0, 0.01


#: Entries up to which a GPU alone runs BFS's levels in one work-group
#: (:mod:`finepar.engine.grouplevels`, ``group_loop='auto'``). On one H200
#: (benchmarks/RESULTS.md) it took 0.65 ms at Graph500 scale 14 (426,320 entries) and 1.66
#: ms on soc-Slashdot0902 (948,464) against the usual path's 1.21 and 2.14 ms, and 2.44 ms
#: at scale 16 (1.8 M) against 1.35: one SM's edges, about 1.3-1.7 ns each.
GROUP_NNZ = 1 << 20
#: Entries up to which a GPU alone runs them so on a graph deep for its size
#: (:func:`~finepar.engine.grouplevels.deep_for_loop`): cnr-2000's 3.2 M entries and 36
#: levels took 9.9 ms there against the usual path's 19.9 on one H200 (2026-11-28).
GROUP_DEEP_NNZ = 1 << 22

#: The program of a run's start and a chain's arming (opencl/apps/bfs/start.cl).
START_SOURCES = ("apps/bfs/start.cl",)


def start_kernel(engine: Engine, side, name: str):
    """Kernel ``name`` of :data:`START_SOURCES` on ``side`` (built once a context)."""
    return engine.pair.kernel(side, START_SOURCES, {}, name)


def start_launch(engine: Engine, side, name: str, size: int, args: tuple) -> None:
    """Enqueue :func:`start_kernel` ``name`` over ``size`` work-items (rounded up to a
    whole 256; one work-group of 64 for a single work-item's kernel), only its changed
    arguments set (:func:`~finepar.engine.binding.enqueue_bound`)."""
    grid = (64,) if size <= 1 else (-(-size // 256) * 256,)
    enqueue_bound(engine, side.queue, start_kernel(engine, side, name), grid, None, args)


def op_name(kind: str, lanes: int | None) -> str:
    """The name of BFS's row operation of ``kind`` (``bfs``: a step read at once;
    ``bfs-chain``: chained on one device) whose teams are at most ``lanes`` work-items a
    row (None: the plan's own)."""
    return kind if lanes is None else f"{kind}-{lanes}"


@register
class BFS(grouplevels.GroupLevelsApp, FrontierApp, App):
    """Direction-optimising BFS over the plan.

    Result: ``values`` are levels (int32, -1 unreached), ``extra['parent']``
    the BFS tree (int32, the root its own parent, -1 unreached),
    ``extra['trace']`` which levels ran which way and where.
    """

    name = "bfs"
    #: Place in the registry's order (the CLI's and the API's lists).
    order = 50
    api_args = ('root',)
    api_outputs = ('values', 'parent')
    api_doc = """BFS from ``root`` (a row; default the vertex of largest out-degree); returns
        ``(levels, parents, report)`` (int32, -1 unreached)."""
    title = "breadth-first search from one root (direction-optimising)"
    #: a small input's levels in one work-group (finepar.engine.grouplevels): top-down
    group_fragment, group_direction = "apps/bfs/group.cl", "top-down"
    group_vectors = ("level", "parent")
    group_bitmap = True  # claims on a local visited bitmap where it fits
    #: one op a kind (:func:`op_name`) and team size; the first, with the plan's own teams,
    #: is the tuner's (a step that scans every entry) and the ranks'
    ops = tuple(RowOp(op_name(kind, lanes), "apps/bfs/rowop.cl", acc_dtype=np.dtype(np.int32),
                      part_dtype=np.dtype(np.int64), writes=("y", "s0"), empty_rows_idle=True,
                      defines=defines, max_lanes=lanes)
                for kind, defines in (("bfs", ()), ("bfs-chain", (("CHAIN", 1), ("STOP_FLAG", 1))))
                for lanes in BOTTOM_UP_LANES[::-1])
    params = (
        Param("root", "vertex", None, "source vertex: the input's own id; default the vertex "
                                      "of largest out-degree"),
        Param("direction", "choice", "auto", "auto (Beamer's switch, per level), or top-down or "
                                             "bottom-up for every level", choices=DIRECTIONS),
        Param("alpha", "float", 15.0, "switch to bottom-up once the frontier's edges exceed the "
                                      "unexplored edges / alpha (15) and n / beta", positive),
        Param("beta", "float", 18.0, "switch back to top-down once the frontier holds fewer than "
                                     "n / beta vertices (18)", positive),
        MAX_ITER,
    )
    rate_unit = "TEPS"
    vertex_values = ("values", "parent")
    vertex_ids = ("parent",)
    sync_vectors = ("level", "parent")
    owned_rows = True
    direction_names = {"push": "top-down", "pull": "bottom-up"}
    #: a bottom-up scan stops at its first frontier in-neighbour: per-row mappings only
    #: (CSR-adaptive blocks and ELL read every entry)
    groupings = ("none", "pow4")
    #: the device stops a top-down batch where Beamer's rule pulls again, so the batch
    #: after a pull may be long: the tail's levels in one read, not in batches of 1, 2, ...
    batch_after_pull = 4
    #: small frontiers run top-down on one CPU work-item (finepar.engine.walk)
    walk_sources = ("apps/bfs/frontier.cl", "skeleton/walk.cl")
    walk_results = ("level", "parent")

    def static_params(self) -> dict:
        return {"direction": "bottom-up"}

    def built_ahead(self, roles: tuple) -> tuple:
        """One device chains its bottom-up steps; two read each at once: every team size."""
        kind = "bfs-chain" if len(roles) == 1 else "bfs"
        return tuple(op_name(kind, lanes) for lanes in BOTTOM_UP_LANES)

    matrix_form = "transpose"

    def matrix(self, graph: Graph) -> Graph:
        return graph.transpose()

    def defaults(self, graph: Graph, params: dict) -> dict:
        if params.get("root") is None:
            params["root"] = int(np.argmax(graph.out_degrees()))
        return params

    def usual(self, params: dict) -> bool:
        """Whether a run with ``params`` runs BFS the default way (the direction left to
        Beamer's switch, no ``max_iter``): what one work-group's levels compute."""
        return params.get("direction", "auto") == "auto" and params.get("max_iter") is None

    @property
    def group_nnz(self) -> int:
        """:data:`GROUP_NNZ`, as the module holds it at the call."""
        return GROUP_NNZ

    @property
    def group_deep_nnz(self) -> int:
        """:data:`GROUP_DEEP_NNZ`, as the module holds it at the call."""
        return GROUP_DEEP_NNZ

    def group_args(self, engine: Engine, st: dict, gl) -> tuple:
        """Levels and parents on the launch's role, and the launch's local visited bitmap
        (:attr:`~finepar.engine.grouplevels.GroupLevels.seen`) with whether it holds one."""
        return (engine.buffer("level", gl.role), engine.buffer("parent", gl.role), gl.seen,
                np.int32(gl.bitmap))

    def early_programs(self, pair, matrix: Graph, params: dict, options=None) -> list:
        """The one work-group's program alone where :meth:`one_device` takes the GPU by
        rule; else the push list's program on the GPU (the usual push role) and the run's
        start, and on a small input the one work-group's too."""
        group = [self.group_program()]
        if self.one_device(pair, matrix, params, options):
            return group
        return [("gpu", ("apps/bfs/frontier.cl", "skeleton/frontier.cl"),
                 queue_defines(pair.gpu.info, matrix, role="gpu")),
                ("gpu", START_SOURCES, {}),
                *(group if grouplevels.in_loop_size(matrix, GROUP_NNZ, GROUP_DEEP_NNZ, options)
                  else [])]

    def prepare(self, engine: Engine, graph: Graph) -> dict:
        n = graph.n
        words = (n + 31) // 32
        outdeg = graph.out_degrees().astype(np.int32)
        engine.vector("outdeg", outdeg)
        for name, size, dtype, value in (("level", n, np.int32, -1), ("parent", n, np.int32, -1),
                                         ("front", words, np.uint32, 0),
                                         ("next", words, np.uint32, 0)):
            engine.blank(name, size, dtype, value)
        across = bfsranks.ranks(engine) > 1
        own = engine.own_push_roles() if hasattr(engine, "own_push_roles") else None
        # across ranks each level is merged: no walk of many levels on one rank
        pp = self.prepare_push(engine, None if across else graph, roles=own)
        push = pp["push_role"]
        # a small input's usual runs take one work-group's launch: the list on first use
        later = self.in_group(engine, graph, {})
        out = {"outdeg": outdeg, "words": words, **pp, "csr": (graph.indptr, graph.indices),
               "queue": (self._queue(engine, push, graph)
                         if push is not None and not later else None)}
        if across and push is not None:  # levels merged over the ranks (apps/bfsranks.py)
            out.update(bfsranks.prepare(engine, push, n))
        return out

    def _queue(self, engine: Engine, push: str, graph: Graph) -> FrontierQueue:
        """The push side's list of top-down levels."""
        return FrontierQueue(engine, push, graph, ("apps/bfs/frontier.cl", "skeleton/frontier.cl"))

    # ------------------------------------------------------------ the loop's hooks
    def start_host(self, engine: Engine, st: dict):
        """The run's start on the host: the root's list and out-edges."""
        root = st["root"]
        st["unexplored"] = st["nnz"] - int(st["outdeg"][root])
        st["last"] = "push"
        st["start_list"] = np.array([root], np.int32)
        return 1, int(st["outdeg"][root])

    def start_devices(self, engine: Engine, st: dict, roles: tuple | None = None,
                      queue: bool = True) -> None:
        """The run's start on the devices: empty bitmaps everywhere, the start's levels and
        parents on ``roles`` (default: the plan's; ``()``: none), one launch a device
        (:meth:`start_launch`), and with ``queue`` the root in the push side's list (else
        a bitmap on every side)."""
        root = st["root"]
        self.start_launch(engine, st, engine.roles if roles is None else roles, bitmaps=True)
        # one process: nothing writes the bitmaps before the first list becomes marks
        st["front_clear"] = "mark_counts" not in st
        if not queue:
            return
        if st["queue"] is not None:
            st["queue"].load(np.array([root], np.int32))
        else:  # no push side: the frontier starts as a bitmap on every side
            engine.set_entries("front", [root // 32], [np.uint32(1) << np.uint32(root % 32)])

    def start_vectors(self, engine: Engine, st: dict, roles: tuple | None = None) -> None:
        """Levels and parents at a run's start on ``roles`` (default: the plan's): -1, the
        root's its own (on the devices: no n-long host arrays, no waits)."""
        self.start_launch(engine, st, engine.roles if roles is None else roles, bitmaps=False)

    def start_launch(self, engine: Engine, st: dict, roles: tuple, bitmaps: bool) -> None:
        """``opencl/apps/bfs/start.cl`` on each device: levels and parents set for the
        root's start on ``roles``, and with ``bitmaps`` both frontier bitmaps cleared on
        engine role; once a buffer where the roles share one (shared memory). ``roles``
        may name a side outside the plan's (the CPU's walk)."""
        engine._plain("level", "parent", "front", "next")
        n, words, done = st["n"], st["words"], set()
        for r in dict.fromkeys((*roles, *engine.roles)):
            bufs = [engine.buffer(v, r) for v in ("level", "parent", "front", "next")]
            vectors = r in roles and id(bufs[0]) not in done
            clear = bitmaps and r in engine.roles and id(bufs[2]) not in done
            if not (vectors or clear):
                continue
            done.update(id(b) for b in bufs[:2] if vectors)
            done.update(id(b) for b in bufs[2:] if clear)
            side = engine.pair.side(r)
            size = max(n if vectors else 0, words if clear else 0)
            start_launch(engine, side, "bfs_start", size, (
                np.int32(n), np.int32(words), np.int32(st["root"]), np.int32(vectors),
                np.int32(clear), *bufs))
            engine._shared_barrier(side)

    def walks(self, st: dict) -> bool:
        """The walk is top-down: not where every level must be bottom-up."""
        return st["direction"] != "bottom-up"

    def walked(self, st: dict, levels: list) -> None:
        st["unexplored"] -= sum(lv[3] for lv in levels)
        if levels:
            st["prev_size"] = levels[-1][0]
        st["last"] = "push"

    def wants_pull(self, st, size, edges, processed, policy, two_roles) -> bool:
        mode = st["direction"]
        refused = st.pop("refused", False)  # the device stopped a top-down batch here
        if "spec" in st:  # the device pulled (Beamer's rule on the first level's tally)
            pull = True
        elif mode != "auto":
            pull = mode == "bottom-up"
        elif refused:
            pull = True
        elif st["last"] == "push":
            pull = edges > st["unexplored"] / st["alpha"] and edges > st["n"] / st["beta"]
        else:
            pull = not (size < st["n"] / st["beta"] and size < st["prev_size"])
        st["prev_size"] = size
        st["after_pull"] = st["last"] == "pull"
        st["last"] = "pull" if pull else "push"
        return pull

    def pull(self, engine: Engine, st: dict, it: int):
        found, found_edges = engine.rowop(x="front", y="parent", s0="level", s1="next",
                                          aux="outdeg", ia=it, op=st.get("pull_op"))
        engine.merge_bits("next")  # each side (each rank) set its own rows' bits
        engine.swap("front", "next")
        engine.fill("next", 0)
        st["unexplored"] -= int(found_edges)
        return int(found), int(found_edges)

    def pull_levels(self, engine: Engine, st: dict, it: int, size: int, edges: int, cap):
        """Bottom-up steps: chained on the device where one device runs them
        (:meth:`pull_chain`), else one :meth:`pull`."""
        if not (engine.device_iterations and "mark_counts" not in st
                and engine.executor.name == "static"):
            st["pull_op"] = self.bottom_up_op(st, edges, "bfs")
            return super().pull_levels(engine, st, it, size, edges, cap)
        st["pull_op"] = (st["spec"]["op"] if "spec" in st
                         else self.bottom_up_op(st, edges, "bfs-chain"))
        return self.pull_chain(engine, st, it, size, edges, cap)

    def bottom_up_op(self, st: dict, edges: int, kind: str) -> str:
        """The op of ``kind`` (:func:`op_name`) for a bottom-up step over a frontier with
        ``edges`` out-edges, its team size by :func:`bottom_up_lanes` from the run's
        ``nnz`` and unexplored edges (merged over the ranks of a distributed run)."""
        return op_name(kind, bottom_up_lanes(st["nnz"], edges, st["unexplored"]))

    def pull_chain(self, engine: Engine, st: dict, it: int, size: int, edges: int, cap):
        """Up to ``st['chain']`` bottom-up steps on the one device (2 at first, doubled
        after a chain that ran whole, at most :data:`MAX_CHAIN`, back to the steps that ran
        after one that stopped; at most ``cap``), read once, all with ``st['pull_op']``
        (the team size its first step picked). Each step's reduction tests Beamer's switch
        back to top-down (or an empty frontier) on the device and stops the later steps
        (opencl/apps/bfs/rowop.cl, ``CHAIN``); the host applies the same integer test to the steps' sums to learn
        where the chain stopped. The device never waits for the host between the steps.

        Returns
        -------
        PushRun
            Mode ``chain``; ``stop`` is ``empty``, ``switch`` (the test stopped it) or
            ``batch`` (every step enqueued ran).
        """
        role, op = engine.roles[0], st["pull_op"]
        spec = st.pop("spec", None)
        if spec is not None:  # enqueued behind the run's first level (speculate)
            k, limit = spec["k"], spec["limit"]
        else:
            k = max(1, min(st.get("chain", FIRST_CHAIN), MAX_CHAIN if cap is None else cap))
            limit = self.chain_limit(st)
            if st.pop("next_dirty", False):  # the last chain's output, cleared only now
                engine.fill("next", 0)
            side = engine.pair.side(role)  # stop lowered, the test's scalars: one launch
            start_launch(engine, side, "chain_arm", 1, (
                np.int32(limit), np.int32(size), engine.fscal[role], engine.stop[role]))
            self.chain_steps(engine, it, k, op)
        sums = engine.sums(role, it, k, op=op)
        engine.drain()
        levels, stop = chain_levels(sums, size, edges, limit)
        if (k - len(levels)) % 2:  # the steps past the stop wrote nothing
            engine.swap("front", "next")
        fold_records(engine.records, k - len(levels))
        st["next_dirty"] = True  # cleared before the next chain, if one comes (a run's
        # start clears it too): no fill between the read and the top-down levels after
        st["unexplored"] -= sum(lv[3] for lv in levels)
        st["prev_size"] = levels[-1][0]
        st["chain"] = (min(2 * k, MAX_CHAIN) if stop == "batch"
                       else max(FIRST_CHAIN, len(levels)))
        return PushRun("chain", levels, k, False, levels[-1][2], levels[-1][3], stop)

    def chain_limit(self, st: dict) -> int:
        """The chain's switch-back limit: ceil(n / beta) as an int32; 0 (never) where every
        level pulls (no push side, or a forced direction)."""
        return (min(math.ceil(st["n"] / st["beta"]), 2**31 - 1)
                if st["direction"] == "auto" and st["push_role"] is not None else 0)

    def chain_steps(self, engine: Engine, it: int, k: int, op: str) -> None:
        """Enqueue ``k`` chained bottom-up steps with ``op`` from level ``it`` (armed
        before); the output bitmap of a later step is cleared only where it runs."""
        role = engine.roles[0]
        for j in range(k):
            if j:
                engine.zero_unless_stopped("next", role)
            engine.rowop(op=op, x="front", y="parent", s0="level", s1="next", aux="outdeg",
                         ia=it + j, wait=False, slot=it + j)
            engine.swap("front", "next")

    def speculation(self, engine: Engine, st: dict, it: int, batch: int, cap):
        """The run's first top-down level, where it is likely to switch: a chain of
        bottom-up steps enqueued behind it before the host reads it (``then`` of
        :meth:`FrontierQueue.run`), armed on the device by Beamer's rule on the level's
        own tally (``chain_arm_from_tally``), so the device goes from the root's level to
        the pulls without waiting for the host (one host round trip less). Likely: a
        sample of the root's neighbours' out-degrees predicts the level's edges at twice
        both thresholds. Returns the ``then`` callable, or None."""
        q, role = st["queue"], st["push_role"]
        if not (SPECULATE and it == 0 and batch == 1 and cap is None
                and st["direction"] == "auto" and st.get("front_clear")
                and engine.roles == (role,) and engine.device_iterations
                and "mark_counts" not in st and engine.executor.name == "static"
                and not q.local_fits()):
            return None
        degree, est = self.first_level_edges(st)
        if degree == 0:
            return None
        unexplored = st["unexplored"]
        t_alpha = int(unexplored // (st["alpha"] + 1))
        t_beta = int(st["n"] // st["beta"])
        if est <= 2 * max(t_alpha, t_beta):
            return None

        def then(k: int) -> None:
            side = engine.pair.side(role)
            state = np.int32(STATE + 1)  # list 1: the root level's, in the queue's `next`
            bits = np.int32(q.edge_bits)
            limit = self.chain_limit(st)
            start_launch(engine, side, "chain_arm_from_tally", 1, (
                q.tallies, state, bits, np.int64(t_alpha), np.int64(t_beta),
                np.int32(limit), engine.fscal[role], engine.stop[role]))
            start_launch(engine, side, "bits_from_tally", degree, (
                q.tallies, state, bits, q.next, engine.buffer("front", role)))
            st["front_clear"] = False
            op = op_name("bfs-chain", bottom_up_lanes(st["nnz"], int(est),
                                                     max(0, unexplored - int(est))))
            kc = max(1, min(st.get("chain", FIRST_CHAIN), MAX_CHAIN))
            self.chain_steps(engine, it + k, kc, op)
            st["spec"] = {"k": kc, "limit": limit, "op": op, "t": (t_alpha, t_beta)}
        return then

    def first_level_edges(self, st: dict) -> tuple[int, float]:
        """The root's out-degree and the predicted out-edges of its neighbours (the first
        level's list at most): :data:`SPECULATE_SAMPLE` of them, evenly spaced, scaled."""
        indptr, indices = st["csr"]
        root = st["root"]
        nbrs = indices[indptr[root]:indptr[root + 1]]
        if nbrs.size == 0:
            return 0, 0.0
        sample = nbrs[::max(1, nbrs.size // SPECULATE_SAMPLE)]
        return int(nbrs.size), float(st["outdeg"][sample].mean()) * nbrs.size

    def drop_speculation(self, engine: Engine, st: dict) -> None:
        """The device did not pull after the first level: its chain's steps returned at
        once; their records fold into the level's, the bitmaps' names are restored and the
        marked frontier bitmap is cleared at the next switch."""
        spec = st.pop("spec")
        engine.drain()
        fold_records(engine.records, spec["k"])
        if spec["k"] % 2:
            engine.swap("front", "next")

    def push_levels(self, engine: Engine, st: dict, it: int, batch: int, cap):
        """Top-down levels in a batch (or one work-group-local launch), stopped on the
        device where Beamer's rule switches to bottom-up (the frontier's edges past the
        unexplored edges over alpha; ``direction='top-down'``: never)."""
        role = st["push_role"]
        limit = ((st["alpha"], st["unexplored"], 1, st["n"] // st["beta"],
                  int(st["after_pull"])) if st["direction"] == "auto" else None)
        run = st["queue"].run(it, (engine.buffer("level", role), engine.buffer("parent", role)),
                              batch=batch, cap=cap, limit=limit, kind="top-down",
                              then=self.speculation(engine, st, it, batch, cap))
        if "spec" in st:  # the device's own test on the level's tally, as the host reads it
            t_alpha, t_beta = st["spec"]["t"]
            if not (run.levels and run.edges > t_alpha and run.edges > t_beta):
                self.drop_speculation(engine, st)
        st["unexplored"] -= sum(lv[3] for lv in run.levels)
        if run.levels:
            st["prev_size"] = run.levels[-1][0]
        return run

    def queue_from_marks(self, engine: Engine, st: dict, it: int, size: int, edges: int) -> None:
        st["queue"].from_bitmap(engine.buffer("front", st["push_role"]), size, edges)

    def marks_from_queue(self, engine: Engine, st: dict) -> None:
        if "spec" in st:  # the speculated chain's marks are on the device already
            return
        if not st.pop("front_clear", False):  # the first, right after the start: clear
            engine.fill("front", 0)
        # another device's queue reads the bitmap next only where two share memory
        st["queue"].to_bitmap(engine.buffer("front", st["push_role"]),
                              wait=engine.pair.shared and len(engine.roles) == 2)
        if not engine.pair.shared and len(engine.roles) == 2:
            engine.write("front", engine.read("front", role=st["push_role"]),
                         roles=tuple(r for r in engine.roles if r != st["push_role"]))

    # ---------------------------------------------------------------- the app
    def run(self, engine: Engine, graph: Graph, *, root: int | None = None,
            direction: str = "auto", alpha: float = 15.0, beta: float = 18.0,
            max_iter: int | None = None) -> AppResult:
        params = self.check_params(graph, {"root": root, "direction": direction, "alpha": alpha,
                                           "beta": beta, "max_iter": max_iter})
        st = dict(self.prepared(engine, graph))
        st.update(params, n=graph.n, nnz=graph.nnz, prev_size=0)
        if "mark_counts" in st:  # a distributed run's levels, merged over the ranks
            iters, trace, where = bfsranks.level_loop(self, engine, st, max_iter)
        elif self.in_group(engine, graph, params):  # a small input: one launch
            iters, trace, where = self.group_levels(engine, graph, st)
        else:
            if st["queue"] is None and st["push_role"] is not None:  # left to first use
                st["queue"] = engine.state[self.name]["queue"] = self._queue(
                    engine, st["push_role"], graph)
            iters, trace, where = self.frontier_loop(engine, st, policy=None, max_iter=max_iter)
        # traversed edges from the tallies: every discovered vertex's out-degree was
        # counted when it was found (the root's here)
        totals = trace.totals()
        work = int(st["outdeg"][st["root"]]) + totals["found_edges"]
        if graph.symmetric:
            work //= 2  # an undirected edge counts once (Graph500's TEPS)
        return AppResult(values=None, iterations=iters, converged=True,
                         extra={"root": st["root"], "trace": trace.step_view(),
                                "launches": trace.launches, "per_launch": trace.per_launch(),
                                "push_role": st["push_role"], "push_costs": st["push_costs"],
                                "steps": trace.counts(), "where": where,
                                "by_device": trace.by_device(), "handovers": trace.handovers,
                                "reached": 1 + totals["found"], "depth": totals["depth"],
                                **({"rank_levels": st["rank_levels"]}
                                   if "rank_levels" in st else {})},
                         work_edges=work)

    def collect(self, engine: Engine, graph: Graph, result: AppResult) -> AppResult:
        st = engine.state[self.name]
        role = {"queue": st["push_role"], "walk": "cpu",
                "group": engine.roles[0]}.get(result.extra["where"])
        names = ("level", "parent")
        got = walked(st, result.extra["where"], names) or read_many(engine, names, role)
        result.values, result.extra["parent"] = got
        return result

    def profile_step(self, engine: Engine) -> None:
        """A bottom-up step that finds nothing (an empty frontier): every unvisited row
        scans all its in-edges, the most a step can cost."""
        words = (engine.n + 31) // 32
        engine.write("level", np.full(engine.n, -1, np.int32))
        engine.write("front", np.zeros(words, np.uint32))
        engine.rowop(x="front", y="parent", s0="level", s1="next", aux="outdeg", ia=-2)

    def warmup(self, engine: Engine, graph: Graph, **params) -> None:
        """The first levels both ways, so every kernel is compiled (a small input's one
        work-group's run, where it applies, instead: :meth:`in_group`)."""
        p = self.defaults(graph, {"root": params.get("root")})
        if self.in_group(engine, graph, params):
            self.run(engine, graph, root=p["root"])
            return
        self.run(engine, graph, root=p["root"], max_iter=2, direction="bottom-up")
        self.run(engine, graph, root=p["root"], max_iter=2, direction="top-down")

    # ------------------------------------------------------------- answers
    def reference(self, graph: Graph, params: dict):
        return bfs_levels_fast(graph, params["root"])

    def check(self, graph: Graph, result: AppResult, ref, params: dict) -> str:
        if not np.array_equal(result.values, ref):
            bad = np.flatnonzero(result.values != ref)
            return f"levels differ from the reference at {bad.size} vertices (first {bad[0]})"
        return "; ".join(validate_bfs(graph, params["root"], result.values,
                                                result.extra["parent"], reference_levels=ref))

    def summary(self, result: AppResult, graph: Graph) -> list[tuple[str, str]]:
        ex = result.extra
        return [("root", vertex_label(graph, ex["root"])),
                ("reached", f"{ex['reached']:,} of {graph.n:,} vertices"),
                ("depth", f"{ex['depth']}"),
                ("levels", ", ".join(f"{k}: {v}" for k, v in ex["steps"].items())),
                ("launches", launch_line(ex["per_launch"])),
                ("by device", by_device_line(ex["by_device"], ex.get("handovers"))),
                ("push role", push_line(ex["push_role"], ex["push_costs"]))]


def bottom_up_lanes(nnz: int, frontier_edges: int, unexplored: int | None = None) -> int | None:
    """Work-items a row for a bottom-up step over a frontier with ``frontier_edges``
    out-edges, ``unexplored`` edges left: 2 where a row would find its first hit within
    :data:`NARROW_SCAN` entries if hits were spread evenly (``nnz / frontier_edges``), or
    where at most :data:`NARROW_UNEXPLORED` of the edges are unexplored; else None (the
    plan's own teams).

    A row's scan stops at its first frontier in-neighbour and a team reads its lanes'
    entries a round, so where hits come first a wide team reads entries no one needed, and
    where they come late a narrow one scans long rows serially; where nearly every row is
    visited, a launch costs its work-items, 16 times fewer in teams of 2. Measured
    (probe_bfs): Graph500 scale 24's two pulls expect a hit in 1.6 and 2.7 entries, and
    their team launches took 1.57 ms with the plan's teams, 0.49 ms with 2 lanes (H200);
    scale 26's third pull (0.2% of the edges unexplored, 444 entries expected) 2.65 ms with
    the plan's teams, 0.47 ms with 2 lanes (H100); cnr-2000 (4.4 to 131 entries; its long
    rows hit later than evenly spread hits would) 3.1 ms of kernels with the plan's teams,
    11.8 with 2 lanes (H100), nearly all in its rows of 1,024 entries or more."""
    if unexplored is not None and unexplored <= NARROW_UNEXPLORED * nnz:
        return 2
    return 2 if nnz <= NARROW_SCAN * max(frontier_edges, 0) else None


def fold_records(records: list, skipped: int) -> None:
    """Fold the step records of a chain's last ``skipped`` steps (stopped on the device:
    their launches returned at once) into the last step that ran, so the run's device
    time and launches stay whole, and drop them."""
    if skipped <= 0:
        return
    last, extra = records[-skipped - 1], records[-skipped:]
    for rec in extra:
        last.wall += rec.wall
        for field in ("kernel", "span", "launches"):
            mine = getattr(last, field)
            for role, v in getattr(rec, field).items():
                mine[role] = mine.get(role, 0) + v
    del records[-skipped:]


def chain_levels(sums: np.ndarray, size: int, edges: int, limit: int) -> tuple[list, str]:
    """The steps a chain of bottom-up steps ran, from their sums (shape (k, 2): vertices
    found and their out-edges; a step past the stop repeats the last real one's): the
    device's test (opencl/apps/bfs/rowop.cl, ``CHAIN``) in the same integers. ``size`` and
    ``edges``: the frontier the first step read; ``limit``: ceil(n / beta), 0 never.

    Returns
    -------
    (list, str)
        ``(frontier, frontier_edges, found, found_edges)`` of each step that ran, and why
        the chain stopped: ``empty``, ``switch`` or ``batch`` (every step ran).
    """
    levels = []
    for found, found_edges in sums.tolist():
        levels.append((int(size), int(edges), int(found), int(found_edges)))
        if found == 0:
            return levels, "empty"
        if found < limit and found < size:
            return levels, "switch"
        size, edges = found, found_edges
    return levels, "batch"


# ------------------------------------------------- float64 reference (host, scipy)


def bfs_levels(graph: Graph, root: int) -> np.ndarray:
    """Hop distance from ``root`` along out-edges (int64, -1 unreached), by scipy."""
    from .. import reference
    from scipy.sparse import csgraph
    order, pred = csgraph.breadth_first_order(reference.structure(graph), root, directed=True,
                                              return_predecessors=True)
    level = np.full(graph.n, -1, dtype=np.int64)
    level[root] = 0
    for v in order[1:]:  # BFS order: a predecessor's level is known before its children's
        level[v] = level[pred[v]] + 1
    return level


def _frontier_slices(indptr: np.ndarray, front: np.ndarray) -> list[np.ndarray]:
    """`front` cut into consecutive slices of about ``reference.BLOCK_NNZ`` stored entries each."""
    from .. import reference
    lengths = indptr[front + 1] - indptr[front]
    ends = np.cumsum(lengths)
    total = int(ends[-1])
    if total <= reference.BLOCK_NNZ:
        return [front]
    cuts = np.searchsorted(ends, np.arange(reference.BLOCK_NNZ, total, reference.BLOCK_NNZ), side="right")
    bounds = np.unique(np.concatenate(([0], cuts, [front.size]))).tolist()
    return [front[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


def bfs_levels_fast(graph: Graph, root: int, *, workers: int | None = None) -> np.ndarray:
    """Same as :func:`bfs_levels`, level-synchronous with numpy (for large graphs).

    Each level reads the stored entries of the frontier's rows once, on a
    thread pool, keeps the neighbours not yet seen (a boolean mask over the
    vertices) and makes them the next frontier without duplicates (a claim
    array, or one scan of the levels when the new frontier is large), so a
    level costs O(its frontier's stored entries) and no neighbour list is
    sorted.

    Parameters
    ----------
    graph : Graph
    root : int
    workers : int, optional
        Threads (default: all CPUs available). Does not change the result.

    Returns
    -------
    ndarray of int64, shape (n,)
        Level of every vertex, -1 where unreached.
    """
    import concurrent.futures
    from ..graph import row_positions
    from ..parallel import n_workers
    n = graph.n
    indptr, indices = graph.indptr, graph.indices
    level = np.full(n, -1, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    claim = np.empty(n, dtype=np.int64)
    level[root] = 0
    seen[root] = True
    front = np.array([root], dtype=np.int64)

    def unseen(rows: np.ndarray) -> np.ndarray:
        nb = np.take(indices, row_positions(indptr, rows))
        fresh = np.take(seen, nb)
        return np.compress(np.logical_not(fresh, out=fresh), nb)

    d = 0
    with concurrent.futures.ThreadPoolExecutor(n_workers(workers)) as pool:
        while front.size:
            d += 1
            found = np.concatenate(list(pool.map(unseen, _frontier_slices(indptr, front))))
            seen[found] = True
            level[found] = d
            if 8 * found.size >= n:
                front = np.flatnonzero(level == d)
            else:  # one survivor per vertex: the slot whose write to claim stuck
                slot = np.arange(found.size)
                claim[found] = slot
                front = found[claim[found] == slot].astype(np.int64)
    return level


def validate_bfs(graph: Graph, root: int, level: np.ndarray, parent: np.ndarray, *,
                 reference_levels: np.ndarray | None = None) -> list[str]:
    """Graph500 BFS validation rules, adapted to directed graphs.

    1. the root is its own parent, at level 0;
    2. every reached vertex but the root has a reached parent one level up, and
       (parent, vertex) is an edge of the graph;
    3. along every edge (u, v) with u reached, v is reached and
       ``level[v] <= level[u] + 1`` (levels differ by at most one along graph edges);
    4. unreached vertices have level -1 and parent -1;
    5. the reached set is exactly the set reachable from the root.

    Parameters
    ----------
    reference_levels : ndarray of int, shape (n,), optional
        Levels from an independent BFS (:func:`bfs_levels_fast`). When given,
        ``level`` must equal them, and rules 3 and 5, which then follow from
        the equality, are not checked again (they cost O(nnz) each).

    Returns
    -------
    list of str
        The rules broken (empty if the result is valid).
    """
    from .. import reference
    errors = []
    n = graph.n
    level = np.asarray(level, dtype=np.int64)
    parent = np.asarray(parent, dtype=np.int64)
    if reference_levels is not None and not np.array_equal(level, reference_levels):
        return ["levels differ from the reference BFS"]
    if level[root] != 0 or parent[root] != root:
        errors.append("root is not its own parent at level 0")
    reached = level >= 0
    others = np.flatnonzero(reached)
    others = others[others != root]
    p = parent[others]
    if np.any((p < 0) | (p >= n)):
        errors.append("a reached vertex has no parent")
        return errors
    if np.any(level[p] != level[others] - 1):
        errors.append("a parent is not exactly one level up")
    if others.size and not np.all(reference.has_edges(graph, p, others)):
        errors.append("a tree edge (parent, vertex) is not an edge of the graph")
    if reference_levels is None:
        rows = np.repeat(np.arange(n), np.diff(graph.indptr))
        src_reached = reached[rows]
        u, v = rows[src_reached], graph.indices[src_reached]
        if np.any(level[v] < 0):
            errors.append("an edge leaves the reached set")
        elif np.any(level[v] > level[u] + 1):
            errors.append("levels differ by more than one along an edge")
    if np.any(level[~reached] != -1) or np.any(parent[~reached] != -1):
        errors.append("an unreached vertex has a level or parent")
    if reference_levels is None:
        ref = bfs_levels_fast(graph, root) >= 0
        if not np.array_equal(ref, reached):
            errors.append("the reached set differs from the vertices reachable from the root")
    return errors
