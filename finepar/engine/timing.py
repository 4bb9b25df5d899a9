"""Step timing: OpenCL profiling events per device and a monotonic host clock per step.

Kernel times are sums of profiled launch durations (seconds), spans run from
a device's first start to its last end within a step, exchange time sums the
halo's pack, copy and unpack commands, and wall time is the host's
:func:`time.perf_counter` around the whole step (DESIGN.md §5).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class StepRecord:
    """Timing of one engine step.

    Attributes
    ----------
    kind : str
        ``rowop`` (a row operation over the plan), ``push`` (a frontier step of
        one device), or an app's own kernel name.
    roles : tuple of str
        Roles that ran kernels in this step.
    wall : float
        Host wall time of the step, seconds.
    kernel : dict
        Role -> summed kernel time of the step's launches on that device, seconds.
    span : dict
        Role -> first start to last end of the step's launches, seconds.
    exchange : float
        Summed time of halo pack / copy / unpack commands, seconds.
    launches : dict
        Role -> number of kernel launches in the step.
    upload : dict
        Role -> (sum, span) of the step's chunk uploads, seconds (streamed shares).
    streamed_bytes : dict
        Role -> bytes the step streamed to that device.
    """

    kind: str
    roles: tuple
    wall: float = 0.0
    kernel: dict = field(default_factory=dict)
    span: dict = field(default_factory=dict)
    exchange: float = 0.0
    launches: dict = field(default_factory=dict)
    upload: dict = field(default_factory=dict)
    streamed_bytes: dict = field(default_factory=dict)
    pending_uploads: dict = field(default_factory=dict, repr=False)


def event_seconds(events) -> tuple[float, float]:
    """(sum of durations, span) of completed profiled events, in seconds (0, 0 for none)."""
    if not events:
        return 0.0, 0.0
    total, first, last = 0, None, None
    for ev in events:
        s, e = ev.profile.start, ev.profile.end
        total += e - s
        first = s if first is None else min(first, s)
        last = e if last is None else max(last, e)
    return total * 1e-9, (last - first) * 1e-9


def event_span(events) -> float:
    """Seconds from the first event's start to the last one's end, for completed profiled
    events in order on one queue (two profiling reads; 0 for none)."""
    if not events:
        return 0.0
    return (events[-1].profile.end - events[0].profile.start) * 1e-9


def time_step(profile: str, rec: StepRecord, role: str, events: list) -> None:
    """Set ``rec``'s kernel and span seconds on ``role`` from one step's completed events,
    read as ``profile`` says (``batch``: the span for both, two reads; ``launch``: every
    launch's; ``none``: not set, the queue keeps no times)."""
    if profile == "launch":
        rec.kernel[role], rec.span[role] = event_seconds(events)
    elif profile == "batch":
        rec.kernel[role] = rec.span[role] = event_span(events)


def time_pending(profile: str, roles: tuple, pending: list) -> None:
    """Device seconds of steps enqueued without a wait, now done (``pending``: ``(record,
    {role: events}, start)``): ``launch`` each launch's; ``batch`` each device's span over
    them (its first launch's start to its last launch's end: two profiling reads) spread
    evenly over the steps that ran there; ``none`` nothing."""
    if profile == "launch":
        for rec, events, _ in pending:
            for role, evs in events.items():
                rec.kernel[role], rec.span[role] = event_seconds(evs)
        return
    if profile != "batch":
        return
    for role in roles:
        steps = [(rec, evs) for rec, events, _ in pending
                 for r, evs in events.items() if r == role and evs]
        if steps:
            span = event_span([steps[0][1][0], steps[-1][1][-1]]) / len(steps)
            for rec, _ in steps:
                rec.kernel[role] = rec.span[role] = span


def summarize(records: list[StepRecord], setup_seconds: float, halo: dict) -> dict:
    """Totals over steps: wall, per-device kernel time and span, exchange, step counts.

    Returns
    -------
    dict
        ``steps``, ``wall_s``, ``exchange_s``, ``kernel_s`` and ``span_s`` (per
        role), ``corun_steps``, ``alone_steps`` (per role), ``launches`` (per
        role), ``halo_entries`` (per role), ``setup_s``.
    """
    out = {"steps": len(records), "wall_s": 0.0, "exchange_s": 0.0,
           "kernel_s": {"cpu": 0.0, "gpu": 0.0}, "span_s": {"cpu": 0.0, "gpu": 0.0},
           "corun_steps": 0, "alone_steps": {"cpu": 0, "gpu": 0},
           "launches": {"cpu": 0, "gpu": 0}}
    for r in records:
        out["wall_s"] += r.wall
        out["exchange_s"] += r.exchange
        for role, v in r.kernel.items():
            out["kernel_s"][role] += v
        for role, v in r.span.items():
            out["span_s"][role] += v
        for role, v in r.launches.items():
            out["launches"][role] += v
        if len(r.roles) == 2:
            out["corun_steps"] += 1
        elif r.roles:
            out["alone_steps"][r.roles[0]] += 1
    up = [r for r in records if r.upload]
    if up:
        out["streaming"] = {}
        for role in {k for r in up for k in r.upload}:
            busy = sum(r.upload[role][0] for r in up if role in r.upload)
            nbytes = sum(r.streamed_bytes.get(role, 0) for r in up)
            kern = sum(r.kernel.get(role, 0.0) for r in up)
            span = sum(max(r.span.get(role, 0.0), r.upload[role][1]) for r in up
                       if role in r.upload)
            out["streaming"][role] = {
                "steps": len(up), "bytes": nbytes, "upload_s": busy,
                "bandwidth": nbytes / busy if busy > 0 else 0.0,
                # how much of the shorter of uploads and kernels hid behind the other:
                # 0 = one after the other, 1 = fully overlapped
                "overlap": (min(1.0, max(0.0, (busy + kern - sum(r.wall for r in up))
                                         / min(busy, kern)))
                            if min(busy, kern) > 0 else 0.0),
                "kernel_s": kern, "span_s": span}
    out["halo_entries"] = {r: int(v.size) for r, v in halo.items()}
    out["setup_s"] = setup_seconds
    return out
