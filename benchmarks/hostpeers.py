"""Host peers: scipy.sparse.csgraph, SuiteSparse:GraphBLAS (python-graphblas) and the
previous FinePar (commit 8f3c88e, unpacked in ``.prev/``, run through its own CLI).

Each peer returns a :class:`measure.Answer` in the form the app's own ``check`` reads
(BFS levels with parents where the peer gives them, component labels named by
each component's smallest vertex id), so every answer is checked by
:func:`measure.answer_problem` against the same reference as FinePar's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from base import child_env
from common import ROOT, log
from measure import Answer

#: Where ``git archive 8f3c88e finepar opencl models pyproject.toml`` is unpacked.
PREV_DIR = ROOT / ".prev"
PREV_COMMIT = "8f3c88e"


def pattern(g) -> sp.csr_array:
    """The graph's structure as a scipy CSR (float32 ones; indices shared)."""
    return sp.csr_array((np.ones(g.nnz, dtype=np.float32), g.indices, g.indptr), shape=g.shape)


def levels_from_parents(parent: np.ndarray, root: int) -> np.ndarray:
    """BFS levels from a BFS tree by pointer jumping (O(n log depth)); -1 unreached.

    ``parent[v]``: v's parent, ``parent[root] == root``, negative where unreached."""
    n = parent.size
    anc = np.where(parent >= 0, parent, np.arange(n)).astype(np.int64)
    anc[root] = root
    dist = (anc != np.arange(n)).astype(np.int64)
    while True:
        nxt = anc[anc]
        if np.array_equal(nxt, anc):
            break
        dist += dist[anc]
        anc = nxt
    reached = (parent >= 0) | (np.arange(n) == root)
    return np.where(reached, dist, -1).astype(np.int32)


def smallest_id_labels(labels: np.ndarray) -> np.ndarray:
    """Component labels renamed to the smallest vertex id of each component (int32)."""
    _, inverse = np.unique(labels, return_inverse=True)
    first = np.full(inverse.max() + 1 if inverse.size else 0, labels.size, dtype=np.int64)
    np.minimum.at(first, inverse, np.arange(labels.size))
    return first[inverse].astype(np.int32)


# -------------------------------------------------------------------------- scipy


def scipy_bfs(g, params: dict, mat=None) -> Answer:
    """``csgraph.breadth_first_order`` from ``params['root']`` (single-threaded C)."""
    mat = pattern(g) if mat is None else mat
    root = params["root"]
    t0 = time.perf_counter()
    _, pred = csgraph.breadth_first_order(mat, root, directed=True, return_predecessors=True)
    secs = time.perf_counter() - t0
    parent = np.where(pred >= 0, pred, -1).astype(np.int32)
    parent[root] = root
    lv = levels_from_parents(parent, root)
    return Answer(lv, secs, int(lv.max()) + 1, {"parent": parent})


def scipy_cc(g, params: dict, mat=None) -> Answer:
    """``csgraph.connected_components`` (weak), labels renamed to the smallest id."""
    mat = pattern(g) if mat is None else mat
    t0 = time.perf_counter()
    k, lab = csgraph.connected_components(mat, directed=True, connection="weak")
    secs = time.perf_counter() - t0
    return Answer(smallest_id_labels(lab), secs, 1, {"components": int(k)})


def scipy_dijkstra(g, params: dict, mat=None) -> Answer:
    """``csgraph.dijkstra`` from ``params['root']`` on the edge lengths (float64; the
    stored values, or their magnitudes for ``weights='abs'``)."""
    w = g.data.astype(np.float64)
    if params.get("weights") == "abs":
        w = np.abs(w)
    a = sp.csr_array((w, g.indices, g.indptr), shape=g.shape)
    t0 = time.perf_counter()
    dist = csgraph.dijkstra(a, directed=True, indices=params["root"])
    return Answer(dist, time.perf_counter() - t0, 1)


# ---------------------------------------------------------------------- GraphBLAS


def graphblas_or_none():
    """python-graphblas on SuiteSparse:GraphBLAS, or None with a line saying why not."""
    try:
        import graphblas as gb
        try:
            gb.init("suitesparse", blocking=True)
        except Exception:  # noqa: BLE001 - already initialised in this process
            pass
        return gb
    except Exception as exc:  # noqa: BLE001 - any failure means: no GraphBLAS peer
        log(f"skip: python-graphblas not usable ({type(exc).__name__}: {exc})")
        return None


