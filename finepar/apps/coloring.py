"""Graph colouring on the symmetrised graph (self-loops ignored). Two algorithms
(``algorithm``):

* **speculative** (Gebremedhin and Manne 2000; Deveci et al., IPDPS 2016;
  :mod:`finepar.apps.speculative`): rounds over a worklist of uncoloured vertices on one
  device; each takes the smallest colour no committed neighbour has, and keeps it unless
  a neighbour of the round that took the same colour outranks it (largest degree first,
  ties by the hashed id). Deterministic; about the colours of greedy largest-first, in
  about as many rounds as colours, each over the worklist only, read back once per batch
  of rounds. It needs one device holding the whole CSR.
* **jp**: Jones-Plassmann (Jones and Plassmann, SIAM J. Sci. Comput. 14(3), 1993) over
  the plan, both devices. Every vertex gets a random priority, distinct (a seeded
  bijection of the vertex ids, made on the devices: ``opencl/apps/coloring/priorities.cl``). A round:
  (1) **selection**, a row operation over every row of the plan: an uncoloured vertex
  whose priority beats every uncoloured neighbour's wins (the (max, second) semiring over
  the uncoloured neighbours' priorities); (2) **assignment**, a second row operation:
  each winner takes the smallest colour its coloured neighbours do not use, looking
  through a window of 64 colours at a time (the (or, second) semiring over the bits of
  the neighbours' colours in the window, a 64-bit mask): one step for the window [0, 64),
  and another for the next window while some winner found its window full. Winners are
  never adjacent, so no colour a winner reads changes in its round: the colouring is
  exactly the sequential one in which the winners of each round take their colours,
  whatever the split. Rounds end when every vertex is coloured.

``auto`` (the default) is speculative where a device holds the whole CSR, else jp.
Chosen by measurement: on Graph500 graphs Jones-Plassmann's random priorities take far
more rounds than colours (2,825 rounds of two full row operations at scale 22 on the
H100: 14.1 s), while the speculative rounds number about the colours. Replayed on the
host on a Kronecker graph of scale 14 (greedy largest-first: 57 colours): speculative
rounds with largest-degree-first priorities, 57 rounds and 57 colours; Jones-Plassmann
with random priorities, 297 rounds and 74 colours; with largest-degree-first priorities
and the same window, 267 rounds and 57 colours. The speculative rounds also touch only
the uncoloured vertices' rows.
"""

from __future__ import annotations

import numpy as np

from ..engine import Engine, RowOp
from ..errors import DeviceError
from ..graph import Graph
from . import register
from .base import MAX_ITER, App, AppResult, Param, at_least
from ..engine.frontier import choose_push_role, pick_algorithm
from ..engine.trace import push_line
from .speculative import SpeculativeColoring

ALGORITHMS = ("auto", "speculative", "jp")

#: Colours one assignment step considers (a 64-bit mask).
WINDOW = 64
#: summary() colours the graph greedily on the host (for comparison) up to this many
#: stored entries of the input (about 3 s of host time at 3M entries).
GREEDY_SUMMARY_NNZ = 1 << 22


