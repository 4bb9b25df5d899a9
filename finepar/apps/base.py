"""What an app is: a row operation on the shared kernel skeleton, its parameters, its host
logic, and an independent reference that checks its answers (DESIGN.md §2, "apps/").

An app is one Python module defining a subclass of :class:`App` and registering
it (:func:`finepar.apps.register`), plus one OpenCL fragment
(``opencl/app_NAME.cl``) that defines the semiring and the per-row epilogue on
``opencl/skeleton/rowop.cl``. The command line, the Python API, the baselines, the tuner
and the benchmarks read everything they need from the class attributes and
methods below: none of them branches on an app's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..engine import Engine
from ..errors import UsageError
from ..graph import Graph


@dataclass
class AppResult:
    """What an app returns.

    Attributes
    ----------
    values : ndarray, shape (n,)
        The result vector (the app's docstring says what it holds).
    iterations : int
        Steps run (SpMV products, PageRank iterations, BFS levels, CC rounds).
    converged : bool
    extra : dict
        App-specific outputs (``parent`` for BFS, ``hubs`` for HITS, the
        per-step trace of frontier apps, ...).
    work_edges : int
        Edges (stored entries) the rate counts: nnz per product for SpMV,
        traversed edges for BFS (TEPS).
    """

    values: np.ndarray
    iterations: int
    converged: bool = True
    extra: dict = field(default_factory=dict)
    work_edges: int = 0


# ----------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Param:
    """One parameter of an app, as the CLI and the API take it.

    Attributes
    ----------
    name : str
        The Python keyword (``max_iter``); the CLI option is ``--max-iter``.
    kind : {'int', 'float', 'vertex', 'choice', 'flag'}
        ``vertex``: a vertex id (the CLI takes the input's own id and maps it
        to a row); ``choice``: one of ``choices``; ``flag``: a boolean switch.
    default : object
        None: the app chooses (documented in ``help``).
    help : str
    check : callable, optional
        ``check(value) -> value``; raises :class:`~finepar.errors.UsageError`
        with a message naming the parameter.
    cli : bool
        Offered on the command line.
    """

    name: str
    kind: str
    default: Any
    help: str
    check: Callable | None = None
    cli: bool = True
    choices: tuple = ()

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")


def at_least(low: int) -> Callable:
    """A check for an integer >= ``low``."""
    def check(name: str, value):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise UsageError(f"{name} must be an integer >= {low}, not {value!r}")
        return int(value)
    return check


def in_open_unit(name: str, value) -> float:
    """A check for a number in (0, 1)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number in (0, 1), not {value!r}") from None
    if not 0.0 < v < 1.0:
        raise UsageError(f"{name} must be in (0, 1), not {value!r}")
    return v


def positive(name: str, value) -> float:
    """A check for a number > 0."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a positive number, not {value!r}") from None
    if not v > 0:
        raise UsageError(f"{name} must be a positive number, not {value!r}")
    return v


def in_unit(name: str, value) -> float:
    """A check for a number in [0, 1]."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a number in [0, 1], not {value!r}") from None
    if not 0.0 <= v <= 1.0:
        raise UsageError(f"{name} must be in [0, 1], not {value!r}")
    return v


def iteration_cap(default: str) -> Param:
    """The iteration cap's parameter; ``default`` says, for ``--help``, what an app does
    without it. Its value stays None unless given, so an app can tell a cap the user
    set from its own default."""
    return Param("max_iter", "int", None, f"iteration cap (>= 1; default {default})",
                 at_least(1))


#: The cap of an app that runs until its work is done (a frontier empties).
MAX_ITER = iteration_cap("none: until done")


# ----------------------------------------------------------------------------- apps