class GraphBLASGraph:
    """A graph as GraphBLAS matrices (values, and the boolean structure)."""

    def __init__(self, gb, g):
        self.gb, self.n = gb, g.n
        ptr, idx = g.indptr.astype(np.uint64), g.indices.astype(np.uint64)
        self.A = gb.Matrix.from_csr(ptr, idx, g.data, nrows=g.n, ncols=g.n)
        self.P = gb.Matrix.from_csr(ptr, idx, np.ones(g.nnz, dtype=bool), nrows=g.n, ncols=g.n)
        self.outdeg = np.diff(g.indptr)
        self._sym = None

    def symmetric(self):
        """``A + A^T``'s structure (for weak components)."""
        if self._sym is None:
            gb = self.gb
            self._sym = self.P.ewise_add(self.P.T, gb.binary.any).new()
        return self._sym

    def spmv(self, x: np.ndarray, products: int, repeats: int):
        """Seconds per product of each repeat (after one warm-up) and the last y."""
        gb = self.gb
        xv = gb.Vector.from_dense(x)
        y = self.A.mxv(xv, gb.semiring.plus_times).new()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(products):
                y = self.A.mxv(xv, gb.semiring.plus_times).new()
            times.append((time.perf_counter() - t0) / products)
        return times, y.to_dense(fill_value=0.0).astype(np.float32)

    def pagerank(self, params: dict) -> Answer:
        """The power iteration of :func:`arraypeers.power_iteration` (float32): the
        product ``y = P^T c`` in GraphBLAS, the vector updates in numpy."""
        gb, n = self.gb, self.n
        d, tol = params.get("damping", 0.85), params.get("tol", 1e-6)
        max_iter = params.get("max_iter") or 100
        inv = np.divide(1.0, self.outdeg, out=np.zeros(n), where=self.outdeg > 0)
        inv = inv.astype(np.float32)
        dangling = np.flatnonzero(self.outdeg == 0)
        t0 = time.perf_counter()
        x = np.full(n, 1.0 / n, dtype=np.float32)
        it = 0
        for it in range(1, max_iter + 1):
            c = gb.Vector.from_dense(x * inv)
            y = c.vxm(self.P, gb.semiring.plus_times[np.float32]).new()
            yd = y.to_dense(fill_value=0.0).astype(np.float32)
            xn = (np.float32(1 - d) / n + np.float32(d) * (yd + x[dangling].sum() / n))
            xn = xn.astype(np.float32)
            diff = float(np.abs(xn - x).sum())
            x = xn
            if diff < tol:
                break
        return Answer(x, time.perf_counter() - t0, it)

    def bfs(self, params: dict) -> Answer:
        """Level-synchronous BFS: ``frontier<!visited> = frontier any.secondi P`` gives
        each newly reached vertex one parent in the frontier."""
        gb, n, root = self.gb, self.n, params["root"]
        ss = getattr(gb.semiring, "ss", None)  # SuiteSparse's own semirings, newer releases
        any_secondi = ss.any_secondi if ss is not None else gb.semiring.any_secondi
        t0 = time.perf_counter()
        parent = gb.Vector(np.int64, n)
        parent[root] = root
        level = gb.Vector(np.int64, n)
        frontier = gb.Vector(np.int64, n)
        frontier[root] = root
        d = 0
        while frontier.nvals:
            level(mask=frontier.S) << d
            d += 1
            frontier(~parent.S, replace=True) << frontier.vxm(self.P, any_secondi)
            parent(mask=frontier.S) << frontier
        secs = time.perf_counter() - t0
        return Answer(level.to_dense(fill_value=-1).astype(np.int32), secs, d,
                      {"parent": parent.to_dense(fill_value=-1).astype(np.int32)})

    def cc(self, params: dict) -> Answer:
        """FastSV (Zhang, Azad and Hu 2020): the edge phase (each vertex's smallest
        neighbouring grandparent) as a ``min.second`` product in GraphBLAS, hooking and
        shortcutting on numpy vectors; labels end as each component's smallest id."""
        gb, n = self.gb, self.n
        s = self.symmetric()
        t0 = time.perf_counter()
        f = np.arange(n, dtype=np.int64)
        gf = f.copy()
        rounds = 0
        while True:
            rounds += 1
            v = gb.Vector.from_dense(gf)
            mn = s.mxv(v, gb.semiring.min_second).new().to_dense(fill_value=n)
            mn = np.minimum(mn.astype(np.int64), gf)
            np.minimum.at(f, f.copy(), mn)   # stochastic hooking: f[f[u]] <- mn[u]
            np.minimum(f, mn, out=f)         # aggressive hooking
            np.minimum(f, gf, out=f)         # shortcutting
            nxt = f[f]
            if np.array_equal(nxt, gf):
                break
            gf = nxt
        secs = time.perf_counter() - t0
        return Answer(smallest_id_labels(f), secs, rounds)