def priority_key(seed: int) -> int:
    """The 32-bit key that ``opencl/apps/coloring/priorities.cl`` adds to every vertex id before mixing
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
    return (RowOp("coloring", "apps/coloring/rowop.cl", acc_dtype=np.dtype(np.uint32),
                  part_dtype=parts, writes=("s0",)),
            RowOp("coloring-assign", "apps/coloring/rowop.cl", acc_dtype=np.dtype(np.uint64),
                  part_dtype=parts, defines=(("ASSIGN", True),), writes=("y",)))


@register
class Coloring(App):
    """Speculative greedy colouring on one device, or Jones-Plassmann over the plan.

    Result: ``values`` are the colours (int32, 0-based, every vertex coloured);
    ``extra['colors']`` how many, ``extra['algorithm']`` which ran; for jp
    ``extra['assign_steps']`` the assignment steps of all rounds, for speculative
    ``extra['rounds']`` each round's worklist. The rate counts the entries the rounds
    scanned (jp: the selection steps).
    """

    name = "coloring"
    #: Place in the registry's order (the CLI's and the API's lists).
    order = 80
    api_doc = """A graph colouring; returns ``(colours, report)`` (int32, 0-based; adjacent
        vertices differ)."""
    title = "graph colouring (speculative greedy or Jones-Plassmann; on the symmetrised graph)"
    ops = _ops()
    params = (Param("algorithm", "choice", "auto",
                    "speculative (greedy rounds with conflict resolution, largest degree "
                    "first; one device holding the whole CSR), jp (Jones-Plassmann over the "
                    "plan), or auto: speculative where a device holds the CSR",
                    choices=ALGORITHMS),
              Param("seed", "int", 0, "seed of the priorities' hash (ties of equal degree "
                                      "for speculative; every priority for jp) (0)",
                    at_least(0)),
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
            k = engine.pair.kernel(engine.pair.side(role), ("apps/coloring/priorities.cl",), {}, "priorities")
            engine.launch(role, k, engine.n, (np.int32(engine.n), np.uint32(priority_key(seed)),
                                              buf), kind="priorities", wg=64)

    def algorithm(self, engine: Engine, asked: str) -> str:
        """The algorithm a run takes (``auto``: speculative where a device holds the CSR;
        :func:`pick_algorithm`)."""
        return pick_algorithm(engine, asked, "speculative", "jp")

    def run(self, engine: Engine, graph: Graph, *, algorithm: str = "auto", seed: int = 0,
            max_iter: int | None = None) -> AppResult:
        p = self.check_params(graph, {"algorithm": algorithm, "seed": seed,
                                      "max_iter": max_iter})
        st = self.prepared(engine, graph)
        if self.algorithm(engine, p.get("algorithm", "auto")) == "speculative":
            return self._speculative(engine, st, p)
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
                         extra={"algorithm": "jp", "assign_steps": steps, "seed": p["seed"]},
                         work_edges=scanned)

    def _speculative(self, engine: Engine, st: dict, p: dict) -> AppResult:
        """Speculative rounds on the role that pays (:func:`choose_push_role`)."""
        if st.get("speculative") is None:
            role, costs = choose_push_role(engine, (), owned_rows=False)
            st["speculative"], st["speculative_costs"] = SpeculativeColoring(engine, role), costs
        spec = st["speculative"]
        rounds = spec.run(priority_key(p["seed"]), p.get("max_iter"))
        done = p.get("max_iter") is None or len(rounds) < p["max_iter"]
        return AppResult(values=None, iterations=len(rounds), converged=done,
                         extra={"algorithm": "speculative", "seed": p["seed"],
                                "rounds": rounds, "role": spec.role,
                                "push_costs": st["speculative_costs"]},
                         work_edges=2 * sum(r[2] for r in rounds))

    def collect(self, engine: Engine, graph: Graph, result: AppResult) -> AppResult:
        st = engine.state[self.name]
        result.values = (st["speculative"].colors() if result.extra["algorithm"] == "speculative"
                         else engine.read("color"))
        result.extra["colors"] = int(result.values.max()) + 1
        return result

    def warmup(self, engine: Engine, graph: Graph, **params) -> None:
        """Two rounds of the run's algorithm (every kernel compiled)."""
        self.run(engine, graph, **{**params, "max_iter": 2})

    def profile_step(self, engine: Engine) -> None:
        """A selection step with every vertex uncoloured (every row scans all its entries)."""
        engine.fill("color", -1)
        engine.rowop(op="coloring", x="color", s0="winner", s2="degree", aux="prio")

    # ------------------------------------------------------------- answers
    def reference(self, graph: Graph, params: dict) -> int:
        """The colour count of networkx's greedy largest-first colouring (on the host)."""
        return int(greedy_coloring(graph).max()) + 1

    def check(self, graph: Graph, result: AppResult, ref, params: dict) -> str:
        return "; ".join(validate_coloring(graph, result.values))

    def summary(self, result: AppResult, graph: Graph) -> list[tuple[str, str]]:
        k = result.extra["colors"]
        if graph.nnz <= GREEDY_SUMMARY_NNZ:
            greedy = f"greedy largest-first on the host: {self.reference(graph, {})}"
        else:
            greedy = f"no greedy count above {GREEDY_SUMMARY_NNZ:,} entries"
        ex = result.extra
        if ex["algorithm"] == "speculative":
            rounds = (f"{result.iterations} speculative rounds (worklists of "
                      f"{ex['rounds'][0][0] + ex['rounds'][0][1]:,} down to "
                      f"{ex['rounds'][-1][0] + ex['rounds'][-1][1]:,} vertices)"
                      if ex["rounds"] else "0")
            return [("colours", f"{k} ({greedy})"), ("rounds", rounds),
                    ("device", push_line(ex["role"], ex["push_costs"]))]
        return [("colours", f"{k} ({greedy})"),
                ("rounds", f"{result.iterations} Jones-Plassmann rounds "
                           f"({ex['assign_steps']} assignment steps)")]


# ------------------------------------------------- float64 reference (host, scipy)


def greedy_coloring(graph: Graph) -> np.ndarray:
    """Greedy colouring in largest-first order, as networkx's ``greedy_color(G,
    'largest_first')`` on the symmetrised graph without self-loops: vertices by
    descending degree (ties by id), each taking the smallest colour its coloured
    neighbours do not use.

    Returns
    -------
    ndarray of int64, shape (n,)
        0-based colours.
    """
    from .. import reference
    s = reference.undirected_simple(graph)
    deg = np.diff(s.indptr)
    color = np.full(graph.n, -1, dtype=np.int64)
    mark = np.full(int(deg.max(initial=0)) + 2, -1, dtype=np.int64)
    ip, idx = s.indptr.tolist(), s.indices
    for u in np.argsort(-deg, kind="stable").tolist():
        nb = color[idx[ip[u]:ip[u + 1]]]
        mark[nb[nb >= 0]] = u  # mark the colours u's neighbours use, then take the first free
        color[u] = int(np.argmax(mark[:nb.size + 1] != u))
    return color


def validate_coloring(graph: Graph, colors: np.ndarray) -> list[str]:
    """A colouring's faults: uncoloured vertices, and edges (self-loops aside) joining
    two vertices of one colour. Returns the problems found (empty if valid)."""
    errors = []
    colors = np.asarray(colors)
    if np.any(colors < 0):
        errors.append(f"{int(np.sum(colors < 0))} vertices are not coloured "
                      f"(first {int(np.flatnonzero(colors < 0)[0])})")
    rows = np.repeat(np.arange(graph.n), np.diff(graph.indptr))
    clash = ((rows != graph.indices) & (colors[rows] >= 0)
             & (colors[rows] == colors[graph.indices]))
    if clash.any():
        k = int(np.flatnonzero(clash)[0])
        errors.append(f"{int(clash.sum())} edges join two vertices of one colour "
                      f"(first {rows[k]} -> {graph.indices[k]}, colour {colors[rows[k]]})")
    return errors
