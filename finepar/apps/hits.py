"""HITS hubs and authorities (Kleinberg, JACM 1999) on the stacked matrix
``B = [[0, A], [A^T, 0]]`` (2n x 2n; the graph's structure, values ignored).

``y = B x`` maps ``(h, a)`` to ``(A a, A^T h)``. One row operation over B's rows
(``opencl/apps/hits/rowop.cl``) updates one half in place from the other, the other half's
rows inactive: an iteration is the authority step ``a = A^T h`` and then the hub step
``h = A a``, networkx's power-iteration order, each half normalised to sum 1. A full
product ``B x`` per iteration would run two interleaved power iterations, one
starting from ``h`` and one from ``a``, and so reach a tolerance with twice the work;
the half steps do the work of networkx's two products per iteration.

Normalisation needs no extra pass: a step scales its raw results by ``1 / W``, with
``W`` the sum over the source half of value times row length of B, which is the sum of
those raw results; each step returns the ``W`` its new half gives the next step, and
its L1 change.

The answer is the limit of the power iteration from uniform hubs: the hubs are the
top eigenvector of ``M = A A^T`` (the projection of the uniform start on its top
eigenspace, which is what the power iteration reaches where the top is repeated), the
authorities ``A^T h``; networkx's ``hits`` asks ARPACK (``svds``) for the same vectors.
The power iteration's error shrinks by ``r = (sigma_2 / sigma_1)^2`` an iteration, near 1
on meshes, road networks and circuits (0.9963 on luxembourg, 0.999 to 0.99999 on
finite-element meshes): it needs thousands to hundreds of thousands of iterations there
(2,427 to come within 1e-6, in L1, of the limit on luxembourg), and an iteration's L1
change below ``tol`` still leaves the hubs about ``tol * r / (1 - r)`` from the limit (at
896 iterations, 2.7e-4 on luxembourg).

So the host plans the iterations (:class:`Schedule`):

* **power**: plain power iterations. Where the change shrinks fast, the run stops once an
  iteration changes the hubs by less than ``tol`` and the estimated distance to the
  limit, ``change * q / (1 - q)`` (``q``, the largest of the last three ratios of
  successive changes), is below ``tol`` too: what the fast-mixing graphs (social, web,
  Graph500) do, at networkx's power-iteration count or one or two more.
* **Chebyshev spans** (Chebyshev acceleration of the power method: Saad, *Numerical
  Methods for Large Eigenvalue Problems*, 2nd ed., SIAM 2011, ch. 7; Rutishauser, Numer.
  Math. 16, 1970): where after 8 iterations the change shrinks by more than 0.9 an
  iteration and 30 more would be needed, the hub steps run the Chebyshev three-term
  recurrence on ``M`` for the interval ``[0, s lambda_1]`` (``s``, an estimate of ``r``;
  ``lambda_1``, the authorities' Rayleigh quotient, a lower bound): every component of
  the hubs below ``s lambda_1`` shrinks by ``kappa = 1 / T_m(x0)`` over a span of ``m``
  steps (``T_m``, the Chebyshev polynomial; ``x0 = (2 - s) / s``), about ``exp(-2 m
  sqrt(1 - s))`` where the power iteration's ``s^m`` is ``exp(-m (1 - s))``. The
  recurrence keeps the power iteration's row operation, with one more float per hub row
  (the hubs before) and three scalars. Each span restarts the recurrence (so its damping
  is ``T_m``'s alone), is ``m`` steps long with ``T_m(x0) >= 8``, and ends with two plain
  iterations (their authorities' Rayleigh quotient gives the next ``lambda_1``; they damp
  float32 rounding's fast components). The host then reads the hubs: ``D``, their L1
  change over the span, bounds their distance from the limit by ``kappa D / (1 -
  kappa)``, as long as no component lies above ``s lambda_1``. One that does shrinks by
  less than ``kappa`` a span; when two spans' changes (both above 2e-6, float32's
  rounding changes the hubs by up to 5e-7 over a span) say so, ``s`` is raised to the
  ``r`` their ratio implies. The run stops when ``D``, the last iteration's change and
  ``kappa D / (1 - kappa)`` are all below ``tol``. Measured (2-core host, emulated pair):
  luxembourg 255 iterations, finite-element strips 274 to 626 where the power iteration
  needs 4,421 to 28,625 to come within 1e-6 of the limit.

The result is converged only then. A run whose change over the spans stops shrinking
below 2e-6 (float32's rounding: a ``tol`` below about 3e-7) stops there, not converged
(``extra['stalled']``); one that reaches ``max_iter`` (default 10,000) is not converged.
The estimate measures the float32 iteration's convergence; float32 rounding itself moves
what that iteration converges to, by up to about 1e-6 (L1) from the float64 limit on the
slowest graphs (0.5e-6 to 1.4e-6 on luxembourg, depending on the spans run).

As PageRank: on one device the iterations run in batches with the stop test on the
device (the reduce kernel also sets the Chebyshev steps' scalars); on two, the host
combines each step's sums.
"""

