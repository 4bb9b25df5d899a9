"""HITS hubs and authorities (Kleinberg, JACM 1999) on the stacked matrix
``B = [[0, A], [A^T, 0]]`` (2n x 2n; the graph's structure, values ignored).

``y = B x`` maps ``(h, a)`` to ``(A a, A^T h)``. One row operation over B's rows
(``opencl/app_hits.cl``) updates one half in place from the other, the other half's
rows inactive: an iteration is the authority step ``a = A^T h`` and then the hub step
``h = A a``, networkx's power-iteration order, each half normalised to sum 1. A full
product ``B x`` per iteration would run two interleaved power iterations, one
starting from ``h`` and one from ``a``, and so reach a tolerance with twice the work;
the half steps do the work of networkx's two products per iteration.

Normalisation needs no extra pass: a step scales its raw results by ``1 / W``, with
``W`` the sum over the source half of value times row length of B, which is the sum of
those raw results; each step returns the ``W`` its new half gives the next step, and
its L1 change. It stops when the L1 change of the hubs (each summing to 1) is below
``tol``. That is the rule of networkx's power-iteration code (``_hits_python``) with
sum instead of max normalisation; networkx's ``hits`` itself asks ARPACK (``svds``) for
the top singular vectors with ``tol`` as ARPACK's accuracy, and its docstring's
``n * tol`` describes neither. Both converge to the same vectors, those of the
largest singular value of ``A``.

As PageRank: on one device the iterations run in batches with the stop test on the
device; on two, the host combines each step's sums.
"""

from __future__ import annotations

import numpy as np

from ..engine import Engine, RowOp
from ..errors import InputError
from ..graph import INT32_MAX, Graph, as_indices, as_indptr
from ..runtime import cl
from . import register
from .base import MAX_ITER, App, AppResult, Param, positive, top_vertices, vertex_label
from .pagerank import MAX_BATCH

_F32 = np.dtype(np.float32)
#: fscal[2]: which half a step updates.
AUTHORITY, HUB, EVERY_ROW = 0.0, 1.0, 2.0


