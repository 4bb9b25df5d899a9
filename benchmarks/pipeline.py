"""Pipelined chunks (FinePar TKDE §4.3): one buffer, resident chunks, streaming and the CPU
share beside the plain host-to-device copy, then graphs larger than the GPU's share.

On Graph500 ``--scale`` (24), PageRank and BFS:

* ``default``: FinePar's default (``api.run`` with no plan option);
* ``one buffer``: the GPU alone, default engine options (the share in one buffer);
* ``resident chunks``: the GPU alone, ``EngineOptions(chunk_bytes=...)`` cutting the
  share into ``--chunks`` (>= 8) resident chunks;
* ``streaming``: the GPU alone, ``EngineOptions(gpu_memory=...)`` at ``--resident``
  (25%) of the share's bytes: the rest streams through the ring every iteration;
* ``streaming + cpu``: the same budget, both devices, a T_f that gives the CPU the
  longest rows holding ``--cpu-share`` of the nonzeros; ``streaming, tuned``: the
  same budget with the tuner's T_f.

Beside them, the bandwidth of a plain copy from a pinned host buffer
(``ALLOC_HOST_PTR``, the kind FinePar streams from) to the GPU through pyopencl on
the GPU's context, timed by its events (``--copy-bytes``; min / median / max), and
the bandwidth the streaming runs achieved (the RunReport's ``timings['streaming']``).

Then PageRank and BFS on each of ``--large-scales`` (26; ``--max-scale 27`` adds 27
when the host memory allows), FinePar's default, checked against the reference,
with the generation's time and peak memory.

    python benchmarks/pipeline.py --scale 24 --large-scales 26 --json pipeline.json \\
        --md benchmarks/RESULTS.md
"""

from __future__ import annotations

import time

import numpy as np

from common import (Budget, Results, choices, fmt, log, main_of, render_docs, ordered, put,
                    script_parser, stat_cell, target_lines)

APPS = ("pagerank", "bfs")


def main(argv=None) -> int:
    """Run the benchmark (or ``--render`` earlier runs' JSON); returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        The options (default: the command line's).

    Raises
    ------
    UsageError
        A bad option, before any work.
    """
    p = script_parser(__doc__, "pipeline")
    p.add_argument("--scale", type=int, default=24)
    p.add_argument("--large-scales", default="26")
    p.add_argument("--max-scale", type=int, default=None,
                   help="also run the scales after --large-scales up to this one, each only "
                        "when the host memory allows it")
    p.add_argument("--apps", default=",".join(APPS))
    p.add_argument("--chunks", type=int, default=10, help="resident chunks to cut the share in")
    p.add_argument("--resident", type=float, default=0.25,
                   help="share of the GPU share's bytes the streaming budget allows")
    p.add_argument("--cpu-share", type=float, default=0.3,
                   help="nonzeros the longest rows give the CPU in 'streaming + cpu'")
    p.add_argument("--copy-bytes", type=int, default=1 << 30)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--large-repeats", type=int, default=1)
    args = p.parse_args(argv)
    if args.render:
        return render_docs(args, render, targets)
    check_options(args)
    from arraypeers import backend_or_none
    from finepar.api import make_pair
    pair = make_pair(memory=args.memory)
    gpu = backend_or_none("cupy", "float64 references on the GPU")
    res = Results("pipeline.py", args, pair.describe(), lambda doc: render(doc, args), targets)
    res.doc["plain_copy"] = plain_copy(pair.gpu, args.copy_bytes)
    res.save()
    log(f"plain host-to-device copy: {res.doc['plain_copy']['median'] / 1e9:.2f} GB/s")
    budget = Budget(args.budget_s)
    chunk_rows(f"graph500:{args.scale}", args, pair, res, budget, gpu)
    for scale in large_scales(args, res):
        if budget.spent():
            res.note(f"budget spent: scale {scale} and later not run")
            break
        large_rows(scale, args, pair, res, budget, gpu)
    return 0


