"""The host's side of an app's run: every OpenCL command it enqueues, counted, and a timeline
of one run (issue 31: BFS at scale 24 waits for its host).

On one input (default Graph500 scale 24) and one plan (``--devices``, default the GPU alone),
a warm-up, then ``--repeats`` calls of ``Workload.run`` (the run, then its answer's reads) on
the engine a default run prepares. During them every pyopencl call that enqueues or reads (``enqueue_copy``,
``enqueue_fill_buffer``, ``enqueue_nd_range_kernel`` and kernel calls, which the engine no
longer makes: ``engine.binding.call`` enqueues) is wrapped: counted per
run, and, for the last run, stamped with its start (ms from the call's start), its duration in
pyopencl and the FinePar functions that made it. The wrapping itself costs the host time, so
the runs' times here are slower than a plain run's; the counts are exact. ``--profile`` also
keeps cProfile's busiest functions over the timed runs. JSON is written as it goes.

    python benchmarks/probe_host.py --scale 24 --json $OUT/probe_host.json
"""

from __future__ import annotations

import time
import traceback
from types import SimpleNamespace

from common import log, main_of, probe_parser, probe_start, write_json

#: The pyopencl functions wrapped (module level) and the class whose calls are kernel launches.
CALLS = ("enqueue_copy", "enqueue_fill_buffer", "enqueue_nd_range_kernel")


def parse_args(argv=None):
    ap = probe_parser(__doc__, "probe_host")
    ap.add_argument("--app", default="bfs", help="the app (default bfs)")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs")
    ap.set_defaults(devices="gpu")  # the GPU alone: BFS's plan at scale 24
    devices = next(a for a in ap._actions if a.dest == "devices")
    devices.choices = (*devices.choices, "cpu")  # a small graph's walk
    ap.add_argument("--profile", action="store_true", help="cProfile the timed runs")
    ap.add_argument("--queues", default="profiling", choices=("profiling", "plain"),
                    help="the engine's queues: profiling (each command's device start, run "
                         "and wait from its enqueue) or plain (a default run's on one device; "
                         "host times only)")
    ap.add_argument("--no-where", action="store_true",
                    help="skip each call's stack walk (about 0.15 ms a call on the H200's "
                         "host), so the gaps between calls are the run's own")
    args = ap.parse_args(argv)
    from finepar import apps
    from finepar.errors import UsageError
    if args.app not in apps.names():
        raise UsageError(f"--app: {args.app!r} is not an app ({', '.join(apps.names())})")
    if args.repeats < 1:
        raise UsageError(f"--repeats must be at least 1, not {args.repeats}")
    return args


