"""Random walk with restart (RWR, personalised PageRank): PageRank whose teleport goes to a
restart distribution ``p`` instead of the uniform one (Tong, Faloutsos and Pan, ICDM 2006).

``x'[v] = c p[v] + (1 - c) (dangling * p[v] + sum_{u -> v} x[u] / outdeg[u])``: with
probability ``c`` (``restart_prob``) the walker jumps back to ``p``; the mass of
dangling vertices goes to ``p`` too (networkx's ``pagerank(personalization=p)``
convention). ``p`` is one vertex (``seed``) or, in the API, any non-negative vector
(``restart``, normalised to sum 1). The pull row operation of PageRank with
``PERSONALIZED`` (``opencl/apps/pagerank/rowop.cl``), and PageRank's iterations: batched with
convergence tested on the device on one device, the host combining each iteration's
sums on two.

The restart vector is made on the devices for a seed (a fill and one entry) and
uploaded once per array object for a given vector (not once per run); each run
starts from ``x = p`` by a device-side copy.
"""

from __future__ import annotations

import numpy as np

from ..engine import Engine
from ..errors import UsageError
from ..graph import Graph
from ..parallel import equal
from . import register
from .base import AppResult, Param, in_open_unit, iteration_cap, positive, vertex_label
from .pagerank import SUMS, PageRank, _ops


def check_restart(graph: Graph, restart) -> np.ndarray:
    """A restart vector checked: shape (n,), real, finite, non-negative, summing to a
    positive number. Returns it as a float64 array (not normalised).

    Raises
    ------
    UsageError
        Naming ``restart`` and the first bad entry.
    """
    a = np.asarray(restart)
    if a.shape != (graph.n,):
        raise UsageError(f"restart must have shape ({graph.n},), not {a.shape}")
    if a.dtype.kind not in "biuf":
        raise UsageError(f"restart must hold real numbers, not {a.dtype}")
    a = a.astype(np.float64, copy=False)
    bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
    if bad.size:
        raise UsageError(f"restart must be finite and non-negative (entry {bad[0]} is "
                         f"{a[bad[0]]:g})")
    if not a.sum() > 0:
        raise UsageError("restart must sum to a positive number (it is all zeros)")
    return a


