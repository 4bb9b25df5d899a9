"""The benchmarks' timing harness: FinePar configurations run the way ``api.run`` runs
them, peers timed alike, statistics of the repeats, and every answer checked.

Protocol, for FinePar and peers alike: one warm-up run (FinePar's also compiles
its kernels and lets split-join schedules profile), then ``repeats`` timed runs;
every run's answer is checked against the reference before its time is kept,
and a wrong answer ends the measurement (no time is reported for it). Times are
reported as min / median / max.

A FinePar configuration goes through the public steps ``api.run`` takes
(:meth:`Workload.choose_plan`, :meth:`Workload.throttled`, :meth:`Workload.engine`,
then :meth:`Workload.run` on that engine), so the warm-up run is exactly an
``api.run`` and the repeats reuse its engine (the device's copy of the matrix)
as a program running an app several times would.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field, fields

import numpy as np


def stats(values) -> dict | None:
    """``{"min", "median", "max", "n", "values"}`` of a list of numbers (None if empty)."""
    v = [float(x) for x in values]
    if not v:
        return None
    return {"min": min(v), "median": float(np.median(v)), "max": max(v), "n": len(v),
            "values": v}


def median(rec: dict | None, key: str = "seconds") -> float | None:
    """The median of ``rec[key]`` when the record is correct, else None."""
    if not rec or not rec.get("correct") or not rec.get(key):
        return None
    return rec[key]["median"]


def app_params(app, g, overrides: dict | None = None) -> dict:
    """An app's parameters for ``g``: ``overrides``, the app's own choices (root, x) and
    every other parameter's documented default, as its reference is computed with."""
    params = app.check_params(g, dict(overrides or {}))
    for p in app.params:
        if params.get(p.name) is None and p.default is not None:
            params[p.name] = p.default
    return app.reference_params(g, params)


#: Parameters an app takes where its defaults refuse an input (SSSP on signed values: the
#: magnitudes as lengths).
FALLBACK_PARAMS = {"sssp": {"weights": "abs"}}


def params_with_fallback(app, g) -> dict:
    """:func:`app_params`, or with :data:`FALLBACK_PARAMS` where the app refuses ``g``
    with its defaults (SSSP on signed values: their magnitudes), saying nothing."""
    from finepar.errors import FineParError
    try:
        return app_params(app, g)
    except FineParError:
        return app_params(app, g, FALLBACK_PARAMS.get(app.name))


def app_params_or_fallback(app, g, res) -> dict:
    """:func:`app_params`; where the app refuses ``g`` with its defaults,
    :data:`FALLBACK_PARAMS` (``res.note`` says so). Other refusals are raised."""
    from finepar.errors import FineParError
    try:
        return app_params(app, g)
    except FineParError as exc:
        if app.name not in FALLBACK_PARAMS:
            raise
        over = FALLBACK_PARAMS[app.name]
        res.note(f"{app.name} on {g.name}: {over} (refused with its defaults: {exc})")
        return app_params(app, g, over)


def answer_problem(app, g, values, ref, params: dict, extra: dict | None = None,
                   iterations: int = 0) -> str:
    """'' if an answer is right, else the problem (one line).

    The app's own ``check`` decides (:class:`finepar.apps.base.App`); a BFS answer
    without parents (a peer that gives levels only) is compared level by level with
    the reference.
    """
    from finepar.apps.base import AppResult
    extra = dict(extra or {})
    if app.name == "bfs" and "parent" not in extra:
        lv, want = np.asarray(values, dtype=np.int64), np.asarray(ref, dtype=np.int64)
        bad = int(np.count_nonzero(lv != want)) if lv.shape == want.shape else lv.size
        return f"levels differ from the reference at {bad} vertices" if bad else ""
    try:
        return app.check(g, AppResult(values=np.asarray(values), iterations=iterations,
                                      extra=extra), ref, params)
    except Exception as exc:  # noqa: BLE001 - an answer the check cannot read is wrong
        return f"the check could not read the answer ({type(exc).__name__}: {exc})"


# ----------------------------------------------------------------------------- FinePar


@dataclass
class Config:
    """One FinePar configuration: what is forced beyond ``api.run``'s defaults.

    Attributes
    ----------
    label : str
    devices : {'both', 'cpu', 'gpu'}
    threshold : int or None
        ``T_f`` (None: the tuner's).
    grouping : {'auto', 'none', 'pow4', 'adaptive'}
    throttle : ThrottleOptions
    options : EngineOptions or None
    steps : float or None
        The row operations ``schedule='auto'`` weighs its partitioning against (None:
        the app's own estimate for the run's parameters, as ``api.run`` does).
    """

    label: str
    devices: str = "both"
    threshold: int | None = None
    grouping: str = "auto"
    throttle: object = None
    options: object = None
    steps: float | None = None

    def __post_init__(self):
        from finepar.throttle.plan import ThrottleOptions
        if self.throttle is None:
            self.throttle = ThrottleOptions()

    def forced(self) -> dict:
        """The settings that differ from ``api.run``'s defaults ({} for FinePar's default)."""
        from finepar.engine import EngineOptions
        from finepar.throttle.plan import ThrottleOptions
        out = {}
        if self.devices != "both":
            out["devices"] = self.devices
        if self.threshold is not None:
            out["threshold"] = int(self.threshold)
        if self.grouping != "auto":
            out["grouping"] = self.grouping
        if self.steps is not None:
            out["steps"] = float(self.steps)
        for src, default in ((self.throttle, ThrottleOptions()),
                             (self.options, EngineOptions())):
            if src is None:
                continue
            for f in fields(src):
                if getattr(src, f.name) != getattr(default, f.name):
                    out[f.name] = getattr(src, f.name)
        return out


