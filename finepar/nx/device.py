"""The backend's devices: one :class:`~finepar.runtime.DevicePair` per process, opened on
the first dispatched call (opening OpenCL contexts and building kernels costs about a
second; every later call reuses them), and the runs on it.

Every run takes FinePar's default split (the tuner's threshold on both devices) unless
``nx.config.backends.finepar`` says otherwise (``devices``, ``threshold``, ``memory``).
FinePar's on-disk prepared-graph cache is off unless ``prepared_cache`` is set: the
converted graph already lives in ``G.__networkx_cache__``, and a digest of its arrays on
every call (and an entry on disk per NetworkX graph) would buy nothing measurable
(cnr-2000: 86 ms a PageRank call either way, BFS 16 ms without against 28 ms with).
"""

from __future__ import annotations

import threading
import time

#: What the backend has done in this process: ``conversions`` (NetworkX graphs read),
#: ``runs`` (FinePar runs), ``networkx`` (dispatched calls handed back to NetworkX),
#: ``pair_seconds`` (opening the pair).
STATS = {"conversions": 0, "runs": 0, "networkx": 0, "pair_seconds": 0.0}

_PAIR = None
_LOCK = threading.Lock()


def config():
    """``nx.config.backends.finepar`` (the defaults of :func:`finepar.nx.backend_info`)."""
    import networkx as nx
    return nx.config.backends.finepar


def pair():
    """The process's device pair, opened on first use (``memory`` from the config)."""
    global _PAIR
    with _LOCK:
        if _PAIR is None:
            from ..api import make_pair
            t0 = time.perf_counter()
            _PAIR = make_pair(memory=config().memory)
            STATS["pair_seconds"] = time.perf_counter() - t0
        return _PAIR


def run(fg, app: str, graph, *, keep: bool = True, **params):
    """Run ``app`` on ``graph`` (a FinePar Graph of ``fg``) with the backend's device
    settings; returns the :class:`~finepar.apps.base.AppResult`.

    Parameters
    ----------
    fg : FineParGraph
        Keeps the app's :class:`~finepar.api.Workload` (its matrix built once).
    app : str
    graph : finepar.graph.Graph
    keep : bool
        Keep the workload on ``fg`` for later calls (False: a graph made for this call).
    **params
        The app's parameters (``root``, ``tol``, ...).
    """
    from ..api import Workload, run as api_run
    cfg = config()
    kw = {"devices": cfg.devices, "warmup": False, "cache": bool(cfg.prepared_cache)}
    if cfg.threshold is not None:
        kw["threshold"] = int(cfg.threshold)
    if cfg.calibrate is not None:
        kw["calibrate"] = bool(cfg.calibrate)
    wl = fg.workload(app, graph) if keep else Workload(app, graph)
    result, _ = api_run(app, wl, pair=pair(), **kw, **params)
    STATS["runs"] += 1
    return result
