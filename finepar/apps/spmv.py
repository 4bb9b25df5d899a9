"""SpMV: ``y = A x`` in float32, repeated (the (+, x) semiring, DESIGN.md §2)."""

from __future__ import annotations

import numpy as np

from ..engine import Engine, RowOp
from ..errors import UsageError
from ..graph import Graph
from ..parallel import equal
from . import register
from .base import App, AppResult, Param, at_least, iteration_cap


@register
class SpMV(App):
    """Sparse matrix-vector product over the stored values of ``A``.

    Result: ``values`` is ``y`` (float32, shape (n,)); ``extra['x']`` the input.
    Every product of a run uses the same ``x``; the rate is nnz per second.
    """

    name = "spmv"
    #: Place in the registry's order (the CLI's and the API's lists).
    order = 10
    api_args = ('x',)
    api_doc = "``y = A x`` on the pair; returns ``(y, report)``."
    title = "sparse matrix-vector product y = A x (float32)"
    ops = (RowOp("spmv", "apps/spmv/rowop.cl", has_data=True, ones_when_pattern=True),)
    column_vectors = ("x",)
    params = (Param("repeat", "int", 10, "products to run and time (10)", at_least(1)),
              Param("seed", "int", 0, "seed of the random x in [-1, 1) (0)", at_least(0)),
              iteration_cap("none: --repeat products"))
    exchanges = False
    weighted = True

    def extra_params(self) -> tuple:
        return ("x",)

    def defaults(self, graph: Graph, params: dict) -> dict:
        x = params.get("x")
        if x is not None and np.shape(x) != (graph.n,):
            raise UsageError(f"x must have shape ({graph.n},), not {np.shape(x)}")
        if params.get("max_iter") is not None:
            params["repeat"] = min(params.get("repeat", 10), params.pop("max_iter"))
        return params

    def prepare(self, engine: Engine, graph: Graph) -> dict:
        engine.vector("x", np.zeros(graph.n, dtype=np.float32))
        engine.vector("y", np.zeros(graph.n, dtype=np.float32))
        return {}

    def input(self, graph: Graph, params: dict) -> np.ndarray:
        """The ``x`` of a run: given, or uniform in [-1, 1) from ``seed``."""
        x = params.get("x")
        if x is None:
            x = np.random.default_rng(params.get("seed", 0)).uniform(-1.0, 1.0, graph.n)
        return np.ascontiguousarray(x, dtype=np.float32)

    def inputs(self, engine: Engine, graph: Graph, params: dict) -> None:
        """The given ``x`` checked against the device's, or uploaded, before the timed run
        (:meth:`App.inputs`); the run then takes it as it is."""
        self._upload(engine, graph, params)
        self.prepared(engine, graph)["x_checked"] = params.get("x")

    def _upload(self, engine: Engine, graph: Graph, p: dict) -> np.ndarray:
        """Make the run's ``x`` the device's: copied once per seed or per given content, not
        per run. A given ``x`` is compared with a copy of the one on the device (an engine
        kept between calls may be given the same array changed in place, or a new one at
        a freed one's address), unless :meth:`inputs` just did so for this very array."""
        st = self.prepared(engine, graph)
        given, checked = p.get("x"), st.pop("x_checked", None)
        if given is not None:
            x = np.ascontiguousarray(given, dtype=np.float32)
            if st.get("x_key") == "given" and (given is checked or equal(st["x"], x)):
                return st["x"]
            st["x"], st["x_key"] = x.copy(), "given"
        elif st.get("x_key") != ("seed", p.get("seed", 0)):
            st["x"], st["x_key"] = self.input(graph, p), ("seed", p.get("seed", 0))
        else:
            return st["x"]
        engine.write("x", st["x"])
        return st["x"]

    def run(self, engine: Engine, graph: Graph, *, x: np.ndarray | None = None,
            repeat: int = 10, seed: int = 0, max_iter: int | None = None) -> AppResult:
        p = self.check_params(graph, {"x": x, "repeat": repeat, "seed": seed,
                                      "max_iter": max_iter})
        x = self._upload(engine, graph, p)
        repeat = p.get("repeat", 10)
        for _ in range(repeat):  # the products need nothing back: enqueue all, wait once
            engine.rowop(x="x", y="y", wait=False)
        engine.drain()
        return AppResult(values=None, iterations=repeat, extra={"x": x},
                         work_edges=graph.nnz * repeat)

    def collect(self, engine: Engine, graph: Graph, result: AppResult) -> AppResult:
        result.values = engine.read("y")
        return result

    def profile_step(self, engine: Engine) -> None:
        engine.rowop(x="x", y="y")

    def row_steps(self, graph: Graph, params: dict) -> float:
        return float(params.get("repeat") or 10)

    def reference_params(self, graph: Graph, params: dict) -> dict:
        p = self.defaults(graph, dict(params))
        p["x"] = self.input(graph, p)
        return p

    def reference(self, graph: Graph, params: dict):
        x = self.input(graph, params)
        return reference_spmv(graph, x), spmv_error_bound(graph, x)

    def check(self, graph: Graph, result: AppResult, ref, params: dict) -> str:
        expect, bound = ref
        bad = np.flatnonzero(np.abs(result.values - expect) > bound)
        return f"{bad.size} rows of y off (first row {bad[0]})" if bad.size else ""

    def summary(self, result: AppResult, graph: Graph) -> list[tuple[str, str]]:
        y = result.values.astype(np.float64)
        return [("products", f"{result.iterations}"),
                ("|y|_2", f"{np.linalg.norm(y):.6g}"),
                ("y min / max", f"{y.min():.6g} / {y.max():.6g}")]

    def unpermute(self, result: AppResult, perm: np.ndarray) -> AppResult:
        result = super().unpermute(result, perm)
        result.extra["x"] = result.extra["x"][perm]
        return result

    def permute_params(self, params: dict, perm: np.ndarray) -> dict:
        out = super().permute_params(params, perm)
        if out.get("x") is not None:
            x = np.asarray(out["x"])
            out["x"] = np.empty_like(x)
            out["x"][perm] = x
        return out


# ------------------------------------------------- float64 reference (host, scipy)


def reference_spmv(graph: Graph, x: np.ndarray) -> np.ndarray:
    """``A x`` in float64. Returns ndarray of float64, shape (n,)."""
    import scipy.sparse as sp
    a = sp.csr_array((graph.data.astype(np.float64), graph.indices, graph.indptr),
                     shape=graph.shape)
    return a @ np.asarray(x, dtype=np.float64)


def spmv_error_bound(graph: Graph, x: np.ndarray) -> np.ndarray:
    """Per-row bound on the float32 rounding error of ``A x`` for any summation order:
    ``(len + 2) * eps32 * (|A| |x|)_i`` (Higham's gamma bound), float64, shape (n,)."""
    import scipy.sparse as sp
    a = sp.csr_array((np.abs(graph.data.astype(np.float64)), graph.indices, graph.indptr),
                     shape=graph.shape)
    mag = a @ np.abs(np.asarray(x, dtype=np.float64))
    lengths = np.diff(graph.indptr).astype(np.float64)
    return (lengths + 2) * np.finfo(np.float32).eps * mag + np.finfo(np.float32).tiny