def ran(rec: dict) -> dict:
    """What a FinePar run was, in a few fields: T_f, grouping, throttling, chunks, model."""
    plan, tuning = rec.get("plan") or {}, rec.get("tuning") or {}
    thr, mem = plan.get("throttle") or {}, plan.get("memory") or {}
    out = {"plan": plan.get("label"), "T_f": plan.get("threshold"),
           "grouping": plan.get("grouping"), "executor": plan.get("executor"),
           "schedule": thr.get("schedule", "none"), "bisect": thr.get("bisect"),
           "partitions": thr.get("partitions"), "remap": (rec.get("remap") or {}).get("kind"),
           "sj_cover": (thr.get("sj") or {}).get("cover"),
           "gpu_chunks": mem.get("gpu_chunks"), "cpu_chunks": mem.get("cpu_chunks"),
           "cpu_nnz": mem.get("cpu_nnz"), "gpu_streamed_nnz": mem.get("gpu_streamed_nnz"),
           "threshold_source": rec.get("threshold_source"),
           "model": tuning.get("model"), "model_exact": tuning.get("model_exact"),
           "model_file": tuning.get("model_path"),
           "calibration_s": tuning.get("calibration_seconds"),
           "iterations": rec.get("iterations")}
    if tuning and not tuning.get("model_exact"):
        out["model_note"] = tuning.get("message")  # nearest model, or profiled (no model)
    return out


def finepar_config(wl, pair, cfg: Config, params: dict, ref, *, repeats: int,
                   model=None, prepared: tuple | None = None) -> dict:
    """Measure one configuration of FinePar on workload ``wl``.

    Parameters
    ----------
    wl : finepar.api.Workload
    pair : DevicePair
    cfg : Config
    params : dict
        The app's parameters, as its reference was computed with.
    ref : object
        The reference answer.
    repeats : int
    model : str, optional
        The tuner's model (None: the one matching the devices).
    prepared : (Workload, Plan, ndarray or None, float), optional
        What :meth:`Workload.throttled` returns (the workload to run, its plan with
        its throttle spec, the relabelling and its seconds): the plan is not chosen
        again (the throttling benchmark shares one partitioning between schedules).

    Returns
    -------
    dict
        ``label``, ``config`` (what was forced), ``correct``, ``problem``, ``seconds``
        and ``per_iteration`` (:func:`stats`, None when wrong), ``iterations``,
        ``plan`` and ``timings`` (the RunReport's, every timed run), ``tuning``,
        ``ran`` (:func:`ran`), ``remap``, ``prepare`` seconds (for a plan chosen here,
        ``choose_plan_s`` is all of :meth:`Workload.prepare`: the plan, the
        throttling, the engine and the tuner's measured correction).
    """
    rec = {"label": cfg.label, "config": cfg.forced()}
    try:
        t0 = time.perf_counter()
        source, tuning, choose_s, eng = "given", None, 0.0, None
        if prepared is None:  # api.run's own steps, its measured correction included
            *prepared, eng, source, tuning = wl.prepare(
                pair, throttle=cfg.throttle.check(), threshold=cfg.threshold,
                devices=cfg.devices, grouping=cfg.grouping, model=model, step=64,
                calibrate=None, options=cfg.options,
                steps=cfg.steps or wl.app.row_steps(wl.graph, params), params=params)
            choose_s = time.perf_counter() - t0
        wl_run, plan, perm, remap_s = prepared
        rec.update(threshold_source=source, tuning=tuning,
                   remap={"kind": cfg.throttle.remap if perm is not None else "none",
                          "seconds": remap_s})
        rec.update(_measure_engine(wl, wl_run, pair, plan, perm, params, ref, repeats,
                                   cfg.options, eng))
        rec["prepare"] = {"choose_plan_s": choose_s, "remap_s": remap_s,
                          "partition_s": plan.throttle.seconds if plan.throttle else 0.0,
                          "engine_s": rec.pop("engine_s")}
    except Exception as exc:  # noqa: BLE001 - a failing configuration is reported, not fatal
        rec.update(correct=False, problem=f"{type(exc).__name__}: {str(exc)[:400]}")
    rec["ran"] = ran(rec)
    gc.collect()  # the engine's device buffers go before the next configuration
    return rec