from __future__ import annotations

import math

from typing import NamedTuple

import numpy as np

from ..engine import Engine, RowOp
from ..errors import InputError
from ..graph import INT32_MAX, Graph, as_indices, as_indptr
from . import register
from .base import App, AppResult, Param, iteration_cap, positive, top_vertices, vertex_label
from .pagerank import MAX_BATCH

_F32 = np.dtype(np.float32)
#: fscal[2]: which half a step updates.
AUTHORITY, HUB, EVERY_ROW = 0.0, 1.0, 2.0
#: The iteration cap without ``max_iter``.
DEFAULT_MAX_ITER = 10_000


def _ops() -> tuple:
    common = dict(acc_dtype=_F32, part_dtype=_F32, writes=("y", "s1"))
    return (RowOp("hits", "apps/hits/rowop.cl", **common),
            RowOp("hits-device", "apps/hits/rowop.cl",
                  defines=(("DEVICE_STEP", True), ("STOP_FLAG", 1)), **common))


def stacked(graph: Graph) -> Graph:
    """``B = [[0, A], [A^T, 0]]`` of the graph's pattern: a 2n-vertex pattern graph.

    Raises
    ------
    InputError
        If 2n exceeds the int32 vertex limit.
    """
    if 2 * graph.n > INT32_MAX:
        raise InputError(graph.source or graph.name, f"HITS needs 2n = {2 * graph.n:,} rows, "
                                                     f"past the int32 limit")
    import scipy.sparse as sp
    a = sp.csr_array((np.ones(graph.nnz, np.float32), graph.indices, graph.indptr),
                     shape=graph.shape)
    b = sp.bmat([[None, a], [a.T, None]], format="csr")
    b.sort_indices()
    return Graph(as_indptr(b.indptr), as_indices(b.indices), np.ones(b.nnz, np.float32),
                 graph.name, graph.source, pattern=True,
                 notes=[*graph.notes, "stacked as [[0, A], [A^T, 0]] for HITS"], symmetric=True)


# ------------------------------------------------------------------------ the schedule