class AppHooks:
    """The optional part of an app's contract: what the tuner, the builds started ahead,
    ``finepar compare``, distributed runs and relabelled runs ask of it, each with a
    default that suits an app whose work is its row operations over the plan.

    Class attributes
    ----------------
    column_vectors : tuple of str
        Vectors the ops read by column (SpMV's ``x``, PageRank's contributions): each
        device's share may renumber its columns hottest first
        (:mod:`finepar.engine.columns`). The host writes them, or a step through an op's
        :attr:`~finepar.engine.RowOp.column_writes`, at each row's number there.
    exchanges : bool
        A step's results feed the next step (split memory moves a halo every
        step); the tuner adds the exchange to the predicted time.
    weighted : bool
        The app reads the matrix's values (SpMV, SSSP).
    groupings : tuple of str
        The plan groupings ``grouping='auto'`` may choose for this app (empty:
        every grouping the model knows). BFS's bottom-up scans stop at the first
        hit, which only the per-row mappings (``none``, ``pow4``) can do.
    state_words : int
        4-byte words per vertex the app keeps on a device (vectors, frontier lists):
        the engine keeps that much of a device's memory budget for them.
    matrix_form : {'graph', 'transpose', 'symmetrized', 'stacked'}
        How :meth:`App.matrix` makes the work's matrix from the graph, for runs that
        build its rows rank by rank (:mod:`finepar.mpi`): A itself, A^T, the pattern of
        A + A^T, or ``[[0, A], [A^T, 0]]`` (the pattern, 2n rows).
    vertex_values : tuple of str
        Names, among ``values`` and ``extra``, of vectors indexed by vertex
        (un-permuted when the engine ran on a relabelled graph).
    vertex_ids : tuple of str
        Of those, the ones whose entries are vertex ids (BFS parents).
    """

    column_vectors: tuple = ()
    exchanges = True
    weighted = False
    groupings: tuple = ()
    state_words = 8
    matrix_form = "graph"
    vertex_values: tuple = ("values",)
    vertex_ids: tuple = ()
    params: tuple = ()  # App's: permute_params reads them

    def state_bytes(self, n: int) -> int:
        """Bytes of per-vertex state on one device for ``n`` vertices."""
        return 4 * self.state_words * int(n)

    def inputs(self, engine: Engine, graph: Graph, params: dict) -> None:
        """Make a run's given vectors (SpMV's ``x``, RWR's restart) the devices' before its
        timed run: the report's ``inputs`` phase, as ``collect`` is the results' way back.
        The run that follows finds them in place; a run not preceded by this loads them
        itself. Default: nothing."""

    def warmup(self, engine: Engine, graph: Graph, **params: Any) -> None:
        """Launch every kernel the run will use once, so compilation stays out of timings."""
        self.run(engine, graph, **{**params, "max_iter": 1})

    def row_steps(self, graph: Graph, params: dict) -> float:
        """Row operations over the whole plan a run with ``params`` is expected to make:
        what a throttled share's partitioning is amortised over (``schedule='auto'``,
        :func:`finepar.throttle.plan.throttle_share`). Default: one."""
        return 1.0

    def one_device(self, pair, matrix: Graph, params: dict, options=None) -> str | None:
        """The role a run with ``params`` keeps all its work on whatever the plan, or None
        (the work follows the plan: the default). Where it is a role, a tuned run plans for
        that device alone: no split is tuned, measured or uploaded that the run never uses."""
        return None

    def built_ahead(self, roles: tuple) -> tuple | None:
        """The names of the ops an engine over ``roles`` runs whose programs are worth
        building as the engine is made (:class:`finepar.engine.Engine`'s ``built_ahead``);
        None: every op. Another op is built where it is first used."""
        return None

    def early_programs(self, pair, matrix: Graph, params: dict, options=None) -> list:
        """``(role, sources, defines)`` of programs the app's preparation will build whatever
        the plan, known from the matrix alone: :meth:`finepar.api.Workload.prepare` starts
        them before planning (:func:`finepar.engine.frontier.early_build`), so a compiler
        with nothing cached works while the host plans; ``options`` are the run's
        :class:`~finepar.engine.EngineOptions` (None: the defaults). Default: none."""
        return []

    def static_params(self) -> dict:
        """Parameters that make a run static (every iteration over every row of the
        plan, no frontier adaptation), as the coarse-grained baselines run."""
        return {}

    def reference_params(self, graph: Graph, params: dict) -> dict:
        """Parameters a comparison fixes for every method (e.g. SpMV's ``x``)."""
        return self.defaults(graph, dict(params))

    def unpermute(self, result: AppResult, perm: np.ndarray) -> AppResult:
        """The result of a run on a graph relabelled by ``perm`` (vertex ``v`` was
        ``perm[v]``), in the input's vertex ids. Vectors named in
        :attr:`vertex_values` are reordered; those in :attr:`vertex_ids` also have
        their entries (vertex ids) mapped back."""
        inv = np.empty_like(perm)
        inv[perm] = np.arange(perm.size, dtype=perm.dtype)

        def back(name: str, v):
            v = np.asarray(v)
            out = v[perm] if v.shape[:1] == perm.shape else v
            if name in self.vertex_ids:
                out = np.where(out >= 0, inv[np.maximum(out, 0)], out).astype(v.dtype)
            return out
        result.values = back("values", result.values)
        for k in self.vertex_values:
            if k in result.extra:
                result.extra[k] = back(k, result.extra[k])
        return result

    def permute_params(self, params: dict, perm: np.ndarray) -> dict:
        """Parameters for a run on the relabelled graph (vertex parameters mapped)."""
        out = dict(params)
        for p in self.params:
            if p.kind == "vertex" and out.get(p.name) is not None:
                out[p.name] = int(perm[out[p.name]])
        return out