def _measure_engine(wl, wl_run, pair, plan, perm, params, ref, repeats, options,
                    eng=None) -> dict:
    t0 = time.perf_counter()
    if eng is None:
        eng = wl_run.engine(pair, plan, options)
    engine_s = time.perf_counter() - t0
    app = wl.app
    run_params = app.permute_params(params, perm) if perm is not None else dict(params)
    runs, problem = [], ""
    for i in range(repeats + 1):
        res, rep = wl_run.run(engine=eng, warmup=(i == 0), **run_params)
        if perm is not None:
            res = app.unpermute(res, perm)
        problem = answer_problem(app, wl.graph, res.values, ref, params, res.extra,
                                 res.iterations)
        runs.append((res.iterations, rep))
        if problem:
            break
    del eng
    warm_it, warm = runs[0]
    timed = runs[1:]
    last = runs[-1][1]
    out = {"correct": not problem, "problem": problem, "engine_s": engine_s,
           "plan": last.plan, "result": last.result,
           "warmup": {"seconds": warm.timings["run"], "iterations": warm_it,
                      "timings": warm.timings},
           "iterations": [it for it, _ in timed],
           "seconds": None, "per_iteration": None, "timings": [], "throughput": None}
    if not problem:
        walls = [rep.timings["run"] for _, rep in timed]
        mid = timed[int(np.argsort(walls)[len(walls) // 2])][1]
        out.update(seconds=stats(walls),
                   per_iteration=stats([rep.timings["per_iteration"] for _, rep in timed]),
                   timings=[rep.timings for _, rep in timed], throughput=mid.throughput)
    return out


# ---------------------------------------------------------------------------- peers


@dataclass
class Answer:
    """One peer run: its answer (the app's ``values`` / ``extra`` form), iterations and
    seconds (a clock around the library call; the previous FinePar's own report)."""

    values: np.ndarray
    seconds: float
    iterations: int = 0
    extra: dict = field(default_factory=dict)
    detail: dict = field(default_factory=dict)


def peer_runs(system: str, fn, check, *, repeats: int, slow_s: float | None = None) -> dict:
    """Time a peer: ``fn()`` returns an :class:`Answer`; one warm-up call, then
    ``repeats`` timed calls (one when the warm-up took longer than ``slow_s`` seconds),
    each answer checked by ``check(answer) -> problem``.

    Returns
    -------
    dict
        ``system``, ``correct``, ``problem``, ``seconds`` and ``per_iteration``
        (:func:`stats`; None when wrong), ``iterations``, ``detail`` (the peer's own
        report, if any), ``warmup_s``.
    """
    rec = {"system": system, "correct": False, "problem": "", "seconds": None,
           "per_iteration": None, "iterations": []}
    answers = []
    try:
        warm = fn()
        rec["warmup_s"] = warm.seconds
        problem = check(warm)
        n = 1 if slow_s is not None and warm.seconds > slow_s else repeats
        rec["repeats"] = n
        for _ in range(n if not problem else 0):
            a = fn()
            problem = check(a)
            if problem:
                break
            answers.append(a)
    except Exception as exc:  # noqa: BLE001 - a failing peer is reported, not fatal
        problem = f"{type(exc).__name__}: {str(exc)[:400]}"
    rec.update(correct=not problem, problem=problem)
    if not problem and answers:
        rec.update(seconds=stats([a.seconds for a in answers]),
                   per_iteration=stats([a.seconds / max(a.iterations, 1) for a in answers]),
                   iterations=[a.iterations for a in answers], detail=answers[-1].detail)
    gc.collect()
    return rec


def peer_times(system: str, times: list, problem: str, iterations: int = 1,
               detail: dict | None = None) -> dict:
    """A peer record from times measured elsewhere (seconds per unit of each repeat) and
    the check of its answer."""
    rec = {"system": system, "correct": not problem, "problem": problem, "seconds": None,
           "per_iteration": None, "iterations": [iterations] * len(times),
           "detail": detail or {}}
    if not problem:
        rec.update(seconds=stats(times), per_iteration=stats([t / max(iterations, 1)
                                                               for t in times]))
    return rec


@dataclass
class Targets:
    """The targets a benchmark reports: each met, missed, or not measured, with numbers."""

    items: list = field(default_factory=list)

    def add(self, text: str, met: bool | None, detail: str) -> None:
        """``met`` None: not measured (``detail`` says why)."""
        self.items.append({"target": text, "met": met, "detail": detail})

    def ratio(self, text: str, value: float | None, bound: float, detail: str,
              missing: str, at_most: bool = False) -> None:
        """A target ``value >= bound`` (``<=`` with ``at_most``), or not measured."""
        if value is None or not np.isfinite(value):
            self.add(text, None, missing)
        else:
            self.add(text, bool(value <= bound if at_most else value >= bound), detail)

    def speedup(self, text: str, ours: tuple, theirs: tuple, bound: float,
                unit: str = "") -> None:
        """A target ``theirs / ours >= bound`` on two ``(label, seconds or None)``; the
        detail names both times (ms) and the ratio."""
        (a, x), (b, y) = ours, theirs
        ok = bool(x and y)
        self.ratio(text, y / x if ok else None, bound,
                   f"{a} {x * 1e3 if x else 0:.3f} ms vs {b} {y * 1e3 if y else 0:.3f} ms"
                   f"{unit}: {y / x if ok else 0:.2f}x",
                   f"no correct run of {a if not x else b}")