class Schedule:
    """The host's plan of a HITS run: plain power iterations, then, where they converge
    slowly, restarted Chebyshev spans (the module's description says why and how).

    The schedule only decides; the app runs what :meth:`next` asks and reports back with
    :meth:`power_done` (plain iterations' hub changes) or :meth:`read_done` (the hubs and
    authorities read after a plain iteration). It needs nothing else, so the same
    schedule drives one device, two, and the ranks of a distributed run alike.

    Parameters
    ----------
    tol : float
        The L1 distance from the limit, and the change per iteration, the hubs (summing
        to 1) must be below.
    max_iter : int
        Iterations at most (each an authority and a hub step).

    Attributes
    ----------
    trace : list of float
        The hubs' L1 change of every iteration run.
    converged : bool
    stalled : bool
        Stopped because the hubs' change over the spans stopped shrinking below
        :attr:`MEASURABLE` while still above ``tol``: float32's rounding (not converged).
    ratio : float or None
        ``s``, the estimate of ``(sigma_2 / sigma_1)^2`` the last Chebyshev span ran
        with (None: power iterations only).
    error : float
        The estimated L1 distance of the hubs from the limit (inf: no estimate).
    accelerated : int
        Iterations run as Chebyshev steps.
    spans : int
        Chebyshev spans run.
    """

    #: Plain iterations before their changes' ratio is trusted.
    MIN_POWER = 8
    #: A ratio of successive changes from which plain iterations are too slow.
    SLOW = 0.9
    #: Plain iterations the power phase must still need, at its rate, for spans to pay.
    SPAN_WORTH = 30
    #: The least ``s`` a first span takes (an ``s`` above the true ratio costs a little;
    #: one below it costs an adaptation).
    FIRST_RATIO = 0.99
    #: The largest ``s`` (past it the spans grow past 1,400 steps).
    MAX_RATIO = 1.0 - 1e-6
    #: ``T_m(x0)`` of a span: its components below ``s * lambda_1`` shrink this much.
    SPAN_GAIN = 8.0
    #: Plain iterations ending each span.
    TAIL = 2
    #: The least change of the hubs (sum 1) over a span whose ratio to the last says
    #: anything: float32 rounding alone changes them by 2e-7 to 5e-7 over a span.
    MEASURABLE = 2e-6

    def __init__(self, tol: float, max_iter: int):
        self.tol, self.max_iter = float(tol), int(max_iter)
        self.trace: list[float] = []
        self.converged = self.stalled = False
        self.ratio: float | None = None
        self.error = math.inf
        self.accelerated = self.spans = 0
        self._phase = "power"
        self._batch = 1
        self._lam = 0.0        # lambda_1's estimate (Rayleigh quotient, a lower bound)
        self._snap = None      # the hubs read after the last span
        self._changes: list[float] = []  # D of the spans since s last changed
        self._m, self._kappa = 0, 1.0

    @property
    def iterations(self) -> int:
        """Iterations run so far."""
        return len(self.trace)

    def next(self) -> tuple | None:
        """What to run next, or None when the run is over.

        Returns
        -------
        tuple
            ``("power", k, stop_below)``: ``k`` plain iterations, stopping after one whose
            hub change is below ``stop_below``; ``("read",)``: read the hubs and
            authorities (after a plain iteration); ``("span", m, tail, sigma, beta)``: a
            Chebyshev span of ``m`` steps with shift ``sigma`` and coefficient ``beta``
            (absolute, in units of ``M``), then ``tail`` plain iterations, then a read.
        """
        left = self.max_iter - self.iterations
        if self.converged or self.stalled or left <= 0:
            return None
        if self._phase == "power":
            q = self._rate(3)
            stop_below = self.tol if q is None or q <= 0.5 else self.tol * max(1 - q, 0) / q
            k = min(self._batch, left)
            self._batch = min(2 * self._batch, MAX_BATCH)
            return ("power", k, stop_below)
        if self._phase == "switch":
            return ("read",)
        tail = min(self.TAIL, left)
        m = min(self._span_length(self.ratio), left - tail)  # shorter at the cap
        self._m, self._kappa = m, 1.0 / math.cosh(m * math.acosh(self._x0(self.ratio)))
        half = self.ratio * self._lam / 2  # the interval [0, s lambda_1]: centre and half-width
        return ("span", m, tail, half, half * half / 4)

    def power_done(self, changes) -> None:
        """Record plain iterations' hub changes (those of one ``("power", ...)``)."""
        self.trace += [float(c) for c in changes]
        d, q = self.trace[-1], self._rate(3)
        if d == 0.0 or (d < self.tol and q is not None and q < 1 and d * q / (1 - q) < self.tol):
            self.converged = True
            self.error = 0.0 if d == 0.0 else d * q / (1 - q)
            return
        if self.iterations < self.MIN_POWER or q is None or q < self.SLOW:
            return
        needs = (math.log(self.tol * (1 - q) / (d * q)) / math.log(q) if q < 1 else math.inf)
        if needs > self.SPAN_WORTH:
            self._phase = "switch"
            self.ratio = min(max(q if q < 1 else 0.0, self.FIRST_RATIO), self.MAX_RATIO)

    def read_done(self, hubs: np.ndarray, authorities: np.ndarray, v: float,
                  changes=()) -> None:
        """Record a read after a plain iteration, and that span's iterations' changes.

        Parameters
        ----------
        hubs, authorities : ndarray of float64, shape (n,)
            As the devices hold them: ``hubs = A authorities / v``.
        v : float
            The sum of the last authority step's raw results (its first partial).
        changes : sequence of float
            The hub changes of the span's iterations (none for the read that starts the
            first span).
        """
        self.trace += [float(c) for c in changes]
        aa = float(authorities @ authorities)
        if aa > 0:  # ||A a||^2 / ||a||^2 with A a = v h: lambda_1's Rayleigh quotient
            self._lam = v * v * float(hubs @ hubs) / aa
        h = hubs / hubs.sum()
        if self._phase == "switch":
            self._phase, self._snap = "spans", h
            return
        self.spans += 1
        self.accelerated += self._m
        d = float(np.abs(h - self._snap).sum())
        self._snap = h
        self._changes.append(d)
        kappa = self._kappa
        if kappa >= 1:  # no Chebyshev step ran (the cap): no estimate
            self.error = math.inf
            return
        if len(self._changes) >= 2 and min(self._changes[-2:]) > self.MEASURABLE:
            seen = self._changes[-1] / self._changes[-2]
            if max(2 * kappa, kappa + 0.05) < seen < 1:
                self._raise_ratio(seen)
                return
        self.error = kappa * d / (1 - kappa)
        last = self.trace[-1] if self.trace else math.inf
        if d < self.tol and self.error < self.tol and last < self.tol:
            self.converged = True
        elif (len(self._changes) >= 3 and max(self._changes[-3:]) < self.MEASURABLE
              and self._changes[-1] > 0.5 * self._changes[-3]):
            self.stalled = True  # two spans that should have shrunk it 64 times did not

    # ---------------------------------------------------------------- internals
    def _rate(self, count: int) -> float | None:
        """The largest of the last ``count`` ratios of successive changes (fewer where
        fewer iterations ran; None: one or none ran)."""
        t = self.trace
        ratios = [t[-i] / t[-i - 1] if t[-i - 1] > 0 else math.inf
                  for i in range(1, min(count, len(t) - 1) + 1)]
        return max(ratios) if ratios else None

    @staticmethod
    def _x0(s: float) -> float:
        """Where ``lambda_1`` lies on the Chebyshev scale of ``[0, s lambda_1]``."""
        return (2.0 - s) / s

    def _span_length(self, s: float) -> int:
        return max(2, math.ceil(math.acosh(self.SPAN_GAIN) / math.acosh(self._x0(s))))

    def _raise_ratio(self, seen: float) -> None:
        """A span shrank the change by ``seen``, more than ``kappa``: a component above
        ``s lambda_1`` lies at the ``lambda`` with ``T_m(x(lambda)) = seen T_m(x0)``."""
        s, m = self.ratio, self._m
        t = seen * math.cosh(m * math.acosh(self._x0(s)))
        implied = s * (math.cosh(math.acosh(t) / m) + 1) / 2 if t >= 1 else s
        self.ratio = min(max(implied, 1 - 0.75 * (1 - s)), self.MAX_RATIO)
        self._changes = []


