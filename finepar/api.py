"""The Python API: run an app on a graph on a CPU+GPU pair with a fine-grained split.

>>> import finepar
>>> g = finepar.load("cnr-2000.mtx.gz")                     # doctest: +SKIP
>>> scores, report = finepar.pagerank(g, threshold=64)      # doctest: +SKIP

Every function accepts a :class:`~finepar.graph.Graph` or a square
``scipy.sparse`` matrix (validated on entry).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from . import apps
from .apps.base import AppResult
from .engine import Engine, EngineOptions
from .engine.launches import ShareLowering
from .errors import FineParError, InputError, UsageError
from .graph import Graph
from .io import from_scipy
from .partition import GROUPINGS, Plan, fine_grained, single_device
from .prepcache import InputDigest, PrepCache
from .report import RunReport, human_bytes
from .runtime import DevicePair, select_pair
from .throttle.plan import ThrottleOptions, device_counter, remap_permutation, throttle_share

DEVICES_CHOICES = ("auto", "both", "cpu", "gpu")

#: Why ``devices='auto'`` runs an emulated pair's CPU alone.
EMULATED_ALONE = ("the CPU alone: no GPU, and the emulated gpu role would run on the same "
                  "CPU cores, so a split adds only its overhead (--devices both splits "
                  "anyway)")


def auto_devices(devices: str, pair, threshold: int | None) -> tuple[str, str | None]:
    """``devices`` with ``'auto'`` decided for ``pair``: ``'cpu'`` where the pair is
    emulated (both roles are one CPU device, so no split can beat it alone) and no
    ``threshold`` asks for a split; else ``'both'``, the tuner's split.

    Returns
    -------
    (devices, reason)
        ``'both'``, ``'cpu'`` or ``'gpu'``, and why ``auto`` chose one device (None
        where nothing was decided here).
    """
    if devices != "auto":
        return devices, None
    if getattr(pair, "emulated", False) and threshold is None:
        return "cpu", EMULATED_ALONE
    return "both", None


def as_graph(graph: Any, name: str = "matrix") -> Graph:
    """A :class:`Graph` from a Graph or a scipy.sparse matrix (validated)."""
    if isinstance(graph, Graph):
        return graph
    return from_scipy(graph, name=name)


def make_pair(*, cpu: str | None = None, gpu: str | None = None, memory: str = "auto",
              config: dict | None = None) -> DevicePair:
    """Select devices and open the pair (see :func:`finepar.runtime.select_pair`); in a
    resident process (:mod:`finepar.resident`), the pair opened for the same arguments."""
    return open_pair(cpu=cpu, gpu=gpu, memory=memory, config=config).result()


class OpeningPair:
    """A device pair whose devices are chosen and whose contexts open on a thread of
    their own (:func:`open_pair`), so the host reads the input meanwhile.

    Attributes
    ----------
    selection : Selection
        The devices chosen (what :func:`memory_check` needs).
    """

    def __init__(self, selection, make=None, pair: DevicePair | None = None):
        import threading
        self.selection, self._pair, self._error = selection, pair, None
        self._thread = None
        if pair is None:
            def opening() -> None:
                try:
                    self._pair = make()
                except BaseException as exc:  # raised by result(), in the caller's thread
                    self._error = exc
            self._thread = threading.Thread(target=opening, name="finepar-open", daemon=True)
            self._thread.start()

    def wait(self) -> None:
        """Wait for the contexts to open (or fail), raising nothing."""
        if self._thread is not None:
            self._thread.join()

    def result(self) -> DevicePair:
        """The open pair (waiting for its contexts).

        Raises
        ------
        DeviceError
            If a context or queue could not be made.
        """
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            raise self._error
        return self._pair


def open_pair(*, cpu: str | None = None, gpu: str | None = None, memory: str = "auto",
              config: dict | None = None) -> OpeningPair:
    """Choose the devices now and open their contexts on a thread (:class:`OpeningPair`);
    in a resident process, the pair opened before for the same arguments.

    Raises
    ------
    DeviceError
        No OpenCL device, or a selector that matches nothing (at once); a context that
        cannot be made (from :meth:`OpeningPair.result`).
    """
    import json
    from . import resident
    config = config or {}
    key = json.dumps([cpu, gpu, memory, config], sort_keys=True, default=str)
    store = resident.current()
    held = store.get("pair", key) if store is not None else None
    if held is not None:  # a resident process opens them once
        return OpeningPair(held.selection, pair=held)
    sel = select_pair(cpu, gpu, config=config)
    mode = memory if memory != "auto" else config.get("memory", "auto")

    def make() -> DevicePair:
        made = DevicePair(sel, mode, launch_overrides=config.get("launch"))
        return made if store is None else store.put("pair", key, made)
    return OpeningPair(sel, make)


def plan_for(matrix: Graph, *, threshold: int | None, devices: str, grouping: str) -> Plan:
    """The plan for a run: one device alone, or a fine split at ``threshold``."""
    if devices not in DEVICES_CHOICES:
        raise FineParError(f"--devices must be one of {', '.join(DEVICES_CHOICES)}, not {devices!r}")
    lengths = matrix.row_lengths()
    grouping = "pow4" if grouping == "auto" else grouping  # no tuner to choose
    if grouping not in GROUPINGS:
        raise UsageError(f"grouping must be auto or one of {', '.join(GROUPINGS)}, "
                         f"not {grouping!r}")
    if threshold is not None and (isinstance(threshold, bool) or int(threshold) != threshold
                                  or threshold < 0):
        raise UsageError(f"threshold (T_f) must be an integer >= 0, not {threshold!r}")
    if devices in ("cpu", "gpu"):
        return single_device(lengths, devices, grouping=grouping)
    if threshold is None:
        raise UsageError("a split on both devices needs a threshold (T_f)")
    return fine_grained(lengths, int(threshold), grouping=grouping)


class Workload:
    """An app bound to a graph: the app's matrix, built once, and its row statistics.

    Reuse one Workload for several runs (plans, thresholds, devices) so the
    matrix (a transpose for PageRank and BFS, the symmetrised graph for CC) is
    built once.

    Parameters
    ----------
    app : str
        An app's name (:func:`finepar.apps.names`).
    graph : Graph or scipy.sparse matrix

    Attributes
    ----------
    app : App
    graph : Graph
    matrix : Graph
        The matrix whose rows are the work.
    preprocess_seconds : float
        Time to build ``matrix``.
    """

    def __init__(self, app: str, graph: Any):
        self.app = apps.get(app)
        self.name = self.app.name
        self.graph = as_graph(graph)
        t0 = time.perf_counter()
        self.matrix = self.app.matrix(self.graph)
        self.preprocess_seconds = time.perf_counter() - t0
        self._stats = None

    @property
    def row_stats(self):
        """:class:`~finepar.features.RowStats` of :attr:`matrix` (built on first use)."""
        if self._stats is None:
            from .features import RowStats
            self._stats = RowStats(self.matrix.row_lengths())
        return self._stats

    def engine(self, pair: DevicePair, plan: Plan, options: EngineOptions | None = None,
               lowerings: dict | None = None) -> Engine:
        """An engine for ``plan`` with the app's state prepared (not timed); ``lowerings``
        as :class:`~finepar.engine.Engine` takes them."""
        eng = Engine(pair, self.matrix, plan, self.app.ops, options=options,
                     lowerings=lowerings,
                     built_ahead=self.app.built_ahead(tuple(plan.active_roles())),
                     column_vectors=self.app.column_vectors)
        t0 = time.perf_counter()
        self.app.prepared(eng, self.graph)
        eng.setup_seconds += time.perf_counter() - t0
        return eng

    def remapped(self, perm: np.ndarray, seconds: float = 0.0) -> "Workload":
        """This workload on the graph relabelled by ``perm`` (vertex ``v`` becomes
        ``perm[v]``): the app's matrix is permuted, not rebuilt."""
        wl = object.__new__(Workload)
        wl.app, wl.name = self.app, self.name
        t0 = time.perf_counter()
        note = "vertices relabelled for locality"
        wl.graph = self.graph.permuted(perm, note=note)
        if self.matrix is self.graph:
            wl.matrix = wl.graph
        elif self.matrix.n == self.graph.n:
            wl.matrix = self.matrix.permuted(perm, note=note)
        else:  # a stacked matrix (HITS): every block of n rows relabelled alike
            k = self.matrix.n // self.graph.n
            blocks = np.concatenate([perm + i * self.graph.n for i in range(k)])
            wl.matrix = self.matrix.permuted(blocks, note=note)
        wl.preprocess_seconds = self.preprocess_seconds + seconds + time.perf_counter() - t0
        wl._stats = None
        return wl

    def choose_plan(self, pair: DevicePair, *, threshold: int | None, devices: str,
                    grouping: str, model: Any, step: int, calibrate: Any, scale: Any = None,
                    options: EngineOptions | None = None):
        """The plan of a run: one device, a given T_f, or the tuner's; returns
        ``(plan, source, tuning)``. ``devices='auto'`` is decided by :func:`auto_devices`."""
        devices, why = auto_devices(devices, pair, threshold)
        if why is not None:  # one work-item a row: length groups only add launches on a
            # CPU (PageRank at Graph500 scale 16, 2-core EPYC: 6.5 ms an iteration, 6.8 pow4)
            return plan_for(self.matrix, threshold=None, devices=devices,
                            grouping="none" if grouping == "auto" else grouping), why, None
        if devices in ("cpu", "gpu"):
            return plan_for(self.matrix, threshold=None, devices=devices,
                            grouping=grouping), "single-device", None
        if threshold is not None:
            return plan_for(self.matrix, threshold=threshold, devices=devices,
                            grouping=grouping), "flag", None
        from .tuner import tune
        tr = tune(self, pair, model=model, step=step, grouping=grouping, calibrate=calibrate,
                  options=options, scale=scale)
        return (plan_for(self.matrix, threshold=tr.threshold, devices=devices,
                         grouping=tr.grouping), "tuner", tr.to_dict())

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
            report.cache = wl._cache_after_run(cache, eng)
        if perm is None:
            return result, report
        result = self.app.unpermute(result, perm)  # back to the input's vertex ids
        report.plan["remap"] = {"kind": throttle.remap, "seconds": secs}
        report.result["summary"] = self.app.summary(result, self.graph)
        return result, report

    def prepare(self, pair: DevicePair, *, throttle: ThrottleOptions, threshold: int | None,
                devices: str, grouping: str, model: Any, step: int, calibrate: Any,
                options: EngineOptions | None = None, cache: PrepCache | None = None,
                steps: float = 1.0, params: dict | None = None):
        """Everything :meth:`run` does before the app's first step: choose the plan
        (:meth:`choose_plan`), throttle the GPU share (:meth:`throttled`), build the
        engine and, for a tuned split on two devices, check it with one measured step
        (:meth:`_correction`), tuning and building again where one device's model was off.
        With a ``cache``, an entry for the same input, devices and options replaces all
        of that but the engine's build (:meth:`_restore`); a new decision is stored. With
        the run's ``params``, a tuned run of an app that keeps its work on one device
        (:meth:`~finepar.apps.base.App.one_device`: CC's Afforest) plans for that device.

        Returns
        -------
        (Workload, Plan, ndarray or None, float, Engine, str, dict or None)
            The workload run (this one or a relabelled copy), its plan, the
            relabelling (None: none) and its seconds, the engine, where the plan
            came from (``single-device``, ``flag``, ``tuner``) and the tuning record.
        """
        alone = (self.app.one_device(pair, self.matrix, params, options)
                 if params is not None and threshold is None and devices in ("auto", "both")
                 else None)
        if alone:  # its row operations may never run: each is built where first used
            from dataclasses import replace
            options = replace(options or EngineOptions(), prebuild=False)
        decided = auto_devices(devices, pair, threshold)[0]

        def builds_ahead() -> None:
            """What the app builds whatever the plan, built while it plans (not for an
            engine a resident process kept: its programs are built, and guesses it waited
            for cost a served PageRank rerun 1.96 s on the H100)."""
            if params is None:
                return
            from .engine.frontier import early_build
            from .engine.memory import likely_programs
            from .engine.columns import programs as column_programs
            opts = options or EngineOptions()
            early_build(pair, self.app.early_programs(pair, self.matrix, params)
                        + (column_programs(pair, self.app.column_vectors)
                           if opts.columns != "none" and decided != "cpu" else []))
            if not alone and decided != "cpu":  # one at a time, the row operations' programs
                for _, sources, defines in likely_programs(pair, self.matrix, self.app.ops,
                                                           opts.offsets):
                    pair.guess_build(pair.program, pair.gpu, sources, defines)
        out = self._prepared(pair, throttle=throttle, threshold=threshold,
                             devices=alone or devices, grouping=grouping, model=model,
                             step=step, calibrate=calibrate, options=options, cache=cache,
                             steps=steps, builds_ahead=builds_ahead)
        if alone:  # the app keeps its work on one device: nothing was tuned
            out = (*out[:5], f"the app's one-device algorithm (on the {alone})", out[6])
        return out

    def _prepared(self, pair: DevicePair, *, throttle: ThrottleOptions, threshold: int | None,
                  devices: str, grouping: str, model: Any, step: int, calibrate: Any,
                  options: EngineOptions | None, cache: PrepCache | None, steps: float,
                  builds_ahead=lambda: None):
        """:meth:`prepare` for the devices decided; ``builds_ahead()`` starts the builds a
        new engine will likely need, once no engine kept by a resident process serves."""
        how = dict(threshold=threshold, devices=devices, grouping=grouping, model=model,
                   step=step, calibrate=calibrate, options=options)
        from . import resident
        if cache is None or resident.current() is None:  # no kept engine: build at once
            builds_ahead()
            builds_ahead = lambda: None  # noqa: E731
        key = parts = content = None
        if cache is not None:
            t0 = time.perf_counter()
            parts = self._cache_parts(pair, throttle, {**how, "steps": steps})
            content = InputDigest(self.graph, cache.root)
            if content.known or cache.holds(cache.prefix(parts)):
                key = cache.key(parts, content.value())
                held = self._resident((key, id(pair)), t0)
                if held is not None:
                    return held
                builds_ahead()
                entry = cache.get(key)
                if entry is not None:
                    read = time.perf_counter() - t0  # the key and the entry's read
                    out = self._restore(entry, pair, options)
                    out[4].cache_seconds = read
                    return _keep_resident((key, id(pair)), out)
            else:  # no entry of this shape: hashed while the run is prepared
                cache.events.append("miss (no entry for an input of this shape)")
                content.start()
                builds_ahead()
        t0 = time.perf_counter()
        plan, source, tuning = self.choose_plan(pair, **how)
        steps_s = {"tune": time.perf_counter() - t0 - plan.seconds}
        t1 = time.perf_counter()
        wl, plan, perm, secs = self.throttled(pair, plan, throttle, steps, tuning)
        steps_s["throttle"] = time.perf_counter() - t1
        eng = wl.engine(pair, plan, options)
        if tuning is not None and len(plan.active_roles()) == 2:
            t1 = time.perf_counter()
            redo = self._correction(eng, wl, pair, tuning, how, steps)
            if redo is not None:  # the model was off on one device: the split tuned again
                plan, tuning = redo
                del eng
                wl, plan, perm, secs = self.throttled(pair, plan, throttle, steps, tuning)
                eng = wl.engine(pair, plan, options)
            steps_s["correct"] = time.perf_counter() - t1
        if cache is not None:
            t1 = time.perf_counter()
            key = key or cache.key(parts, content.value())
            cache.put(key, *_entry_of(plan, eng, devices, source, tuning, perm, secs,
                                      time.perf_counter() - t0, app=self.name,
                                      graph=self.graph.name))
            eng.cache_key = key
            steps_s["store"] = time.perf_counter() - t1
        eng.prep_steps = steps_s  # the report's tuning, throttling, correction, store
        return _keep_resident((key, id(pair)) if key else None,
                              (wl, plan, perm, secs, eng, source, tuning))

    def _resident(self, key: tuple, t0: float):
        """:meth:`prepare`'s answer kept by a resident process for ``key`` (the cache key
        and the device pair's identity: a pair opened with other launch settings is
        another; the engine's buffers still on the devices), or None."""
        from . import resident
        store = resident.current()
        held = store.get("prepared", key) if store is not None else None
        if held is not None:
            eng, held[1].seconds = held[4], 0.0  # nothing partitioned or set up this time
            eng.cache_seconds, eng.setup_seconds = time.perf_counter() - t0, 0.0
            eng.prep_steps, eng.cache_hit, eng.resident_hit = {}, True, True
        return held

    def _cache_parts(self, pair: DevicePair, throttle: ThrottleOptions, how: dict) -> dict:
        """What a prepared-graph cache entry is keyed by (besides FinePar's code and the
        input's content, :meth:`PrepCache.key`): the input's shape, the app, the platform
        and every option of the preparation."""
        from dataclasses import asdict
        model = how["model"]
        model_id = (model if model is None or isinstance(model, str)
                    else getattr(model, "name", type(model).__name__))
        devs = {r: {k: v for k, v in pair.selection.to_dict()[r].items()
                    if k in ("platform", "name", "vendor", "version", "driver", "address",
                             "global_mem_bytes", "max_alloc_bytes", "cache_bytes")}
                for r in ("cpu", "gpu")}
        shape = {"n": self.graph.n, "nnz": self.graph.nnz, "pattern": self.graph.pattern}
        return {"input": shape, "app": self.name, "devices": devs,
                "steps": how.get("steps"),
                "emulated": pair.emulated, "memory": pair.mode,
                "throttle": asdict(throttle), "model": model_id,
                "options": asdict(how["options"]) if how["options"] is not None else None,
                **{k: how[k] for k in ("threshold", "devices", "grouping", "step")}}

    def _restore(self, entry, pair: DevicePair, options: EngineOptions | None):
        """:meth:`prepare`'s answer from a cache entry: the plan (rebuilt from its T_f and
        grouping), the relabelling, the cache-fit partitions and the split-join cover as
        stored; only the engine is built anew."""
        m, arrays = entry.meta, entry.arrays
        perm = arrays.get("perm")
        wl = self.remapped(perm, m["remap_seconds"]) if perm is not None else self
        plan = Plan.from_arrays(_prefixed(arrays, "plan_"), m["plan"])
        if m.get("throttle"):
            plan.throttle = _throttle_of(entry)
        plan.throttle_auto = m.get("throttle_auto")
        parts = plan.throttle.partitioning if plan.throttle is not None else None
        lowerings = {role: ShareLowering.from_arrays(_prefixed(arrays, f"low_{role}_"), sc,
                                                     parts if role == "gpu" else None)
                     for role, sc in m["lowerings"].items()}
        eng = wl.engine(pair, plan, options, lowerings)
        eng.cache_key, eng.cache_hit = entry.key, True
        if m.get("sj_cover") is not None and hasattr(eng.executor, "use_cover"):
            eng.executor.use_cover(eng, m["sj_cover"])
        return wl, plan, perm, m["remap_seconds"], eng, m["source"], m["tuning"]

    def _cache_after_run(self, cache: PrepCache, eng: Engine) -> dict:
        """After a run: store the split-join cover the run measured (the next run starts
        from it); the cache's part of the report."""
        cover = getattr(eng.executor, "cover", None)
        key = getattr(eng, "cache_key", None)
        if key is not None and cover is not None and not getattr(eng.executor, "given", False):
            cache.update_meta(key, sj_cover=[int(v) for v in cover])
        return {"dir": str(cache.dir), "key": key, "hit": getattr(eng, "cache_hit", False),
                "resident": getattr(eng, "resident_hit", False), "events": list(cache.events)}

    def _correction(self, eng: Engine, wl: "Workload", pair: DevicePair, tuning: dict,
                    how: dict, steps: float = 1.0):
        """One measured step of a tuned split against the tuner's prediction: where one
        device's time is off by more than the other's (:func:`finepar.tuner.measured_scale`),
        tune again with both corrected. Returns ``(plan, tuning)`` when the split changes
        and the run's ``steps`` save more with it than building its engine again costs
        (the first engine's set-up), else None (``tuning['correction']`` records the check
        and the weighing either way)."""
        from .tuner import measured_scale
        t0 = time.perf_counter()
        pair.settle()  # no build competes with the measured step for the host's cores
        wl.app.profile_step(eng)
        eng.drain()
        measured = {r: float(v) for r, v in eng.records[-1].kernel.items()}
        eng.reset_records()
        scale = measured_scale(tuning["predicted"], measured)
        check = {"measured": measured, "scale": scale, "seconds": 0.0}
        tuning["correction"] = check
        if scale is None:
            check["seconds"] = time.perf_counter() - t0
            return None
        plan, _, again = self.choose_plan(pair, **how, scale=scale)
        check["seconds"] = time.perf_counter() - t0
        if again["threshold"] == tuning["threshold"] and again["grouping"] == tuning["grouping"]:
            return None
        p = tuning["predicted"]
        both = sum(measured.values()) if pair.emulated else max(measured.values())
        now = both + p.get("t_corun", 0.0) + p.get("t_transfer", 0.0)
        saving = steps * max(now - again["predicted"]["t"], 0.0)
        cost = eng.setup_seconds  # what building the corrected split's engine costs again
        check["rebuild"] = {"threshold": again["threshold"], "grouping": again["grouping"],
                            "saving_seconds": saving, "cost_seconds": cost,
                            "steps": float(steps), "done": saving > cost}
        if saving <= cost:  # a short run: the measured split stays
            return None
        again["correction"] = dict(check, threshold_before=tuning["threshold"],
                                   grouping_before=tuning["grouping"])
        return plan, again

    def throttled(self, pair: DevicePair, plan: Plan, throttle: ThrottleOptions,
                  steps: float = 1.0, tuning: dict | None = None):
        """The workload and plan a run uses under ``throttle``: relabelled vertices (above
        the engine, throttling-atc18 §4.2) and the GPU share's cache-fit partitions.
        ``steps`` (the run's expected row operations) and the tuner's predicted GPU step
        (``tuning``) weigh ``schedule='auto'``'s partitioning against its saving.

        Returns
        -------
        (Workload, Plan, ndarray or None, float)
            The workload (this one, or a relabelled copy), the plan (with
            ``plan.throttle`` set where throttled), the permutation (None: no
            relabelling) and the relabelling's seconds.
        """
        cache = pair.gpu.info.cache_bytes
        if "gpu" not in plan.active_roles() or plan.throttle is not None:
            return self, plan, None, 0.0
        t_gpu = ((tuning or {}).get("predicted") or {}).get("t_gpu")
        how = {"steps": steps, "step_seconds": t_gpu, "decision": {},
               "counter": device_counter(pair)}
        if throttle.remap == "none":
            plan.throttle = throttle_share(self.matrix, plan.shares["gpu"].rows, throttle, cache,
                                           **how)
            plan.throttle_auto = how["decision"] or None
            return self, plan, None, 0.0
        mat, rows = self.matrix, plan.shares["gpu"].rows
        if mat.n != self.graph.n:  # a stacked matrix (HITS): row r is vertex r mod n
            mat, rows = self.graph, np.unique(rows % self.graph.n)
        perm, secs = remap_permutation(mat, rows, throttle, cache)
        wl = self.remapped(perm, secs)
        plan2 = (plan_for(wl.matrix, threshold=plan.threshold, devices="both",
                          grouping=plan.grouping) if plan.method == "fine"
                 else plan_for(wl.matrix, threshold=None, devices=plan.active_roles()[0],
                               grouping=plan.grouping))
        plan2.throttle = throttle_share(wl.matrix, plan2.shares["gpu"].rows, throttle, cache,
                                        **how)
        plan2.throttle_auto = how["decision"] or None
        if plan2.throttle is not None:
            plan2.throttle.remap, plan2.throttle.remap_seconds = throttle.remap, secs
        return wl, plan2, perm, secs

    def _execute(self, eng: Engine, params: dict, warmup: bool, load_seconds: float,
                 source: str, tuning: dict | None):
        """Warm up, run (timed), collect; the report."""
        plan = eng.plan
        t0 = time.perf_counter()
        if warmup:
            self.app.warmup(eng, self.graph, **params)
        eng.pair.settle()  # builds started ahead and still running: not during the run
        warm = time.perf_counter() - t0
        eng.reset_records()
        t0 = time.perf_counter()
        result = self.app.run(eng, self.graph, **params)
        wall = time.perf_counter() - t0  # the run, its results still on the devices
        syncs = eng.host_syncs  # the run's own, before collect reads the results
        t0 = time.perf_counter()
        result = self.app.collect(eng, self.graph, result)
        collect = time.perf_counter() - t0
        report = self._report(eng.pair, plan, eng, result, wall, warm, load_seconds, source,
                              tuning)
        report.timings["collect"] = collect
        report.timings["host_syncs"] = syncs
        if tuning is not None:
            steps = max(report.timings["corun_steps"], 1)
            tuning["measured"] = {"t_cpu": report.timings["kernel"]["cpu"] / steps,
                                  "t_gpu": report.timings["kernel"]["gpu"] / steps,
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


def open_cache(cache: Any) -> PrepCache | None:
    """The prepared-graph cache a ``cache=`` keyword names: True (the user's cache
    directory, unless ``$FINEPAR_NO_CACHE`` is set), False or None (none), a path, or a
    :class:`~finepar.prepcache.PrepCache`."""
    import os
    if cache is True:
        return None if os.environ.get("FINEPAR_NO_CACHE") else PrepCache()
    if cache is False or cache is None or isinstance(cache, PrepCache):
        return cache or None
    return PrepCache(cache)


def _keep_resident(key: tuple | None, prepared: tuple) -> tuple:
    """``prepared`` (:meth:`Workload.prepare`'s answer), kept under ``key`` (its cache key
    and its pair's identity) by a resident process."""
    from . import resident
    store = resident.current()
    if store is not None and key is not None:
        prepared[4].resident_hit = False
        store.put("prepared", key, prepared)
    return prepared


def _prefixed(arrays: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


def _entry_of(plan: Plan, eng: Engine, devices: str, source: str, tuning: dict | None,
              perm: np.ndarray | None, remap_seconds: float, seconds: float, **labels: str):
    """``(meta, arrays)`` of a cache entry for a prepared run: the plan, each share's
    lowering (what the engine built; not an ELL share's), the relabelling and the
    partitions (``labels``: the app and graph names ``finepar cache list`` shows)."""
    plan_arrays, plan_scalars = plan.to_arrays()
    meta = {**labels, "threshold": plan.threshold, "grouping": plan.grouping, "devices": devices,
            "source": source, "tuning": tuning, "remap_seconds": remap_seconds,
            "prepare_seconds": seconds, "throttle": None, "sj_cover": None,
            "throttle_auto": plan.throttle_auto, "plan": plan_scalars, "lowerings": {}}
    arrays = {f"plan_{k}": v for k, v in plan_arrays.items()}
    if perm is not None:
        arrays["perm"] = perm
    for role, store in eng.stores.items():
        flat = None if plan.method == "dynamic" else store.low.to_arrays()
        if flat is not None:
            arrays.update({f"low_{role}_{k}": v for k, v in flat[0].items()})
            meta["lowerings"][role] = flat[1]
    spec = plan.throttle
    if spec is not None:
        part_arrays, part_scalars = spec.partitioning.to_arrays()
        arrays.update({f"part_{k}": v for k, v in part_arrays.items()})
        meta["throttle"] = {"schedule": spec.schedule, "cache_bytes": spec.cache_bytes,
                            "capacity": spec.capacity, "seconds": spec.seconds,
                            "remap": spec.remap, "remap_seconds": spec.remap_seconds,
                            "partitioning": part_scalars}
    return meta, arrays


def _throttle_of(entry) -> "ThrottleSpec":
    """The throttled share a cache entry stored."""
    from .throttle.dbwp import Partitioning
    from .throttle.plan import ThrottleSpec
    t = entry.meta["throttle"]
    part = Partitioning.from_arrays({k[5:]: v for k, v in entry.arrays.items()
                                     if k.startswith("part_")}, t["partitioning"])
    return ThrottleSpec(schedule=t["schedule"], partitioning=part, cache_bytes=t["cache_bytes"],
                        capacity=t["capacity"], seconds=t["seconds"], remap=t["remap"],
                        remap_seconds=t["remap_seconds"])


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
        partitions, the relabelling and the split-join cover.
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
    wl = graph if isinstance(graph, Workload) else _workload(app, graph)
    if wl.name != app:
        raise FineParError(f"workload is for {wl.name}, not {app}")
    keys = ("schedule", "bisect", "remap", "cache_bytes")
    if any(k in kw for k in keys):
        kw["throttle"] = ThrottleOptions(**{k: kw.pop(k) for k in keys if k in kw})
    return wl.run(**kw)


def _workload(app: str, graph: Any) -> Workload:
    """``Workload(app, graph)``; in a resident process the one made before for this graph
    object and app (its matrix built once)."""
    from . import resident
    store = resident.current()
    if store is None:
        return Workload(app, graph)
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


def load_graph(spec: str, *, drop_zeros: bool = False, check_size=None,
               memory_limit: int | None = None, cache=None) -> Graph:
    """A graph from a file path or a generator spec.

    Parameters
    ----------
    spec : str
        A path (Matrix Market ``.mtx``/``.mtx.gz``; SNAP / KONECT edge lists
        ``.txt``, ``.tsv``, ``.edges``, ``.el``, ``out.NAME``, optionally
        ``.gz``, with weights in a third column; networkx ``.edgelist``; METIS
        ``.graph``; SuiteSparse ``.mat``; scipy ``.npz``), or
        ``graph500:SCALE[:SEED]`` for a Graph500 Kronecker graph (edgefactor
        16, A=0.57, B=C=0.19, D=0.05, undirected).
    check_size : callable, optional
        ``check_size(n, nnz)``, called as soon as the sizes are known and before
        any large array is built (see :func:`memory_check`).
    memory_limit : int, optional
        Host bytes the load may use (default: what the OS says is available).
    cache : PrepCache or False, optional
        Where what earlier loads learnt of an unchanged file is kept
        (:class:`~finepar.prepcache.FileFacts` under its root): a ``.npz`` whose rows were
        found sorted is not scanned again. A generated Graph500 graph of at most an
        eighth of the cache's cap is kept there too and read back by the next run
        (:meth:`~finepar.prepcache.PrepCache.generated`). None or False: nothing is
        remembered.

    In a resident process (:mod:`finepar.resident`) the graph read before from the
    unchanged file (or generated from the same spec) is returned.

    Raises
    ------
    InputError
        Bad file or spec.
    """
    from . import resident
    if resident.current() is not None:  # the graph read before, while its file is unchanged
        generated = spec.startswith("graph500:")
        key = ("spec", spec) if generated else resident.file_key(spec, drop_zeros, memory_limit)
        path = spec if generated else os.path.abspath(spec)  # the source a later client,
        try:  # in another folder, reads right
            g = resident.kept("graph", key, lambda: _load_graph(
                path, drop_zeros=drop_zeros, check_size=check_size,
                memory_limit=memory_limit, cache=cache))
        except InputError as exc:  # named as the user typed it, as without a server
            if exc.path != path:
                raise
            raise InputError(spec, exc.problem) from None
        if check_size is not None:
            check_size(g.n, g.nnz)
        return g
    return _load_graph(spec, drop_zeros=drop_zeros, check_size=check_size,
                       memory_limit=memory_limit, cache=cache)


def _load_graph(spec: str, *, drop_zeros: bool, check_size, memory_limit, cache) -> Graph:
    from .errors import InputError
    from .io import load
    if spec.startswith("graph500:"):
        from .io.graph500 import kronecker, parse_spec
        try:
            scale, seed = parse_spec(spec)
            if check_size is not None:
                check_size(1 << scale, 32 << scale)  # the edges before duplicates go
            if not cache:
                return kronecker(scale, seed=seed)
            return cache.generated(f"graph500-s{scale}-ef16-seed{seed}",
                                   lambda: kronecker(scale, seed=seed))
        except ValueError as exc:
            raise InputError(spec, str(exc)) from None
    facts = None
    if cache and os.path.isfile(spec):
        from .prepcache import FileFacts
        facts = FileFacts(spec, cache.root)
    return load(spec, drop_zeros=drop_zeros, check_size=check_size, memory_limit=memory_limit,
                facts=facts)


def unused_throttle(throttle: ThrottleOptions, why: str) -> None:
    """Refuse a schedule or relabelling the user asked for (not ``auto`` / ``none``) that
    cannot take effect, because the GPU runs no rows.

    Raises
    ------
    UsageError
        One line naming the option and ``why``.
    """
    asked = [f"--{name} {value}" for name, value, idle in (
        ("schedule", throttle.schedule, ("auto", "none")), ("remap", throttle.remap, ("none",)))
        if value not in idle]
    if asked:
        raise UsageError(f"{' and '.join(asked)}: cannot take effect: {why}")


#: A declared size refused unless asked for (``--allow-isolated``): more vertices than
#: this, and more than ISOLATED_RATIO vertices for each stored entry (nearly all of them
#: isolated; most likely a mistyped size line).
ISOLATED_MIN_VERTICES = 10_000_000
ISOLATED_RATIO = 1000


def memory_check(app_name: str, pair, options: EngineOptions | None = None,
                 allow_isolated: bool = False):
    """A ``check_size(n, nnz)`` for :func:`load_graph`: refuse, before the graph is built,
    a graph whose per-vertex state alone does not fit the devices' memory, and (unless
    ``allow_isolated``) one that declares more than :data:`ISOLATED_MIN_VERTICES`
    vertices and more than :data:`ISOLATED_RATIO` of them per stored entry: a 93-byte
    Matrix Market file declaring 200,000,000 vertices and 3 entries would otherwise run
    PageRank over 200 M isolated vertices and write an 800 MB answer.

    ``pair`` is a :class:`~finepar.runtime.DevicePair`, an :class:`OpeningPair` or a
    :class:`~finepar.runtime.Selection`: only the chosen devices are needed, not their
    contexts.

    Every device that runs a share keeps the app's full-length vectors
    (:meth:`finepar.apps.base.App.state_bytes`); the rows themselves can be cut
    into chunks and streamed, the vectors cannot.

    Raises
    ------
    UsageError
        One line naming the need, the limit and the option that sets it.
    """
    app = apps.get(app_name)
    options = options or EngineOptions()
    sel = getattr(pair, "selection", pair)

    def check(n: int, nnz: int) -> None:
        if not allow_isolated and n > ISOLATED_MIN_VERTICES and n > ISOLATED_RATIO * nnz:
            raise UsageError(
                f"the input declares {n:,} vertices for {nnz:,} stored entries (more than "
                f"{ISOLATED_RATIO:,} vertices an entry: nearly all isolated); "
                f"--allow-isolated runs it anyway")
        need = app.state_bytes(n)
        for role in ("gpu", "cpu"):
            info = getattr(sel, role)
            limit = options.limit_of(role, info, sel.host_memory(role))
            if need > limit:
                raise UsageError(
                    f"{app.name} on {n:,} vertices needs {human_bytes(need)} of vectors on "
                    f"the {role} ({info.name}) but it may use {human_bytes(limit)} "
                    f"(--{role}-memory)")
    return check
