"""PageRank, pull form: the (+, second) semiring on ``A^T``.

``pr'[v] = (1-d)/n + d * (dangling/n + sum_{u -> v} pr[u] / outdeg[u])`` with the
mass of dangling vertices (no out-edges) spread uniformly, as networkx and the
Graph500/GAP definitions do. Edges are the graph's structure (values are
ignored). Stops when the L1 change of ``pr`` falls below ``tol``.

No host round trip per iteration on one device: each iteration's L1 change
and dangling mass are summed on the device, which also computes the next
iteration's base term and raises a stop flag once the change is below ``tol``;
the host enqueues iterations in batches and reads the batch's sums once: two
iterations first, then as many as the last ratio of L1 changes predicts to reach
``tol`` (:func:`next_batch`). Iterations enqueued past convergence return at
once and write nothing, but each still launches its grid. With two devices each
iteration's sums are combined on the host (the halo moves anyway).

Where a device's columns are renumbered hottest first (:mod:`finepar.engine.columns`:
the contribution vector ``pr / outdeg`` exceeds the device's cache and a few columns
take most reads, as SpMV's ``x`` does), the contribution vectors are kept in that
numbering on that device: the row operation's epilogue writes each row's contribution
at its column number (``HOT_CONTRIB``), so the gather of every entry reads the hot
columns from the first megabytes of the vector, and nothing else changes.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine import Engine, RowOp
from ..engine.binding import call, enqueue_bound
from ..graph import Graph
from . import powerloop, register
from .base import (App, AppResult, Param, in_open_unit, iteration_cap, positive,
                   top_vertices, vertex_label)

_F32 = np.dtype(np.float32)
#: Largest batch of iterations enqueued between two reads of their sums.
MAX_BATCH = 64
#: Iterations enqueued behind a batch's read of its sums, before the host has it (one
#: device): the device's work while the host reads and enqueues the next batch.
LOOK_AHEAD = 1


def next_batch(trace: list, tol: float, left: int) -> int:
    """The iterations to enqueue before the next read of their sums, one device.

    Two at first (a ratio needs two L1 changes); then the count the last ratio
    ``q = trace[-1] / trace[-2]`` predicts to bring the change below ``tol``,
    ``ceil(log(tol / trace[-1]) / log(q))``, at most ``MAX_BATCH`` and ``left``. The
    change shrinks by at most the damping a step and its ratio grows toward it, so the
    prediction errs short and the run ends after three or four reads, with no iteration
    past convergence. Both errors cost about the same on an H100 at Graph500 scale 24
    (a read's idle gap 0.2 ms; an iteration enqueued past convergence 0.41 ms, a launch
    of the whole grid that returns at once), so none is added. Doubling batches
    (1, 2, 4, ...) took 5 to 7 reads and up to 62 such launches on the shared graphs
    (luxembourg), 14 at scale 24.

    Parameters
    ----------
    trace : list of float
        The L1 changes so far.
    tol : float
        The stop threshold on the L1 change.
    left : int
        Iterations left before ``max_iter``; the result is within [1, left].

    Returns
    -------
    int
    """
    if len(trace) < 2 or not trace[-2] > 0 or not trace[-1] > 0:
        return max(1, min(2, left))
    q = trace[-1] / trace[-2]
    if not 0.0 < q < 1.0:  # not contracting (float noise near the end): a doubling's guess
        return max(1, min(len(trace), MAX_BATCH, left))
    steps = math.ceil(math.log(tol / trace[-1]) / math.log(q)) if trace[-1] > tol else 0
    return max(1, min(steps, MAX_BATCH, left))


#: The sums of a row's terms: Kahan-compensated or plain float32 (``sums``).
SUMS = ("compensated", "plain")


def op_name(name: str, *, hot: bool = False, sums: str = "compensated",
            device: bool = False) -> str:
    """The name of the row operation of app ``name`` (``pagerank``, ``rwr``) that writes the
    contributions in renumbered columns (``hot``), sums plainly (``sums='plain'``) and tests
    convergence on the device (``device``), as :func:`_ops` names them."""
    return (name + ("-hot" if hot else "") + ("-plain" if sums == "plain" else "")
            + ("-device" if device else ""))


def _ops(name: str, *extra) -> tuple:
    """Every variant of the app's row operation: the host-stepped one first (the tuner's and
    :meth:`PageRank.profile_step`'s), then the device-stepped one, then those writing the
    contributions in a device's renumbered columns and those with plain sums."""
    common = dict(acc_dtype=_F32, part_dtype=_F32, writes=("y", "s1"), fold_sums=True)
    out = []
    for hot in (False, True):
        for sums in SUMS:
            defines = (*extra, *((("HOT_CONTRIB", True),) if hot else ()),
                       *((("PLAIN_SUMS", True),) if sums == "plain" else ()))
            kw = dict(common, column_writes=("s1",) if hot else ())
            out.append(RowOp(op_name(name, hot=hot, sums=sums), "apps/pagerank/rowop.cl",
                             defines=defines, **kw))
            out.append(RowOp(op_name(name, hot=hot, sums=sums, device=True),
                             "apps/pagerank/rowop.cl",
                             defines=(("DEVICE_STEP", True), ("STOP_FLAG", 1), *defines), **kw))
    return tuple(out)


