"""Per-run reports: what ran where, how long each part took, and the result's key numbers.

A :class:`RunReport` is what ``finepar run`` prints and what ``--json PATH``
writes (atomically). Times are seconds from a monotonic clock or OpenCL
profiling events; throughput is nonzeros per second (SpMV, PageRank, CC) or
traversed edges per second (BFS).
"""

from __future__ import annotations

import datetime as _dt
import math
import platform as _platform
from dataclasses import dataclass, field, asdict
from typing import Any

import numpy as np

from . import __version__
from .files import atomic_write_json, jsonable


def environment() -> dict:
    """Versions and host, recorded in every report."""
    out = {"finepar": __version__, "python": _platform.python_version(),
           "numpy": np.__version__, "host": _platform.node(), "machine": _platform.machine()}
    try:
        import pyopencl
        out["pyopencl"] = pyopencl.VERSION_TEXT
    except Exception:  # noqa: BLE001 - the report must not fail on a version query
        pass
    return out


@dataclass(kw_only=True)
class Stamped:
    """When and where a report was made (:func:`environment`), and its JSON: the base of
    every report dataclass (keyword fields, after the report's own)."""

    date: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc)
                      .isoformat(timespec="seconds"))
    environment: dict = field(default_factory=environment)

    def to_dict(self) -> dict:
        return jsonable(asdict(self))

    def write_json(self, path) -> None:
        """Write the report as JSON, atomically."""
        atomic_write_json(path, self.to_dict())