class App(AppHooks, ABC):
    """An app: what every registered app must provide (the required contract).

    Subclasses set :attr:`name`, :attr:`title`, :attr:`ops` and :attr:`params`, and
    implement :meth:`run`, :meth:`profile_step`, :meth:`reference` and :meth:`check`;
    :meth:`matrix`, :meth:`prepare`, :meth:`collect` and :meth:`summary` have defaults
    that most apps override. Everything the tuner, the builds started ahead, the
    comparisons and relabelled runs ask of an app is in :class:`AppHooks`, optional,
    each with a default.

    Class attributes
    ----------------
    name : str
        CLI and API name (``pagerank``).
    title : str
        One line for ``--help`` and reports.
    ops : tuple of RowOp
        The app's row operations on the kernel skeleton (the first is the one
        the tuner's models describe and :meth:`profile_step` runs).
    params : tuple of Param
    rate_unit : {'nnz/s', 'TEPS'}
        How :attr:`AppResult.work_edges` over time is reported.
    order : int
        Place in the registry's order (the CLI's and the API's lists; ties by name).
    api_name : str
        The Python API's function for the app (``finepar.NAME``; default :attr:`name`).
    api_args : tuple of str
        Parameters that function takes by position after the graph (``root``).
    api_outputs : tuple of str
        What it returns before the report: ``values``, then keys of
        :attr:`AppResult.extra` (BFS: ``parent``).
    api_doc : str
        Its docstring's first sentences (what it returns).
    """

    name = ""
    title = ""
    ops: tuple = ()
    params: tuple = ()
    rate_unit = "nnz/s"
    order = 100
    api_name = ""
    api_args: tuple = ()
    api_outputs: tuple = ("values",)
    api_doc = ""

    @property
    def api_function(self) -> str:
        """The name of the app's function in :mod:`finepar.api` and :mod:`finepar`."""
        return self.api_name or self.name

    # ------------------------------------------------------------- the matrix
    def matrix(self, graph: Graph) -> Graph:
        """The matrix whose rows are the work (default: the graph itself)."""
        return graph

    # ---------------------------------------------------------------- params
    def check_params(self, graph: Graph, params: dict) -> dict:
        """Validate parameters before any work and fill in defaults.

        Unknown names and values that fail a :class:`Param`'s check raise
        :class:`~finepar.errors.UsageError` (one line, naming the parameter).
        ``vertex`` parameters must be rows ``0 .. n-1`` here (the CLI maps
        input ids first). Returns the parameters :meth:`run` gets.
        """
        known = {p.name: p for p in self.params}
        out = {}
        for k, v in params.items():
            p = known.get(k)
            if p is None:
                if k in self.extra_params():
                    out[k] = v
                    continue
                raise UsageError(f"{self.name} takes no parameter {k!r} "
                                 f"(it takes {', '.join(known) or 'none'})")
            if v is None:
                continue
            if p.kind == "choice":
                if v not in p.choices:
                    raise UsageError(f"{k} must be one of {', '.join(map(str, p.choices))}, "
                                     f"not {v!r}")
            elif p.kind == "flag":
                v = bool(v)
            elif p.kind == "vertex":
                if (isinstance(v, bool) or not isinstance(v, (int, np.integer))
                        or not 0 <= v < graph.n):
                    raise UsageError(f"{k} {v!r} is not a vertex (rows 0..{graph.n - 1})")
                v = int(v)
            elif p.check is not None:
                v = p.check(k, v)
            out[k] = v
        return self.defaults(graph, out)

    def extra_params(self) -> tuple:
        """API-only parameter names (arrays, policies) that :meth:`check_params` passes."""
        return ()

    def defaults(self, graph: Graph, params: dict) -> dict:
        """Fill the defaults the app chooses itself (after validation)."""
        return params

    # ------------------------------------------------------------------- run
    def prepare(self, engine: Engine, graph: Graph) -> dict:
        """Allocate what every run needs (vectors, scratch buffers, kernels); called once
        per engine outside any timing. Returns the state kept in ``engine.state``."""
        return {}

    def prepared(self, engine: Engine, graph: Graph) -> dict:
        """The state of :meth:`prepare` for this engine, preparing on first use."""
        if self.name not in engine.state:
            engine.state[self.name] = self.prepare(engine, graph)
        return engine.state[self.name]

    @abstractmethod
    def run(self, engine: Engine, graph: Graph, **params: Any) -> AppResult:
        """Run the app on ``engine`` (built on :meth:`matrix` of ``graph``).

        The results stay on the devices (what a timing of the run covers);
        :meth:`collect` brings them to the host."""

    def collect(self, engine: Engine, graph: Graph, result: AppResult) -> AppResult:
        """Read a run's results from the devices into ``result`` (values, and the extra
        vectors and counts that need them); default: nothing to read."""
        return result

    def solve(self, engine: Engine, graph: Graph, **params: Any) -> AppResult:
        """:meth:`run` then :meth:`collect`: the whole answer on the host."""
        return self.collect(engine, graph, self.run(engine, graph, **params))

    @abstractmethod
    def profile_step(self, engine: Engine) -> None:
        """One representative row operation over the engine's plan (for profiling
        and training); it may leave the app's vectors in any state."""

    # ------------------------------------------------------------- answers
    @abstractmethod
    def reference(self, graph: Graph, params: dict) -> Any:
        """An independent answer (scipy / networkx / float64 numpy) for :meth:`check`."""

    @abstractmethod
    def check(self, graph: Graph, result: AppResult, ref: Any, params: dict) -> str:
        """Compare a result with :meth:`reference`'s; '' if right, else the problem (one line)."""

    def summary(self, result: AppResult, graph: Graph) -> list[tuple[str, str]]:
        """Key numbers of the result as (label, value) lines."""
        return []

    # ------------------------------------------------------ vertex relabelling


def vertex_label(graph: Graph, v: int) -> str:
    """Vertex ``v`` as the user knows it (its input id, and the row when they differ)."""
    return graph.vertex_label(v)


def top_vertices(values: np.ndarray, k: int = 5) -> np.ndarray:
    """The ``k`` vertices of largest value, largest first, ties by vertex id: what
    ``np.argsort(-values, kind="stable")[:k]`` gives, in O(n) (no sort of all n)."""
    k = min(int(k), values.size)
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    kth = np.partition(values, values.size - k)[values.size - k]
    cand = np.flatnonzero(values >= kth)
    return cand[np.lexsort((cand, -values[cand].astype(np.float64)))][:k]


def component_sizes(labels: np.ndarray) -> np.ndarray:
    """Vertices per label (labels are vertex ids, int, shape (n,)), zero for ids that
    label nothing: ``np.bincount``, O(n), where ``np.unique`` sorts or hashes all n."""
    return np.bincount(labels, minlength=labels.size)
