"""Online threshold tuning (FinePar TKDE §3.4).

1. **Detection**: sample 0.1% of the rows and count nonzeros within n/8 of
   the diagonal: type 1 above ``T_diag = 0.8``, else type 2.
2. **Start**: the ``T_f`` at which the nnz ratio of the CPU and GPU shares
   matches the devices' peak ratio (the model's predicted throughput of each
   device on the whole matrix; without a model, a measured profile).
3. **Hill climbing**: step 64 on the predicted time
   ``max(t_cpu, t_gpu) + t_corun + t_transfer`` (``t_cpu + t_gpu`` on an emulated pair,
   whose two roles share one device's cores), where ``t = SW / throughput(AW, VW,
   log NW, log SW)`` from the platform's models, plus the measured fixed cost
   of the share's launches (an addition to the paper's model), and
   ``t_corun`` the measured extra cost of a step in which both devices run
   and ``t_transfer``, on a discrete pair, the halo exchange (a measured
   round plus bytes over bandwidth); stop at a local optimum. The two ends
   (T_f = 0, every non-empty row on the CPU; T_f = the longest row, every row on the
   GPU) are scored as well and win if predicted faster: on a pair as
   unequal as a discrete GPU and a CPU, the best split may be none.

Each evaluation costs O(log n) after one sort of the row lengths
(:class:`~finepar.features.RowStats`), so tuning is a small part of the
preprocessing; its time is reported as overhead.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..features import RowStats, detect_type
from ..partition import GROUPINGS
from .calibrate import choose_model
from .perfmodel import ModelMatch, PlatformModel

DEFAULT_STEP = 64


def initial_threshold(stats: RowStats, cpu_to_gpu: float) -> int:
    """Smallest ``T_f`` whose CPU share (rows with nnz > T_f) holds at most the
    fraction ``r / (1 + r)`` of the nonzeros, ``r = cpu_to_gpu`` (§3.4).

    The CPU share's nnz only falls as ``T_f`` grows, so this is a bisection
    over ``[0, longest row]``: O(log(longest) log n), no pass over the rows.

    Returns
    -------
    int
        ``T_f >= 0``.
    """
    if stats.n == 0 or stats.nnz == 0:
        return 0
    return _cpu_share_at_most(stats, stats.nnz * cpu_to_gpu / (1.0 + cpu_to_gpu))


def _cpu_share_at_most(stats: RowStats, nnz: float) -> int:
    """Smallest ``T_f`` whose CPU share (rows with nnz > T_f) holds at most ``nnz``
    nonzeros; the share only shrinks as ``T_f`` grows and is empty at the longest row."""
    lo, hi = 0, stats.max_length()
    while lo < hi:
        mid = (lo + hi) // 2
        if stats.nnz - stats.nnz_below(mid) <= nnz:
            hi = mid
        else:
            lo = mid + 1
    return int(lo)


def feasible_range(stats: RowStats, pair, budgets: dict | None = None) -> tuple[int, int]:
    """``[lo, hi]``: the ``T_f`` whose CPU share fits the CPU's memory.

    Shares larger than one allocation are cut into chunks (§4.3), and a GPU
    share larger than the GPU's memory streams, so only the CPU share is
    bounded: by ``budgets['cpu']`` bytes (4 bytes a nonzero of column indices,
    plus 4 of values where the app reads them is left to the engine's check).
    Without a budget this is ``[0, longest row]``.
    """
    longest = stats.max_length()
    cap = (budgets or {}).get("cpu")
    lo = 0 if cap is None else _cpu_share_at_most(stats, cap // 4)
    return int(min(lo, longest)), int(longest)


def halo_estimate(stats: RowStats, threshold: int) -> float:
    """Expected halo entries per iteration for a fine split at ``threshold``.

    Each vertex of one share is read by the other share's nonzeros with
    probability ``1 - exp(-SW_other / n)`` (columns spread evenly), so the
    halo is ``NW_cpu (1 - e^{-SW_gpu/n}) + NW_gpu (1 - e^{-SW_cpu/n})``.
    """
    n = max(stats.n, 1)
    g, c = stats.share(threshold, "gpu"), stats.share(threshold, "cpu")
    return c.NW * -math.expm1(-g.SW / n) + g.NW * -math.expm1(-c.SW / n)


@dataclass
class TuneResult:
    """What the tuner chose and why.

    Attributes
    ----------
    threshold : int
        The chosen ``T_f``.
    initial : int
        The starting ``T_f``.
    matrix_type : int
    diagonal_fraction : float
        On the sampled rows.
    model : str or None
        Platform model used (None: profiled throughputs).
    model_exact : bool
    message : str
    trajectory : list of dict
        Every ``T_f`` evaluated, in order, with ``t_cpu``, ``t_gpu``,
        ``t_transfer``, ``t`` (predicted seconds per iteration).
    predicted : dict
        The prediction at ``threshold``.
    seconds : float
        Tuning time (detection, model lookup, profiling, search), calibration
        excluded.
    grouping : {'none', 'pow4'}
        The plan grouping the threshold is for (chosen by the tuner when asked
        for ``auto``).
    model_path : str or None
        The model's file (None: profiled throughputs, or a model never saved).
    model_origin : {'path', 'env', 'user', 'shipped'} or None
        Where the model was found (:func:`finepar.perfmodel.model_sources`).
    calibration_seconds : float
        Seconds this call spent calibrating a model for the devices (0: none).
    ends : dict
        ``{'cpu': T_f, 'gpu': T_f}``: the thresholds at which one device holds every row
        it can (the CPU: every non-empty row, at 0 unless its memory budget forbids; the
        GPU: every row, at the longest row), scored in ``trajectory``.
    """

    threshold: int
    initial: int
    matrix_type: int
    diagonal_fraction: float
    model: str | None
    model_exact: bool
    message: str
    trajectory: list = field(default_factory=list)
    predicted: dict = field(default_factory=dict)
    seconds: float = 0.0
    grouping: str = "pow4"
    model_path: str | None = None
    model_origin: str | None = None
    calibration_seconds: float = 0.0
    ends: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"threshold": self.threshold, "initial": self.initial,
                "matrix_type": self.matrix_type, "diagonal_fraction": self.diagonal_fraction,
                "model": self.model, "model_exact": self.model_exact, "message": self.message,
                "model_path": self.model_path, "model_origin": self.model_origin,
                "calibration_seconds": self.calibration_seconds,
                "trajectory": self.trajectory, "predicted": self.predicted,
                "seconds": self.seconds, "grouping": self.grouping, "ends": dict(self.ends),
                "summary": self.summary()}

    def summary(self) -> str:
        p = self.predicted
        return (f"T_f {self.initial} -> {self.threshold} in {len(self.trajectory)} evaluations "
                f"({self.seconds * 1e3:.1f} ms; type {self.matrix_type}; groups "
                f"{self.grouping}; "
                f"model {self._model_text()}); predicted cpu {p.get('t_cpu', 0) * 1e3:.3f} "
                f"ms, gpu {p.get('t_gpu', 0) * 1e3:.3f} ms, co-run "
                f"{p.get('t_corun', 0) * 1e3:.3f} ms, transfer "
                f"{p.get('t_transfer', 0) * 1e3:.3f} ms per iteration"
                + (f"; the gpu streams {p['streamed_nnz']:,} nnz "
                   f"({p['t_stream'] * 1e3:.3f} ms of uploads, overlapped)"
                   if p.get("streamed_nnz") else ""))

    def _model_text(self) -> str:
        """``NAME (FILE, ORIGIN[, calibrated in N s])`` or ``profiled``."""
        if self.model is None:
            return "profiled"
        where = [self.model_path or "not saved", self.model_origin or "in memory"]
        if self.calibration_seconds:
            where.append(f"calibrated in {self.calibration_seconds:.0f} s")
        return f"{self.model} ({', '.join(where)})"


#: Seconds one GPU work-item takes an entry of a row it walks alone (grouping ``none``: a
#: work-item a row), a floor under a share's predicted time: its longest row's walk. A
#: model fitted on the share's mean and variance alone can miss it: at Graph500 scale 18
#: (longest row 25,328 entries) the H200 model predicted 0.27 ms a product, and the product
#: took 0.79 ms, 31 ns an entry (one H200, 2026-11-28, benchmarks/runs/h200-2026-11-28p).
ITEM_ENTRY_S = 31e-9


class Predictor:
    """Predicted per-iteration times of a fine split, from a platform model or
    from measured constant throughputs.

    Parameters
    ----------
    stats : RowStats
    matrix_type : int
    model : PlatformModel, optional
    throughput : dict, optional
        ``{'cpu': nnz/s, 'gpu': nnz/s}`` measured by profiling (used without a model).
    transfer : bool
        Add the halo transfer (split memory, app that exchanges).
    grouping : {'none', 'pow4'}
        The plan's grouping (selects the models trained for it).
    serial : bool
        Both roles are one physical device (an emulated pair): they share its
        cores, so a step takes ``t_cpu + t_gpu``, not the larger of the two.
    gpu_resident : int or None
        Nonzeros the GPU can keep resident (its memory budget over the bytes of a
        nonzero); the rest of its share streams from the host every step (§4.3).
    bytes_per_nnz : int
        Bytes a streamed nonzero moves (4 for indices, 8 with values).
    h2d_bandwidth : float or None
        Host-to-device bytes per second (default: the model's transfer bandwidth).
    scale : dict, optional
        ``{'cpu': r, 'gpu': r}``: each device's predicted share time multiplied by
        ``r``, a correction measured on this input (:func:`measured_scale`).
    """

    def __init__(self, stats: RowStats, matrix_type: int, *, model: PlatformModel | None = None,
                 throughput: dict | None = None, transfer: bool = False,
                 grouping: str = "none", serial: bool = False, gpu_resident: int | None = None,
                 bytes_per_nnz: int = 4, h2d_bandwidth: float | None = None,
                 scale: dict | None = None):
        self.scale = dict(scale or {})
        self.grouping = grouping
        self.serial = serial
        self.gpu_resident = gpu_resident
        self.bytes_per_nnz = bytes_per_nnz
        self.h2d = h2d_bandwidth or (model.transfer.bandwidth if model is not None
                                     and model.transfer is not None else 16e9)
        self.stats = stats
        self.matrix_type = matrix_type
        self.model = model
        self.throughput = throughput
        self.transfer = transfer and model is not None and model.transfer is not None

    def device_seconds(self, threshold: int, role: str) -> float:
        """Predicted seconds of ``role``'s share per step: its launches' fixed cost
        (when the model measured one) plus ``SW / throughput``; 0 for a share with
        no rows. A share of empty rows (the GPU's at ``T_f = 0`` when some rows
        have no nonzeros) still costs its launch."""
        f = self.stats.share(threshold, role)
        if f.NW == 0:
            return 0.0
        r = self.scale.get(role, 1.0)
        if self.model is not None:
            grouping = self.lowering(threshold, role)
            t = self.model.predict_seconds(f, self.matrix_type, role, grouping)
            if grouping == "none" and role == "gpu" and not self.serial:
                t = max(t, self.stats.longest(threshold, role) * ITEM_ENTRY_S)
            o = self.model.overhead.get(role)
            if o is not None:
                t += o.seconds(self.stats.launches(threshold, role, grouping))
            return r * t
        return r * f.SW / self.throughput[role]

    def lowering(self, threshold: int, role: str) -> str:
        """The grouping ``role``'s share really gets: an ELL share the engine would pad
        past :data:`~finepar.engine.launches.ELL_MAX_PADDING` becomes CSR-adaptive, and the
        CPU's share under ``ell`` is in length groups."""
        from ..engine.launches import ELL_MAX_PADDING
        if self.grouping != "ell":
            return self.grouping
        if role == "cpu":
            return "pow4"
        f = self.stats.share(threshold, role)
        padded = f.NW * self.stats.longest(threshold, role)
        return "ell" if padded <= ELL_MAX_PADDING * max(f.SW, 1) else "adaptive"

    def stream_seconds(self, threshold: int) -> tuple[int, float]:
        """Nonzeros of the GPU share beyond its resident capacity, and the seconds their
        upload takes each step (FinePar TKDE §4.3: bytes over the host-to-device
        bandwidth)."""
        if self.gpu_resident is None:
            return 0, 0.0
        streamed = max(self.stats.nnz_below(threshold) - self.gpu_resident, 0)
        return int(streamed), streamed * self.bytes_per_nnz / self.h2d

    def __call__(self, threshold: int) -> dict:
        t_cpu = self.device_seconds(threshold, "cpu")
        t_gpu = self.device_seconds(threshold, "gpu")
        streamed, t_up = self.stream_seconds(threshold)
        if t_up > 0:  # uploads overlap compute: the slower of the two sets the pace
            t_gpu = max(t_gpu, t_up)
        t_x = t_co = 0.0
        k = self.stats.cut(threshold)
        if 0 < k < self.stats.n:  # both devices have rows: both run each step
            if self.model is not None:
                t_co = self.model.corun_s  # the host waits on two queues
            if self.transfer:
                t_x = self.model.transfer.seconds(4.0 * halo_estimate(self.stats, threshold))
        both = t_cpu + t_gpu if self.serial else max(t_cpu, t_gpu)
        return {"T_f": int(threshold), "t_cpu": t_cpu, "t_gpu": t_gpu, "t_corun": t_co,
                "t_transfer": t_x, "t_stream": t_up, "streamed_nnz": streamed,
                "t": both + t_co + t_x}

    def peak_ratio(self) -> float:
        """CPU over GPU throughput on the whole matrix."""
        whole = self.stats.whole()
        if self.model is not None:
            c = self.model.device_model(self.matrix_type, "cpu", self.grouping).predict(whole)
            g = self.model.device_model(self.matrix_type, "gpu", self.grouping).predict(whole)
            return c / g
        return self.throughput["cpu"] / self.throughput["gpu"]


def one_device_unless_split_wins(predict, best: int, trajectory: list, lo: int,
                                 hi: int) -> tuple[int, float]:
    """The split ``best`` found by :func:`hill_climb`, or the better of the two ends
    (``lo``: every row on the CPU, ``hi``: every row on the GPU, scored and added to
    ``trajectory`` if not there yet) unless the split is predicted faster than it by
    :data:`CORUN_MARGIN`. Hill climbing stops on plateaus of the step function, so the
    ends are scored whatever it found.

    Returns
    -------
    (T_f, seconds)
        The threshold chosen and its predicted seconds per step.
    """
    t_best = predict(best)["t"]
    ends = []
    for end in (lo, hi):
        if end not in {e["T_f"] for e in trajectory}:
            trajectory.append(predict(end))
        ends.append((next(e["t"] for e in trajectory if e["T_f"] == end), end))
    t_end, end = min(ends)
    return (end, t_end) if t_end <= t_best * (1.0 + CORUN_MARGIN) else (best, t_best)


def hill_climb(predict, start: int, *, step: int = DEFAULT_STEP, lo: int = 0,
               hi: int | None = None, max_steps: int = 10000) -> tuple[int, list[dict]]:
    """Hill climbing on ``predict(T)['t']`` from ``start`` in steps of ``step`` (§3.4).

    At each point the two neighbours ``T - step`` and ``T + step`` (clipped to
    ``[lo, hi]``) are evaluated; the search moves to the better one if it is
    strictly faster, and stops otherwise.

    Returns
    -------
    (T, trajectory)
        The local optimum and every evaluation made, in order.
    """
    hi = start if hi is None else max(hi, lo)
    cache: dict[int, dict] = {}
    trajectory: list[dict] = []

    def f(t):
        if t not in cache:
            cache[t] = predict(t)
            trajectory.append(cache[t])
        return cache[t]["t"]

    t = min(max(int(start), lo), hi)
    for _ in range(max_steps):
        here = f(t)
        cands = sorted({max(lo, t - step), min(hi, t + step)} - {t})
        best = min(cands, key=f, default=None)
        if best is None or f(best) >= here:
            break
        t = best
    return t, trajectory


def profile_throughput(workload, pair, *, fraction: float = 0.1, repeats: int = 3,
                       seed: int = 0, grouping: str = "none") -> dict:
    """Measured throughput (nnz/s) of each device on a sample of rows.

    Runs the app's representative row operation (``App.profile_step``) on an
    evenly strided sample of about ``fraction`` of the rows, on each device
    alone, after one warm-up. This is the "measured profiling" used when no
    model fits, and the adaptive baseline's ratio.

    Returns
    -------
    dict
        ``{'cpu': nnz/s, 'gpu': nnz/s, 'rows': sampled rows, 'nnz': their nnz}``.
    """
    from ..partition import subset_plan
    lengths = workload.matrix.row_lengths()
    stride = max(1, int(round(1.0 / max(fraction, 1e-6))))
    nonempty = np.flatnonzero(lengths)  # a sample of empty rows measures nothing
    rows = nonempty[seed % stride::stride] if nonempty.size > stride else nonempty
    nnz = int(lengths[rows].sum(dtype=np.int64))
    out = {"rows": int(rows.size), "nnz": nnz}
    from ..engine.options import EngineOptions
    timed = EngineOptions.measuring()  # a device's time, read from its events
    for role in ("cpu", "gpu"):
        eng = workload.engine(pair, subset_plan(lengths, rows, role, grouping=grouping), timed)
        workload.app.profile_step(eng)
        eng.reset_records()
        times = []
        for _ in range(repeats):
            workload.app.profile_step(eng)
            times.append(eng.records[-1].kernel.get(role, 0.0))
        # a share too small for the event clock's resolution still took at least 1 us
        out[role] = max(nnz, 1) / max(float(np.median(times)), 1e-6)
    return out


def tune(workload, pair, *, model: str | PlatformModel | ModelMatch | None = None,
         scale: dict | None = None,
         step: int = DEFAULT_STEP, sample_ratio: float = 0.001, seed: int = 0,
         grouping: str = "auto", calibrate=None, options=None) -> TuneResult:
    """Choose ``T_f`` for a workload on a pair (§3.4).

    Parameters
    ----------
    workload : finepar.api.Workload
    pair : DevicePair
    model : str, PlatformModel or ModelMatch, optional
        A platform name or file, a loaded model, or a match; default: the first
        model in lookup order that matches the pair's devices
        (:func:`finepar.calibrate.choose_model`; never the current directory).
    scale : dict, optional
        Per-device corrections of the predictions (:func:`measured_scale`).
    step : int
        Hill-climbing step (64 in the paper).
    options : EngineOptions, optional
        The devices' memory budgets: the CPU share must fit the CPU's, and the part
        of the GPU share beyond the GPU's streams, at the model's transfer
        bandwidth, overlapped with compute (§4.3).
    grouping : {'auto', 'none', 'pow4', 'adaptive'}
        The grouping of the plan being tuned. ``auto`` (default) tunes every
        grouping the model was trained on (and the app allows: ``App.groupings``)
        and keeps the one predicted faster: §4.1's length groups cost a launch
        each, which a small input does not earn back (an addition to the
        paper). Without a model (measured profiling) ``auto`` means ``pow4``.
    calibrate : None, bool or finepar.training.Recipe
        The single switch of automatic calibration, used only when ``model`` is
        None and no model matches the devices exactly: ``None`` (default)
        calibrates (1-2 minutes, once; the model is kept in the user data
        directory for later runs) unless ``$FINEPAR_NO_CALIBRATE`` is set;
        ``True`` does even then; ``False`` never does (then the nearest model with
        a warning naming it, or measured profiling); a ``Recipe`` calibrates
        with that recipe. See :mod:`finepar.calibrate`.

    Returns
    -------
    TuneResult
    """
    if grouping not in ("auto", *GROUPINGS):
        raise ValueError(f"unknown grouping {grouping!r} (use auto or {', '.join(GROUPINGS)})")
    t0 = time.perf_counter()
    m = workload.matrix
    det = detect_type(m.indptr, m.indices, m.n, sample_ratio=sample_ratio, seed=seed)
    t_model = time.perf_counter()
    match = choose_model(pair, model, calibrate=calibrate)
    calibration_s = time.perf_counter() - t_model if match.status == "calibrated" else 0.0
    stats = workload.row_stats
    exchanges = workload.app.exchanges and not pair.shared
    per_nnz = 8 if workload.app.weighted else 4
    budgets = {}
    if options is not None:
        budgets = {r: options.budget(r, pair.side(r)) for r in ("cpu", "gpu")}
    stream = dict(gpu_resident=budgets["gpu"] // per_nnz if budgets else None,
                  bytes_per_nnz=per_nnz)
    if match.model is not None:
        groupings = candidate_groupings(match.model, workload.app, grouping)
        preds = {g: Predictor(stats, det.matrix_type, model=match.model, transfer=exchanges,
                              grouping=g, serial=pair.emulated, scale=scale, **stream)
                 for g in groupings}
    else:
        g = "pow4" if grouping == "auto" else grouping
        thr = profile_throughput(workload, pair, grouping=g)
        preds = {g: Predictor(stats, det.matrix_type, throughput=thr, serial=pair.emulated,
                              scale=scale, **stream)}
    lo, hi = feasible_range(stats, pair, budgets)
    found = {}
    for g, pred in preds.items():
        start = min(max(initial_threshold(stats, pred.peak_ratio()), lo), hi)
        best, trajectory = hill_climb(pred, start, step=step, lo=lo, hi=hi)
        best, t_best = one_device_unless_split_wins(pred, best, trajectory, lo, hi)
        for e in trajectory:
            e["grouping"] = g
        found[g] = (t_best, best, start, trajectory)
    chosen = min(found, key=lambda g: found[g][0])
    _, best, start, _ = found[chosen]
    trajectory = [e for g in found for e in found[g][3]]
    predicted = dict(preds[chosen](best), grouping=chosen)
    return TuneResult(threshold=int(best), initial=int(start), matrix_type=det.matrix_type,
                      diagonal_fraction=det.fraction,
                      model=match.model.platform if match.model else None,
                      model_exact=match.exact, message=match.message, trajectory=trajectory,
                      predicted=predicted, seconds=time.perf_counter() - t0 - calibration_s,
                      grouping=chosen, model_path=match.path, model_origin=match.origin,
                      calibration_seconds=calibration_s, ends={"cpu": int(lo), "gpu": int(hi)})


def candidate_groupings(model: PlatformModel, app, grouping: str = "auto") -> tuple:
    """The groupings ``grouping`` leaves to weigh: for ``auto`` those ``model`` was trained
    on (else ``none`` and ``pow4``) that the app allows (``App.groupings``), else
    ``grouping`` alone."""
    if grouping != "auto":
        return (grouping,)
    trained = [g for g in GROUPINGS if g in model.groupings()]
    groupings = tuple(trained or ("none", "pow4"))
    if app.groupings:  # the app's own choice among them
        groupings = tuple(g for g in groupings if g in app.groupings) or groupings
    return groupings


def alone_grouping(workload, pair, role: str, *, model=None,
                   sample_ratio: float = 0.001, seed: int = 0) -> tuple[str, dict]:
    """The grouping the platform model predicts fastest for every row on ``role`` alone
    (``--devices cpu`` or ``gpu`` with ``grouping='auto'``): the length groups (§4.1)
    cost a launch each, which CSR-adaptive's one launch saves on most inputs; before,
    such a run always took ``pow4`` (SpMV at Graph500 scale 18 on one H200: 2.28 ms for
    10 products by the GPU alone against 0.88 for the default's adaptive plan).

    Returns
    -------
    (str, dict)
        The grouping, and each weighed grouping's predicted seconds a step; ``pow4`` and
        ``{}`` where no model matches the devices (no calibration is started for it) or
        the app keeps to its own groupings (``App.groupings``: the frontier apps, whose row
        operations the models were not trained on, keep their length groups).
    """
    if workload.app.groupings:
        return "pow4", {}
    match = choose_model(pair, model, calibrate=False)
    if match.model is None:
        return "pow4", {}
    m = workload.matrix
    det = detect_type(m.indptr, m.indices, m.n, sample_ratio=sample_ratio, seed=seed)
    stats = workload.row_stats
    every = stats.max_length() if role == "gpu" else -1  # T_f: the role holds every row
    seconds = {g: Predictor(stats, det.matrix_type, model=match.model, grouping=g,
                            serial=pair.emulated).device_seconds(every, role)
               for g in candidate_groupings(match.model, workload.app)}
    return min(seconds, key=seconds.get), seconds


#: A split runs only where it is predicted this much faster than the better device alone
#: (a fraction): it pays both devices' synchronisation each step and both models' errors.
#: On the H100 pair at Graph500 scale 22 a split predicted 5% faster than the GPU alone
#: ran SpMV 1.5-3.2x slower, its CPU share taking 1.5-3.4 ms a product against 1.15 predicted.
CORUN_MARGIN = 0.15

#: A device whose measured share time is off its prediction by this factor more than the
#: other device's is (in either direction) gets its predictions rescaled and the split is
#: tuned again, once.
CORRECTION_RATIO = 1.5


def measured_scale(predicted: dict, measured: dict) -> dict | None:
    """Per-device corrections from one measured step of a tuned split.

    A model fitted on the training matrices can be far off on an input unlike
    them (the CPU's share of a few rows of 25,000 entries, say). Both devices
    being off alike changes nothing (the split balances their ratio); one
    device off by more than :data:`CORRECTION_RATIO` times the other is
    corrected by its own ratio.

    Parameters
    ----------
    predicted : dict
        The tuner's prediction at the chosen split (``t_cpu``, ``t_gpu``, seconds).
    measured : dict
        ``{'cpu': s, 'gpu': s}``: the kernel seconds of one step of each share.

    Returns
    -------
    dict or None
        ``{'cpu': r, 'gpu': r}`` (measured over predicted; 1 for a share
        predicted to take no time, e.g. of empty rows), or None when no
        correction is needed.
    """
    r = {}
    for role in ("cpu", "gpu"):
        p, m = predicted.get(f"t_{role}", 0.0), measured.get(role, 0.0)
        r[role] = m / p if p > 0 and m > 0 else None
    if r["cpu"] is None and r["gpu"] is None:
        return None
    r = {k: 1.0 if v is None else v for k, v in r.items()}  # a share of empty rows: taken as right
    off = max(r.values()) / min(r.values())
    return r if off > CORRECTION_RATIO else None

