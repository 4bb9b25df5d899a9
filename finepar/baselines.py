"""The partitioning baselines of FinePar TKDE Table 2, and ``finepar compare`` over them.

Methods
-------
``cpu-only`` / ``gpu-only``
    Every row on one device, one launch (work-item per row). *single-device*
    is the better of the two, the baseline of every speedup.
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
frontier. Every answer is checked against :mod:`finepar.reference` before
its time is shown; a wrong answer is shown as ``WRONG`` and never timed.
"""

from __future__ import annotations

import io
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import reference
from .apps.base import DynamicPolicy
from .errors import FineParError

METHODS = ("cpu-only", "gpu-only", "adaptive", "dynamic", "coarse-oracle", "finepar-original",
           "finepar")


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
    """

    app: str
    graph: str
    n: int
    nnz: int
    devices: str
    emulated: bool
    results: list
    date: str = ""

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
        foot = (f"\nspeedups are over single-device = {sd.method if sd else '-'}; times are the "
                f"median of repeats; every answer was checked against the scipy reference.")
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


def check_answer(app: str, graph, result, refs: dict, params: dict) -> str:
    """Compare an app's result with the reference; returns '' if equal, else the problem."""
    if app == "spmv":
        exp, bound = refs["spmv"]
        bad = np.flatnonzero(np.abs(result.values - exp) > bound)
        return f"{bad.size} rows of y off (first row {bad[0]})" if bad.size else ""
    if app == "pagerank":
        l1 = float(np.abs(result.values.astype(np.float64) - refs["pagerank"]).sum())
        return f"L1 error {l1:.2e} > 1e-4" if l1 >= 1e-4 else ""
    if app == "bfs":
        if not np.array_equal(result.values, refs["bfs"]):
            return "levels differ from scipy's"
        errs = reference.validate_bfs(graph, params["root"], result.values,
                                      result.extra["parent"], reference_levels=refs["bfs"])
        return "; ".join(errs)
    if not np.array_equal(result.values, refs["cc"]):
        return "component labels differ from scipy's"
    return ""


def _references(app: str, graph, params: dict) -> dict:
    if app == "spmv":
        return {"spmv": (reference.spmv(graph, params["x"]),
                         reference.spmv_error_bound(graph, params["x"]))}
    if app == "pagerank":
        return {"pagerank": reference.pagerank(graph, damping=params.get("damping", 0.85))}
    if app == "bfs":
        return {"bfs": reference.bfs_levels_fast(graph, params["root"])}
    return {"cc": reference.components(graph)}


def compare(app: str, graph, *, pair, methods=METHODS, repeats: int = 3,
            oracle_step: float = 5.0, model: Any = None, params: dict | None = None,
            progress: bool = False, references: dict | None = None) -> Comparison:
    """Run every method on one (app, graph), check each answer, time each.

    Parameters
    ----------
    app : {'spmv', 'pagerank', 'bfs', 'cc'}
    graph : Graph
    pair : DevicePair
    methods : iterable of str
        A subset of :data:`METHODS`.
    repeats : int
        Timed runs per method (the median is kept); one warm-up before.
    oracle_step : float
        Percent of rows between the coarse oracle's T_c points (at most 5).
    model : str or PlatformModel, optional
        Model for the tuner.
    params : dict, optional
        App parameters (``root``, ``x``, ``damping``, ``tol``, ``repeat``).
    references : dict, optional
        Precomputed float64 references by app name (e.g. ``{'pagerank': ranks}``,
        computed by other means for graphs too large for scipy to iterate
        quickly); the rest come from :mod:`finepar.reference`.

    Returns
    -------
    Comparison

    Raises
    ------
    FineParError
        For an unknown method.
    """
    import datetime as _dt
    from tqdm import tqdm
    from .api import Workload
    from .engine import DynamicEngine
    from .partition import coarse_grained, fine_grained, single_device
    from .tuner import profile_throughput, tune
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise FineParError(f"unknown method(s) {', '.join(bad)} (choose from {', '.join(METHODS)})")
    if not 0 < oracle_step <= 5:
        raise FineParError("the oracle's step must be in (0, 5] percent")
    params = dict(params or {})
    wl = Workload(app, graph)
    if app == "bfs":
        params.setdefault("root", int(np.argmax(graph.out_degrees())))
    if app == "spmv":
        params.setdefault("x", np.random.default_rng(0).uniform(-1, 1, graph.n)
                          .astype(np.float32))
    refs = dict(references) if references and app in references else _references(app, graph,
                                                                                 params)
    lengths = wl.matrix.row_lengths()
    static = {"policy": DynamicPolicy(enabled=False)} if app in ("bfs", "cc") else {}
    adaptive_policy = {"policy": DynamicPolicy()} if app in ("bfs", "cc") else {}

    def measure(engine, extra: dict) -> tuple[MethodResult, Any]:
        times, res = [], None
        wl.app.warmup(engine, graph, **{**params, **extra})
        for _ in range(max(repeats, 1)):
            engine.reset_records()
            t0 = time.perf_counter()
            res = wl.app.run(engine, graph, **{**params, **extra})
            times.append(time.perf_counter() - t0)
        sec = float(np.median(times))
        mr = MethodResult(method="", seconds=sec, per_iteration=sec / max(res.iterations, 1),
                          iterations=res.iterations)
        problem = check_answer(app, graph, res, refs, params)
        mr.correct, mr.problem = not problem, problem
        st = engine.plan.stats
        mr.gpu_variance = st.get("gpu_variance", float("nan"))
        mr.cpu_variance = st.get("cpu_variance", float("nan"))
        mr.space_overhead = st.get("space_overhead_fraction", 0.0)
        return mr, res

    def static_run(plan, extra=static) -> MethodResult:
        mr, _ = measure(wl.engine(pair, plan), extra)
        return mr

    results = []
    todo = list(methods)
    bar = tqdm(todo, disable=None if progress else True, desc=f"compare {app}", unit="method")
    for m in bar:
        bar.set_postfix_str(m)
        t0 = time.perf_counter()
        if m in ("cpu-only", "gpu-only"):
            role = m.split("-")[0]
            r = static_run(single_device(lengths, role))
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
            eng = DynamicEngine(pair, wl.matrix, wl.app.kernel, has_data=wl.app.has_data,
                                writes=wl.app.writes)
            wl.app.prepared(eng, graph)
            r, _ = measure(eng, static)
            r.split = f"{eng.plan.threshold} chunks, last split at row {eng.split_row:,}"
        elif m == "coarse-oracle":
            sweep = []
            pts = np.unique(np.round(np.arange(0, 100 + 1e-9, oracle_step) / 100 * len(lengths))
                            .astype(np.int64))
            for t_c in pts:
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
        else:
            # FinePar-original: one launch per device; FinePar: §4.1's length groups
            # where the model predicts they pay for their launches
            tr = tune(wl, pair, model=model, grouping="auto" if m == "finepar" else "none")
            extra = adaptive_policy if m == "finepar" else static
            r = static_run(fine_grained(lengths, tr.threshold, grouping=tr.grouping), extra)
            r.overhead_seconds = tr.seconds
            r.split = f"T_f={tr.threshold}" + (" pow4" if tr.grouping == "pow4" else "")
            r.detail = {"tuner": tr.to_dict()}
        r.method = m
        results.append(r)
    bar.close()
    return Comparison(app=app, graph=graph.name, n=graph.n, nnz=graph.nnz,
                      devices=pair.describe(), emulated=pair.emulated, results=results,
                      date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