def _ops() -> tuple:
    common = dict(acc_dtype=_F32, part_dtype=_F32, writes=("y",))
    return (RowOp("hits", "app_hits.cl", **common),
            RowOp("hits-device", "app_hits.cl",
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


@register
class HITS(App):
    """HITS by power iteration, float32 vectors and Kahan-compensated float32 sums.

    Result: ``values`` are the hub scores and ``extra['authorities']`` the
    authority scores (float32, each summing to 1; ``h = A a`` up to scale, as
    networkx returns them); ``extra['l1_change']`` the hubs' change per iteration.
    """

    name = "hits"
    title = "HITS hubs and authorities by power iteration (stacked [[0, A], [A^T, 0]])"
    ops = _ops()
    params = (Param("tol", "float", 1e-6, "stop when the L1 change of the hubs (summing to 1) "
                                          "is below this (1e-6)", positive),
              MAX_ITER)
    vertex_values = ("values", "authorities")

    matrix_form = "stacked"

    def matrix(self, graph: Graph) -> Graph:
        return stacked(graph)

    def prepare(self, engine: Engine, graph: Graph) -> dict:
        engine.vector("ha", np.zeros(2 * graph.n, np.float32))
        engine.vector("deg", engine.matrix.row_lengths().astype(np.float32))
        engine.prepare_exchange()
        return {}

    def _step_args(self, engine: Engine) -> dict:
        return dict(x="ha", y="ha", aux="deg", ia=engine.n // 2)

    def run(self, engine: Engine, graph: Graph, *, tol: float = 1e-6,
            max_iter: int | None = None) -> AppResult:
        p = self.check_params(graph, {"tol": tol, "max_iter": max_iter})
        self.prepared(engine, graph)
        n = graph.n
        engine.fill("ha", np.float32(1.0 / n))  # uniform hubs; the first step is an authority
        scale = n / graph.nnz                   # step, whose W is sum(h * outdeg) = nnz / n
        device = engine.device_iterations
        iterate = self._device_iterations if device else self._host_iterations
        it, trace, converged = iterate(engine, scale, p["tol"], p.get("max_iter") or 100)
        return AppResult(values=None, iterations=it, converged=converged,
                         extra={"l1_change": trace, "tol": p["tol"], "device_steps": device},
                         work_edges=engine.matrix.nnz * it)

    def _host_iterations(self, engine: Engine, scale: float, tol: float, max_iter: int):
        """Two devices: each step's sums come back; the host sets the next step's scale."""
        trace = []
        for it in range(1, max_iter + 1):
            for half in (AUTHORITY, HUB):
                engine.scalars([scale, tol, half], wait=False)
                w, change = engine.rowop(exchange="ha", **self._step_args(engine))
                scale = 1.0 / w
            trace.append(float(change))
            if change < tol:
                return it, trace, True
        return max_iter, trace, False

    def _device_iterations(self, engine: Engine, scale: float, tol: float, max_iter: int):
        """One device: batches of iterations (two steps each), the stop test on the device."""
        role = engine.roles[0]
        cl().enqueue_fill_buffer(engine.pair.side(role).queue, engine.stop[role],
                                 np.zeros(1, np.int32), 0, 4)
        engine.scalars([scale, tol, AUTHORITY], wait=False)
        op = self.ops[1].name
        args = self._step_args(engine)
        trace, it, batch = [], 0, 1
        while it < max_iter:
            k = min(batch, max_iter - it)
            for j in range(2 * k):
                engine.rowop(op=op, wait=False, slot=2 * it + j, **args)
            changes = engine.sums(role, 2 * it, 2 * k, op=op)[1::2, 1]  # the hub steps'
            engine.drain()
            below = np.flatnonzero(changes < tol)
            done = int(below[0]) + 1 if below.size else k
            trace += [float(v) for v in changes[:done]]
            if below.size:  # the steps enqueued past convergence wrote nothing
                del engine.records[len(engine.records) - 2 * (k - done):]
                return it + done, trace, True
            it += k
            batch = min(2 * batch, MAX_BATCH)
        return it, trace, False

    def collect(self, engine: Engine, graph: Graph, result: AppResult) -> AppResult:
        ha = engine.read("ha").astype(np.float64)
        h, a = ha[:graph.n], ha[graph.n:]
        result.values = (h / h.sum()).astype(np.float32)
        result.extra["authorities"] = (a / a.sum()).astype(np.float32)
        return result

    def profile_step(self, engine: Engine) -> None:
        """A full product ``B x``: every row active (the work of one iteration)."""
        engine.scalars([1.0, 0.0, EVERY_ROW])
        engine.rowop(**self._step_args(engine))

    # ------------------------------------------------------------------- answers
    def reference(self, graph: Graph, params: dict):
        from .. import reference
        return reference.hits(graph, tol=params.get("tol", 1e-6),
                              max_iter=params.get("max_iter") or 100)

    def check(self, graph: Graph, result: AppResult, ref, params: dict) -> str:
        """Within ``1e-5 + 10 tol`` in L1 of the reference's hubs and authorities: the
        reference stops by the same rule, at most an iteration apart (a change near
        ``tol``), and float32 rounding adds about 1e-7."""
        hubs, auths = ref[0], ref[1]
        bound = 1e-5 + 10 * params.get("tol", 1e-6)
        eh = float(np.abs(result.values.astype(np.float64) - hubs).sum())
        ea = float(np.abs(result.extra["authorities"].astype(np.float64) - auths).sum())
        if max(eh, ea) >= bound:
            return f"L1 error of hubs {eh:.2e}, of authorities {ea:.2e} (> {bound:.1e})"
        return ""

    def summary(self, result: AppResult, graph: Graph) -> list[tuple[str, str]]:
        tail = result.extra["l1_change"][-1] if result.extra["l1_change"] else float("nan")
        out = [("iterations", f"{result.iterations} ("
                              f"{'converged' if result.converged else 'NOT converged'}, "
                              f"last L1 change of the hubs {tail:.2e})")]
        for label, v in (("top hubs", result.values),
                         ("top authorities", result.extra["authorities"])):
            top = top_vertices(v)
            out.append((label, ", ".join(f"{vertex_label(graph, u)} ({v[u]:.3e})"
                                         for u in top)))
        return out