def check_options(args) -> None:
    """Refuse bad options before any work.

    Raises
    ------
    UsageError
        Naming the option and the problem.
    """
    from finepar import apps
    from finepar.errors import UsageError
    choices("--apps", args.apps, apps.names())
    for s in args.large_scales.split(","):
        if s.strip() and not (s.strip().isdigit() and 1 <= int(s) <= 30):
            raise UsageError(f"--large-scales: {s.strip()!r} is not a Graph500 scale (1..30)")
    for option, value, ok in (("--chunks", args.chunks, args.chunks >= 1),
                              ("--resident", args.resident, 0 < args.resident < 1),
                              ("--cpu-share", args.cpu_share, 0 < args.cpu_share < 1),
                              ("--copy-bytes", args.copy_bytes, args.copy_bytes >= 4),
                              ("--scale", args.scale, 1 <= args.scale <= 30),
                              ("--max-scale", args.max_scale,
                               args.max_scale is None or 1 <= args.max_scale <= 30)):
        if not ok:
            raise UsageError(f"{option} {value!r} is out of range (see --help)")


def plain_copy(side, nbytes: int, repeats: int = 10) -> dict:
    """Bytes per second of copies from pinned host memory (mapped, as a streamed chunk's:
    :class:`finepar.device.transfer.PinnedHost`) to a device buffer on ``side``'s context,
    each timed by its event on a profiling queue (one warm-up)."""
    from finepar.device import PinnedHost
    from finepar.device import cl
    from measure import stats
    mod = cl()
    nbytes = int(min(nbytes, side.info.max_alloc_bytes // 2)) // 4 * 4
    queue = mod.CommandQueue(side.context, side.queue.device,
                             properties=mod.command_queue_properties.PROFILING_ENABLE)
    host = PinnedHost(side, np.arange(nbytes // 4, dtype=np.uint32))
    dev = mod.Buffer(side.context, mod.mem_flags.READ_WRITE, size=nbytes)
    bws = []
    for i in range(repeats + 1):
        ev = mod.enqueue_copy(queue, dev, host.host, is_blocking=False)
        ev.wait()
        if i:
            bws.append(nbytes / ((ev.profile.end - ev.profile.start) * 1e-9))
    dev.release()
    out = stats(bws)
    out["bytes"] = nbytes
    return out


def cpu_threshold(lengths: np.ndarray, share: float) -> int:
    """The T_f whose longer rows (they go to the CPU) hold at least ``share`` of the
    entries: the longest rows until that share, and any as long as the last of them."""
    s = np.sort(lengths)[::-1].astype(np.int64)
    k = int(np.searchsorted(np.cumsum(s), share * s.sum()))
    return max(int(s[min(k, s.size - 1)]) - 1, 0)


def chunk_rows(spec, args, pair, res, budget, gpu) -> None:
    """The scale-``--scale`` configurations of every app."""
    from finepar import apps
    from finepar.api import Workload
    from finepar.engine import EngineOptions
    from inputs import load_input, reference
    from measure import Config, app_params, finepar_config
    g, info = load_input(spec)
    for name in args.apps.split(","):
        app = apps.get(name)
        params = app_params(app, g)
        ref, ref_info = reference(app, g, params, backend=gpu)
        wl = Workload(name, g)
        share = wl.matrix.nnz * (8 if app.weighted else 4)
        stream = EngineOptions(gpu_memory=int(args.resident * share))
        t_f = cpu_threshold(wl.matrix.row_lengths(), args.cpu_share)
        row = {"graph": g.name, "spec": spec, "part": "chunks", "n": g.n, "nnz": g.nnz,
               "app": name, "input": info, "reference": ref_info, "share_bytes": share,
               "chunk_bytes": -(-share // args.chunks), "gpu_memory": stream.gpu_memory,
               "cpu_threshold": t_f, "systems": {}}
        res.add(row)
        configs = (Config("default"), Config("one buffer", devices="gpu"),
                   Config("resident chunks", devices="gpu",
                          options=EngineOptions(chunk_bytes=row["chunk_bytes"])),
                   Config("streaming", devices="gpu", options=stream),
                   Config("streaming + cpu", threshold=t_f, options=stream),
                   Config("streaming, tuned", options=stream))
        for cfg in configs:
            if budget.spent():
                res.note(f"budget spent: {cfg.label} and later configurations on {g.name} "
                         f"{name} not run")
                return
            rec = finepar_config(wl, pair, cfg, params, ref, repeats=args.repeats,
                                 model=args.model)
            rec["streaming"] = streaming(rec)
            put(row, "systems", cfg.label, rec)
            res.save()
            rn = rec["ran"]
            log(f"{g.name} {name} {cfg.label}: {stat_cell(rec.get('seconds'))} ms"
                f"{'' if rec['correct'] else ' WRONG ' + rec['problem'][:200]}; gpu chunks "
                f"{rn.get('gpu_chunks')}, streamed nnz {rn.get('gpu_streamed_nnz')}, cpu nnz "
                f"{rn.get('cpu_nnz')}")
        del wl


def streaming(rec: dict) -> dict | None:
    """The GPU's streaming over the timed runs: bandwidth (bytes over upload time),
    overlap, bytes per run, and bytes over the run's wall time (min / median / max)."""
    from measure import stats
    st = [(t.get("streaming") or {}).get("gpu") for t in rec.get("timings") or []]
    st = [(s, t["run"]) for s, t in zip(st, rec["timings"]) if s]
    if not st:
        return None
    return {"bandwidth": stats([s["bandwidth"] for s, _ in st]),
            "overlap": stats([s["overlap"] for s, _ in st]),
            "bytes": st[0][0]["bytes"],
            "bytes_over_run": stats([s["bytes"] / w for s, w in st])}


def large_scales(args, res) -> list[int]:
    """``--large-scales``, and those after them up to ``--max-scale`` that the host memory
    allows (about three times the CSR's 4 bytes per entry: the graph, FinePar's host
    copies, the references; or the generator's 8 bytes per generated entry)."""
    from finepar.device import host_memory_limit
    scales = [int(s) for s in args.large_scales.split(",") if s.strip()]
    if args.max_scale:
        limit, source = host_memory_limit()
        for s in range(max(scales, default=args.scale) + 1, args.max_scale + 1):
            entries = 32 << s
            need = max(3 * 4 * entries, 8 * entries)
            if need > limit:
                res.note(f"scale {s} not run: it needs about {need / 2**30:.0f} GiB of host "
                         f"memory, the host allows {limit / 2**30:.0f} GiB ({source}; "
                         f"FINEPAR_HOST_MEMORY overrides)")
                break
            scales.append(s)
    return scales


def large_rows(scale, args, pair, res, budget, gpu) -> None:
    """FinePar's default on a large Graph500 graph, each app checked against its reference."""
    import resource
    from finepar import apps
    from finepar.api import Workload
    from inputs import load_input, reference
    from measure import Config, app_params, finepar_config
    spec = f"graph500:{scale}"
    t0 = time.perf_counter()
    g, info = load_input(spec)
    info = dict(info, wall_s=time.perf_counter() - t0,
                process_peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    for name in args.apps.split(","):
        if budget.spent():
            res.note(f"budget spent: {name} on {g.name} not run")
            return
        app = apps.get(name)
        params = app_params(app, g)
        ref, ref_info = reference(app, g, params, backend=gpu)
        row = {"graph": g.name, "spec": spec, "part": "large", "n": g.n, "nnz": g.nnz,
               "app": name, "input": info, "reference": ref_info, "systems": {}}
        res.add(row)
        rec = finepar_config(Workload(name, g), pair, Config("default"), params, ref,
                             repeats=args.large_repeats, model=args.model)
        rec["streaming"] = streaming(rec)
        put(row, "systems", "default", rec)
        res.save()
        log(f"{g.name} {name}: {'correct' if rec['correct'] else 'WRONG ' + rec['problem']}, "
            f"{stat_cell(rec.get('seconds'))} ms")


# ------------------------------------------------------------------------- targets


def targets(doc, args) -> list:
    """The issue's targets, each met, missed or not measured, with the numbers."""
    from measure import Targets, median
    t = Targets()
    copy = doc.get("plain_copy")
    for r in doc["rows"]:
        sy = r["systems"]
        if r["part"] == "chunks":
            st = (sy.get("streaming") or {}).get("streaming")
            bw = st["bandwidth"]["median"] if st and sy["streaming"].get("correct") else None
            plain = (copy or {}).get("median")
            t.ratio(f"{r['graph']} {r['app']}: streaming >= 80% of the plain copy's bandwidth",
                    bw / plain if bw and plain else None, 0.8,
                    f"{fmt(bw / 1e9 if bw else None)} GB/s vs {fmt(plain / 1e9 if plain else None)}"
                    f" GB/s: {fmt(100 * bw / plain if bw and plain else None, 0)}%",
                    "no correct streaming run or no plain copy")
            a, b = median(sy.get("streaming")), median(sy.get("streaming + cpu"))
            t.ratio(f"{r['graph']} {r['app']}: the CPU share makes the streaming run >= 1.15x "
                    f"faster", a / b if a and b else None, 1.15,
                    f"streaming {fmt(a * 1e3 if a else None)} ms, + cpu (T_f="
                    f"{r['cpu_threshold']}) {fmt(b * 1e3 if b else None)} ms: "
                    f"{fmt(a / b) if a and b else '-'}x", "a streaming run not measured")
            one, ch = median(sy.get("one buffer")), median(sy.get("resident chunks"))
            n_ch = ((sy.get("resident chunks") or {}).get("ran") or {}).get("gpu_chunks")
            t.ratio(f"{r['graph']} {r['app']}: resident chunks cost <= 5% against one buffer",
                    ch / one if ch and one else None, 1.05,
                    f"{n_ch} chunks {fmt(ch * 1e3 if ch else None)} ms vs one buffer "
                    f"{fmt(one * 1e3 if one else None)} ms: "
                    f"{fmt(100 * (ch / one - 1) if ch and one else None, 1)}%",
                    "a run not measured", at_most=True)
        else:
            rec = sy.get("default") or {}
            t.add(f"{r['graph']} {r['app']}: correct", bool(rec.get("correct")),
                  rec.get("problem") or f"checked against {r['reference'].get('how')}")
    return t.items


# -------------------------------------------------------------------------- render


def render(doc, args) -> str:
    """The RESULTS.md section of a run's document: the targets, then a table per graph
    and app."""
    copy = doc.get("plain_copy") or {}
    lines = ["## Pipelined chunks: streaming and the CPU share (§4.3)", "",
             f"Device: {doc['device']}. Date: {doc['date']}. `benchmarks/pipeline.py`, every "
             f"configuration of a graph side by side in one run. Times in ms, median (min-max) "
             f"of {doc['args']['repeats']} runs after a warm-up ({doc['args']['large_repeats']} "
             f"on the large graphs). Plain copy: {stat_cell(copy, 1e-9, 2)} GB/s from a pinned "
             f"host buffer to the GPU ({copy.get('bytes', 0) / 2**20:.0f} MiB, OpenCL events). "
             f"Streaming bandwidth: bytes streamed over the uploads' busy time (the RunReport); "
             f"overlap: the share of the shorter of uploads and kernels hidden behind the "
             f"other. Every answer was checked against the reference before its time was "
             f"kept (WRONG: failed, no time).", ""]
    lines += [f"- {n}" for n in doc.get("notes", [])] + ([""] if doc.get("notes") else [])
    if doc.get("targets"):
        lines += ["Targets:", ""] + target_lines(doc["targets"]) + [""]
    for r in doc["rows"]:
        gen = (r.get("input") or {}).get("generated")
        lines += [f"### {r['app']} on {r['graph']} ({r['n']:,} vertices, {r['nnz']:,} nnz)", ""]
        if r["part"] == "large":
            lines += [("Generated in " + f"{gen['generate_s']:.1f} s, peak memory "
                       f"{gen['peak_rss_bytes'] / 2**30:.1f} GiB (the generating process)"
                       if gen else "Read from the cache (generated earlier in this call)")
                      + f"; read in {r['input'].get('load_s', 0):.1f} s.", ""]
        else:
            lines += [f"GPU share {r['share_bytes'] / 2**20:.0f} MiB; chunks of "
                      f"{r['chunk_bytes'] / 2**20:.1f} MiB; streaming budget "
                      f"{r['gpu_memory'] / 2**20:.0f} MiB; T_f for the CPU share "
                      f"{r['cpu_threshold']}.", ""]
        lines += ["| configuration | ms / run | iterations | gpu chunks | streamed nnz | cpu nnz "
                  "| streaming GB/s | overlap | what ran |", "|---|---|---|---|---|---|---|---|---|"]
        for label, rec in ordered(r, "systems"):
            rn = rec.get("ran") or {}
            st = rec.get("streaming") or {}
            if not rec.get("correct"):
                lines.append(f"| {label} | WRONG | | | | | | | {(rec.get('problem') or '')[:80]} |")
                continue
            lines.append(f"| {label} | {stat_cell(rec.get('seconds'), digits=2)} | "
                         f"{rn.get('iterations')} | {rn.get('gpu_chunks')} | "
                         f"{rn.get('gpu_streamed_nnz') or 0:,} | {rn.get('cpu_nnz') or 0:,} | "
                         f"{stat_cell(st.get('bandwidth'), 1e-9, 2)} | "
                         f"{stat_cell(st.get('overlap'), 1.0, 2)} | {rn.get('plan')}"
                         + (f", model {rn['model']}" if rn.get("model") else "") + " |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main_of(main))
