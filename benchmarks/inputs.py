"""The benchmarks' inputs: graphs generated once and cached, and their reference answers.

Graph500 graphs (``graph500:SCALE[:SEED]``) are generated in a child process
(so its peak memory is the generation's own, read with ``getrusage``) and
written uncompressed as ``.npz`` under ``$FINEPAR_CACHE`` (default
``/tmp/finepar-cache``); every later load, in this process or another script
of the same call, reads that file at disk speed. The file name carries a digest
of the generator's source, so a changed generator never reads an old graph.

Reference answers (:meth:`finepar.apps.base.App.reference`, or the same
float64 power iteration on the GPU through CuPy for PageRank, RWR and HITS on
large graphs) are cached beside them, keyed by the graph, the app, its
parameters and the reference code's digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from base import HERE, ROOT, child_env, log

#: Above this many stored entries, PageRank, RWR and HITS references are iterated
#: with CuPy in float64 when it is usable (scipy iterates single-threaded).
CUPY_REFERENCE_NNZ = 5e7

#: The host's PageRank reference on graphs above ``CUPY_REFERENCE_NNZ`` iterates to this L1
#: change (its error is below tol * d / (1 - d), far inside the check's 1e-4).
HOST_PAGERANK_TOL = 1e-10

#: The child that generates a Graph500 graph and writes it: prints one JSON line.
_GENERATE = """
import json, resource, sys, time
from finepar.io.graph500 import kronecker
from finepar.io import save
scale, seed, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
t0 = time.perf_counter()
g = kronecker(scale, seed=seed)
gen = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
save(g, path, compressed=False)
print(json.dumps({"name": g.name, "n": g.n, "nnz": g.nnz, "generate_s": gen,
                  "save_s": time.perf_counter() - t0, "peak_rss_bytes": peak,
                  "notes": g.notes}))
