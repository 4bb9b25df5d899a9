"""Array-library peers: SpMV, PageRank / RWR and HITS power iterations written once for
CuPy (cuSPARSE, on the GPU) and for numpy / scipy (on the host).

The same code runs on either :class:`Backend`: on CuPy it is the cuSPARSE /
CuPy peer of the GPU benchmarks, on numpy it is the scipy peer (and how the
scripts are tested on machines without a GPU). Definitions are those of
:mod:`finepar.reference`: PageRank ``x' = (1 - d) / n + d (A^T (x / outdeg) +
dangling / n)``, dangling mass spread uniformly; RWR the same with the restart
distribution ``p`` in place of ``1 / n`` (and the dangling mass going to ``p``);
HITS ``a = A^T h``, ``h = A a``, each normalised to sum 1. Every iteration
tests convergence on the L1 change (one scalar read per iteration, as a user of
these libraries writes it). Times are CUDA events on CuPy (seconds), a
monotonic clock on the host.
"""

from __future__ import annotations

import time

import numpy as np

from base import log

DAMPING, TOL, MAX_ITER = 0.85, 1e-6, 100


class Backend:
    """Where an array peer runs.

    Parameters
    ----------
    kind : {'cupy', 'numpy'}

    Attributes
    ----------
    xp, sparse : modules
        ``cupy`` and ``cupyx.scipy.sparse``, or ``numpy`` and ``scipy.sparse``.
    on_gpu : bool
    label : str
        ``cuSPARSE`` or ``scipy`` (SpMV), ``CuPy`` or ``numpy`` (iterations):
        see :meth:`name`.
    device : str
    clock : {'device', 'host'}
        What :class:`Timer` reads on the GPU: CUDA events around the work (``device``,
        the default: the device's own timeline) or the host's clock from a synchronised
        start to the work's end (``host``: what a caller waits, as FinePar's run times
        are taken).

    Raises
    ------
    ImportError, RuntimeError
        When CuPy or a CUDA device is missing (``kind='cupy'``).
    """

    def __init__(self, kind: str):
        self.kind = kind
        self.clock = "device"
        if kind == "cupy":
            import cupy
            import cupyx.scipy.sparse
            count = cupy.cuda.runtime.getDeviceCount()
            if count < 1:
                raise RuntimeError("no CUDA device")
            self.xp, self.sparse, self.on_gpu = cupy, cupyx.scipy.sparse, True
            props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
            self.device = f"{props['name'].decode()} (CuPy {cupy.__version__})"
            self.label = "cuSPARSE"
        elif kind == "numpy":
            import scipy.sparse
            self.xp, self.sparse, self.on_gpu = np, scipy.sparse, False
            import scipy
            self.device = f"host (numpy {np.__version__}, scipy {scipy.__version__})"
            self.label = "scipy"
        else:
            raise ValueError(f"unknown array backend {kind!r}")

    def name(self, what: str) -> str:
        """The peer's name for ``what`` (``spmv`` or an iteration): cuSPARSE / CuPy on the
        GPU, scipy on the host."""
        if not self.on_gpu:
            return "scipy"
        return "cusparse" if what == "spmv" else "cupy"

    def asarray(self, a, dtype=None):
        """``a`` on the backend (copied to the GPU for CuPy)."""
        return self.xp.asarray(a, dtype=dtype)

    def host(self, a) -> np.ndarray:
        """``a`` as a host ndarray."""
        return self.xp.asnumpy(a) if self.on_gpu else np.asarray(a)

    def sync(self) -> None:
        """Wait for the device's queued work (nothing on the host)."""
        if self.on_gpu:
            self.xp.cuda.Device().synchronize()

    def free(self) -> None:
        """Give cached device memory back (between graphs)."""
        if self.on_gpu:
            self.xp.get_default_memory_pool().free_all_blocks()

    def timer(self) -> "Timer":
        """A new :class:`Timer` on this backend's clock."""
        return Timer(self)


