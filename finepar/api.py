"""The Python API: run an app on a graph on a CPU+GPU pair with a fine-grained split.

>>> import finepar
>>> g = finepar.load("cnr-2000.mtx.gz")                     # doctest: +SKIP
>>> scores, report = finepar.pagerank(g, threshold=64)      # doctest: +SKIP

Every function accepts a :class:`~finepar.graph.Graph` or a square
``scipy.sparse`` matrix (validated on entry).
"""

from __future__ import annotations

import time
from typing import Any

from . import apps, workload
from .apps.base import AppResult
from .engine import Engine, EngineOptions
from .errors import FineParError
from .inputs import load_graph, memory_check
from .partition import Plan
from .prepare import cache_after_run, open_cache, prepare
from .report import RunReport
from .device import DevicePair, make_pair, open_pair
from .split import choose
from .split.choose import unused_throttle
from .throttle.plan import ThrottleOptions

__all__ = ["Workload", "run", "load_graph", "make_pair", "open_pair", "memory_check", "release",
           "app_function", "app_functions"]


class Workload(workload.Workload):
    """An app bound to a graph that runs: :meth:`run` decides the run's plan
    (:func:`finepar.prepare.prepare`, the decisions of :mod:`finepar.split.choose`),
    runs the app and reports. See :class:`finepar.workload.Workload` for the binding
    (the app's matrix, built once, and the engines of its plans).

    Parameters
    ----------
    app : str
        An app's name (:func:`finepar.apps.names`).
    graph : Graph or scipy.sparse matrix
    """

    def run(self, *, pair: DevicePair | None = None, threshold: int | None = None,
            devices: str = "auto", memory: str = "auto", grouping: str = "auto",
            warmup: bool = True, plan: Plan | None = None, engine: Engine | None = None,
            load_seconds: float = 0.0, model: Any = None, step: int = 64,
            options: EngineOptions | None = None, calibrate: Any = None,
            throttle: ThrottleOptions | None = None, cache: Any = True,
            **params: Any) -> tuple[AppResult, RunReport]:
        """Run the app once; see :func:`run` for the parameters.

        ``engine``: reuse an engine made by :meth:`engine` (its plan wins).
        """
        params = self.app.check_params(self.graph, params)  # bad parameters fail before any work
        throttle = (throttle or ThrottleOptions()).check()
        if devices == "cpu":
            unused_throttle(throttle, "--devices cpu gives the GPU no rows")
        cache = open_cache(cache)
        pair = engine.pair if engine is not None else (pair or make_pair(memory=memory))
        if engine is not None:
            return self._execute(engine, params, warmup, load_seconds, "given", None)
        if plan is not None:
            source, tuning = "given", None
            wl, plan, perm, secs = self.throttled(pair, plan, throttle)
            eng = wl.engine(pair, plan, options)
        else:
            wl, plan, perm, secs, eng, source, tuning = self.prepare(
                pair, throttle=throttle, threshold=threshold, devices=devices,
                grouping=grouping, model=model, step=step, calibrate=calibrate,
                options=options, cache=cache, steps=self.app.row_steps(self.graph, params),
                params=params)
        if "gpu" not in plan.active_roles():
            unused_throttle(throttle, f"the plan ({source}) gives the GPU no rows; --devices "
                                      f"gpu or --threshold T gives it rows to throttle")
        run_params = params if perm is None else self.app.permute_params(params, perm)
        warmup = warmup and not getattr(eng, "resident_hit", False)  # warm from its last run
        result, report = wl._execute(eng, run_params, warmup, load_seconds, source, tuning)
        if cache is not None:
            report.cache = cache_after_run(cache, eng)
        if perm is None:
            return result, report
        result = self.app.unpermute(result, perm)  # back to the input's vertex ids
        report.plan["remap"] = {"kind": throttle.remap, "seconds": secs}
        report.result["summary"] = self.app.summary(result, self.graph)
        return result, report

    def _execute(self, eng: Engine, params: dict, warmup: bool, load_seconds: float,
                 source: str, tuning: dict | None):
        """Warm up, run (timed), collect; the report."""
        plan = eng.plan
        t0 = time.perf_counter()
        if warmup:
            self.app.warmup(eng, self.graph, **params)
        eng.pair.settle()  # builds started ahead and still running: not during the run
        warm = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.app.inputs(eng, self.graph, params)  # a given vector checked or uploaded
        inputs = time.perf_counter() - t0
        eng.reset_records()
        t0 = time.perf_counter()
        result = self.app.run(eng, self.graph, **params)
        eng.drain()  # the run ends when its kernels do (CC's last ones follow no read)
        wall = time.perf_counter() - t0  # the run, its results still on the devices
        syncs = eng.host_syncs  # the run's own, before collect reads the results
        t0 = time.perf_counter()
        result = self.app.collect(eng, self.graph, result)
        collect = time.perf_counter() - t0
        report = self._report(eng.pair, plan, eng, result, wall, warm, load_seconds, source,
                              tuning)
        report.timings["inputs"] = inputs
        report.timings["collect"] = collect
        report.timings["host_syncs"] = syncs
        if tuning is not None:
            steps = max(report.timings["corun_steps"], 1)
            timed = eng.profile != "none"  # else the device times were not kept
            tuning["measured"] = {"t_cpu": report.timings["kernel"]["cpu"] / steps if timed
                                  else None,
                                  "t_gpu": report.timings["kernel"]["gpu"] / steps if timed
                                  else None,
                                  "t_transfer": report.timings["exchange"] / steps,
                                  "per_iteration": report.timings["per_iteration"]}
            prep = load_seconds + self.preprocess_seconds + plan.seconds
            tuning["overhead_fraction"] = tuning["seconds"] / prep if prep > 0 else float("nan")
        return result, report

    def _report(self, pair, plan, eng, result, wall, warm, load_seconds, source, tuning):
        summ = eng.summary()
        iters = max(result.iterations, 1)
        timings = {"load": load_seconds, "preprocess": self.preprocess_seconds,
                   "partition": plan.seconds, "cache": eng.cache_seconds,
                   "setup": eng.setup_seconds, "warmup": warm,
                   "run": wall, "per_iteration": wall / iters, "kernel": summ["kernel_s"],
                   "profile": summ["profile"],
                   "span": summ["span_s"], "exchange": summ["exchange_s"],
                   "steps": summ["steps"], "corun_steps": summ["corun_steps"],
                   "alone_steps": summ["alone_steps"], "halo_entries": summ["halo_entries"],
                   **getattr(eng, "prep_steps", {})}
        rate = result.work_edges / wall if wall > 0 else 0.0
        throughput = ({"teps": rate} if self.app.rate_unit == "TEPS" else {"nnz_per_s": rate})
        throughput["edges"] = result.work_edges
        timings["launches"] = summ["launches"]
        if summ.get("streaming"):
            timings["streaming"] = summ["streaming"]
        g = self.graph
        return RunReport(
            app=self.name,
            graph={"name": g.name, "source": g.source, "n": g.n, "nnz": g.nnz,
                   "matrix_nnz": self.matrix.nnz, "notes": list(g.notes)},
            devices={"describe": pair.describe(), "emulated": pair.emulated, "memory": pair.mode,
                     **pair.selection.to_dict()},
            plan={"label": plan.label, "method": plan.method, "threshold": plan.threshold,
                  "grouping": plan.grouping, "stats": plan.stats, "lowering": summ["lowering"],
                  "executor": summ["executor"], "push_role": eng.push_role(),
                  "memory": _memory_parts(summ["lowering"]),
                  "throttle": _throttle_report(plan, summ),
                  "columns": summ.get("columns"),
                  "throttle_auto": plan.throttle_auto},
            threshold_source=source, timings=timings, throughput=throughput,
            result={"iterations": result.iterations, "converged": result.converged,
                    "summary": self.app.summary(result, g),
                    **{k: result.extra[k] for k in ("trace", "launches") if k in result.extra}},
            tuning=tuning)

    def prepare(self, pair: DevicePair, **how: Any):
        """What :meth:`run` does before the app's first step (:func:`finepar.prepare.prepare`)."""
        return prepare(self, pair, **how)

    def choose_plan(self, pair: DevicePair, **how: Any):
        """The plan of a run (:func:`finepar.split.choose.choose_plan`)."""
        return choose.choose_plan(self, pair, **how)

    def throttled(self, pair: DevicePair, plan: Plan, throttle: ThrottleOptions, *args: Any):
        """The workload and plan a run uses under ``throttle``
        (:func:`finepar.split.choose.throttled`)."""
        return choose.throttled(self, pair, plan, throttle, *args)


