"""The partitioning baselines of FinePar TKDE Table 2, and ``finepar compare`` over them.

Methods
-------
``cpu-only`` / ``gpu-only``
    Every row on one device with FinePar's own engine: the grouping FinePar would
    give that device alone (a work-item per row on a CPU; on a GPU the one the platform
    model predicts fastest, :func:`~finepar.split.tuner.alone_grouping`, a frontier app's
    length groups) and the app's own iteration (device-side batches, frontier adaptation).
    *single-device* is the better of the two, the baseline of every speedup, so the
    speedup column measures what the split gains.
``cpu-plain`` / ``gpu-plain``
    The paper's plain single-device baselines: every row on one device, one launch
    (a work-item per row), iterated from the host.
``adaptive``
    Profile a sample of rows on each device alone, then give the CPU the
    first rows holding the measured share of the nonzeros (a coarse split).
``dynamic``
    Rows in 32 chunks of equal nnz; the GPU takes chunks from the front and
    the CPU from the back, the host handing out chunks, until they meet.
``coarse-oracle``
    Sweep T_c, the rows given to the CPU, from 0 to 100% in steps of 5% (or
    ``oracle_step``) and keep the fastest.
``finepar-original``
    The fine split at the tuned T_f, one launch per device, no dynamic adaptation.
``finepar``
    The fine split at the tuned T_f with power-of-4 length groups and their
    thread mappings (§4.1) and, for BFS and CC, frontier adaptation (§4.2).

Baselines run BFS and CC statically (every iteration co-runs over the whole
split), as the methods they stand for did; ``finepar`` adapts to the
frontier. Every answer is checked against the app's float64 reference before
its time is shown; a wrong answer is shown as ``WRONG`` and never timed.
"""

from __future__ import annotations

import io
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import FineParError

METHODS = ("cpu-plain", "gpu-plain", "cpu-only", "gpu-only", "adaptive", "dynamic",
           "coarse-oracle", "finepar-original", "finepar")
#: The throttling paper's Fig. 9 methods, on the GPU share of FinePar's tuned split:
#: unthrottled (org), relabelled by Algorithm 5 (org+r), and each schedule on the
#: relabelled graph's cache-fit partitions.
THROTTLE_METHODS = ("org", "org+r", "cf", "cf-q", "sj", "sj-q")
ALL_METHODS = METHODS + THROTTLE_METHODS


@dataclass
class MethodResult:
    """One method's measurement.

    Attributes
    ----------
    method : str
    split : str
        The split it chose (``T_f=...``, ``T_c=...%``).
    seconds : float
        Median wall time of the run (all iterations), seconds.
    per_iteration : float
        ``seconds / iterations``.
    iterations : int
    correct : bool
    problem : str
        Why the answer was wrong (empty when correct).
    gpu_variance, cpu_variance : float
        Row-length variance of each share (Table 3).
    space_overhead : float
        Plan bytes over CSR bytes (Table 7).
    overhead_seconds : float
        Method-specific preparation: tuning, profiling, the oracle's sweep.
    detail : dict
        E.g. the oracle's sweep, the tuner's trajectory.
    times : list of float
        Every timed run, seconds (``seconds`` is their median).
    plan : dict
        What ran: the plan's label, T_f, grouping and the engine's executor.
    """

    method: str
    split: str = ""
    seconds: float = float("nan")
    per_iteration: float = float("nan")
    iterations: int = 0
    correct: bool = False
    problem: str = ""
    gpu_variance: float = float("nan")
    cpu_variance: float = float("nan")
    space_overhead: float = 0.0
    overhead_seconds: float = 0.0
    detail: dict = field(default_factory=dict)
    times: list = field(default_factory=list)
    plan: dict = field(default_factory=dict)