@dataclass
class RunReport(Stamped):
    """Everything about one ``finepar run``.

    Attributes
    ----------
    app : str
    graph : dict
        ``name``, ``source``, ``n``, ``nnz``, loader ``notes``.
    devices : dict
        The pair (``describe``), ``emulated``, ``memory`` mode and both devices.
    plan : dict
        ``label``, ``method``, ``threshold`` (T_f), ``grouping`` and Table 3 ``stats``.
    threshold_source : str
        ``flag``, ``tuner``, ``default`` or ``single-device``.
    timings : dict
        Seconds: ``start`` (the process until the command began: the interpreter and
        imports; ``finepar run`` only), ``devices`` (opening them; ``finepar run``
        only), ``load``, ``preprocess`` (building the app's matrix), ``cache`` (hashing
        the input and reading a prepared entry), ``partition``, ``setup`` (buffers,
        halo), ``warmup``, ``inputs`` (a given vector checked against the devices' copy
        or uploaded: SpMV's ``x``, RWR's restart), ``run`` (wall, the
        results still on the devices), ``collect`` (reading them to the host),
        ``per_iteration``, ``kernel`` / ``span`` per device, ``exchange``; and
        ``host_syncs``, the run's blocking waits of the host on a device (reads,
        blocking writes, event waits; a count, not seconds).
    throughput : dict
        ``nnz_per_s`` or ``teps``, and the edge count it is based on.
    result : dict
        ``iterations``, ``converged``, and the app's summary lines; for frontier
        apps ``trace``, one entry per iteration (direction, where it ran, the
        frontier's size and edges, what it found, the launch that ran it), and
        ``launches``, the levels each launch ran (a batch of levels enqueued
        together, or many levels of one work-group-local launch).
    tuning : dict or None
        The tuner's trajectory and predictions, when it chose T_f.
    cache : dict or None
        The prepared-graph cache: its folder, the entry's key, whether the run reused
        it (``hit``) and what happened (:attr:`finepar.prepcache.PrepCache.events`).
    builds : dict or None
        The kernel programs the command built (``finepar run`` only): ``programs``,
        ``compiled`` (built from source, which a driver may answer from its own cache; the
        others came from a binary FinePar kept), ``seconds`` (the
        builds' durations summed; they overlap one another and the preparation), and
        ``list``, one ``{"role", "sources", "options", "start", "seconds", "binary"}``
        each, ``start`` in seconds from the command's start.
    """

    app: str
    graph: dict
    devices: dict
    plan: dict
    threshold_source: str
    timings: dict
    throughput: dict
    result: dict
    tuning: dict | None = None
    cache: dict | None = None
    builds: dict | None = None

    def text(self, title: str | None = None) -> str:
        """The short human summary ``finepar run`` prints, headed ``title`` (default
        ``finepar.APP``, the API's call; the command line passes ``finepar run APP``)."""
        g, d, p, t = self.graph, self.devices, self.plan, self.timings
        st = p.get("stats", {})
        lines = [f"{title or 'finepar.' + self.app} on {g['name']}: {g['n']:,} rows, "
                 f"{g['nnz']:,} nnz"]
        lines.append(f"  devices    {d['describe']}")
        if d.get("emulated"):
            lines.append("             (EMULATED pair: both roles are the same CPU device; "
                         "timings say nothing about a real GPU)")
        lines.append(f"  plan       {p['label']}  [T_f from {self.threshold_source}]")
        if st:
            ratio = st.get("gpu_cpu_workload_ratio")
            ratio_s = "inf" if ratio in (None, "inf") or (isinstance(ratio, float)
                                                        and not math.isfinite(ratio)) \
                else f"{ratio:.2f}"
            lines.append(
                f"  shares     gpu {st['gpu_rows']:,} rows / {st['gpu_nnz']:,} nnz (var "
                f"{st['gpu_variance']:.1f}); cpu {st['cpu_rows']:,} rows / {st['cpu_nnz']:,} nnz "
                f"(var {st['cpu_variance']:.1f}); matrix var {st['matrix_variance']:.1f}; "
                f"gpu/cpu workload {ratio_s}")
        mem = p.get("memory") or {}
        if mem.get("gpu_streamed_nnz") or mem.get("gpu_chunks", 1) > 1 or mem.get("cpu_chunks", 1) > 1:
            stream = (t.get("streaming") or {}).get("gpu", {})
            lines.append(
                f"  memory     cpu keeps {mem['cpu_nnz']:,} nnz ({mem['cpu_chunks']} chunks); gpu "
                f"keeps {mem['gpu_resident_nnz']:,} resident and streams "
                f"{mem['gpu_streamed_nnz']:,} ({mem['gpu_chunks']} chunks)"
                + (f"; {stream['bandwidth'] / 1e9:.2f} GB/s uploads, "
                   f"{100 * stream['overlap']:.0f}% overlapped" if stream else ""))
        thr = p.get("throttle")
        if thr:
            sj = thr.get("sj") or {}
            lines.append(
                f"  throttle   {thr['schedule']} over {thr['partitions']} cache-fit partitions "
                f"({thr['method']}, T={thr['capacity']:,} entries, tree depth {thr['tree_depth']}, "
                f"{thr['partition_seconds'] * 1e3:.1f} ms)"
                + (f"; remap {thr['remap']} {thr['remap_seconds'] * 1e3:.1f} ms"
                   if thr.get("remap", "none") != "none" else "")
                + (f"; SJ kept {len(sj['cover'])} launches" if sj else ""))
        for role, cols in (p.get("columns") or {}).items():
            if cols["reason"] != "not asked for":
                what = "renumbered hottest first" if cols["applied"] else "kept in their order"
                lines.append(f"  columns    the {role}'s columns {what} ({cols['reason']}; "
                             f"{cols['seconds'] * 1e3:.1f} ms)")
        auto = p.get("throttle_auto")
        if auto:
            verdict = "throttled" if auto["throttle"] else "not throttled"
            ws = auto["working_set"]
            held = {-1: "x+y entries not counted", -2: "x+y entries fit"}.get(
                ws, f"x+y entries {ws:,}")
            lines.append(
                f"  auto       {verdict}: partitioning ~{auto['cost_seconds']:.3f} s against a "
                f"predicted saving of {auto['saving_seconds']:.3f} s over "
                f"{auto['steps']:.0f} steps ({held}, cache holds {auto['capacity']:,})")
        if self.tuning:
            tr = self.tuning
            lines.append(f"  tuner      {tr.get('summary', '')}")
            if not tr.get("model_exact"):
                lines.append(f"             note: {tr.get('message', '')}")
            if tr.get("choice"):
                lines.append(f"  choice     {tr['choice']['text']}")
            kept = (tr.get("choice_corrected") or {}).get("rebuild") or {}
            if kept.get("done") is False:
                lines.append(f"             kept: {tr['choice_corrected']['winner']} alone "
                             f"would save {kept['saving_seconds'] * 1e3:.3g} ms after the "
                             f"measured step; building it costs "
                             f"{kept['cost_seconds'] * 1e3:.3g} ms")
            fix = tr.get("correction") or {}
            if fix.get("threshold_before") is not None:
                ratios = ", ".join(f"{r} x{v:.2f}" for r, v in fix["scale"].items())
                lines.append(f"             corrected: one measured step took {ratios} of the "
                             f"prediction; T_f {fix['threshold_before']} "
                             f"({fix['grouping_before']}) -> {tr['threshold']} "
                             f"({tr['grouping']})")
            elif (fix.get("rebuild") or {}).get("done") is False:
                rb = fix["rebuild"]
                lines.append(f"             kept: the corrected split (T_f {rb['threshold']}) "
                             f"would save {rb['saving_seconds']:.3f} s over {rb['steps']:.0f} "
                             f"steps; building it again costs {rb['cost_seconds']:.3f} s")
        if self.cache:
            c = self.cache
            what = ("reused the engine kept in memory (finepar serve, or this process for a small "
                    "input)" if c.get("resident") else
                    "reused the prepared plan" if c.get("hit") else "prepared and stored")
            lines.append(f"  cache      {what} ({c['dir']}; finepar cache list)")
        b = self.builds
        if b and b.get("programs"):
            lines.append(f"  builds     {b['programs']} kernel programs ({b['compiled']} from "
                         f"source, {b['seconds']:.2f} s of builds on their own threads)")
        k = t.get("kernel", {})
        kernels = (f"kernels cpu {k.get('cpu', 0):.4f} s, gpu {k.get('gpu', 0):.4f} s"
                   if t.get("profile") != "none" else
                   "kernels not timed (one device, plain queues)")
        lines.append(
            f"  time       run {t['run']:.4f} s ({t['per_iteration'] * 1e3:.3f} ms/iter); "
            f"{kernels}; "
            f"exchange {t.get('exchange', 0):.4f} s"
            + (f"; {t['host_syncs']:,} host syncs" if "host_syncs" in t else ""))
        start = "".join(f"{label} {t[k]:.3f} s, " for k, label in
                        (("start", "start"), ("devices", "devices")) if k in t)
        lines.append(
            f"             {start}load {t.get('load', 0):.3f} s, "
            f"preprocess {t.get('preprocess', 0):.3f} s, cache {t.get('cache', 0):.3f} s, "
            f"partition {t.get('partition', 0):.4f} s, "
            + "".join(f"{label} {t[k]:.3f} s, " for k, label in
                      (("tune", "tuning"), ("throttle", "throttling"),
                       ("correct", "measured correction"), ("store", "cache store"))
                      if t.get(k))
            + f"setup {t.get('setup', 0):.3f} s, warm-up {t.get('warmup', 0):.3f} s, "
            + (f"inputs {t['inputs']:.3f} s, " if t.get("inputs") else "")
            + f"results to the host {t.get('collect', 0):.3f} s"
            + (f", answer written {t['answer']:.3f} s" if "answer" in t else ""))
        thr = self.throughput
        if "teps" in thr:
            lines.append(f"  rate       {thr['teps'] / 1e9:.4f} GTEPS")
        else:
            lines.append(f"  rate       {thr['nnz_per_s'] / 1e9:.4f} Gnnz/s")
        for label, value in self.result.get("summary", []):
            lines.append(f"  {label:<10} {value}")
        return "\n".join(lines)


def human_bytes(n: float) -> str:
    """``n`` bytes in the binary unit that shows its size: ``512 B``, ``3.4 MiB``,
    ``1.5 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def format_table(headers: list[str], rows: list[list[Any]], *, align: str | None = None) -> str:
    """A plain-text table with a header rule; ``align`` is one char per column
    (``l`` or ``r``; default: right for numbers, left otherwise)."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    if align is None:
        align = "".join("r" if rows and all(isinstance(r[i], (int, float, np.number))
                                            for r in rows) else "l"
                        for i in range(len(headers)))
    out = []
    for k, r in enumerate(cells):
        out.append("  ".join(c.rjust(w) if a == "r" else c.ljust(w)
                             for c, w, a in zip(r, widths, align)).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
