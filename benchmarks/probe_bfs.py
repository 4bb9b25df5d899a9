"""Where BFS's time goes, level by level and launch by launch (issue 31, item 1).

On one input (default Graph500 scale 24), FinePar's default BFS: a warm-up and ``--repeats``
timed runs on one engine as a default run prepares it, every answer checked against a host
BFS's levels; then one more run with every launch's OpenCL profiling event kept (the pull's
row operation launch by launch, each labelled with its share's mapping; the top-down
levels' advance and queue kernels by kind), laid out per level beside the level's
direction, frontier, found vertices and wall time. The bytes a level must move at least
(its rows' ``indptr`` and levels, its entries' ``indices`` once, the bitmaps) are put
beside its time at the copy bandwidth measured in the same run. JSON is written as it goes.

    python benchmarks/probe_bfs.py --scale 24 --json $OUT/probe_bfs.json
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from common import log, main_of, probe_parser, probe_start, write_json
from probe_sssp import breadth_first, engine_for, timed_runs


def parse_args(argv=None):
    ap = probe_parser(__doc__, "probe_bfs")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs")
    ap.add_argument("--root", type=int, default=None, help="the root (default: the app's)")
    ap.add_argument("--groupings", default="",
                    help="also run the plan grouped each of these ways (a comma list of "
                         "none, pow4, adaptive), each timed and profiled as the default is")
    ap.add_argument("--max-lanes", default="",
                    help="also run the default with BFS's bottom-up teams capped at each of "
                         "these work-items a row in every step (a comma list of powers of two "
                         ">= 2; RowOp.max_lanes; the default picks a step's from "
                         "finepar.apps.bfs.BOTTOM_UP_LANES)")
    args = ap.parse_args(argv)
    try:
        lanes = [int(x) for x in args.max_lanes.split(",") if x]
        if any(v < 2 or v & (v - 1) for v in lanes):
            raise ValueError
    except ValueError:
        ap.error(f"--max-lanes: a comma list of powers of two >= 2, got {args.max_lanes!r}")
    args.max_lanes = lanes
    bad = [x for x in args.groupings.split(",") if x and x not in ("none", "pow4", "adaptive")]
    if bad:
        ap.error(f"--groupings: none, pow4 or adaptive, got {bad[0]!r}")
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    return args


class LaunchLog:
    """Every launch of a run's steps, its label and its profiling event (read after the
    run): ``engine.launch`` calls by kind, row operations by their launches' labels."""

    def __init__(self, eng):
        self.eng, self.items, self.enqueued = eng, [], {}

    def __enter__(self):
        from finepar.engine import core, executors, launches
        eng, items, at = self.eng, self.items, self.enqueued
        self._launch, self._step = core.Engine.launch, executors.StaticExecutor.step
        self._enqueue = launches.Launch.enqueue
        launch, step, enqueue = self._launch, self._step, self._enqueue

        def logged_launch(me, role, kernel, global_size, args, *, kind="push", wg=64,
                          wait=True):
            t = time.perf_counter()
            rec = launch(me, role, kernel, global_size, args, kind=kind, wg=wg, wait=wait)
            if me is eng:
                ev = None if wait else me.pending[-1][1][role][0]
                items.append((kind, ev, rec.kernel.get(role), t))
            return rec

        def logged_enqueue(me, queue, wait_for=None):
            ev = enqueue(me, queue, wait_for=wait_for)
            at[id(ev)] = time.perf_counter()
            return ev

        def logged_step(me, e, op, args, roles, **kw):
            out = step(me, e, op, args, roles, **kw)
            if e is eng:
                for role, evs in (e.last_events or {}).items():
                    ol = e.stores[role].ops(op, e.fscal[role], e.stop[role])
                    labels = [f"{op.name} {i}: {L.label}" for i, L in enumerate(ol.launches)]
                    items.extend((lab, ev, None, at.get(id(ev))) for lab, ev in zip(labels, evs))
            return out
        core.Engine.launch, executors.StaticExecutor.step = logged_launch, logged_step
        launches.Launch.enqueue = logged_enqueue
        return self

    def __exit__(self, *exc):
        from finepar.engine import core, executors, launches
        core.Engine.launch, executors.StaticExecutor.step = self._launch, self._step
        launches.Launch.enqueue = self._enqueue

    def seconds(self) -> list:
        """``[(label, seconds, start, enqueued)]`` in launch order: start on the device's
        clock (None for launches waited for when they ran), enqueued on the host's
        (``time.perf_counter``, just before the call for ``engine.launch``)."""
        out = []
        for label, ev, known, t in self.items:
            if ev is None:
                out.append((label, known or 0.0, None, t))
            else:
                out.append((label, (ev.profile.end - ev.profile.start) * 1e-9,
                            ev.profile.start * 1e-9, t))
        return out


def idle_gaps(launches: list) -> dict:
    """The device's idle time between launches, and the part of it the host caused: the
    host clock is put on the device's by the launch that started soonest after its
    enqueue (a lower bound on the offset), and a gap counts as the host's where the next
    launch was enqueued after the previous one ended (the device had nothing to run)."""
    timed = [(s, s + d, t) for _, d, s, t in launches if s is not None and t is not None]
    if len(timed) < 2:
        return {}
    offset = min(s - t for s, _, t in timed)
    idle = host = 0.0
    for (_, end0, _), (s1, _, t1) in zip(timed, timed[1:]):
        gap = max(s1 - end0, 0.0)
        idle += gap
        host += min(gap, max(t1 + offset - end0, 0.0))
    return {"idle_ms": 1e3 * idle, "host_bound_ms": 1e3 * host, "launches_timed": len(timed)}