def _throttle_report(plan: Plan, summ: dict) -> dict | None:
    """The throttled GPU share for the report: partitions, tree, SJ's chosen cover, the
    partitioning and remapping time, and the iterations they take to pay back."""
    if plan.throttle is None:
        return None
    out = plan.throttle.describe()
    sj = summ.get("sj")
    if sj:
        out["sj"] = sj
        saving = sj["root_s"] - sj["cover_s"]
        cost = out["partition_seconds"] + out["remap_seconds"]
        out["amortised_after_iterations"] = (cost / saving if saving > 0 else None)
    return out


def _memory_parts(lowering: dict) -> dict:
    """The three parts of §4.3: the nonzeros the CPU keeps, those the GPU keeps resident,
    and those it streams every iteration."""
    cpu, gpu = lowering.get("cpu", {}), lowering.get("gpu", {})
    streamed = gpu.get("streamed_bytes", 0)
    gpu_nnz = gpu.get("nnz", 0)
    resident_bytes = gpu.get("resident_bytes", 0)
    frac = streamed / (streamed + resident_bytes) if streamed + resident_bytes else 0.0
    return {"cpu_nnz": cpu.get("nnz", 0), "gpu_resident_nnz": int(round(gpu_nnz * (1 - frac))),
            "gpu_streamed_nnz": int(round(gpu_nnz * frac)),
            "gpu_chunks": gpu.get("chunks", 1), "cpu_chunks": cpu.get("chunks", 1)}