# ------------------------------------------------------------------ previous FinePar

#: Runs the previous FinePar's CLI with its own package first on the path (an editable
#: install of the current one would otherwise serve ``finepar.opencl``'s kernels).
_PREV_MAIN = """
import runpy, sys
def _editable(f):  # the finder classes of an editable install of finepar
    return (getattr(f, "__module__", "") or type(f).__module__).startswith("__editable___finepar")
sys.meta_path[:] = [f for f in sys.meta_path if not _editable(f)]
sys.path_hooks[:] = [h for h in sys.path_hooks if not _editable(h)]
sys.path_importer_cache.clear()
sys.argv = ["finepar"] + sys.argv[1:]
runpy.run_module("finepar", run_name="__main__", alter_sys=True)
"""

#: The apps the previous CLI runs here, and how their parameters become its options.
PREV_APPS = {"bfs": lambda p: ["--root", str(p["root"])], "cc": lambda p: []}


def prev_available() -> str | None:
    """None when ``.prev/`` holds the previous FinePar, else why not (one line)."""
    if not (PREV_DIR / "finepar" / "__main__.py").exists():
        return (f"skip: the previous FinePar is not in {PREV_DIR} (git archive {PREV_COMMIT} "
                f"finepar opencl models pyproject.toml | tar -x -C .prev)")
    return None


def scipy_npz(g, folder: Path) -> Path:
    """The graph as a plain ``scipy.sparse.save_npz`` file (float32 values, uncompressed),
    which the previous FinePar reads with the same rows as this one; written once."""
    from finepar.files import atomic_open
    path = folder / f"{g.name}-n{g.n}-nnz{g.nnz}.scipy.npz"
    if not path.exists():
        a = sp.csr_matrix((g.data.astype(np.float32), g.indices, g.indptr), shape=g.shape)
        with atomic_open(path) as f:
            sp.save_npz(f, a, compressed=False)
    return path


def prev_run(app: str, graph_file: Path, params: dict, timeout: float = 1800) -> Answer:
    """One ``python -m finepar run APP FILE --json F -o OUT.npy`` of the previous FinePar
    (its own warm-up, then one timed run; ``seconds`` is its report's ``run``).

    Raises
    ------
    RuntimeError
        When the run fails (its last error lines).
    """
    env = child_env(PREV_DIR)
    with tempfile.TemporaryDirectory(prefix="finepar-prev-") as tmp:
        rep_path, out_path = Path(tmp) / "report.json", Path(tmp) / "values.npy"
        cmd = [sys.executable, "-c", _PREV_MAIN, "run", app, str(graph_file), "--json",
               str(rep_path), "-o", str(out_path), "-q", *PREV_APPS[app](params)]
        done = subprocess.run(cmd, cwd=PREV_DIR, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"previous FinePar failed: {done.stderr.strip()[-500:]}")
        rep = json.loads(rep_path.read_text(encoding="utf-8"))
        values = np.load(out_path)
    t = rep["timings"]
    detail = {"plan": rep.get("plan", {}).get("label"), "threshold_source":
              rep.get("threshold_source"), "timings": t, "throughput": rep.get("throughput"),
              "model": (rep.get("tuning") or {}).get("message")}
    return Answer(values, float(t["run"]), int(rep["result"]["iterations"]), {}, detail)
