"""Graph colouring by Jones-Plassmann (Jones and Plassmann, SIAM J. Sci. Comput. 14(3), 1993)
on the symmetrised graph (self-loops ignored).

Every vertex gets a random priority, distinct (a seeded bijection of the vertex ids,
made on the devices: ``opencl/coloring.cl``). A round:

1. **selection**, a row operation over every row of the plan: an uncoloured vertex
   whose priority beats every uncoloured neighbour's wins (the (max, second)
   semiring over the uncoloured neighbours' priorities);
2. **assignment**, a second row operation: each winner takes the smallest colour its
   coloured neighbours do not use, looking through a window of 64 colours at a time
   (the (or, second) semiring over the bits of the neighbours' colours in the
   window, a 64-bit mask): one step for the window [0, 64), and another for the next
   window while some winner found its window full.

Winners are never adjacent, so no colour a winner reads changes in its round: the
colouring is exactly the sequential one in which the winners of each round take
their colours, whatever the split. Rounds end when every vertex is coloured.
"""

from __future__ import annotations

import numpy as np

from ..engine import Engine, RowOp
from ..errors import DeviceError
from ..graph import Graph
from . import register
from .base import MAX_ITER, App, AppResult, Param, at_least

#: Colours one assignment step considers (a 64-bit mask).
WINDOW = 64
#: summary() colours the graph greedily on the host (for comparison) up to this many
#: stored entries of the input (about 3 s of host time at 3M entries).
GREEDY_SUMMARY_NNZ = 1 << 22


def priority_key(seed: int) -> int:
    """The 32-bit key that ``opencl/coloring.cl`` adds to every vertex id before mixing
    (the seed times the golden-ratio constant, modulo 2**32)."""
    return (int(seed) * 0x9E3779B9) & 0xFFFFFFFF


def priorities(n: int, seed: int) -> np.ndarray:
    """The priorities the devices compute, on the host (uint32, shape (n,), distinct):
    MurmurHash3's 32-bit finaliser of ``v + key``."""
    h = (np.arange(n, dtype=np.uint64) + priority_key(seed)) & 0xFFFFFFFF
    for shift, mul in ((16, 0x85EBCA6B), (13, 0xC2B2AE35), (16, None)):
        h ^= h >> shift
        if mul is not None:
            h = (h * mul) & 0xFFFFFFFF
    return h.astype(np.uint32)


def _ops() -> tuple:
    parts = np.dtype(np.int64)
    return (RowOp("coloring", "app_coloring.cl", acc_dtype=np.dtype(np.uint32),
                  part_dtype=parts, writes=("s0",)),
            RowOp("coloring-assign", "app_coloring.cl", acc_dtype=np.dtype(np.uint64),
                  part_dtype=parts, defines=(("ASSIGN", True),), writes=("y",)))


@register
class Coloring(App):
    """Jones-Plassmann colouring with random priorities.

    Result: ``values`` are the colours (int32, 0-based, every vertex coloured);
    ``extra['colors']`` how many, ``extra['assign_steps']`` the assignment steps
    of all rounds. The rate counts the entries the selection steps scanned.
    """

    name = "coloring"
    title = "graph colouring (Jones-Plassmann, random priorities; on the symmetrised graph)"
    ops = _ops()
    params = (Param("seed", "int", 0, "seed of the random priorities (0)", at_least(0)),
              MAX_ITER)

    matrix_form = "symmetrized"

    def matrix(self, graph: Graph) -> Graph:
        return graph.symmetrized()

    def prepare(self, engine: Engine, graph: Graph) -> dict:
        sym = engine.matrix
        engine.vector("color", np.full(sym.n, -1, np.int32))
        engine.vector("winner", np.zeros(sym.n, np.int32))
        engine.vector("prio", np.zeros(sym.n, np.uint32))
        engine.vector("degree", sym.row_lengths().astype(np.int32))
        engine.prepare_exchange()
        return {"seed": None}

    def _priorities(self, engine: Engine, seed: int) -> None:
        """``prio`` on every side, computed there (once per seed)."""
        done = set()
        for role in engine.roles:
            buf = engine.buffer("prio", role)
            if id(buf) in done:
                continue
            done.add(id(buf))
            k = engine.pair.kernel(engine.pair.side(role), ("coloring.cl",), {}, "priorities")
            engine.launch(role, k, engine.n, (np.int32(engine.n), np.uint32(priority_key(seed)),
                                              buf), kind="priorities", wg=64)

    def run(self, engine: Engine, graph: Graph, *, seed: int = 0,
            max_iter: int | None = None) -> AppResult:
        p = self.check_params(graph, {"seed": seed, "max_iter": max_iter})
        st = self.prepared(engine, graph)
        if st["seed"] != p["seed"]:
            self._priorities(engine, p["seed"])
            st["seed"] = p["seed"]
        engine.fill("color", -1)
        remaining, rounds, steps, scanned = engine.n, 0, 0, 0
        while remaining and (p.get("max_iter") is None or rounds < p["max_iter"]):
            winners, edges = engine.rowop(op="coloring", x="color", s0="winner", s2="degree",
                                          aux="prio")
            if not winners:  # the uncoloured vertex of highest priority always wins
                raise DeviceError("colouring: a round found no winner among "
                                  f"{remaining:,} uncoloured vertices")
            scanned += int(edges)
            base, pending = 0, 1
            while pending:
                if base > engine.n:  # no vertex has that many neighbours
                    raise DeviceError(f"colouring: {pending:,} winners found no colour below "
                                      f"{base:,}")
                coloured, pending = engine.rowop(op="coloring-assign", x="color", y="color",
                                                 s0="winner", ia=base)
                remaining -= int(coloured)
                base += WINDOW
                steps += 1
            engine.exchange("color")
            rounds += 1
        return AppResult(values=None, iterations=rounds, converged=remaining == 0,
                         extra={"assign_steps": steps, "seed": p["seed"]}, work_edges=scanned)

    def collect(self, engine: Engine, graph: Graph, result: AppResult) -> AppResult:
        result.values = engine.read("color")
        result.extra["colors"] = int(result.values.max()) + 1
        return result

    def profile_step(self, engine: Engine) -> None:
        """A selection step with every vertex uncoloured (every row scans all its entries)."""
        engine.fill("color", -1)
        engine.rowop(op="coloring", x="color", s0="winner", s2="degree", aux="prio")

    # ------------------------------------------------------------- answers
    def reference(self, graph: Graph, params: dict) -> int:
        """The colour count of networkx's greedy largest-first colouring (on the host)."""
        from .. import reference
        return int(reference.greedy_coloring(graph).max()) + 1

    def check(self, graph: Graph, result: AppResult, ref, params: dict) -> str:
        from .. import reference
        return "; ".join(reference.validate_coloring(graph, result.values))

    def summary(self, result: AppResult, graph: Graph) -> list[tuple[str, str]]:
        k = result.extra["colors"]
        if graph.nnz <= GREEDY_SUMMARY_NNZ:
            greedy = f"greedy largest-first on the host: {self.reference(graph, {})}"
        else:
            greedy = f"no greedy count above {GREEDY_SUMMARY_NNZ:,} entries"
        return [("colours", f"{k} ({greedy})"),
                ("rounds", f"{result.iterations} ({result.extra['assign_steps']} assignment "
                           f"steps)")]