def launch_table(wl_run, eng, params: dict) -> dict:
    """One run with every launch logged: the launches in order, and the run's trace."""
    with LaunchLog(eng) as log_:
        res, rep = wl_run.run(engine=eng, warmup=False, **params)
    launches = log_.seconds()
    starts = [s for _, _, s, _ in launches if s is not None]
    return {"run": rep.timings["run"],
            "device_span": (max(s + t for _, t, s, _ in launches if s is not None)
                            - min(starts)) if starts else None,
            "kernels_ms": 1e3 * sum(t for _, t, _, _ in launches),
            "gaps": idle_gaps(launches),
            "launches": [{"label": lab, "ms": 1e3 * t} for lab, t, _, _ in launches],
            "by_label": _by_label(launches),
            "levels": [{k: s.get(k) for k in ("iteration", "direction", "where", "frontier",
                                              "frontier_edges", "found", "found_edges",
                                              "seconds")} for s in res.extra["trace"]]}


def _by_label(launches: list) -> dict:
    out: dict[str, float] = {}
    for lab, t, _, _ in launches:
        out[lab] = out.get(lab, 0.0) + 1e3 * t
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def level_bytes(g, levels: list) -> list:
    """The least bytes each level moves: a bottom-up level reads every row's level and
    ``indptr`` entry, the frontier bitmap and writes the next; a top-down level reads its
    frontier's ``indptr`` entries and out-edges and the levels they reach."""
    off = g.indptr.dtype.itemsize
    out = []
    for lv in levels:
        if lv["direction"] == "bottom-up":
            b = g.n * (4 + off) + 2 * (g.n // 8)
        else:
            b = (lv["frontier"] or 0) * (8 + off) + 8 * (lv["frontier_edges"] or 0)
        out.append(int(b))
    return out


def grouped_run(wl, pair, args, grouping: str, params: dict, check, g, copy) -> dict:
    """Timed runs of BFS with the plan grouped as asked (``auto``: the default's), then one
    run with every launch logged (:func:`launch_table`), each level beside its floor."""
    import gc
    gc.collect()  # the previous grouping's engine goes first
    wl_run, eng = engine_for(wl, pair, args, grouping, params)
    t0 = time.perf_counter()
    rec = timed_runs(wl_run, eng, params, check, args.repeats)
    rec["seconds"] = time.perf_counter() - t0
    caps = {op.max_lanes for op in wl.app.ops}
    teams = (f"at most {caps.pop() or 'all'} lanes" if len(caps) == 1
             else "lanes chosen a step")
    log(f"bfs grouping {grouping} (teams {teams}): "
        f"{rec['run']['median'] * 1e3:.3f} ms a run, "
        f"{rec['problem'] or 'answer ok'}")
    table = launch_table(wl_run, eng, params)
    bw = copy.get("bytes_per_s")
    for lv, b in zip(table["levels"], level_bytes(g, table["levels"])):
        lv["bytes_floor"], lv["floor_ms"] = b, 1e3 * b / bw if bw else None
    rec["launches"] = table
    for lv in table["levels"]:
        log(f"  level {lv['iteration']} {lv['direction']}: frontier {lv['frontier']:,}, found "
            f"{lv['found']:,}, {1e3 * lv['seconds']:.3f} ms (floor {lv['floor_ms'] or 0:.3f})")
    log(f"  run {1e3 * table['run']:.3f} ms: kernels {table['kernels_ms']:.3f} ms, device span "
        f"{1e3 * (table['device_span'] or 0):.3f} ms, idle between launches "
        f"{table['gaps'].get('idle_ms', 0):.3f} ms ({table['gaps'].get('host_bound_ms', 0):.3f} "
        f"waiting for the host)")
    for lab, ms in list(table["by_label"].items())[:10]:
        log(f"  {ms:8.3f} ms  {lab}")
    return rec


def main(argv=None) -> int:
    args = parse_args(argv)
    from finepar import api
    from floor import copy_bandwidth
    budget, pair, g, out = probe_start(args, "probe_bfs")
    wl = api.Workload("bfs", g)
    params = wl.app.reference_params(g, wl.app.check_params(g, {"root": args.root}))
    want = breadth_first(g, params["root"], 1.0)

    def check(res) -> str:
        got = np.where(res.values >= 0, res.values, np.inf).astype(np.float32)
        return "" if np.array_equal(got, want) else "levels differ from the host BFS"
    copy = copy_bandwidth(pair)
    out["copy_bandwidth"] = copy
    for grouping in ["auto"] + [x for x in args.groupings.split(",") if x]:
        if budget.spent():
            out["notes"].append(f"budget spent before grouping {grouping}")
            break
        key = "default" if grouping == "auto" else f"grouping {grouping}"
        try:
            out[key] = grouped_run(wl, pair, args, grouping, params, check, g, copy)
        except Exception as exc:  # noqa: BLE001 - a probe records every failure
            out[key] = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
            log(f"bfs {key}: {out[key]['error']}")
        write_json(args.json, out)
    base = wl.app.ops
    for lanes in args.max_lanes:
        if budget.spent():
            out["notes"].append(f"budget spent before max_lanes {lanes}")
            break
        wl.app.ops = tuple(replace(op, max_lanes=lanes) for op in base)
        key = f"max_lanes {lanes}"
        try:
            out[key] = grouped_run(wl, pair, args, "auto", params, check, g, copy)
        except Exception as exc:  # noqa: BLE001
            out[key] = {"error": f"{type(exc).__name__}: {str(exc)[:400]}"}
            log(f"bfs {key}: {out[key]['error']}")
        finally:
            wl.app.ops = base
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