def renumbered(engine: Engine) -> bool:
    """Whether some device of ``engine`` keeps the contribution vectors in its renumbered
    columns (:attr:`finepar.engine.Engine.columns`)."""
    return any(c.applied for c in getattr(engine, "columns", {}).values())


def pack_aux(engine: Engine, n: int) -> None:
    """Vector ``aux_packed`` (int32, shape (2n,)) on every side: per row the bits of
    ``1 / outdeg`` (vector ``inv_outdeg``) and the row's column number on that side's
    device (its renumbering, or the row itself), made on the devices."""
    engine.blank("aux_packed", 2 * n, np.int32)
    for r in engine.roles:
        side, c = engine.pair.side(r), engine.columns.get(r)
        hot = c is not None and c.applied
        k = engine.pair.kernel(side, ("apps/pagerank/start.cl",),
                               {} if hot else {"IDENTITY_PERM": True}, "pack_aux")
        call(k, side.queue, (-(-n // 64) * 64,), None, np.int32(n),
             engine.buffer("inv_outdeg", r), c.perm if hot else engine.dummy(r),
             engine.buffer("aux_packed", r))


def start_contrib(engine: Engine, n: int) -> None:
    """``contrib = pr / outdeg`` on every side, in that side's column numbering (from
    ``aux_packed``; enqueued, in order with the steps that follow)."""
    for r in engine.roles:
        side = engine.pair.side(r)
        k = engine.pair.kernel(side, ("apps/pagerank/start.cl",), {}, "start_contrib")
        enqueue_bound(engine, side.queue, k, (-(-n // 64) * 64,), None,
                      (np.int32(n), engine.buffer("pr", r), engine.buffer("aux_packed", r),
                       engine.buffer("contrib", r)))


@register
class PageRank(App):
    """PageRank by power iteration, float32 vectors, float32 Kahan-compensated sums
    (``sums='plain'``: plain float32 sums).

    Result: ``values`` are the scores (float32, sum 1); ``extra['l1_change']``
    the change of every iteration, ``extra['ops']`` the row operation that ran.
    """

    name = "pagerank"
    #: Place in the registry's order (the CLI's and the API's lists).
    order = 20
    api_doc = "PageRank scores (float32, sum 1); returns ``(scores, report)``."
    title = "PageRank by power iteration (pull, dangling mass spread uniformly)"
    ops = _ops("pagerank")
    #: a restart vector on the devices (RWR's p); PageRank's uniform p is a scalar
    personalized = False
    params = (Param("damping", "float", 0.85, "damping factor d, in (0, 1) (0.85)", in_open_unit),
              Param("tol", "float", 1e-6, "stop when the L1 change is below this (1e-6)",
                    positive),
              iteration_cap("100"),
              Param("sums", "choice", "compensated", "a row's terms summed with Kahan's "
                    "compensation (compensated) or in plain float32 (plain)", choices=SUMS))
    #: the contributions ``pr / outdeg``: read by column (a renumbered device keeps them in
    #: its numbering; the row operation writes them there)
    column_vectors = ("contrib", "contrib_next")

    matrix_form = "transpose"

    def one_device(self, pair, matrix: Graph, params: dict, options=None) -> str | None:
        """On a small input (at most :data:`~finepar.apps.powerloop.GPU_LOOP_NNZ` entries,
        ``group_loop`` not ``none``) every iteration runs in one work-group's launch
        (:mod:`powerloop`), which no split beats: the GPU alone. No split is tuned,
        measured or built that the run never uses: a cold run's builds were the split's
        (USPowerGrid's time to answer 1.9 s), and measuring each candidate built the loop
        on both devices too (3.6 s). None on an emulated pair (its GPU role is the CPU:
        the default runs the CPU alone anyway, and the loop there)."""
        from ..engine import EngineOptions
        opts = options or EngineOptions()
        if not powerloop.small(matrix.nnz, opts) or getattr(pair, "emulated", False):
            return None
        return "gpu"

    def early_programs(self, pair, matrix: Graph, params: dict, options=None) -> list:
        """The work-group loop's program on the device :meth:`one_device` takes."""
        role = self.one_device(pair, matrix, params, options)
        if role is None:
            return []
        return [(role, powerloop.PROGRAM,
                 powerloop.defines(self.personalized, params.get("sums") == "plain"))]

    def matrix(self, graph: Graph) -> Graph:
        return graph.transpose()

    def prepare(self, engine: Engine, graph: Graph) -> dict:
        n = graph.n
        outdeg = graph.out_degrees()
        nz = outdeg > 0
        inv = np.zeros(n, dtype=np.float32)  # 1 / out-degree in one pass, 0 where dangling
        np.divide(np.float32(1.0), outdeg, out=inv, where=nz, dtype=np.float32)
        for name in ("pr", "pr_next", "contrib", "contrib_next") + (
                ("restart",) if self.personalized else ()):
            engine.blank(name, n, np.float32)
        engine.vector("inv_outdeg", inv)
        if renumbered(engine):
            pack_aux(engine, n)
        engine.prepare_exchange()
        loop = (powerloop.prepare(engine) if powerloop.applies(engine, graph, renumbered(engine))
                else None)
        return {"inv": inv, "dangling": ~nz, "n_dangling": int(n - np.count_nonzero(nz)),
                "loop": loop}

    def run(self, engine: Engine, graph: Graph, *, damping: float = 0.85, tol: float = 1e-6,
            max_iter: int | None = None, sums: str = "compensated", **extra) -> AppResult:
        p = self.check_params(graph, {"damping": damping, "tol": tol, "max_iter": max_iter,
                                      "sums": sums, **extra})
        max_iter = p.get("max_iter") or 100
        st = self.prepared(engine, graph)
        n, d = graph.n, p["damping"]
        w = 1.0 / n  # the uniform restart distribution p = 1/n, folded into the base term
        engine.fill("pr", np.float32(1.0 / n))  # pr starts uniform: on the devices, no transfer
        dangling = st["n_dangling"] / n
        self.start(engine, n)
        scal = [(1 - d) * w + d * w * dangling, d, (1 - d) * w, d * w, p["tol"]]
        engine.scalars(scal, wait=False)
        ops = self.step_ops(engine, p.get("sums", "compensated"))
        run, op = self.iteration_loop(engine, st, ops)
        it, trace, converged = run(engine, scal, p["tol"], max_iter, False, ops)
        return AppResult(values=None, iterations=it, converged=converged,
                         extra={"l1_change": trace, "damping": d, "tol": p["tol"],
                                "device_steps": engine.device_iterations, "ops": op},
                         work_edges=graph.nnz * it)

    def iteration_loop(self, engine: Engine, st: dict, ops: tuple):
        """``(iterate, name)``: how a run on ``engine`` iterates, and what the report
        names it: every iteration in one work-group's launch where :mod:`powerloop`
        applies (``st['loop']``), else batches tested on the one device, else steps whose
        sums the host combines (two devices)."""
        if st.get("loop") is not None:
            return self._group_loop_iterations, f"{self.name}-group-loop"
        device = engine.device_iterations
        return (self._device_iterations if device else self._host_iterations), ops[device]

    def _group_loop_iterations(self, engine: Engine, scal: list, tol: float, max_iter: int,
                               personalized: bool, ops: tuple):
        """One device, a small input: every iteration in one launch (:mod:`powerloop`)."""
        return powerloop.run(engine, engine.state[self.name]["loop"], max_iter,
                             personalized=personalized, plain="-plain" in ops[1])

    def start(self, engine: Engine, n: int) -> None:
        """``contrib = pr / outdeg`` on the devices, in each device's column numbering."""
        if renumbered(engine):
            start_contrib(engine, n)
        else:
            engine.vector_kernel("multiply", "contrib", None, "pr", "inv_outdeg")

    def step_ops(self, engine: Engine, sums: str) -> tuple:
        """The names of the host-stepped and device-stepped row operations a run on
        ``engine`` with ``sums`` uses."""
        hot = renumbered(engine)
        return tuple(op_name(self.name, hot=hot, sums=sums, device=dev) for dev in (False, True))

    def collect(self, engine: Engine, graph: Graph, result: AppResult) -> AppResult:
        result.values = engine.read("pr")
        return result

    def built_ahead(self, roles: tuple) -> tuple:
        """Two devices iterate on the host (the first op), one on the device (the second)."""
        return (self.ops[0].name if len(roles) == 2 else self.ops[1].name,)

    def _args(self, personalized: bool, engine: Engine | None = None) -> dict:
        hot = engine is not None and renumbered(engine)
        return dict(x="contrib", y="pr_next", s0="pr", s1="contrib_next",
                    s2="restart" if personalized else None,
                    aux="aux_packed" if hot else "inv_outdeg")

    def _swap(self, engine: Engine) -> None:
        engine.swap("pr", "pr_next")
        engine.swap("contrib", "contrib_next")

    def _host_iterations(self, engine: Engine, scal: list, tol: float, max_iter: int,
                         personalized: bool, ops: tuple):
        """Two devices: each iteration's sums come back; the host sets the next base term."""
        trace, it = [], 0
        args = self._args(personalized, engine)
        while it < max_iter:
            engine.scalars(scal, wait=False)
            diff, dangling = engine.rowop(op=ops[0], exchange="contrib_next", **args)
            self._swap(engine)
            it += 1
            trace.append(float(diff))
            scal[0] = scal[2] + scal[3] * float(dangling)
            if diff < tol:
                return it, trace, True
        return it, trace, False

    def _device_iterations(self, engine: Engine, scal: list, tol: float, max_iter: int,
                           personalized: bool, ops: tuple):
        """One device: batches of iterations, each testing convergence on the device. After
        a batch the host enqueues the read of its sums, then one iteration more (the next
        batch's first, :data:`LOOK_AHEAD`): the device runs it while the host waits for
        the read and enqueues the rest, instead of idling; past convergence it returns at
        once and writes nothing."""
        role = engine.roles[0]
        engine.clear_stop(role)
        op = ops[1]
        trace, it, queued = [], 0, 0
        args = self._args(personalized, engine)
        while it < max_iter:
            k = next_batch(trace, tol, max_iter - it)
            queued = self._enqueue_to(engine, op, args, queued, it + k)
            read = engine.sums_later(role, it, k, op=op)
            queued = self._enqueue_to(engine, op, args, queued,
                                      min(queued + LOOK_AHEAD, max_iter))
            sums = read()
            below = np.flatnonzero(sums[:, 0] < tol)
            done = int(below[0]) + 1 if below.size else k
            trace += [float(v) for v in sums[:done, 0]]
            if below.size:
                engine.drain()
                past = queued - (it + done)  # iterations past convergence wrote nothing
                if past % 2:
                    self._swap(engine)
                del engine.records[len(engine.records) - past:]
                return it + done, trace, True
            it += k
        engine.drain()
        return it, trace, False

    def _enqueue_to(self, engine: Engine, op, args: dict, queued: int, end: int) -> int:
        """Iterations ``queued .. end - 1`` enqueued, each summing into its slot; returns
        the iterations enqueued."""
        for slot in range(queued, end):
            engine.rowop(op=op, wait=False, slot=slot, **args)
            self._swap(engine)
        return max(queued, end)

    def profile_step(self, engine: Engine) -> None:
        engine.scalars([0.0, 0.85])
        engine.rowop(op=self.step_ops(engine, "compensated")[0], **self._args(False, engine))

    def warmup(self, engine: Engine, graph: Graph, **params) -> None:
        self.run(engine, graph, **{**params, "max_iter": 2})

    # ------------------------------------------------------------------- answers
    def reference(self, graph: Graph, params: dict):
        return reference_pagerank(graph, damping=params.get("damping", 0.85))

    def row_steps(self, graph: Graph, params: dict) -> float:
        """The power iteration's steps to an L1 change below ``tol``: the error shrinks by
        ``damping`` a step, so about ``log(tol) / log(damping)`` (capped by ``max_iter``)."""
        import math
        steps = math.log(params.get("tol") or 1e-6) / math.log(params.get("damping") or 0.85)
        return float(min(steps, params.get("max_iter") or steps))

    def check(self, graph: Graph, result: AppResult, ref, params: dict) -> str:
        l1 = float(np.abs(result.values.astype(np.float64) - ref).sum())
        return f"L1 error {l1:.2e} > 1e-4" if l1 >= 1e-4 else ""

    def summary(self, result: AppResult, graph: Graph) -> list[tuple[str, str]]:
        pr = result.values
        top = top_vertices(pr)
        tail = result.extra["l1_change"][-1] if result.extra["l1_change"] else float("nan")
        return [("iterations", f"{result.iterations} ("
                               f"{'converged' if result.converged else 'NOT converged'}, "
                               f"last L1 change {tail:.2e})"),
                ("sum of scores", f"{pr.astype(np.float64).sum():.6f}"),
                ("top vertices", ", ".join(f"{vertex_label(graph, v)} ({pr[v]:.3e})"
                                           for v in top))]


# ------------------------------------------------- float64 reference (host, scipy)


def reference_pagerank(graph: Graph, damping: float = 0.85, tol: float = 1e-12,
             max_iter: int = 10000, *, workers: int | None = None) -> np.ndarray:
    """PageRank by float64 power iteration to an L1 change below ``tol``.

    Same definition as :class:`finepar.apps.pagerank.PageRank` and networkx:
    dangling mass spread uniformly; the graph's structure, values ignored.
    Each iteration is ``x' = (1 - d) / n + d (A^T (x / outdeg) + sum(x[dangling]) / n)``.
    Rows are cut into blocks of about 4M stored entries and rows; each block's
    product, vector updates and partial sums run as one task on a thread pool, and
    the partial sums are added in block order, so the result does not depend on
    the number of threads (with a single block it is bit for bit the plain
    iteration).

    Parameters
    ----------
    graph : Graph
    damping : float
    tol : float
        Stop when ``sum(|x' - x|)`` falls below it.
    max_iter : int
    workers : int, optional
        Threads (default: all CPUs available).

    Returns
    -------
    ndarray of float64, shape (n,)

    Notes
    -----
    Memory: ``A^T`` (the graph itself when :attr:`~finepar.graph.Graph.symmetric`,
    else a transposed copy), float64 ones for one block, five float64 vectors of
    ``n`` and two of the dangling vertices; an iteration allocates nothing but
    scipy's product vectors.
    """
    import concurrent.futures
    from .. import reference
    from ..parallel import n_workers
    n = graph.n
    blocks = reference.pattern_blocks(graph.transpose())  # rows of A^T list in-edges
    outdeg = np.diff(graph.indptr).astype(np.float64)
    inv = np.divide(1.0, outdeg, out=np.zeros(n), where=outdeg > 0)
    dangling = [np.flatnonzero(outdeg[lo:hi] == 0) for lo, hi, _ in blocks]
    gathered = [np.empty(d.size) for d in dangling]
    del outdeg
    x, y, scaled, change = np.full(n, 1.0 / n), np.empty(n), np.empty(n), np.empty(n)
    mass = 0.0

    def scale(i: int) -> float:
        """``scaled = x / outdeg`` on block i; returns the block's dangling mass."""
        lo, hi, _ = blocks[i]
        np.multiply(x[lo:hi], inv[lo:hi], out=scaled[lo:hi])
        return float(np.take(x[lo:hi], dangling[i], out=gathered[i]).sum())

    def step(i: int) -> float:
        """``y = (1 - d) / n + d (A^T scaled + mass / n)`` on block i; returns its L1 change."""
        lo, hi, b = blocks[i]
        yb = y[lo:hi]
        yb[:] = b @ scaled
        yb += mass / n
        yb *= damping
        yb += (1 - damping) / n
        np.subtract(yb, x[lo:hi], out=change[lo:hi])
        return float(np.abs(change[lo:hi], out=change[lo:hi]).sum())

    order = range(len(blocks))
    with concurrent.futures.ThreadPoolExecutor(n_workers(workers)) as pool:
        for _ in range(max_iter):
            mass = sum(pool.map(scale, order))
            err = sum(pool.map(step, order))
            x, y = y, x
            if err < tol:
                break
    return x