class Timer:
    """Seconds between :meth:`start` and :meth:`stop`: CUDA events on the GPU (the device's
    own timeline, waited for), :func:`time.perf_counter` on the host, or on the GPU with
    the backend's ``clock`` at ``host`` (synchronised before the start and after the end)."""

    def __init__(self, backend: Backend):
        self.b = backend
        self.events = backend.on_gpu and backend.clock == "device"
        if self.events:
            cp = backend.xp
            self.s, self.e = cp.cuda.Event(), cp.cuda.Event()

    def start(self) -> "Timer":
        """Record the start; returns the timer."""
        if self.events:
            self.s.record()
        else:
            self.b.sync()
            self.t0 = time.perf_counter()
        return self

    def stop(self) -> float:
        """Record the end, wait for it; the seconds since :meth:`start`."""
        if self.events:
            self.e.record()
            self.e.synchronize()
            return self.b.xp.cuda.get_elapsed_time(self.s, self.e) / 1e3
        self.b.sync()
        return time.perf_counter() - self.t0


def backend_or_none(kind: str, purpose: str = "array peers") -> Backend | None:
    """The backend ``kind`` (``cupy``, ``numpy``), or None with a line saying why not
    (``none``: not wanted)."""
    if kind == "none":
        return None
    try:
        return Backend(kind)
    except Exception as exc:  # noqa: BLE001 - any failure means: no such peer here
        log(f"no {kind} {purpose} ({type(exc).__name__}: {exc})")
        return None


class ArrayGraph:
    """A graph's CSR on a backend: the valued matrix for SpMV, the pattern and its
    transpose for the iterations (built on first use, on the backend).

    Parameters
    ----------
    backend : Backend
    g : finepar.graph.Graph
        int32 ``indptr`` (cuSPARSE's limit of 2**31 - 1 entries).
    """

    def __init__(self, backend: Backend, g):
        self.b, self.n, self.nnz = backend, g.n, g.nnz
        self.symmetric_pattern = bool(g.symmetric and g.pattern)
        self.indptr = backend.asarray(g.indptr)
        self.indices = backend.asarray(g.indices)
        self._data = g.data
        self._cache: dict = {}
        self.outdeg = np.diff(g.indptr)

    def values(self, dtype=np.float32):
        """``A`` with its stored values."""
        key = ("values", np.dtype(dtype))
        if key not in self._cache:
            self._cache[key] = self.b.sparse.csr_matrix(
                (self.b.asarray(self._data, dtype=dtype), self.indices, self.indptr),
                shape=(self.n, self.n))
        return self._cache[key]

    def pattern(self, dtype=np.float32):
        """``A`` with every stored value 1."""
        key = ("pattern", np.dtype(dtype))
        if key not in self._cache:
            ones = self.b.xp.ones(self.nnz, dtype=dtype)
            self._cache[key] = self.b.sparse.csr_matrix((ones, self.indices, self.indptr),
                                                        shape=(self.n, self.n))
        return self._cache[key]

    def transposed(self, dtype=np.float32):
        """``A^T``'s pattern (``A``'s own when the graph is symmetric)."""
        if self.symmetric_pattern:
            return self.pattern(dtype)
        key = ("transposed", np.dtype(dtype))
        if key not in self._cache:
            self._cache[key] = self.pattern(dtype).T.tocsr()
        return self._cache[key]

    def inv_outdeg(self, dtype=np.float32):
        """``1 / outdeg`` (0 for dangling vertices), shape (n,)."""
        key = ("inv", np.dtype(dtype))
        if key not in self._cache:
            d = self.outdeg.astype(np.float64)
            inv = np.divide(1.0, d, out=np.zeros(self.n), where=d > 0)
            self._cache[key] = self.b.asarray(inv, dtype=dtype)
        return self._cache[key]

    def dangling(self):
        """The ids of the vertices without out-edges (int64)."""
        if "dangling" not in self._cache:
            self._cache["dangling"] = self.b.asarray(np.flatnonzero(self.outdeg == 0))
        return self._cache["dangling"]

    def permuted(self, perm: np.ndarray) -> "ArrayGraph":
        """The valued matrix relabelled by ``perm`` (vertex ``v`` becomes ``perm[v]``),
        built on the backend from the COO form (rows and columns mapped, then sorted
        back into CSR). Only :meth:`values` of the result is meant for use."""
        sparse = self.b.sparse
        coo = self.values().tocoo()
        p = self.b.asarray(perm.astype(np.int32))
        b = sparse.coo_matrix((coo.data, (p[coo.row], p[coo.col])),
                              shape=(self.n, self.n)).tocsr()
        b.sort_indices()
        out = object.__new__(ArrayGraph)
        out.b, out.n, out.nnz, out.symmetric_pattern = self.b, self.n, self.nnz, False
        out.indptr, out.indices, out._data = b.indptr, b.indices, None
        out._cache = {("values", np.dtype(np.float32)): b}
        out.outdeg = None
        return out

    def free(self) -> None:
        """Drop the device arrays and give the memory pool's blocks back."""
        self._cache.clear()
        self.indptr = self.indices = None
        self.b.free()