# ------------------------------------------------------------------------------- app


@register
class HITS(App):
    """HITS by power iteration, accelerated by Chebyshev spans where it mixes slowly;
    float32 vectors and Kahan-compensated float32 sums.

    Result: ``values`` are the hub scores and ``extra['authorities']`` the authority
    scores (float32, each summing to 1; ``h = A a`` up to scale, as networkx returns
    them). ``converged``: the hubs are estimated within ``tol`` (L1) of the limit and the
    last iteration changed them by less than ``tol``. ``extra``: ``l1_change`` (the
    hubs' change per iteration), ``error_estimate`` (the estimated L1 distance of the
    hubs from the limit; inf where there is none), ``accelerated`` (iterations run as
    Chebyshev steps), ``spans``, ``ratio`` (the estimate of ``(sigma_2 / sigma_1)^2``
    the spans used, None without spans), ``stalled``, ``max_iter`` (the cap the run
    had) and ``max_iter_given`` (whether the caller set it).
    """

    name = "hits"
    #: Place in the registry's order (the CLI's and the API's lists).
    order = 40
    api_outputs = ('values', 'authorities')
    api_doc = """HITS hubs and authorities; returns ``(hubs, authorities, report)`` (float32, each
        summing to 1)."""
    title = ("HITS hubs and authorities by power iteration, Chebyshev-accelerated "
             "(stacked [[0, A], [A^T, 0]])")
    ops = _ops()
    params = (Param("tol", "float", 1e-6,
                    "stop when the hubs (summing to 1) are estimated within this L1 distance "
                    "of the limit and an iteration changes them by less (1e-6)", positive),
              iteration_cap(f"{DEFAULT_MAX_ITER:,}"))
    vertex_values = ("values", "authorities")

    matrix_form = "stacked"

    def matrix(self, graph: Graph) -> Graph:
        return stacked(graph)

    def prepare(self, engine: Engine, graph: Graph) -> dict:
        engine.vector("ha", np.zeros(2 * graph.n, np.float32))
        engine.vector("deg", engine.matrix.row_lengths().astype(np.float32))
        engine.blank("prev", 2 * graph.n, np.float32)
        engine.prepare_exchange()
        return {}

    def built_ahead(self, roles: tuple) -> tuple:
        """Two devices iterate on the host (the first op), one on the device (the second)."""
        return (self.ops[0].name if len(roles) == 2 else self.ops[1].name,)

    def _step_args(self, engine: Engine) -> dict:
        return dict(x="ha", y="ha", s1="prev", aux="deg", ia=engine.n // 2)

    def run(self, engine: Engine, graph: Graph, *, tol: float = 1e-6,
            max_iter: int | None = None) -> AppResult:
        p = self.check_params(graph, {"tol": tol, "max_iter": max_iter})
        self.prepared(engine, graph)
        n = graph.n
        cap = p.get("max_iter") or DEFAULT_MAX_ITER
        engine.fill("ha", np.float32(1.0 / n))  # uniform hubs; the first step is an authority
        state = {"w": graph.nnz / n, "v": 0.0, "slot": 0}  # step, whose W is nnz / n
        device = engine.device_iterations
        iterate = self._device_iterations if device else self._host_iterations
        sched = Schedule(p["tol"], cap)
        while (todo := sched.next()) is not None:
            if todo[0] == "power":
                _, k, stop_below = todo
                sched.power_done(iterate(engine, state, k, stop_below, 0.0, 0.0))
                continue
            changes = []
            if todo[0] == "span":
                _, m, tail, sigma, beta = todo
                changes = iterate(engine, state, m, 0.0, sigma, beta)
                changes += iterate(engine, state, tail, 0.0, 0.0, 0.0)
            ha = engine.read("ha").astype(np.float64)
            sched.read_done(ha[:n], ha[n:], state["v"], changes)
        it = sched.iterations
        return AppResult(values=None, iterations=it, converged=sched.converged,
                         extra={"l1_change": sched.trace, "tol": p["tol"],
                                "device_steps": device, "error_estimate": sched.error,
                                "accelerated": sched.accelerated, "spans": sched.spans,
                                "ratio": sched.ratio, "stalled": sched.stalled,
                                "max_iter": cap, "max_iter_given": p.get("max_iter") is not None},
                         work_edges=engine.matrix.nnz * it)

    @staticmethod
    def _scalars(w: float, stop_below: float, sigma: float, beta: float) -> list:
        """fscal of an iteration's start (``opencl/apps/hits/rowop.cl``): an authority step over
        hubs whose ``W`` is ``w``; a Chebyshev span's shift and coefficient (0: plain)."""
        return [1.0 / w, stop_below, AUTHORITY, sigma, beta, 0.0, 0.0, 0.0, 0.0, 0.0, w]

    def _host_iterations(self, engine: Engine, state: dict, k: int, stop_below: float,
                         sigma: float, beta: float) -> list:
        """Up to ``k`` iterations, each step's sums back on the host, which sets the next
        step's scalars (two devices, or ranks); the hub changes."""
        if sigma:
            engine.fill("prev", 0.0)
        args, w, p, steps, trace = self._step_args(engine), state["w"], 0.0, 0, []
        for _ in range(k):
            scal = self._scalars(w, stop_below, sigma, beta)
            scal[8:10] = [p, steps]
            engine.scalars(scal, wait=False)
            v, _ = engine.rowop(exchange="ha", **args)
            b = 0.0 if not sigma or steps == 0 else (2 * beta if steps == 1 else beta)
            inv = 1.0 / (w * float(v) - sigma - b * p)
            scal[:8] = [w * inv, stop_below, HUB, sigma, beta, sigma * inv, b * inv, inv]
            engine.scalars(scal, wait=False)
            w, change = engine.rowop(exchange="ha", **args)
            w, change = float(w), float(change)
            if sigma:
                p, steps = inv, steps + 1
            state["v"] = float(v)
            trace.append(change)
            if change < stop_below:
                break
        state["w"] = w
        return trace

    def _device_iterations(self, engine: Engine, state: dict, k: int, stop_below: float,
                           sigma: float, beta: float) -> list:
        """Up to ``k`` iterations on one device, in batches of at most ``MAX_BATCH`` with the
        stop test (and the Chebyshev steps' scalars) on the device; the hub changes."""
        role = engine.roles[0]
        engine.clear_stop(role)
        if sigma:
            engine.fill("prev", 0.0)
        engine.scalars(self._scalars(state["w"], stop_below, sigma, beta), wait=False)
        op = self.ops[1].name
        args = self._step_args(engine)
        trace, done = [], 0
        while done < k:
            b = min(MAX_BATCH, k - done)
            first = state["slot"]
            for j in range(2 * b):
                engine.rowop(op=op, wait=False, slot=first + j, **args)
            sums = engine.sums(role, first, 2 * b, op=op)
            engine.drain()
            state["slot"] = first + 2 * b
            changes = sums[1::2, 1]
            below = np.flatnonzero(changes < stop_below)
            ran = int(below[0]) + 1 if below.size else b
            trace += [float(c) for c in changes[:ran]]
            state["v"], state["w"] = float(sums[2 * ran - 2, 0]), float(sums[2 * ran - 1, 0])
            done += ran
            if below.size:  # the steps enqueued past the stop wrote nothing
                del engine.records[len(engine.records) - 2 * (b - ran):]
                break
        return trace

    def collect(self, engine: Engine, graph: Graph, result: AppResult) -> AppResult:
        ha = engine.read("ha").astype(np.float64)
        h, a = ha[:graph.n], ha[graph.n:]
        result.values = (h / h.sum()).astype(np.float32)
        result.extra["authorities"] = (a / a.sum()).astype(np.float32)
        return result

    def warmup(self, engine: Engine, graph: Graph, **params) -> None:
        """One iteration and a read of the vector (what a span's end reads), so neither
        the steps' programs nor a read's are built inside the timed run."""
        self.run(engine, graph, **{**params, "max_iter": 1})
        engine.read("ha")

    def profile_step(self, engine: Engine) -> None:
        """A full product ``B x``: every row active (the work of one iteration)."""
        engine.scalars([1.0, 0.0, EVERY_ROW])
        engine.rowop(**self._step_args(engine))

    # ------------------------------------------------------------------- answers
    def reference(self, graph: Graph, params: dict):
        return reference_hits(graph)

    def check(self, graph: Graph, result: AppResult, ref, params: dict) -> str:
        """Within ``2e-6 + 5 tol`` in L1 of the reference's hubs and authorities (the
        limit, in float64): the run stops with the hubs estimated within ``tol`` of it,
        and float32 rounding adds about 2e-7."""
        hubs, auths = ref[0], ref[1]
        bound = 2e-6 + 5 * params.get("tol", 1e-6)
        eh = float(np.abs(result.values.astype(np.float64) - hubs).sum())
        ea = float(np.abs(result.extra["authorities"].astype(np.float64) - auths).sum())
        if max(eh, ea) >= bound:
            return f"L1 error of hubs {eh:.2e}, of authorities {ea:.2e} (> {bound:.1e})"
        return ""

    def summary(self, result: AppResult, graph: Graph) -> list[tuple[str, str]]:
        ex = result.extra
        tail = ex["l1_change"][-1] if ex["l1_change"] else float("nan")
        state = ("converged" if result.converged
                 else "NOT converged: stalled at float32 rounding" if ex.get("stalled")
                 else "NOT converged")
        out = [("iterations", f"{result.iterations} ({state}, last L1 change of the hubs "
                              f"{tail:.2e}, estimated L1 error {ex['error_estimate']:.1e})")]
        if ex.get("spans"):
            out.append(("chebyshev", f"{ex['accelerated']} of the iterations in {ex['spans']} "
                                     f"spans, (sigma_2/sigma_1)^2 taken as {ex['ratio']:.6f}"))
        for label, v in (("top hubs", result.values),
                         ("top authorities", result.extra["authorities"])):
            top = top_vertices(v)
            out.append((label, ", ".join(f"{vertex_label(graph, u)} ({v[u]:.3e})"
                                         for u in top)))
        return out


# ------------------------------------------------- float64 reference (host, scipy)


class HitsReference(NamedTuple):
    """:func:`reference_hits`'s answer.

    Attributes
    ----------
    hubs, authorities : ndarray of float64, shape (n,)
        Each summing to 1.
    products : int
        Products with ``A A^T`` it took (0: a dense eigendecomposition).
    converged : bool
        ``error_bound`` is at most the ``tol`` asked.
    error_bound : float
        A bound on the L1 distance of ``hubs`` from the limit, from the residual of the
        top eigenvectors and the gap below them (Davis-Kahan); inf where the gap is not
        known.
    """

    hubs: np.ndarray
    authorities: np.ndarray
    products: int
    converged: bool
    error_bound: float


def reference_hits(graph: Graph, tol: float = 1e-8, max_iter: int | None = None) -> HitsReference:
    """HITS hubs and authorities (Kleinberg, JACM 1999): the limit of the power iteration
    from uniform hubs, by a float64 eigendecomposition of ``M = A A^T``.

    The power iteration (``a = A^T h``, ``h = A a``, each normalised to sum 1, from
    ``h = 1/n``; networkx's order) converges to the projection of the uniform vector on
    the top eigenspace of ``M``: the top eigenvector where it is simple, and a definite
    vector of the eigenspace where the largest eigenvalue is repeated (an undirected
    bipartite graph, identical components). That projection is computed here directly,
    from ARPACK's top eigenpairs (``scipy.sparse.linalg.eigsh``, Lanczos, to machine
    precision; a dense ``eigh`` below 1,500 vertices), so the answer does not depend on
    how slowly the power iteration would get there: on meshes and road networks
    ``(sigma_2 / sigma_1)^2`` is 0.996 to 0.99999 and the power iteration's L1 change
    falls below a tolerance far from the limit. Eigenvalues within :data:`HITS_REPEATED`
    (relative) of the largest count as repeated. The graph's structure, values ignored.

    Parameters
    ----------
    graph : Graph
        At least one stored entry.
    tol : float
        ``converged`` says whether :attr:`HitsReference.error_bound` is at most this.
    max_iter : int, optional
        ARPACK's restarts (None: scipy's default).

    Returns
    -------
    HitsReference
        ``(hubs, authorities, products, converged, error_bound)``.

    Raises
    ------
    ValueError
        If the graph has no stored entry (the power iteration's first authorities are 0).
    """
    from .. import reference
    from scipy.sparse.linalg import LinearOperator, eigsh
    if graph.nnz == 0:
        raise ValueError("HITS of a graph without edges is undefined (A^T h = 0)")
    n = graph.n
    a_mat = reference.pattern(graph)
    at = a_mat.T.tocsr()
    count = [0]

    def product(x):
        count[0] += 1
        return a_mat @ (at @ x)

    if n < 1500:
        lam, vec = np.linalg.eigh((a_mat @ at).toarray())
    else:
        op = LinearOperator((n, n), matvec=product, dtype=np.float64)
        k = 4
        while True:
            lam, vec = eigsh(op, k=k, which="LA", v0=np.ones(n), tol=0,
                             ncv=min(n, max(2 * k + 1, 20)), maxiter=max_iter)
            top = lam >= lam.max() * (1 - HITS_REPEATED)
            if not top.all() or 2 * k > min(64, n - 2):
                break
            k *= 2  # every eigenvalue found is the largest: more of them
    order = np.argsort(lam)[::-1]
    lam, vec = lam[order], vec[:, order]
    top = lam >= lam[0] * (1 - HITS_REPEATED)
    basis = vec[:, top]
    x = basis @ (basis.T @ np.ones(n))  # the uniform vector's projection
    total = float(x.sum())
    hubs = x / total
    auths = at @ hubs
    auths /= auths.sum()
    bound = np.inf
    if not top.all():
        residual = np.linalg.norm(np.column_stack([product(basis[:, j]) - lam[j] * basis[:, j]
                                                   for j in range(basis.shape[1])]))
        gap = float(lam[top][-1] - lam[~top][0])
        # sin of the angle between the eigenspaces (Davis-Kahan), times sqrt(n) for the
        # projection of the all-ones vector, sqrt(n) from 2-norm to L1, 2 for the scaling
        bound = 2.0 * n * residual / gap / total if gap > 0 else np.inf
    return HitsReference(hubs, auths, count[0], bool(bound <= tol), float(bound))


def reference_hits_power(graph: Graph, tol: float = 1e-6, max_iter: int = 100):
    """HITS by float64 power iteration, stopped by networkx's power-iteration rule.

    From uniform hubs ``h = 1/n``, each iteration computes ``a = A^T h`` and then
    ``h = A a``, each normalised to sum 1 (networkx's ``_hits_python`` order, with sum
    instead of max normalisation), and stops once the L1 change of ``h`` is below ``tol``
    or after ``max_iter`` iterations. That is not the limit (:func:`reference_hits`) where the
    iteration converges slowly: it stops ``tol * r / (1 - r)`` from it, ``r = (sigma_2 /
    sigma_1)^2``. The graph's structure, values ignored.

    Returns
    -------
    (hubs, authorities, iterations, converged)
        Two ndarrays of float64, shape (n,), each summing to 1; int; bool.
    """
    from .. import reference
    a_mat = reference.pattern(graph)
    at = a_mat.T.tocsr()
    h = np.full(graph.n, 1.0 / graph.n)
    a = h
    for it in range(1, max_iter + 1):
        a = at @ h
        a /= a.sum()
        hn = a_mat @ a
        hn /= hn.sum()
        err = np.abs(hn - h).sum()
        h = hn
        if err < tol:
            return h, a, it, True
    return h, a, max_iter, False


#: Eigenvalues of ``A A^T`` within this relative distance of the largest count as one repeated
#: top eigenvalue (:func:`reference_hits`): the power iteration cannot tell them apart.
HITS_REPEATED = 1e-9