@register
class RandomWalkWithRestart(PageRank):
    """Random walk with restart by power iteration, float32 vectors.

    Result: ``values`` are the visiting probabilities (float32, sum 1);
    ``extra['l1_change']`` the change of every iteration, ``extra['seed']`` the
    restart vertex (None for a given ``restart`` vector).
    """

    name = "rwr"
    #: Place in the registry's order (the CLI's and the API's lists).
    order = 30
    api_args = ('seed', 'restart')
    api_doc = """Random walk with restart from ``seed`` (a row; default the vertex of largest
        out-degree) or a restart vector (float, shape (n,), non-negative); returns
        ``(scores, report)`` (float32, sum 1)."""
    title = "random walk with restart (personalised PageRank, pull; dangling mass to p)"
    ops = _ops("rwr", ("PERSONALIZED", True))
    personalized = True
    params = (Param("seed", "vertex", None, "restart vertex: the input's own id; default the "
                                            "vertex of largest out-degree"),
              Param("restart_prob", "float", 0.15, "restart probability c = 1 - damping, in "
                                                   "(0, 1) (0.15)", in_open_unit),
              Param("tol", "float", 1e-6, "stop when the L1 change is below this (1e-6)",
                    positive),
              iteration_cap("100"),
              Param("sums", "choice", "compensated", "a row's terms summed with Kahan's "
                    "compensation (compensated) or in plain float32 (plain)", choices=SUMS))

    def extra_params(self) -> tuple:
        return ("restart",)

    def defaults(self, graph: Graph, params: dict) -> dict:
        if params.get("restart") is not None:
            if params.get("seed") is not None:
                raise UsageError("give seed or restart, not both")
            check_restart(graph, params["restart"])
        elif params.get("seed") is None:
            params["seed"] = int(np.argmax(graph.out_degrees()))
        params.setdefault("restart_prob", 0.15)
        return params

    def restart(self, graph: Graph, params: dict) -> np.ndarray:
        """The restart distribution p: float32, shape (n,), sum 1."""
        if params.get("restart") is not None:
            a = check_restart(graph, params["restart"])
            a = a / a.max()  # no overflow in the sum
            return (a / a.sum()).astype(np.float32)
        p = np.zeros(graph.n, dtype=np.float32)
        p[params["seed"]] = 1.0
        return p

    def inputs(self, engine: Engine, graph: Graph, params: dict) -> None:
        """The given restart vector checked against the devices' or uploaded before the
        timed run (:meth:`App.inputs`; ``params`` already checked, seed filled in)."""
        st = self.prepared(engine, graph)
        self._load_restart(engine, graph, st, params)  # pops an earlier mark first
        st["restart_checked"] = params.get("restart")

    def _load_restart(self, engine: Engine, graph: Graph, st: dict, params: dict) -> float:
        """Make the run's p the devices' ``restart`` vector: once per seed or per given
        content (compared with a copy of the last one: an engine kept between calls may be
        given the same array changed in place), unless :meth:`inputs` just did so for this
        very array. Returns the mass of p on dangling vertices."""
        given, checked = params.get("restart"), st.pop("restart_checked", None)
        if given is not None:
            if st.get("restart_key") == "vector" and given is checked:
                return st["restart_mass"]
            given = np.array(given, dtype=np.float64)  # a copy, in the caller's precision
            if st.get("restart_key") == "vector" and equal(st["restart_array"], given):
                return st["restart_mass"]
            p = self.restart(graph, params)
            engine.write("restart", p)
            mass = float(p[st["dangling"]].sum(dtype=np.float64))
            st.update(restart_key="vector", restart_mass=mass, restart_array=given)
        elif st.get("restart_key") != ("seed", params["seed"]):
            engine.fill("restart", np.float32(0.0))
            engine.set_entries("restart", [params["seed"]], [1.0])
            st.update(restart_key=("seed", params["seed"]),
                      restart_mass=float(st["dangling"][params["seed"]]), restart_array=None)
        return st["restart_mass"]

    def run(self, engine: Engine, graph: Graph, *, seed: int | None = None,
            restart: np.ndarray | None = None, restart_prob: float = 0.15, tol: float = 1e-6,
            max_iter: int | None = None, sums: str = "compensated") -> AppResult:
        p = self.check_params(graph, {"seed": seed, "restart": restart,
                                      "restart_prob": restart_prob, "tol": tol,
                                      "max_iter": max_iter, "sums": sums})
        st = self.prepared(engine, graph)
        c = p["restart_prob"]
        d = 1.0 - c
        dangling = self._load_restart(engine, graph, st, p)
        engine.copy("restart", "pr")  # x starts at p
        self.start(engine, graph.n)
        scal = [c + d * dangling, d, c, d, p["tol"]]  # PageRank's fscal with w = 1
        engine.scalars(scal, wait=False)
        ops = self.step_ops(engine, p.get("sums", "compensated"))
        iterate, op = self.iteration_loop(engine, st, ops)
        it, trace, converged = iterate(engine, scal, p["tol"], p.get("max_iter") or 100, True,
                                       ops)
        return AppResult(values=None, iterations=it, converged=converged,
                         extra={"l1_change": trace, "restart_prob": c, "tol": p["tol"],
                                "seed": p.get("seed"),
                                "device_steps": engine.device_iterations, "ops": op},
                         work_edges=graph.nnz * it)

    def profile_step(self, engine: Engine) -> None:
        engine.scalars([0.0, 0.85])
        engine.rowop(op=self.step_ops(engine, "compensated")[0], **self._args(True, engine))

    # ------------------------------------------------------------------- answers
    def reference(self, graph: Graph, params: dict):
        return reference_rwr(graph, self.restart(graph, params),
                             restart_prob=params.get("restart_prob", 0.15))

    def summary(self, result: AppResult, graph: Graph) -> list[tuple[str, str]]:
        seed = result.extra.get("seed")
        where = (f"vertex {vertex_label(graph, seed)}" if seed is not None
                 else "the given distribution")
        return [("restart", f"{where}, probability {result.extra['restart_prob']:g}"),
                *super().summary(result, graph)]

    def permute_params(self, params: dict, perm: np.ndarray) -> dict:
        out = super().permute_params(params, perm)
        if out.get("restart") is not None:
            r = np.asarray(out["restart"])
            out["restart"] = np.empty_like(r)
            out["restart"][perm] = r
        return out


# ------------------------------------------------- float64 reference (host, scipy)


def reference_rwr(graph: Graph, restart: np.ndarray, restart_prob: float = 0.15, tol: float = 1e-12,
        max_iter: int = 10000) -> np.ndarray:
    """Random walk with restart (personalised PageRank) by float64 power iteration.

    ``x' = c p + (1 - c) (A^T (x / outdeg) + (sum of x over dangling vertices) p)``
    from ``x = p`` until the L1 change is below ``tol``: the walk restarts at ``p``
    with probability ``c = restart_prob`` and the mass of dangling vertices goes to
    ``p`` (networkx's ``_ref_pagerank.reference_pagerank(personalization=p)`` convention). The graph's
    structure, values ignored.

    Parameters
    ----------
    restart : ndarray, shape (n,)
        The restart distribution p (non-negative; normalised here to sum 1).

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    from .. import reference
    p = np.asarray(restart, dtype=np.float64)
    p = p / p.sum()
    d = 1.0 - restart_prob
    at = reference.pattern(graph).T.tocsr()
    outdeg = np.diff(graph.indptr).astype(np.float64)
    inv = np.divide(1.0, outdeg, out=np.zeros(graph.n), where=outdeg > 0)
    dangling = outdeg == 0
    x = p.copy()
    for _ in range(max_iter):
        xn = (1 - d) * p + d * (at @ (x * inv) + x[dangling].sum() * p)
        err = np.abs(xn - x).sum()
        x = xn
        if err < tol:
            break
    return x