"""


def cache_dir() -> Path:
    """``$FINEPAR_CACHE`` or ``/tmp/finepar-cache`` (created)."""
    p = Path(os.environ.get("FINEPAR_CACHE") or "/tmp/finepar-cache")
    p.mkdir(parents=True, exist_ok=True)
    return p


def _digest(*paths: Path, extra: str = "") -> str:
    h = hashlib.sha1(extra.encode())
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:10]


def graph500_file(scale: int, seed: int = 0) -> Path:
    """The cache file of Graph500 ``scale`` / ``seed`` (edgefactor 16, undirected)."""
    fp = ROOT / "finepar" / "io"
    tag = _digest(fp / "graph500.py", fp / "edges.py")
    return cache_dir() / f"graph500-s{scale}-ef16-seed{seed}-{tag}.npz"


def _generate(scale: int, seed: int, path: Path) -> dict:
    """Generate a graph in a child process and write it to ``path``; its figures."""
    env = child_env()
    log(f"generating graph500:{scale} (seed {seed}) into {path} ...")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _GENERATE, str(scale), str(seed), str(path)],
                         env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"generating graph500:{scale} failed:\n{out.stderr.strip()[-2000:]}")
    info = json.loads(out.stdout.strip().splitlines()[-1])
    info["child_s"] = time.perf_counter() - t0
    log(f"generated {info['name']}: {info['n']:,} vertices, {info['nnz']:,} nnz in "
        f"{info['generate_s']:.1f} s (peak memory {info['peak_rss_bytes'] / 2**30:.2f} GiB), "
        f"written in {info['save_s']:.1f} s")
    return info


_LAST: dict = {}


def load_input(spec: str):
    """A graph from a file or ``graph500:SCALE[:SEED]``, through the cache.

    The last graph loaded stays in memory for the next call with the same spec.

    Returns
    -------
    (Graph, dict)
        The graph and how it came: ``spec``, ``load_s`` (reading it, seconds),
        ``generated`` (None, or the generation's ``generate_s``, ``save_s`` and
        ``peak_rss_bytes``), ``file`` (the file read).
    """
    if _LAST.get("spec") == spec:
        return _LAST["graph"], dict(_LAST["info"], reused=True)
    _LAST.clear()  # let the previous graph go before the next is read
    from finepar.io import load
    info: dict = {"spec": spec, "generated": None}
    if spec.startswith("graph500:"):
        parts = spec.split(":")[1:]
        scale, seed = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
        path = graph500_file(scale, seed)
        if not path.exists():
            info["generated"] = _generate(scale, seed, path)
        name = f"graph500-s{scale}-ef16-seed{seed}"
    else:
        path, name = Path(spec), None
    t0 = time.perf_counter()
    g = load(str(path))
    info.update(load_s=time.perf_counter() - t0, file=str(path))
    if name:
        g.name, g.symmetric = name, True
    _LAST.update(spec=spec, graph=g, info=info)
    return g, info


def undirected_edges(g) -> int:
    """Edges a TEPS rate counts: ``nnz / 2`` for a graph stored with both directions of
    every edge (Graph500's undirected graphs), else ``nnz``."""
    return g.nnz // 2 if g.symmetric else g.nnz


# ------------------------------------------------------------------------ references


def _params_key(params: dict) -> str:
    h = hashlib.sha1()
    for k in sorted(params):
        v = params[k]
        h.update(k.encode())
        if isinstance(v, np.ndarray):
            h.update(str(v.dtype).encode() + str(v.shape).encode())
            h.update(np.ascontiguousarray(v).view(np.uint8))
        else:
            h.update(repr(v).encode())
    return h.hexdigest()[:12]


def _reference_file(app, g, params: dict) -> Path:
    import inspect
    code = _digest(ROOT / "finepar" / "reference.py", Path(inspect.getfile(type(app))),
                   HERE / "arraypeers.py")
    src = ""
    if g.source and Path(g.source).exists():
        st = Path(g.source).stat()
        src = f"{Path(g.source).name}-{st.st_size}-{int(st.st_mtime)}"
    key = hashlib.sha1(f"{g.name}|{g.n}|{g.nnz}|{src}".encode()).hexdigest()[:10]
    return cache_dir() / f"ref-{g.name}-{key}-{app.name}-{_params_key(params)}-{code}.npz"


def _save_reference(path: Path, ref) -> None:
    from finepar.files import atomic_open
    items = ref if isinstance(ref, tuple) else (ref,)
    arrays = {f"a{i}": np.asarray(v) for i, v in enumerate(items)}
    if any(a.dtype == object for a in arrays.values()):
        return  # not an array answer: not cached
    arrays["tuple"] = np.array(isinstance(ref, tuple))
    with atomic_open(path) as f:
        np.savez(f, **arrays)


def _load_reference(path: Path):
    with np.load(path, allow_pickle=False) as z:
        k = sum(1 for name in z.files if name.startswith("a"))
        items = tuple(z[f"a{i}"] if z[f"a{i}"].ndim else z[f"a{i}"].item() for i in range(k))
        return items if bool(z["tuple"]) else items[0]


def reference(app, g, params: dict, *, backend=None, big_nnz: float = CUPY_REFERENCE_NNZ):
    """The reference answer of ``app`` on ``g`` for ``params`` (the app's reference
    parameters), cached.

    Parameters
    ----------
    app : finepar.apps.base.App
    g : Graph
    params : dict
        From ``app.reference_params(g, app.check_params(g, {...}))``.
    backend : arraypeers.Backend, optional
        A CuPy backend: PageRank, RWR and HITS on graphs above ``big_nnz`` stored
        entries are iterated there in float64 (same definitions as
        the app's own ``reference``, beside it in ``finepar/apps/``).

    Returns
    -------
    (object, dict)
        The answer in the form ``app.reference`` returns, and ``{"seconds",
        "cached", "how"}``.
    """
    path = _reference_file(app, g, params)
    if path.exists():
        t0 = time.perf_counter()
        ref = _load_reference(path)
        return ref, {"seconds": time.perf_counter() - t0, "cached": True, "how": "cache",
                     "file": str(path)}
    t0 = time.perf_counter()
    ref, how = None, "the app's reference (host, float64)"
    from arraypeers import FLOAT64_REFERENCES
    if (backend is not None and backend.on_gpu and big_nnz < g.nnz < 2 ** 31
            and app.name in FLOAT64_REFERENCES):
        try:
            ref = FLOAT64_REFERENCES[app.name](backend, app, g, params)
            how = "CuPy float64 power iteration"
        except Exception as exc:  # noqa: BLE001 - fall back to the host's reference
            log(f"CuPy reference failed ({type(exc).__name__}: {exc}); using the host's")
            backend.free()
    if ref is None and app.name == "pagerank" and g.nnz > big_nnz:
        from finepar.apps.pagerank import reference_pagerank
        ref = reference_pagerank(g, damping=params.get("damping", 0.85), tol=HOST_PAGERANK_TOL)
        how = (f"finepar.apps.pagerank.reference_pagerank (host threads, float64) to an L1 "
               f"change below {HOST_PAGERANK_TOL:g}")
    elif ref is None:
        ref = app.reference(g, params)
    secs = time.perf_counter() - t0
    _save_reference(path, ref)
    log(f"reference {app.name} on {g.name}: {secs:.1f} s ({how})")
    return ref, {"seconds": secs, "cached": False, "how": how, "file": str(path)}