# --------------------------------------------------------------------------- runs


def spmv_runs(ag: ArrayGraph, x: np.ndarray, products: int, repeats: int):
    """Time ``products`` products ``y = A x`` per repeat, after one warm-up product.

    Returns
    -------
    (list of float, ndarray)
        Seconds per product of each repeat; the last ``y`` (float32, host).
    """
    a = ag.values()
    xd = ag.b.asarray(x, dtype=np.float32)
    y = a @ xd
    ag.b.sync()
    times = []
    for _ in range(repeats):
        t = ag.b.timer().start()
        for _ in range(products):
            y = a @ xd
        times.append(t.stop() / products)
    return times, ag.b.host(y)


def power_iteration(ag: ArrayGraph, *, damping: float = DAMPING, tol: float = TOL,
                    max_iter: int = MAX_ITER, restart: np.ndarray | None = None,
                    dtype=np.float32):
    """PageRank (``restart`` None) or RWR (restart distribution ``restart``) by power
    iteration until the L1 change is below ``tol``.

    Returns
    -------
    (ndarray, int, bool)
        Scores (host, ``dtype``), iterations, converged.
    """
    b, xp, n = ag.b, ag.b.xp, ag.n
    dtype = np.dtype(dtype).type
    at, inv, didx = ag.transposed(dtype), ag.inv_outdeg(dtype), ag.dangling()
    p = None
    if restart is not None:
        r = np.asarray(restart, dtype=np.float64)
        p = b.asarray(r / r.sum(), dtype=dtype)
    x = xp.full(n, 1.0 / n, dtype=dtype) if p is None else p.copy()
    c, diff = xp.empty(n, dtype=dtype), xp.empty(n, dtype=dtype)
    it, converged = 0, False
    for it in range(1, max_iter + 1):
        xp.multiply(x, inv, out=c)
        y = at @ c
        dang = x[didx].sum()
        y *= dtype(damping)
        if p is None:
            y += (dtype(damping) * dang + dtype(1 - damping)) / dtype(n)
        else:
            y += p * (dtype(damping) * dang + dtype(1 - damping))
        xp.subtract(y, x, out=diff)
        xp.abs(diff, out=diff)
        change = float(diff.sum())
        x = y
        if change < tol:
            converged = True
            break
    return b.host(x), it, converged


def hits(ag: ArrayGraph, *, tol: float = TOL, max_iter: int = MAX_ITER, dtype=np.float64):
    """HITS by power iteration: ``a = A^T h``, ``h = A a``, each normalised to sum 1,
    from ``h = 1 / n``, until the L1 change of ``h`` is below ``tol``.

    Returns
    -------
    (hubs, authorities, iterations, converged)
        Host arrays of ``dtype``; int; bool.
    """
    xp = ag.b.xp
    a_mat, at = ag.pattern(dtype), ag.transposed(dtype)
    h = xp.full(ag.n, 1.0 / ag.n, dtype=dtype)
    a = h
    it, converged = 0, False
    for it in range(1, max_iter + 1):
        a = at @ h
        a /= a.sum()
        hn = a_mat @ a
        hn /= hn.sum()
        err = float(xp.abs(hn - h).sum())
        h = hn
        if err < tol:
            converged = True
            break
    return ag.b.host(h), ag.b.host(a), it, converged