@dataclass
class Comparison:
    """All methods on one (app, graph).

    Attributes
    ----------
    app, graph : str
    n, nnz : int
    devices : str
        The pair, in words (says when it is emulated).
    emulated : bool
    results : list of MethodResult
    date : str
    choice : str
        Why the ``finepar`` row ran what it ran, where FinePar's default chose one
        device (:func:`finepar.split.choose.auto_devices`); empty where it tuned a split.
    """

    app: str
    graph: str
    n: int
    nnz: int
    devices: str
    emulated: bool
    results: list
    date: str = ""
    choice: str = ""

    def result(self, method: str) -> MethodResult | None:
        return next((r for r in self.results if r.method == method), None)

    def single_device(self) -> MethodResult | None:
        """The better of cpu-only and gpu-only (correct answers only)."""
        c = [r for r in (self.result("cpu-only"), self.result("gpu-only")) if r and r.correct]
        return min(c, key=lambda r: r.seconds) if c else None

    def speedup(self, method: str, over: str = "single-device") -> float:
        """Time of ``over`` divided by time of ``method`` (nan if either is missing/wrong)."""
        base = self.single_device() if over == "single-device" else self.result(over)
        r = self.result(method)
        if not base or not r or not r.correct or not base.correct or r.seconds <= 0:
            return float("nan")
        return base.seconds / r.seconds

    def to_dict(self) -> dict:
        sd = self.single_device()
        return {"app": self.app, "graph": self.graph, "n": self.n, "nnz": self.nnz,
                "devices": self.devices, "emulated": self.emulated, "date": self.date,
                "choice": self.choice,
                "single_device": sd.method if sd else None,
                "results": [{**r.__dict__, "speedup": self.speedup(r.method)}
                            for r in self.results]}

    def table(self) -> str:
        from .report import format_table
        rows = []
        for r in self.results:
            if not r.correct:
                rows.append([r.method, "WRONG", "", "", r.split, "", "", "", r.problem[:40]])
                continue
            sp = self.speedup(r.method)
            rows.append([r.method, f"{r.seconds * 1e3:.2f}", f"{r.per_iteration * 1e3:.3f}",
                         f"{sp:.2f}x" if math.isfinite(sp) else "-", r.split,
                         _fmt_var(r.gpu_variance), _fmt_var(r.cpu_variance),
                         f"{100 * r.space_overhead:.1f}%",
                         f"{r.overhead_seconds * 1e3:.1f}" if r.overhead_seconds else ""])
        sd = self.single_device()
        head = (f"finepar compare {self.app} on {self.graph}: {self.n:,} rows, {self.nnz:,} nnz\n"
                f"devices: {self.devices}\n")
        if self.emulated:
            head += ("EMULATED pair: both roles are the same CPU device; the times check the "
                     "code paths, not a GPU.\n")
        if self.choice:
            head += f"finepar's choice: {self.choice}.\n"
        foot = (f"\ncolumns: time = the whole run (median of repeats), ms/iter = per iteration, "
                f"speedup = single-device time / this time (single-device = "
                f"{sd.method if sd else '-'}, the faster of cpu-only and gpu-only), split = the "
                f"rows each device got (T_f: rows longer go to the CPU; T_c: the first rows), "
                f"gpu var / cpu var = row-length variance of each share (Table 3), space = the "
                f"plan's bytes over the CSR's (Table 7), prep = the method's own preparation "
                f"(tuning, profiling, the oracle's sweep, partitioning). Every answer was "
                f"checked against an independent reference before its time was kept.")
        return head + format_table(
            ["method", "time ms", "ms/iter", "speedup", "split", "gpu var", "cpu var",
             "space", "prep ms"], rows, align="lrrrlrrrr") + foot

    def plot(self, path) -> None:
        """Bar chart of each method's speedup over single-device (like Fig. 12), PNG, atomic."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from .files import atomic_write_bytes
        names = [r.method for r in self.results]
        vals = [self.speedup(m) for m in names]
        fig, ax = plt.subplots(figsize=(7.5, 3.6))
        colors = ["#4c72b0" if not m.startswith("finepar") else "#dd8452" for m in names]
        bars = ax.bar(range(len(names)), [v if math.isfinite(v) else 0 for v in vals],
                      color=colors)
        for b, v, r in zip(bars, vals, self.results):
            ax.text(b.get_x() + b.get_width() / 2, b.get_height(),
                    f"{v:.2f}" if math.isfinite(v) else ("wrong" if not r.correct else "-"),
                    ha="center", va="bottom", fontsize=8)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("speedup over single-device")
        title = f"{self.app} on {self.graph}"
        if self.emulated:
            title += " (EMULATED pair: CPU only)"
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=120)
        plt.close(fig)
        atomic_write_bytes(path, buf.getvalue())


def _fmt_var(v: float) -> str:
    if v is None or not math.isfinite(v):
        return "-"
    return f"{v:.1f}" if v < 1e5 else f"{v:.3g}"


def compare(app: str, graph, *, pair, methods=METHODS, repeats: int = 3,
            oracle_step: float = 5.0, model: Any = None, params: dict | None = None,
            progress: bool = False, reference: Any = None, calibrate: Any = None) -> Comparison:
    """Run every method on one (app, graph), check each answer, time each.

    Parameters
    ----------
    app : str
        An app's name (:func:`finepar.apps.names`).
    graph : Graph
    pair : DevicePair
    methods : iterable of str
        A subset of :data:`ALL_METHODS`: Table 2's and the throttling paper's Fig. 9
        methods.
    repeats : int
        Timed runs per method (the median is kept, with min and max); one warm-up before.
    oracle_step : float
        Percent of rows between the coarse oracle's T_c points (at most 5).
    model : str or PlatformModel, optional
        Model for the tuner.
    params : dict, optional
        App parameters (validated by the app; e.g. ``root``, ``x``, ``damping``).
    progress : bool
        A progress line per method and per point of the oracle's sweep (on
        stderr; one line per step when it is not a terminal).
    reference : object, optional
        A precomputed answer in the form the app's ``reference`` returns (for
        graphs too large for the host reference to be quick).
    calibrate : None, bool or Recipe
        Passed to the tuner (:func:`finepar.tuner.tune`).

    Returns
    -------
    Comparison

    Raises
    ------
    FineParError
        For an unknown method or an oracle step outside (0, 5].
    """
    import datetime as _dt
    from .api import Workload
    from .split.choose import auto_devices, plan_for
    from .partition import coarse_grained, dynamic, fine_grained, single_device
    from .progress import Progress
    from .throttle.plan import ThrottleOptions
    from .split.tuner import alone_grouping, profile_throughput, tune
    bad = [m for m in methods if m not in ALL_METHODS]
    if bad:
        raise FineParError(f"unknown method(s) {', '.join(bad)} "
                           f"(choose from {', '.join(ALL_METHODS)})")
    if not 0 < oracle_step <= 5:
        raise FineParError("the oracle's step must be in (0, 5] percent")
    wl = Workload(app, graph)
    params = wl.app.reference_params(graph, wl.app.check_params(graph, dict(params or {})))
    ref = reference if reference is not None else wl.app.reference(graph, params)
    lengths = wl.matrix.row_lengths()
    static = wl.app.static_params()

    def measure(engine, extra: dict, on=None, perm=None) -> tuple[MethodResult, Any]:
        """Time runs of ``engine`` (of workload ``on``, default ``wl``; relabelled by
        ``perm`` if given), then check the answer in the input's vertex ids."""
        on = on or wl
        run_params = {**params, **extra}
        if perm is not None:
            run_params = wl.app.permute_params(run_params, perm)
        times, res = [], None
        wl.app.warmup(engine, on.graph, **run_params)
        for _ in range(max(repeats, 1)):
            engine.reset_records()
            t0 = time.perf_counter()
            res = wl.app.run(engine, on.graph, **run_params)
            times.append(time.perf_counter() - t0)
        res = wl.app.collect(engine, on.graph, res)  # the answer to check, read after timing
        if perm is not None:
            res = wl.app.unpermute(res, perm)
        sec = float(np.median(times))
        mr = MethodResult(method="", seconds=sec, per_iteration=sec / max(res.iterations, 1),
                          iterations=res.iterations)
        mr.times = [float(t) for t in times]
        problem = wl.app.check(graph, res, ref, params)
        mr.correct, mr.problem = not problem, problem
        st = engine.plan.stats
        mr.gpu_variance = st.get("gpu_variance", float("nan"))
        mr.cpu_variance = st.get("cpu_variance", float("nan"))
        mr.space_overhead = st.get("space_overhead_fraction", 0.0)
        mr.plan = {"label": engine.plan.label, "threshold": engine.plan.threshold,
                   "grouping": engine.plan.grouping, "executor": engine.executor.name}
        return mr, res

    def static_run(plan, extra=static) -> MethodResult:
        mr, _ = measure(wl.engine(pair, plan), extra)
        return mr

    results, tuned = [], None
    # a method's weight: the timed runs it makes (the oracle one per point of its sweep)
    sweep_runs = int(math.floor(100 / oracle_step + 1e-9)) + 2
    weight = {m: sweep_runs if m == "coarse-oracle" else 1 for m in methods}
    bar = Progress(sum(weight.values()), f"compare {app} on {graph.name}", enabled=progress)
    for m in methods:
        bar.step(m, weight[m])
        t0 = time.perf_counter()
        if m in ("cpu-plain", "gpu-plain"):
            role = m.split("-")[0]
            r = static_run(single_device(lengths, role))
            r.split = f"all rows on {role}, plain"
        elif m in ("cpu-only", "gpu-only"):  # FinePar's engine on one device
            role = m.split("-")[0]
            grouping = ("none" if role == "cpu" else  # the model's fastest on the GPU
                        alone_grouping(wl, pair, role, model=model)[0])
            r = static_run(plan_for(wl.matrix, threshold=None, devices=role,
                                    grouping=grouping), {})
            r.split = f"all rows on {role}"
        elif m == "adaptive":
            prof = profile_throughput(wl, pair)
            ratio = prof["cpu"] / prof["gpu"]
            target = lengths.sum(dtype=np.int64) * ratio / (1 + ratio)
            t_c = int(np.searchsorted(np.cumsum(lengths, dtype=np.int64), target))
            prep = time.perf_counter() - t0
            r = static_run(coarse_grained(lengths, t_c))
            r.overhead_seconds = prep
            r.split = f"T_c={100 * t_c / max(len(lengths), 1):.1f}% (cpu/gpu {ratio:.3g})"
            r.detail = {"profile": prof}
        elif m == "dynamic":
            eng = wl.engine(pair, dynamic(lengths))
            r, _ = measure(eng, static)
            r.split = (f"{eng.plan.stats['chunks']} chunks, "
                       + ("a device-side counter" if pair.shared else "handed out by the host"))
        elif m == "coarse-oracle":
            sweep = []
            pts = np.unique(np.round(np.arange(0, 100 + 1e-9, oracle_step) / 100 * len(lengths))
                            .astype(np.int64))
            for i, t_c in enumerate(pts):
                bar.detail(f"{m}: T_c {i + 1}/{len(pts)}")
                mr, _ = measure(wl.engine(pair, coarse_grained(lengths, int(t_c))), static)
                sweep.append({"T_c": int(t_c), "percent": 100 * t_c / max(len(lengths), 1),
                              "seconds": mr.seconds, "correct": mr.correct})
            ok = [s for s in sweep if s["correct"]]
            best = min(ok, key=lambda s: s["seconds"]) if ok else sweep[0]
            prep = time.perf_counter() - t0
            r = static_run(coarse_grained(lengths, best["T_c"]))
            r.overhead_seconds = prep
            r.split = f"T_c={best['percent']:.0f}%"
            r.detail = {"sweep": sweep}
        elif m in THROTTLE_METHODS:
            if tuned is None:
                tuned = tune(wl, pair, model=model, grouping="auto", calibrate=calibrate)
            opts = ThrottleOptions(schedule="none" if m in ("org", "org+r") else m,
                                   remap="none" if m == "org" else "dbwp")
            on, plan, perm, secs = wl.throttled(
                pair, fine_grained(lengths, tuned.threshold, grouping=tuned.grouping), opts)
            eng = on.engine(pair, plan)
            r, _ = measure(eng, {}, on=on, perm=perm)
            r.overhead_seconds = secs + (plan.throttle.seconds if plan.throttle else 0.0)
            r.split = f"T_f={tuned.threshold} {tuned.grouping}" + (
                f", {plan.throttle.partitioning.n_parts} partitions" if plan.throttle else "")
            r.detail = {"throttle": eng.summary()["lowering"].get("gpu", {}).get("throttle")}
        elif m == "finepar" and auto_devices("auto", pair, None)[1]:
            # FinePar's default chose one device (an emulated pair: the CPU alone), with
            # its grouping and the app's own adaptation, as `finepar run` would
            role, choice = auto_devices("auto", pair, None)
            r = static_run(plan_for(wl.matrix, threshold=None, devices=role, grouping="none"),
                           {})
            r.split = f"all rows on {role} (FinePar's choice)"
            r.detail = {"choice": choice}
        else:
            # FinePar-original: one launch per device, no dynamic adaptation; FinePar: the
            # tuner's T_f and grouping, and the app's own frontier adaptation
            tr = tune(wl, pair, model=model, grouping="auto" if m == "finepar" else "none",
                      calibrate=calibrate)
            extra = {} if m == "finepar" else static
            r = static_run(fine_grained(lengths, tr.threshold, grouping=tr.grouping), extra)
            r.overhead_seconds = tr.seconds
            r.split = f"T_f={tr.threshold} {tr.grouping}"
            r.detail = {"tuner": tr.to_dict()}
        r.method = m
        results.append(r)
    bar.close()
    choice = next((r.detail["choice"] for r in results
                   if r.method == "finepar" and "choice" in (r.detail or {})), "")
    return Comparison(app=app, graph=graph.name, n=graph.n, nnz=graph.nnz,
                      devices=pair.describe(), emulated=pair.emulated, results=results,
                      choice=choice,
                      date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