def run(app: str, graph: Any, **kw: Any) -> tuple[AppResult, RunReport]:
    """Run ``app`` on ``graph`` split across the pair.

    Parameters
    ----------
    app : str
        An app's name (:func:`finepar.apps.names`).
    graph : Graph, scipy.sparse matrix, or Workload
        Square; for graph apps, row i holds the out-edges of vertex i. A
        :class:`Workload` reuses its already built matrix.
    pair : DevicePair, optional
        Default: automatic selection in ``memory`` mode.
    threshold : int, optional
        ``T_f``: rows with more nonzeros go to the CPU. Default: the tuner's
        starting point.
    devices : {'auto', 'both', 'cpu', 'gpu'}
        ``cpu`` / ``gpu`` run everything on one device; ``both`` splits at
        ``threshold`` or the tuner's ``T_f``; ``auto`` (default): ``both``, except
        on an emulated pair, where the CPU runs alone (:func:`auto_devices`).
    memory : {'auto', 'shared', 'split'}
    grouping : {'auto', 'none', 'pow4', 'adaptive'}
        ``pow4``: §4.1's length groups, one launch per group, each with its
        thread mapping; ``none``: one launch per device; ``adaptive``:
        CSR-adaptive row blocks, one launch; ``auto`` (default): the tuner
        picks the one its model predicts faster (with a ``threshold`` or one
        device given, ``auto`` means ``pow4``).
    options : EngineOptions, optional
        E.g. ``EngineOptions(offsets="int64")``.
    schedule : {'auto', 'none', 'cf', 'cf-q', 'sj', 'sj-q'}
        Locality-aware throttling of the GPU share (throttling-atc18 §3): cache-fit
        partitions run one launch each (cf), from a device-side queue (cf-q), or
        merged where profiling finds it faster (sj, sj-q); ``auto`` (default)
        throttles only where the share's vector entries exceed the GPU's cache,
        and keeps only what its first iterations measured faster.
    bisect : {'kd', 'spac'}
        How the partitions are cut: K-D tiling or coarsened SPAC (pymetis).
    remap : {'none', 'dbwp', 'degree'}
        Relabel the vertices first (results come back in the input's ids).
    cache_bytes : int, optional
        The cache the partitions fit (default: the GPU's L2).
    calibrate : None, bool or Recipe
        When no performance model matches the devices: measure this machine first
        (None: unless ``FINEPAR_NO_CALIBRATE`` is set; see :mod:`finepar.calibrate`).
    warmup : bool
        Run the app's kernels once before the timed run (compilation stays out).
    plan : Plan, optional
        Use this plan instead of building one.
    cache : bool, str or PrepCache
        The prepared-graph cache (:mod:`finepar.prepcache`): True (default) the user's
        cache directory (off when ``$FINEPAR_NO_CACHE`` is set), False none, or a
        directory or :class:`~finepar.prepcache.PrepCache`. A second run on the same
        input, devices and options reuses the plan, the tuned ``T_f``, the cache-fit
        partitions, the relabelling and the split-join cover; on an input of at most
        :data:`finepar.prepare.KEEP_NNZ` entries it also takes the app's matrix and the
        engine (buffers on the devices) the calling thread kept from the last call
        (:func:`release` drops them). The device pair is kept for the process either way.
    **params
        App parameters (``damping``, ``tol``, ``max_iter``, ``root``,
        ``repeat``, ``x``, ``policy``).

    Returns
    -------
    (AppResult, RunReport)

    Raises
    ------
    FineParError
        Bad input, no device, or a kernel build failure (with its log).
    """
    wl = graph if isinstance(graph, Workload) else _workload(app, graph, kw.get("cache", True))
    if wl.name != app:
        raise FineParError(f"workload is for {wl.name}, not {app}")
    keys = ("schedule", "bisect", "remap", "cache_bytes")
    if any(k in kw for k in keys):
        kw["throttle"] = ThrottleOptions(**{k: kw.pop(k) for k in keys if k in kw})
    return wl.run(**kw)