def timed(backend: Backend, fn):
    """``fn()`` timed on the backend: (seconds, its result)."""
    t = backend.timer().start()
    out = fn()
    return t.stop(), out


# ---------------------------------------------------------------- peer records (measure)


def spmv_record(name: str, ag: ArrayGraph, x: np.ndarray, products: int, repeats: int, check,
                *, back: np.ndarray | None = None, detail: dict | None = None) -> dict:
    """The record of an SpMV peer (:func:`measure.peer_times`): ``repeats`` runs of
    ``products`` products (seconds per run; per product as ``per_iteration``), the
    answer checked; ``back`` maps a relabelled ``y`` to the input's ids (``y[back]``)."""
    from measure import Answer, peer_times
    times, y = spmv_runs(ag, x, products, repeats)
    y = y if back is None else y[back]
    return peer_times(name, [t * products for t in times], check(Answer(y, 0.0, products)),
                      iterations=products, detail=detail)


def power_record(name: str, ag: ArrayGraph, check, repeats: int, *, damping: float,
                 tol: float, max_iter: int, restart: np.ndarray | None = None) -> dict:
    """The record of a PageRank / RWR power-iteration peer (:func:`measure.peer_runs`):
    each run timed whole, on the backend's clock."""
    from measure import Answer, peer_runs

    def run():
        secs, (x, it, _) = timed(ag.b, lambda: power_iteration(
            ag, damping=damping, tol=tol, max_iter=max_iter, restart=restart))
        return Answer(x, secs, it)
    return peer_runs(name, run, check, repeats=repeats)


def hits_record(name: str, ag: ArrayGraph, check, repeats: int, *, tol: float,
                max_iter: int, slow_s: float | None = None) -> dict:
    """The record of a float64 HITS power-iteration peer (:func:`measure.peer_runs`)."""
    from measure import Answer, peer_runs

    def run():
        secs, (h, a, it, _) = timed(ag.b, lambda: hits(ag, tol=tol, max_iter=max_iter))
        return Answer(h, secs, it, {"authorities": a})
    return peer_runs(name, run, check, repeats=repeats, slow_s=slow_s)


def copy_bandwidth(backend: Backend, nbytes: int = 2 ** 31, repeats: int = 10) -> dict | None:
    """Device memory bandwidth of a large device-to-device copy (bytes read + written
    over the median time; min and max too), bytes per second; None on the host."""
    if not backend.on_gpu:
        return None
    cp = backend.xp
    a = cp.ones(nbytes // 4, dtype=cp.float32)
    b = cp.empty_like(a)
    cp.copyto(b, a)
    ts = []
    for _ in range(repeats):
        t = backend.timer().start()
        cp.copyto(b, a)
        ts.append(t.stop())
    del a, b
    backend.free()
    bw = sorted(2 * nbytes / t for t in ts)
    return {"bytes": nbytes, "median": float(np.median(bw)), "min": bw[0], "max": bw[-1]}


# ------------------------------------------------------- float64 references (large graphs)


def _pagerank_reference(backend, app, g, params):
    x, _, _ = power_iteration(ArrayGraph(backend, g), damping=params.get("damping", DAMPING),
                              tol=1e-12, max_iter=10000, dtype=np.float64)
    backend.free()
    return x


def _rwr_reference(backend, app, g, params):
    x, _, _ = power_iteration(ArrayGraph(backend, g),
                              damping=1.0 - params.get("restart_prob", 0.15), tol=1e-12,
                              max_iter=10000, restart=app.restart(g, params), dtype=np.float64)
    backend.free()
    return x


#: Apps whose reference :func:`inputs.reference` may iterate on a GPU backend, in the
#: form the app's own ``reference`` returns (see :mod:`finepar.reference`). HITS is not
#: among them: its reference is the power iteration's limit (ARPACK on the host), which a
#: power iteration stopped by its L1 change misses by up to 2.7e-4 on slowly mixing graphs.
FLOAT64_REFERENCES = {"pagerank": _pagerank_reference, "rwr": _rwr_reference}