class CallLog:
    """Wraps pyopencl's enqueue calls and kernel calls while active: per-run counts and
    the stamped calls of the current run."""

    def __init__(self, cl, where: bool = True):
        self.cl, self.counts, self.calls, self.t0, self.saved = cl, {}, [], 0.0, {}
        self.where = where

    def _wrap(self, owner, name: str, key: str):
        real = getattr(owner, name)
        self.saved[(owner, name)] = real

        def wrapped(*a, **k):
            t1 = time.perf_counter()
            out = real(*a, **k)
            t2 = time.perf_counter()
            self.counts[key] = self.counts.get(key, 0) + 1
            where = ([f"{f.name}:{f.lineno}" for f in traceback.extract_stack(limit=9)[:-1]
                      if "finepar" in f.filename][-3:] if self.where else [])
            self.calls.append({"call": key, "at_ms": 1e3 * (t1 - self.t0),
                               "took_ms": 1e3 * (t2 - t1), "from": "<".join(reversed(where)),
                               "event": out if hasattr(out, "profile") else None})
            return out
        setattr(owner, name, wrapped)

    def __enter__(self):
        for name in CALLS:
            self._wrap(self.cl, name, name)
        self._wrap(self.cl.Kernel, "__call__", "kernel call")
        return self

    def __exit__(self, *exc):
        for (owner, name), real in self.saved.items():
            setattr(owner, name, real)

    def start_run(self) -> None:
        self.calls, self.t0 = [], time.perf_counter()

    def mark(self, what: str) -> None:
        """A line in the timeline with no command: where the app's run begins or ends."""
        self.calls.append({"call": what, "at_ms": 1e3 * (time.perf_counter() - self.t0),
                           "took_ms": 0.0, "from": ""})

    def marking(self, app) -> None:
        """Stamp the start and the end of ``app.run`` (the report's run time begins just
        before it) in the timeline."""
        run = app.run

        def marked(*a, **k):
            self.mark("(app.run begins)")
            try:
                return run(*a, **k)
            finally:
                self.mark("(app.run returns)")
        app.run = marked

    def device_times(self) -> None:
        """Each stamped call's device start and run (ms; the start from the run's first
        command's) and its wait on the device from its enqueue to its start (``wait_ms``:
        the queue's ``QUEUED`` to ``START``) from its event's profiling times, where it
        returned an event that has them (a blocking read's, a profiling queue's); the
        events themselves dropped."""
        first = None
        for c in self.calls:
            ev = c.pop("event", None)
            try:
                q, s, e = ev.profile.queued, ev.profile.start, ev.profile.end
            except Exception:  # noqa: BLE001 - no event, or a queue without profiling
                continue
            first = s if first is None else min(first, s)
            c["device_ns"] = (q, s, e)
        for c in self.calls:
            if "device_ns" in c:
                q, s, e = c.pop("device_ns")
                c["dev_at_ms"], c["dev_ms"] = 1e-6 * (s - first), 1e-6 * (e - s)
                c["wait_ms"] = 1e-6 * (s - q)


def main(argv=None) -> int:
    args = parse_args(argv)
    import cProfile
    import pstats
    import io
    from finepar import api
    from finepar.device import cl
    from probe_sssp import engine_for
    budget, pair, g, out = probe_start(args, "probe_host")
    wl = api.Workload(args.app, g)
    params = wl.app.reference_params(g, wl.app.check_params(g, {}))
    how = SimpleNamespace(devices=args.devices,
                          profile="batch" if args.queues == "profiling" else "auto")
    wl_run, eng = engine_for(wl, pair, how, "auto", params)
    wl_run.run(engine=eng, warmup=True, **params)
    prof = cProfile.Profile() if args.profile else None
    runs = []
    with CallLog(cl(), where=not args.no_where) as calls:
        calls.marking(wl_run.app)
        for _ in range(args.repeats):
            if budget.spent():
                out["notes"].append("budget spent before the last runs")
                break
            calls.counts = {}
            calls.start_run()
            if prof:
                prof.enable()
            res, rep = wl_run.run(engine=eng, warmup=False, **params)
            if prof:
                prof.disable()
            runs.append({"run_ms": 1e3 * rep.timings["run"], "calls": dict(calls.counts),
                         "commands": sum(calls.counts.values()),
                         "host_syncs": rep.timings.get("host_syncs")})
        calls.device_times()
        timeline = calls.calls
    out.update(app=args.app, devices=args.devices, plan=rep.plan.get("label"), runs=runs,
               steps=res.extra.get("steps"), timeline=timeline)
    if prof:
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
        out["profile"] = text.getvalue().splitlines()
    write_json(args.json, out)
    last = runs[-1]
    times = ", ".join(f"{r['run_ms']:.3f}" for r in runs)
    log(f"{args.app} on {out['graph']} ({out['plan']}): {last['commands']} OpenCL commands a "
        f"run {last['calls']}, {last['host_syncs']} host syncs; runs {times} ms with the "
        f"calls wrapped")
    for c in timeline:
        dev = (f"dev {c['dev_at_ms']:8.3f} +{c['dev_ms']:6.3f} (waited {c['wait_ms']:6.3f})"
               if "dev_ms" in c else " " * 41)
        log(f"  {c['at_ms']:8.3f} ms  {c['took_ms']:6.3f}  {dev}  {c['call']:24s} {c['from']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
