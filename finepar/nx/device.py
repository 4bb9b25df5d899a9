"""The backend's devices: one :class:`~finepar.device.DevicePair` per process, opened on
the first dispatched call (opening OpenCL contexts and building kernels costs about a
second; every later call reuses them), and the runs on it.

Every run takes FinePar's default devices (``auto``: the tuner's split, or the CPU alone on
an emulated pair) unless ``nx.config.backends.finepar`` says otherwise (``devices``,
``threshold``, ``memory``).
FinePar's on-disk prepared-graph cache is off unless ``prepared_cache`` is set: the
converted graph already lives in ``G.__networkx_cache__``, and so does the engine of the
last app called on it (its plan, tuned T_f and device buffers: one engine a graph, so its
device memory stays bounded), prepared by the first call and run again by the later ones
of the same app, so such a call pays only the app's steps and the conversion of its answer.
"""

from __future__ import annotations

import threading
import time

#: What the backend has done in this process: ``conversions`` (NetworkX graphs read),
#: ``runs`` (FinePar runs), ``networkx`` (dispatched calls handed back to NetworkX, for any
#: reason), ``by_size`` (those of them handed back because NetworkX answers faster at the
#: graph's size: :mod:`finepar.nx.policy`), ``pair_seconds`` (opening the pair).
STATS = {"conversions": 0, "runs": 0, "networkx": 0, "by_size": 0, "pair_seconds": 0.0}

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
    if not keep or cfg.prepared_cache:
        wl = fg.workload(app, graph) if keep else Workload(app, graph)
        result, _ = api_run(app, wl, pair=pair(), **kw, **params)
    else:  # the first call on a graph prepares an engine; later calls run on it
        wl = fg.workload(app, graph)
        eng = fg.engine((app, id(graph), *sorted(kw.items())), lambda: _engine(wl, kw, params))
        result, _ = wl.run(engine=eng, warmup=False, **params)
    STATS["runs"] += 1
    return result


def _engine(wl, kw: dict, params: dict):
    """The engine :func:`finepar.api.run` would prepare for ``wl`` (plan, tuned T_f,
    throttling weighed over these ``params``' steps, uploads), kept for the graph's later
    calls: a cached call then pays the app's steps and the answer's conversion alone."""
    from ..throttle.plan import ThrottleOptions
    checked = wl.app.check_params(wl.graph, dict(params))
    wl2, _, perm, _, eng, _, _ = wl.prepare(
        pair(), throttle=ThrottleOptions(), threshold=kw.get("threshold"),
        devices=kw["devices"], grouping="auto", model=None, step=64,
        calibrate=kw.get("calibrate"), steps=wl.app.row_steps(wl.graph, checked),
        params=checked)
    assert perm is None and wl2 is wl  # no relabelling by default
    return eng