def release() -> dict:
    """Drop what this process kept between calls: the device pairs it opened (their
    contexts and built programs, :func:`finepar.device.pair.forget_pairs`) and the
    prepared engines the calling thread kept for small inputs, with their buffers on the
    devices (:func:`finepar.prepare.release_engines`). The next call opens its devices
    and prepares its input again. ``finepar serve``'s store is left alone.

    Returns
    -------
    dict
        ``{"pairs": int, "engines": int}``: how many were dropped.
    """
    from .device.pair import forget_pairs
    from .prepare import release_engines
    return {"pairs": forget_pairs(), "engines": release_engines()}


def _workload(app: str, graph: Any, cache: Any = True) -> Workload:
    """``Workload(app, graph)``; in a resident process the one made before for this graph
    object and app (its matrix built once); else, for a small input, the one this thread
    made before for the same content and app (:func:`finepar.prepare.kept_workload`)."""
    from .device import resident
    store = resident.current()
    if store is None:
        from .prepare import kept_workload
        return kept_workload(app, graph, open_cache(cache), Workload)
    held = store.get("workload", (id(graph), app))
    if held is None or held.graph is not graph:
        held = store.put("workload", (id(graph), app), Workload(app, graph))
    return held


def app_function(name: str):
    """The API's function for the app ``name`` (``finepar.pagerank``, ...), made from the
    registry: ``f(graph, *api_args, **kw)`` runs :func:`run` and returns the app's
    :attr:`~finepar.apps.base.App.api_outputs`, then the report."""
    app = apps.get(name)

    def call(graph: Any, *args: Any, **kw: Any):
        if len(args) > len(app.api_args):
            raise TypeError(f"{app.api_function}() takes {len(app.api_args) + 1} positional "
                            f"arguments but {len(args) + 1} were given")
        kw.update(zip(app.api_args, args))
        res, rep = run(app.name, graph, **kw)
        return (*(res.values if k == "values" else res.extra[k] for k in app.api_outputs), rep)

    call.__name__ = call.__qualname__ = app.api_function
    args = "".join(f", {a}=None" for a in app.api_args)
    call.__doc__ = (f"{app.api_function}(graph{args}, **kw)\n\n    {app.api_doc} "
                    f"Other keywords as :func:`finepar.api.run`'s; the app's parameters: "
                    f"{', '.join(p.name for p in app.params) or 'none'}.")
    return call


def app_functions() -> dict:
    """Every app's API function by its name (:func:`app_function`)."""
    return {a.api_function: app_function(a.name) for a in apps.get_all()}


def __getattr__(name: str):
    """``finepar.api.pagerank`` and the other apps' functions, made on first use."""
    for a in apps.get_all():
        if a.api_function == name:
            fn = globals()[name] = app_function(a.name)
            return fn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
