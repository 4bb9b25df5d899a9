"""What a run does before its first step (DESIGN.md §3, "api"): with the prepared-graph
cache, an entry for the same input, devices and options (or the engine a resident process
kept) replaces the decisions; else the devices, the plan, the throttling and the
correction are decided (:mod:`finepar.split.choose`), the engine built and the decision
stored."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from .engine import Engine, EngineOptions
from .engine.launches import ShareLowering
from .partition import Plan
from .prepcache import InputDigest, PrepCache
from .device import DevicePair
from .split.choose import auto_devices, choose_plan, correction, throttled
from .throttle.plan import ThrottleOptions, ThrottleSpec
from .workload import Workload


def prepare(work: Workload, pair: DevicePair, *, throttle: ThrottleOptions,
            threshold: int | None, devices: str, grouping: str, model: Any, step: int,
            calibrate: Any, options: EngineOptions | None = None, cache: PrepCache | None = None,
            steps: float = 1.0, params: dict | None = None):
    """Everything :meth:`finepar.api.Workload.run` does before the app's first step:
    choose the plan (:func:`~finepar.split.choose.choose_plan`), throttle the GPU share
    (:func:`~finepar.split.choose.throttled`), build the engine and, for a tuned split on
    two devices, check it with one measured step (:func:`~finepar.split.choose.correction`),
    tuning and building again where one device's model was off.
    With a ``cache``, an entry for the same input, devices and options replaces all
    of that but the engine's build (:func:`restore`); a new decision is stored. With
    the run's ``params``, a tuned run of an app that keeps its work on one device
    (:meth:`~finepar.apps.base.App.one_device`: CC's Afforest) plans for that device, and
    a run asked for that device alone takes the same path (its programs built where first
    used, no row operation guessed ahead).

    Returns
    -------
    (Workload, Plan, ndarray or None, float, Engine, str, dict or None)
        The workload run (``work`` or a relabelled copy), its plan, the
        relabelling (None: none) and its seconds, the engine, where the plan
        came from (``single-device``, ``flag``, ``tuner``) and the tuning record.
    """
    alone = None
    if params is not None and threshold is None:  # the app's rule, where the devices allow
        want = work.app.one_device(pair, work.matrix, params, options)
        if devices in ("auto", "both") or devices == want:  # --devices gpu too: no row
            alone = want  # operations guessed and built that the run never uses (each warm
            # call waited 170-290 ms for one more guess on one H200, 2026-11-28)
    if alone:  # its row operations may never run: each is built where first used
        from dataclasses import replace
        options = replace(options or EngineOptions(), prebuild=False)
    decided = auto_devices(devices, pair, threshold)[0]

    def builds_ahead(fixed: bool = True, guesses: bool = True) -> None:
        """What the app builds whatever the plan (``fixed``) and the row operations' likely
        programs (``guesses``), built while it plans. Neither for an engine kept in memory
        (its programs are built, and guesses it waited for cost a served PageRank rerun
        1.96 s on the H100), no guesses for one restored from the cache (its lowerings
        name its programs)."""
        if params is None:
            return
        from .engine.frontier import early_build
        from .engine.memory import likely_programs
        from .engine.columns import programs as column_programs
        opts = options or EngineOptions()
        if fixed:
            early_build(pair, work.app.early_programs(pair, work.matrix, params, opts)
                        + (column_programs(pair, work.app.column_vectors)  # not for the
                           if opts.columns != "none" and decided != "cpu" and not alone  #
                           else []))  # app's rule: its small input keeps its numbering
        if guesses and not alone and decided != "cpu":  # one at a time, the row operations',
            # first those the GPU alone builds ahead (BFS's chained steps before its others):
            # the usual plan on a GPU machine, even where "both" were decided
            ahead = work.app.built_ahead(("gpu",)) or ()
            ops = sorted(work.app.ops, key=lambda op: op.name not in ahead)
            for _, sources, defines in likely_programs(pair, work.matrix, ops, opts.offsets,
                                                       opts.shuffles):
                pair.guess_build(pair.program, pair.gpu, sources, defines)
    out = _prepared(work, pair, throttle=throttle, threshold=threshold,
                    devices=alone or devices, grouping=grouping, model=model, step=step,
                    calibrate=calibrate, options=options, cache=cache, steps=steps,
                    builds_ahead=builds_ahead, params=params)
    if alone:  # the app keeps its work on one device: nothing was tuned
        out = (*out[:5], f"the app's one-device algorithm (on the {alone})", out[6])
    return out


def _prepared(work: Workload, pair: DevicePair, *, throttle: ThrottleOptions,
              threshold: int | None, devices: str, grouping: str, model: Any, step: int,
              calibrate: Any, options: EngineOptions | None, cache: PrepCache | None,
              steps: float, builds_ahead=lambda fixed=True, guesses=True: None,
              params: dict | None = None):
    """:func:`prepare` for the devices decided; ``builds_ahead(fixed, guesses)`` starts the
    builds a new engine will likely need: the fixed ones once no kept engine serves, the
    guessed ones once no cache entry does either (a warm PageRank call at Graph500 scale 20
    waited 145-170 ms for one more guessed variant each time on one H200, 2026-11-28)."""
    how = dict(threshold=threshold, devices=devices, grouping=grouping, model=model,
               step=step, calibrate=calibrate, options=options)
    started: set = set()

    def ahead(*kinds: str) -> None:  # each kind of build started once
        todo = [k for k in kinds if k not in started]
        started.update(todo)
        if todo:
            builds_ahead(fixed="fixed" in todo, guesses="guesses" in todo)
    if cache is None:  # nothing to restore: the builds start at once
        ahead("fixed", "guesses")
    elif kept_engines(work.graph) is None:  # no kept engine: the fixed ones at once
        ahead("fixed")
    key = parts = content = None
    if cache is not None:
        t0 = time.perf_counter()
        parts = cache_parts(work, pair, throttle, {**how, "steps": steps})
        content = InputDigest(work.graph, cache.root, known=work.content_digest)
        if content.known or cache.holds(cache.prefix(parts)):
            key = cache.key(parts, content.value())
            held = _resident(work, (key, id(pair)), t0)
            if held is not None:
                return held
            ahead("fixed")
            entry = cache.get(key)
            if entry is not None:
                read = time.perf_counter() - t0  # the key and the entry's read
                out = restore(work, entry, pair, options)
                out[4].cache_seconds = read
                return _keep_resident(work, (key, id(pair)), out)
            ahead("guesses")
        else:  # no entry of this shape: hashed while the run is prepared
            cache.events.append("miss (no entry for an input of this shape)")
            content.start()
            ahead("fixed", "guesses")
    t0 = time.perf_counter()
    plan, source, tuning = choose_plan(work, pair, params=params, **how)
    steps_s = {"tune": time.perf_counter() - t0 - plan.seconds}
    t1 = time.perf_counter()
    wl, plan, perm, secs = throttled(work, pair, plan, throttle, steps, tuning)
    steps_s["throttle"] = time.perf_counter() - t1
    eng = wl.engine(pair, plan, options)
    if tuning is not None and len(plan.active_roles()) == 2:
        t1 = time.perf_counter()
        redo = correction(work, eng, wl, pair, tuning, how, steps)
        if redo is not None:  # the model was off on one device: the split tuned again
            plan, tuning = redo
            del eng
            wl, plan, perm, secs = throttled(work, pair, plan, throttle, steps, tuning)
            eng = wl.engine(pair, plan, options)
        steps_s["correct"] = time.perf_counter() - t1
    if cache is not None:
        t1 = time.perf_counter()
        key = key or cache.key(parts, content.value())
        cache.put(key, *_entry_of(plan, eng, devices, source, tuning, perm, secs,
                                  time.perf_counter() - t0, app=work.name,
                                  graph=work.graph.name))
        eng.cache_key = key
        steps_s["store"] = time.perf_counter() - t1
    eng.prep_steps = steps_s  # the report's tuning, throttling, correction, store
    return _keep_resident(work, (key, id(pair)) if key else None,
                          (wl, plan, perm, secs, eng, source, tuning))


#: Inputs of at most this many stored entries (Graph500 scale 18 and every real graph of
#: the suite; a CSR of at most 67 MB with fp32 values) keep their workload and prepared
#: engine (its buffers on the devices) in the thread that ran them, outside a resident
#: process: on such a graph the matrix, the engine's set-up, the entry's read and the
#: warm-up took most of a call (a repeated call 5-27 ms against a 0.2-2.7-ms run on one
#: H200 with the pair given, 2026-11-28).
KEEP_NNZ = 1 << 23
#: Prepared engines a thread keeps at most (the least recently used goes first).
KEEP_ENGINES = 4
_THREAD = threading.local()


def kept_engines(graph):
    """Where prepared engines (and workloads) for ``graph`` are kept: a resident process's
    store, else, for an input of at most :data:`KEEP_NNZ` entries, the calling thread's
    own (a thread never runs an engine another thread may be running); None: nowhere."""
    from .device import resident
    store = resident.current()
    if store is not None or graph.nnz > KEEP_NNZ:
        return store
    mine = getattr(_THREAD, "store", None)
    if mine is None:
        mine = _THREAD.store = resident.Resident(KEEP_ENGINES)
    return mine


def kept_workload(app: str, graph: Any, cache: PrepCache | None, make=Workload) -> Workload:
    """``make(app, graph)`` (a :class:`Workload`), or, for an input of at most
    :data:`KEEP_NNZ` entries with the prepared-graph cache on, the one this thread made
    before for the same content (:func:`~finepar.prepcache.input_digest`, taken once here
    for the cache's key too) and app: its matrix (a transpose, the symmetrised graph) is
    not built again (30-70 ms a call of CC or BFS on cnr-2000 on one H200's host,
    2026-11-28)."""
    from .workload import as_graph
    g = as_graph(graph)
    store = kept_engines(g) if cache is not None else None
    if store is None:
        return make(app, g)
    digest = InputDigest(g, cache.root).value()
    held = store.get("workload", (digest, app))
    if held is None:
        held = store.put("workload", (digest, app), make(app, g))
        held.content_digest = digest
    return held


def release_engines() -> int:
    """Drop the prepared engines the calling thread kept (:func:`kept_engines`), so their
    device buffers are freed once nothing else holds them. Returns how many."""
    mine = getattr(_THREAD, "store", None)
    _THREAD.store = None
    return mine.sizes()["prepared"] if mine is not None else 0


def _resident(work: Workload, key: tuple, t0: float):
    """:func:`prepare`'s answer kept for ``key`` (the cache key and the device pair's
    identity: a pair opened with other launch settings is another; the engine's buffers
    still on the devices) by a resident process or this thread (:func:`kept_engines`),
    or None."""
    store = kept_engines(work.graph)
    held = store.get("prepared", key) if store is not None else None
    if held is not None:
        eng, held[1].seconds = held[4], 0.0  # nothing partitioned or set up this time
        eng.cache_seconds, eng.setup_seconds = time.perf_counter() - t0, 0.0
        eng.prep_steps, eng.cache_hit, eng.resident_hit = {}, True, True
    return held


def cache_parts(work: Workload, pair: DevicePair, throttle: ThrottleOptions, how: dict) -> dict:
    """What a prepared-graph cache entry is keyed by (besides FinePar's code and the
    input's content, :meth:`~finepar.prepcache.PrepCache.key`): the input's shape, the app,
    the platform and every option of the preparation."""
    from dataclasses import asdict
    model = how["model"]
    model_id = (model if model is None or isinstance(model, str)
                else getattr(model, "name", type(model).__name__))
    devs = {r: {k: v for k, v in pair.selection.to_dict()[r].items()
                if k in ("platform", "name", "vendor", "version", "driver", "address",
                         "global_mem_bytes", "max_alloc_bytes", "cache_bytes")}
            for r in ("cpu", "gpu")}
    shape = {"n": work.graph.n, "nnz": work.graph.nnz, "pattern": work.graph.pattern}
    return {"input": shape, "app": work.name, "devices": devs,
            "steps": how.get("steps"),
            "emulated": pair.emulated, "memory": pair.mode,
            "throttle": asdict(throttle), "model": model_id,
            "options": asdict(how["options"]) if how["options"] is not None else None,
            **{k: how[k] for k in ("threshold", "devices", "grouping", "step")}}


def restore(work: Workload, entry, pair: DevicePair, options: EngineOptions | None):
    """:func:`prepare`'s answer from a cache entry: the plan (rebuilt from its T_f and
    grouping), the relabelling, the cache-fit partitions and the split-join cover as
    stored; only the engine is built anew."""
    m, arrays = entry.meta, entry.arrays
    perm = arrays.get("perm")
    wl = work.remapped(perm, m["remap_seconds"]) if perm is not None else work
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


def cache_after_run(cache: PrepCache, eng: Engine) -> dict:
    """After a run: store the split-join cover the run measured (the next run starts
    from it); the cache's part of the report."""
    cover = getattr(eng.executor, "cover", None)
    key = getattr(eng, "cache_key", None)
    if key is not None and cover is not None and not getattr(eng.executor, "given", False):
        cache.update_meta(key, sj_cover=[int(v) for v in cover])
    return {"dir": str(cache.dir), "key": key, "hit": getattr(eng, "cache_hit", False),
            "resident": getattr(eng, "resident_hit", False), "events": list(cache.events)}


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


def _keep_resident(work: Workload, key: tuple | None, prepared: tuple) -> tuple:
    """``prepared`` (:meth:`Workload.prepare`'s answer), kept under ``key`` (its cache key
    and its pair's identity) by a resident process or this thread (:func:`kept_engines`)."""
    store = kept_engines(work.graph)
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


def _throttle_of(entry) -> ThrottleSpec:
    """The throttled share a cache entry stored."""
    from .throttle.dbwp import Partitioning
    t = entry.meta["throttle"]
    part = Partitioning.from_arrays({k[5:]: v for k, v in entry.arrays.items()
                                     if k.startswith("part_")}, t["partitioning"])
    return ThrottleSpec(schedule=t["schedule"], partitioning=part, cache_bytes=t["cache_bytes"],
                        capacity=t["capacity"], seconds=t["seconds"], remap=t["remap"],
                        remap_seconds=t["remap_seconds"])
