"""What a run decides before its first step (FinePar TKDE §3.4, §4.2; DESIGN.md §3,
"split"): the devices, the plan, the GPU share's throttling and the measured correction
of a tuned split. :class:`finepar.api.Workload` calls these in that order
(:func:`finepar.prepare.prepare`)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..engine import Engine, EngineOptions
from ..errors import FineParError, UsageError
from ..graph import Graph
from ..partition import GROUPINGS, Plan, fine_grained, single_device
from ..device import DevicePair
from ..throttle.plan import ThrottleOptions, device_counter, remap_permutation, throttle_share
from ..workload import Workload


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


def plan_for(matrix: Graph, *, threshold: int | None, devices: str, grouping: str) -> Plan:
    """The plan for a run: one device alone, or a fine split at ``threshold``."""
    if devices not in DEVICES_CHOICES:
        raise FineParError(f"--devices must be one of {', '.join(DEVICES_CHOICES)}, "
                           f"not {devices!r}")
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


def choose_plan(work: Workload, pair: DevicePair, *, threshold: int | None, devices: str,
                grouping: str, model: Any, step: int, calibrate: Any, scale: Any = None,
                options: EngineOptions | None = None, params: dict | None = None):
    """The plan of a run: one device, a given T_f, or the tuner's; returns
    ``(plan, source, tuning)``. ``devices='auto'`` is decided by :func:`auto_devices`;
    where it leaves the pair's two devices, the tuner's split is weighed against each
    device alone by the predicted (for a small frontier app, measured) time to answer
    (:func:`finepar.split.answer.whole_run`, measured runs with the run's ``params``),
    recorded as ``tuning['choice']``."""
    asked = devices
    devices, why = auto_devices(devices, pair, threshold)
    if why is not None:  # one work-item a row: length groups only add launches on a
        # CPU (PageRank at Graph500 scale 16, 2-core EPYC: 6.5 ms an iteration, 6.8 pow4)
        return plan_for(work.matrix, threshold=None, devices=devices,
                        grouping="none" if grouping == "auto" else grouping), why, None
    if devices in ("cpu", "gpu"):
        if grouping == "auto":  # the model's fastest for the device alone
            from .tuner import alone_grouping
            grouping = alone_grouping(work, pair, devices, model=model)[0]
        return plan_for(work.matrix, threshold=None, devices=devices,
                        grouping=grouping), "single-device", None
    if threshold is not None:
        return plan_for(work.matrix, threshold=threshold, devices=devices,
                        grouping=grouping), "flag", None
    from .tuner import tune
    tr = tune(work, pair, model=model, step=step, grouping=grouping, calibrate=calibrate,
              options=options, scale=scale)
    tuning = tr.to_dict()
    if asked != "auto":  # --devices both: the split the user asked for
        return (plan_for(work.matrix, threshold=tr.threshold, devices=devices,
                         grouping=tr.grouping), "tuner", tuning)
    return chosen(work, pair, tuning, options, params)


def candidate_plan(work: Workload, tuning: dict, name: str, grouping: str) -> Plan:
    """A whole-run candidate's plan: ``cpu`` or ``gpu`` alone, or the tuner's ``split``."""
    if name == "split":
        return plan_for(work.matrix, threshold=tuning["threshold"], devices="both",
                        grouping=tuning["grouping"])
    return plan_for(work.matrix, threshold=None, devices=name, grouping=grouping)


def chosen(work: Workload, pair: DevicePair, tuning: dict, options=None,
           params: dict | None = None):
    """``(plan, source, tuning)`` of the whole-run choice after the tuner's ``tuning``
    (:func:`finepar.split.answer.whole_run`): the winner's plan, ``tuner`` for the split or
    ``time to answer`` for a device alone, and ``tuning['choice']`` saying what was
    weighed and why the winner won."""
    from .answer import whole_run
    choice = whole_run(work, pair, tuning,
                       lambda n, g: candidate_plan(work, tuning, n, g), options, params)
    tuning["choice"] = choice
    tuning["seconds"] = tuning.get("seconds", 0.0) + choice["seconds"]
    win = choice["winner"]
    plan = candidate_plan(work, tuning, win, choice["candidates"][win]["grouping"])
    return plan, ("tuner" if win == "split" else "time to answer"), tuning


def correction(work: Workload, eng: Engine, wl: Workload, pair: DevicePair, tuning: dict,
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
    alone = _alone_after_measure(work, eng, pair, tuning, measured, scale, steps)
    if alone is not None:
        check["seconds"] = time.perf_counter() - t0
        return alone
    if scale is None:
        check["seconds"] = time.perf_counter() - t0
        return None
    plan, _, again = choose_plan(work, pair, **how, scale=scale)
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


def _alone_after_measure(work: Workload, eng: Engine, pair: DevicePair, tuning: dict,
                         measured: dict, scale: dict | None, steps: float):
    """The whole-run choice (``tuning['choice']``) weighed again with the split's measured
    step (:func:`finepar.split.answer.remeasured`): ``(plan, tuning)`` of the device alone
    that now wins where the run's saving pays the engine's rebuild, else None."""
    choice = tuning.get("choice")
    if not choice or choice.get("by") == "measured":  # measured whole runs decided it
        return None
    from .answer import remeasured
    p = tuning["predicted"]
    both = sum(measured.values()) if pair.emulated else max(measured.values())
    now = both + p.get("t_corun", 0.0) + p.get("t_transfer", 0.0)
    again = remeasured(choice, now, scale, steps, p["t"])
    win = again["winner"]
    if win == "split":
        return None
    saving = again["candidates"]["split"]["seconds"] - again["candidates"][win]["seconds"]
    again["rebuild"] = {"saving_seconds": saving, "cost_seconds": eng.setup_seconds,
                        "done": saving > eng.setup_seconds}
    tuning["choice_corrected"] = again
    if saving <= eng.setup_seconds:
        return None
    tuning["choice"] = again
    return candidate_plan(work, tuning, win, again["candidates"][win]["grouping"]), tuning


def throttled(work: Workload, pair: DevicePair, plan: Plan, throttle: ThrottleOptions,
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
        return work, plan, None, 0.0
    t_gpu = ((tuning or {}).get("predicted") or {}).get("t_gpu")
    how = {"steps": steps, "step_seconds": t_gpu, "decision": {},
           "counter": device_counter(pair)}
    if throttle.remap == "none":
        plan.throttle = throttle_share(work.matrix, plan.shares["gpu"].rows, throttle, cache,
                                       **how)
        plan.throttle_auto = how["decision"] or None
        return work, plan, None, 0.0
    mat, rows = work.matrix, plan.shares["gpu"].rows
    if mat.n != work.graph.n:  # a stacked matrix (HITS): row r is vertex r mod n
        mat, rows = work.graph, np.unique(rows % work.graph.n)
    perm, secs = remap_permutation(mat, rows, throttle, cache)
    wl = work.remapped(perm, secs)
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
