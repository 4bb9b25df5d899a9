"""A rank's timed run as a timeline (issue 32): every OpenCL command it enqueues, with its
device times, beside the host functions it was in, so each stretch of the device's idle
time is charged to what the host was doing then.

:class:`Timeline` wraps pyopencl's enqueue calls (``enqueue_copy``,
``enqueue_fill_buffer``, ``enqueue_nd_range_kernel``, kernel calls) and a list of host
functions while it records. Each command's profiling times (queued, submitted, started,
ended; the device's clock) are put on the host's clock by the median offset between a
command's ``queued`` time and the host's clock at its enqueue. :meth:`Timeline.summary`
then walks the device's busy intervals and charges every gap between them to the
innermost host function open at the gap's middle (``loop`` where none is: the code
between them), per level (each call of a function named in ``levels``).

Python's garbage collections while it records are host spans too (``gc``, from
:data:`gc.callbacks`), so a stall in the host's own runtime shows as one.

Used by ``probe_bfsranks.py --timeline``.
"""

from __future__ import annotations

import gc
import time
import numpy as np

#: pyopencl's enqueue calls that are wrapped (module level); kernel calls too.
CALLS = ("enqueue_copy", "enqueue_fill_buffer", "enqueue_nd_range_kernel")


class Timeline:
    """Host spans and device commands of the current recording (see the module).

    Parameters
    ----------
    spans : list of (owner, name, label)
        Host functions to stamp: ``getattr(owner, name)``, shown as ``label``.
    levels : tuple of str
        The labels whose calls are the run's levels (each call one level).
    """

    def __init__(self, spans: list, levels: tuple):
        from finepar.device import cl as finepar_cl
        cl = finepar_cl()  # after FinePar registers the NVIDIA driver: a bare import of
        # pyopencl first would load the ICD loader without it (the GPU role then emulated)
        self.cl, self.levels = cl, levels
        self.on, self.saved = False, []
        self.host: list = []   # [label, t0, t1, depth]
        self.events: list = []  # (label, host time before the enqueue, event)
        self.depth = 0
        for name in CALLS:
            self._wrap_call(cl, name, name.replace("enqueue_", ""))
        self._wrap_call(cl.Kernel, "__call__", None)
        for owner, name, label in spans:
            self._wrap_span(owner, name, label)
        self._gc_open = None
        gc.callbacks.append(self._collected)

    def _collected(self, phase: str, info: dict) -> None:
        """:data:`gc.callbacks`: each collection while recording, a ``gc`` host span
        (``gc2`` for the oldest generation's)."""
        if not self.on:
            return
        if phase == "start":
            self._gc_open = [f"gc{info.get('generation', '')}", time.perf_counter(), None,
                             self.depth]
        elif self._gc_open is not None:
            self._gc_open[2] = time.perf_counter()
            self.host.append(self._gc_open)
            self._gc_open = None

    def start(self) -> None:
        """Forget what was recorded and record from now."""
        self.host, self.events, self.depth, self.on = [], [], 0, True

    def stop(self) -> None:
        self.on = False

    def restore(self) -> None:
        """Put every wrapped function back."""
        for owner, name, real in reversed(self.saved):
            setattr(owner, name, real)
        self.saved = []
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)

    def _wrap_call(self, owner, name: str, label: str | None) -> None:
        real = getattr(owner, name)
        self.saved.append((owner, name, real))
        tl = self

        def wrapped(*a, **k):
            t0 = time.perf_counter()
            out = real(*a, **k)
            if tl.on and isinstance(out, tl.cl.Event):
                what = label
                if what is None:  # a kernel call: Kernel.__call__(kernel, queue, ...)
                    what = a[0].function_name
                elif name == "enqueue_nd_range_kernel":
                    what = a[1].function_name
                tl.events.append((what, t0, out))
            return out
        setattr(owner, name, wrapped)

    def _wrap_span(self, owner, name: str, label: str) -> None:
        real = getattr(owner, name)
        self.saved.append((owner, name, real))
        tl = self

        def wrapped(*a, **k):
            if not tl.on:
                return real(*a, **k)
            rec = [label, time.perf_counter(), None, tl.depth]
            tl.host.append(rec)
            tl.depth += 1
            try:
                return real(*a, **k)
            finally:
                tl.depth -= 1
                rec[2] = time.perf_counter()
        setattr(owner, name, wrapped)

    # ------------------------------------------------------------------ reading it
    def commands(self) -> list[dict]:
        """Every recorded command: label, and ms from the recording's first host stamp of
        its enqueue, queued, submit, start, end (on the host's clock)."""
        if not self.events:
            return []
        info = self.cl.profiling_info
        prof = []
        for label, t0, ev in self.events:
            ev.wait()
            prof.append((label, t0, ev.get_profiling_info(info.QUEUED),
                         ev.get_profiling_info(info.SUBMIT), ev.get_profiling_info(info.START),
                         ev.get_profiling_info(info.END)))
        offset = float(np.median([t0 - q * 1e-9 for _, t0, q, *_ in prof]))
        base = min([t0 for _, t0, *_ in prof] + [h[1] for h in self.host])
        ms = 1e3

        def host(ns: int) -> float:
            return (ns * 1e-9 + offset - base) * ms
        return [{"what": label, "enqueue": (t0 - base) * ms, "queued": host(q),
                 "submit": host(s), "start": host(st), "end": host(e)}
                for label, t0, q, s, st, e in prof]

    def summary(self) -> dict:
        """Per level: its host wall, the device's busy time, and its idle time charged to
        the innermost host function open at each gap's middle; and the commands."""
        cmds = self.commands()
        t_base = min([h[1] for h in self.host] + ([] if not self.events else
                                                   [t0 for _, t0, _ in self.events]))
        spans = [(lab, (t0 - t_base) * 1e3, (t1 - t_base) * 1e3, d)
                 for lab, t0, t1, d in self.host if t1 is not None]
        busy = _union([(c["start"], c["end"]) for c in cmds])
        levels = [s for s in spans if s[0] in self.levels and s[3] == min(
            (x[3] for x in spans if x[0] in self.levels), default=0)]
        out = []
        for i, (lab, a, b, _) in enumerate(levels):
            end = levels[i + 1][1] if i + 1 < len(levels) else max(b, busy[-1][1] if busy
                                                                    else b)
            row = {"level": i, "kind": lab, "wall_ms": end - a,
                   "busy_ms": _overlap(busy, a, end), "idle_ms": {}}
            for g0, g1 in _gaps(busy, a, end):
                who = _innermost(spans, 0.5 * (g0 + g1))
                row["idle_ms"][who] = row["idle_ms"].get(who, 0.0) + (g1 - g0)
            row["commands"] = sum(1 for c in cmds if a <= c["enqueue"] < end)
            row["host_ms"] = {}
            for s in spans:
                if a <= s[1] < end and s[3] == levels[i][3] + 1:
                    row["host_ms"][s[0]] = row["host_ms"].get(s[0], 0.0) + s[2] - s[1]
            out.append(row)
        return {"levels": out, "commands": cmds,
                "spans": [list(s) for s in spans]}


def _union(iv: list) -> list:
    out = []
    for a, b in sorted(iv):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def _overlap(busy: list, a: float, b: float) -> float:
    return sum(max(0.0, min(y, b) - max(x, a)) for x, y in busy)


def _gaps(busy: list, a: float, b: float) -> list:
    out, t = [], a
    for x, y in busy:
        if y <= a or x >= b:
            continue
        if x > t:
            out.append((t, x))
        t = max(t, y)
    if t < b:
        out.append((t, b))
    return out


def _innermost(spans: list, t: float) -> str:
    best = None
    for lab, a, b, d in spans:
        if a <= t <= b and (best is None or d > best[1]):
            best = (lab, d)
    return best[0] if best else "loop"

