"""The ``finepar`` command line.

Subcommands: ``devices``, ``run``, ``generate`` (and, where present,
``train``, ``models``, ``compare``). Every error FinePar raises on purpose is
printed as one line ``finepar: error: ...`` with exit status 2 (bad input,
bad option) or 1 (device, build, model), and leaves no partial output file. An
iterative app that stops at its default cap unconverged (PageRank, RWR, HITS)
writes its outputs, says so in one line and exits with status 3
(:data:`NOT_CONVERGED`), unless ``--max-iter`` asked for that many iterations.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import __version__
from .errors import BuildError, FineParError, UsageError
from .files import check_output
from .report import human_bytes

DEFAULT_GRAPH = "graph500:16"
GRAPH_HELP = (f"input: .mtx, .mtx.gz, SNAP .txt/.txt.gz, .npz, or graph500:SCALE[:SEED] "
              f"(default {DEFAULT_GRAPH})")


class _Parser(argparse.ArgumentParser):
    """argparse with FinePar's one-line errors: ``finepar: error: ...``, exit status 2."""

    def error(self, message: str):
        print(f"finepar: error: {message} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(2)


#: Exit status of a run that stopped unconverged at the app's own cap.
NOT_CONVERGED = 3


def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, not {v}")
        return v
    parse.__name__ = f"integer >= {low}"
    return parse


def _float_in(low: float, high: float, *, open_low: bool, open_high: bool):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, not {text!r}") from None
        ok = ((v > low if open_low else v >= low) and (v < high if open_high else v <= high))
        if not ok:
            lo, hi = "(" if open_low else "[", ")" if open_high else "]"
            raise argparse.ArgumentTypeError(f"must be in {lo}{low:g}, {high:g}{hi}, not {text}")
        return v
    parse.__name__ = "number"
    return parse


def _size(text: str) -> int:
    """A size in bytes: ``123``, ``24MB``, ``50MiB``, ``1.5GB`` (decimal and binary units)."""
    import re
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kKmMgGtT]?)(i?)[bB]?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"must be a size like 24MB or 50MiB, not {text!r}")
    num, unit, binary = float(m.group(1)), m.group(2).upper(), m.group(3)
    power = " KMGT".index(unit) if unit else 0
    value = int(num * (1024 if binary else 1000) ** power)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive size, not {text!r}")
    return value


_NONNEG = _int_at_least(0)
_POSITIVE = _int_at_least(1)
_UNIT_OPEN = _float_in(0.0, 1.0, open_low=True, open_high=True)
_UNIT_CLOSED = _float_in(0.0, 1.0, open_low=False, open_high=False)
_POSITIVE_FLOAT = _float_in(0.0, float("inf"), open_low=True, open_high=True)


def _add_device_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("devices")
    g.add_argument("--cpu", metavar="SEL",
                   help="device for the cpu role: 'P:D', or a substring of 'platform|device' "
                        "(env FINEPAR_CPU_DEVICE; default: the first CPU device, PoCL preferred)")
    g.add_argument("--gpu", metavar="SEL",
                   help="device for the gpu role, or 'emulate' for a second PoCL context "
                        "(env FINEPAR_GPU_DEVICE; default: the GPU with most compute units)")
    g.add_argument("--config", metavar="TOML",
                   help="platform config (env FINEPAR_CONFIG; default ./finepar.toml if present)")


def _add_plan_options(p: argparse.ArgumentParser) -> None:
    """How the work is split and lowered (run)."""
    from .partition import GROUPINGS
    g = p.add_argument_group("split")
    g.add_argument("--threshold", "-T", type=_NONNEG, metavar="N",
                   help="T_f: rows with more than N nonzeros go to the CPU "
                        "(default: chosen by the tuner)")
    g.add_argument("--devices", choices=("auto", "both", "cpu", "gpu"), default="auto",
                   help="both: split the rows between the devices; cpu, gpu: one alone; "
                        "auto (default): both, except on an emulated pair (no GPU), where "
                        "the CPU runs alone")
    g.add_argument("--grouping", choices=("auto", *GROUPINGS), default="auto",
                   help="pow4: each device's rows grouped by length in powers of 4, one launch "
                        "per group with a thread mapping per group (§4.1); none: one launch per "
                        "device, a work-item per row (FinePar-original); adaptive: CSR-adaptive "
                        "row blocks in one launch; auto (default): the tuner picks what its "
                        "model predicts fastest (pow4 when --threshold or --devices cpu|gpu is "
                        "given)")
    from .throttle.dbwp import BISECTIONS
    from .throttle.plan import REMAP_CHOICES, SCHEDULE_CHOICES
    t = p.add_argument_group("throttling of the GPU share (throttling-atc18)")
    t.add_argument("--schedule", choices=SCHEDULE_CHOICES, default=None,
                   help="cache-fit partitions of the GPU share: one launch each (cf), taken "
                        "from a device-side queue (cf-q), merged where the first iterations "
                        "measure it faster (sj, sj-q), none; auto (default): only where the "
                        "share's vector entries exceed the cache, kept only if measured faster")
    t.add_argument("--bisect", choices=BISECTIONS, default=None,
                   help="how partitions are cut: kd (K-D tiling, default) or spac (coarsened "
                        "SPAC, needs the 'metis' extra)")
    t.add_argument("--remap", choices=REMAP_CHOICES, default=None,
                   help="relabel vertices first: dbwp (Algorithm 5: each partition's vertices "
                        "packed) or degree (descending degree); results keep the input's ids "
                        "(default none)")
    t.add_argument("--columns", choices=("auto", "hot", "none"), default="auto",
                   help="renumber each device's share's columns hottest first on that device "
                        "for an app that gathers a vector by column (SpMV's x): auto (default) "
                        "where that vector exceeds the device's cache and a few columns take "
                        "most reads, hot wherever possible, none (one process; not in "
                        "distributed runs)")
    t.add_argument("--cache-bytes", type=_size, default=None, metavar="SIZE",
                   help="the cache partitions must fit, e.g. 24MB or 50MiB (default: the GPU's "
                        "L2, from known sizes where the driver misreports it)")
    m = p.add_argument_group("memory (FinePar TKDE §4.3)")
    m.add_argument("--gpu-memory", type=_size, default=None, metavar="SIZE",
                   help="memory FinePar may use on the GPU, e.g. 8GB; a share that does not fit "
                        "is cut into chunks: resident while they fit, streamed from the host "
                        "every iteration beyond (default: the GPU's memory)")
    m.add_argument("--cpu-memory", type=_size, default=None, metavar="SIZE",
                   help="the same for the CPU side (default: the host's memory limit)")
    g.add_argument("--offsets", choices=("auto", "int64"), default="auto",
                   help="int64: 64-bit offsets in the kernels at any size (default: only for "
                        "shares past 2^31-1 entries)")


def _add_common_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--memory", choices=("auto", "shared", "split"), default=None,
                   help="shared: one context, zero-copy (APU / emulated); split: one context "
                        "per device with halo exchange (default: auto)")
    p.add_argument("--model", metavar="NAME",
                   help="performance model for the tuner: a platform name or .json "
                        "(default: the one matching the devices; see 'finepar models list')")
    p.add_argument("--no-calibrate", action="store_true",
                   help="when no model matches the devices, do not measure this machine first "
                        "(env FINEPAR_NO_CALIBRATE=1); use the nearest model or profile instead")
    p.add_argument("--drop-zeros", action="store_true",
                   help="drop explicit zeros stored in the input (default: keep them)")
    p.add_argument("--allow-isolated", action="store_true",
                   help="run an input that declares over 10 M vertices and over 1,000 per "
                        "stored entry (refused by default: nearly all would be isolated)")


def _param_type(param):
    """An argparse type for one app parameter, with the app's own check."""
    def parse(text: str):
        try:
            value = float(text) if param.kind == "float" else int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, not {text!r}") from None
        if param.check is not None:
            try:
                value = param.check("the value", value)
            except UsageError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None
        return value
    parse.__name__ = param.kind
    return parse


def _add_app_params(p: argparse.ArgumentParser, app) -> None:
    """One option per CLI parameter of ``app`` (from the registry)."""
    g = p.add_argument_group(f"{app.name} parameters")
    for prm in app.params:
        if not prm.cli:
            continue
        if prm.kind == "flag":
            g.add_argument(prm.option, dest=prm.name, action="store_true", help=prm.help)
        elif prm.kind == "choice":
            g.add_argument(prm.option, dest=prm.name, choices=prm.choices, default=None,
                           help=prm.help)
        else:
            g.add_argument(prm.option, dest=prm.name, default=None, help=prm.help,
                           type=int if prm.kind == "vertex" else _param_type(prm),
                           metavar="ID" if prm.kind == "vertex" else prm.kind.upper())


def cli_params(app, args) -> dict:
    """The app's parameters the command line gave, as given (vertex ids as the input
    names them): every option that was set, ``0`` included; flags only when on.

    Both the one-process and the distributed ``finepar run`` take their parameters
    from here, so an option reaches every rank unchanged.
    """
    out = {}
    for prm in app.params:
        if not prm.cli:
            continue
        v = getattr(args, prm.name, None)
        if v is None or (prm.kind == "flag" and not v):
            continue
        out[prm.name] = v
    return out


def _app_params(app, args, graph) -> dict:
    """The app's parameters from the command line; vertex ids as the input names them are
    mapped to rows (a one-line error for an id the input does not have)."""
    out = cli_params(app, args)
    for prm in app.params:
        if prm.kind == "vertex" and prm.name in out:
            try:
                out[prm.name] = graph.vertex_index(out[prm.name])
            except ValueError as exc:
                raise UsageError(f"{prm.option} {out[prm.name]}: {exc}") from None
    return out


def cmd_devices(args) -> int:
    from .config import load_config
    from .runtime import list_devices, prepare_icd, select_pair
    _check_outputs(args, json_=(".json",))
    config = load_config(args.config)
    icd = prepare_icd()
    devices = list_devices(config.get("cache_overrides"))
    sel = None
    err = None
    try:
        sel = select_pair(args.cpu, args.gpu, config=config, devices=devices)
    except FineParError as exc:
        err = str(exc)
    if args.json:
        out = {"devices": [d.to_dict() for d in devices], "icd": {
            "nvidia_library": icd.nvidia_library, "registered": icd.registered,
            "vendors_dir": icd.vendors_dir, "fix": icd.fix_command, "notes": icd.notes},
            "selection": sel.to_dict() if sel else None, "error": err,
            "config": config.get("source")}
        text = json.dumps(out, indent=2)
        if args.json == "-":
            print(text)
        else:
            from .files import atomic_write_text
            atomic_write_text(args.json, text + "\n")
    from .report import format_table
    rows = []
    for d in devices:
        role = ""
        if sel is not None:
            roles = []
            if d.address == sel.cpu.address:
                roles.append("cpu")
            if d.address == sel.gpu.address:
                roles.append("gpu (emulated)" if sel.emulated else "gpu")
            role = "+".join(roles)
        cache = human_bytes(d.cache_bytes)
        if d.cache_source != "driver":
            cache += f" ({d.cache_source}; driver says {human_bytes(d.cache_bytes_reported)})"
        rows.append([d.address, d.platform[:28], d.name[:34], d.kind, role, d.compute_units,
                     human_bytes(d.global_mem_bytes), human_bytes(d.max_alloc_bytes), cache,
                     "yes" if d.host_unified_memory else "no"])
    if args.json != "-":
        if rows:
            print(format_table(["P:D", "platform", "device", "type", "role", "CUs", "memory",
                                "max alloc", "L2 cache", "host-unified"], rows,
                               align="lllllrrrll"))
        else:
            print("no OpenCL devices found")
        for note in icd.notes:
            print(f"note: {note}")
        if icd.nvidia_library and not icd.registered and not any(
                "nvidia" in d.platform.lower() for d in devices):
            print(f"note: the NVIDIA driver library {icd.nvidia_library} is present but no NVIDIA "
                  f"platform loaded; fix: {icd.fix_command}")
        if config.get("source"):
            print(f"config: {config['source']}")
        if sel is not None:
            print(f"selected: cpu = {sel.cpu.address} {sel.cpu.name} ({sel.how.get('cpu')}); "
                  f"gpu = {sel.gpu.address} {sel.gpu.name} ({sel.how.get('gpu')})")
            if sel.emulated:
                print("EMULATED pair: no GPU in use; the gpu role is a second context on the "
                      "CPU device. Every code path runs; timings say nothing about a GPU.")
            mem = ("shared" if sel.emulated or (sel.same_platform and sel.gpu.host_unified_memory)
                   else "split")
            print(f"memory mode (auto): {mem}")
    if err:
        raise FineParError(err)
    return 0


def _check_outputs(args, **suffixes) -> None:
    """Check every output option before any work (see :func:`finepar.files.check_output`).

    ``suffixes`` maps an attribute of ``args`` (``json_`` for ``args.json``) to its
    accepted endings; ``--json -`` (standard output) needs no check."""
    for attr, ends in suffixes.items():
        name = attr.rstrip("_")
        path = getattr(args, name, None)
        if path and not (name == "json" and path == "-"):
            check_output(path, f"--{name}", force=getattr(args, "force", False), suffixes=ends)


def _engine_options(app, n: int, args, config: dict):
    """EngineOptions from the flags, else the config's [budget] table."""
    from .engine import EngineOptions
    budget = config.get("budget") or {}
    return EngineOptions(
        offsets=getattr(args, "offsets", "auto"), columns=getattr(args, "columns", "auto"),
        gpu_memory=args.gpu_memory if args.gpu_memory is not None else budget.get("gpu_memory"),
        cpu_memory=args.cpu_memory if args.cpu_memory is not None else budget.get("cpu_memory"),
        reserve_bytes=app.state_bytes(n))


def _throttle_options(args, config: dict):
    """ThrottleOptions from the flags, else the config's [throttle] table, else defaults."""
    from .throttle.plan import ThrottleOptions
    table = dict(config.get("throttle") or {})
    for key in ("schedule", "bisect", "remap", "cache_bytes"):
        if getattr(args, key, None) is not None:
            table[key] = getattr(args, key)
    return ThrottleOptions(**table).check()


def _cache(config: dict):
    """The prepared-graph cache of a run (its cap from the config), or False when
    ``$FINEPAR_NO_CACHE`` is set."""
    from .prepcache import PrepCache, default_max_bytes
    return False if os.environ.get("FINEPAR_NO_CACHE") else PrepCache(
        max_bytes=default_max_bytes(config))


def cmd_run(args) -> int:
    from .mpi.cli import wanted
    if wanted(args):  # mpiexec started several ranks, or --distributed
        from .mpi.cli import cmd_run as distributed
        return distributed(args)
    import time
    from . import apps
    from .api import load_graph, memory_check, open_pair, run
    from .config import load_config
    started = _process_seconds()
    app = apps.get(args.app)
    config = load_config(args.config)
    _check_outputs(args, output=(".npy",), json_=(".json",))
    if args.output:
        check_output(str(args.output)[:-4] + ".ids.npy", "--output", force=args.force)
    t0 = begun = time.perf_counter()
    opening = open_pair(cpu=args.cpu, gpu=args.gpu, memory=args.memory or "auto",
                        config=config)  # devices chosen; their contexts open while it loads
    devices_s = time.perf_counter() - t0
    options = _engine_options(app, 0, args, config)
    cache = False if args.no_cache else _cache(config)
    t0 = time.perf_counter()
    try:
        graph = load_graph(args.graph, drop_zeros=args.drop_zeros,
                           check_size=memory_check(app.name, opening, options,
                                                    allow_isolated=args.allow_isolated), cache=cache)
    except BaseException:
        opening.wait()  # no context opens behind a failed command (a server's next one)
        raise
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pair = opening.result()
    devices_s += time.perf_counter() - t0  # the opening's wait the load did not hide
    params = _app_params(app, args, graph)
    options.reserve_bytes = app.state_bytes(graph.n)
    result, report = run(app.name, graph, pair=pair, threshold=args.threshold,
                         devices=args.devices, grouping=args.grouping,
                         warmup=not args.no_warmup, load_seconds=load_s, model=args.model,
                         step=(config.get("tuner") or {}).get("step", 64),
                         options=options,
                         calibrate=False if args.no_calibrate else None,
                         throttle=_throttle_options(args, config), cache=cache, **params)
    report.timings["devices"] = devices_s
    if started is not None:
        report.timings["start"] = started
    report.builds = build_summary(pair, since=begun)
    return finish_run(args, result, report, graph.ids)


def build_summary(pair, since: float) -> dict:
    """The programs ``pair`` built since ``since`` (:func:`time.perf_counter` seconds) for
    :attr:`finepar.report.RunReport.builds`; the log keeps no earlier entry (a resident
    pair's log stays as long as one command's)."""
    pair.build_log[:] = [b for b in pair.build_log if b["started"] >= since]
    done = [dict(b, start=b["started"] - since) for b in pair.build_log]
    for b in done:
        del b["started"]
    return {"programs": len(done), "compiled": sum(not b["binary"] for b in done),
            "seconds": sum(b["seconds"] for b in done), "list": done}


def _process_seconds() -> float | None:
    """Seconds from the start of the process that asked for this run to now: this
    process's age, or in ``finepar serve`` the client's age when it sent the command."""
    from . import resident
    from .serve import process_seconds
    store = resident.current()
    if store is not None:
        return store.start_seconds
    return process_seconds()


def cmd_serve(args) -> int:
    """``finepar serve``: run clients' commands, keeping what they prepare."""
    from .serve import serve, socket_path, stop
    path = args.socket or socket_path()
    if args.stop:
        if not stop(path):
            raise UsageError(f"no FinePar server listens on {path}")
        print(f"stopped the FinePar server on {path}")
        return 0
    if args.idle_timeout < 0:
        raise UsageError(f"--idle-timeout must be >= 0 seconds, not {args.idle_timeout:g}")
    return serve(path, idle_timeout=args.idle_timeout, keep=args.keep,
                 ready=lambda p: print(f"finepar serve: listening on {p} (idle timeout "
                                       f"{args.idle_timeout:g} s; 'finepar serve --stop' "
                                       f"stops it)", flush=True))


def finish_run(args, result, report, ids) -> int:
    """The outputs of ``finepar run``: the report as JSON (``--json``, ``-`` for standard
    output), the result vector (``--output``, with the input's ``ids`` beside it when the
    loader compacted them) and the text report."""
    import time
    from .files import atomic_save_npy
    if args.output:  # first: the report says what writing it took
        t0 = time.perf_counter()
        atomic_save_npy(args.output, result.values)
        if ids is not None:
            atomic_save_npy(str(args.output)[:-4] + ".ids.npy", ids)
        report.timings["answer"] = time.perf_counter() - t0
    if args.json == "-":
        print(json.dumps(report.to_dict(), indent=2))
        args.quiet = True
    elif args.json:
        report.write_json(args.json)
    if not args.quiet:
        print(report.text(title=f"finepar run {report.app}"))
        if args.output:
            extra = (f" (vertex i is input id ids[i], saved as "
                     f"{str(args.output)[:-4]}.ids.npy)" if ids is not None else "")
            print(f"  output     {args.output}{extra}")
        if args.json:
            print(f"  report     {args.json}")
    return _unconverged(args, result, report.app)


def _unconverged(args, result, app: str) -> int:
    """0, or :data:`NOT_CONVERGED` with one line on standard error where the run stopped
    at the app's own cap before its tolerance (a cap the user set is the user's)."""
    if result.converged or getattr(args, "max_iter", None) is not None:
        return 0
    sys.stdout.flush()
    why = (" (its change stopped shrinking at float32's rounding: --tol is below what "
           "float32 reaches)" if result.extra.get("stalled") else "")
    print(f"finepar: error: {app} did not converge in {result.iterations:,} iterations{why} "
          f"(the answer was written as it stands); --max-iter N runs exactly N",
          file=sys.stderr)
    return NOT_CONVERGED


def cmd_cache(args) -> int:
    """``finepar cache list|clear``."""
    import datetime as dt
    from .prepcache import PrepCache
    cache = PrepCache()
    if args.cache_command == "clear":
        count, freed = cache.clear()
        print(f"removed {count} prepared entries and {human_bytes(freed)} from {cache.root}")
        return 0
    if args.json:
        _check_outputs(args, json_=(".json",))
    entries = cache.entries()
    rows = [{"key": e.key, "app": e.meta.get("app"), "graph": e.meta.get("graph"),
             "threshold": e.meta.get("threshold"), "grouping": e.meta.get("grouping"),
             "schedule": (e.meta.get("throttle") or {}).get("schedule", "none"),
             "prepare_seconds": e.meta.get("prepare_seconds"), "bytes": e.nbytes,
             "used": dt.datetime.fromtimestamp(e.used).isoformat(timespec="seconds")}
            for e in entries]
    if args.json:
        text = json.dumps({"dir": str(cache.dir), "max_bytes": cache.max_bytes,
                           "entries": rows}, indent=2)
        if args.json == "-":
            print(text)
            return 0
        from .files import atomic_write_text
        atomic_write_text(args.json, text + "\n")
    from .report import format_table
    total = sum(e.nbytes for e in entries)
    print(f"{cache.dir}: {len(entries)} entries, {human_bytes(total)} of "
          f"{human_bytes(cache.max_bytes)}")
    if rows:
        print(format_table(["key", "app", "graph", "T_f", "grouping", "schedule", "prepared in",
                            "size", "last used"],
                           [[r["key"][:12], r["app"], r["graph"], r["threshold"], r["grouping"],
                             r["schedule"], f"{r['prepare_seconds'] or 0:.2f} s",
                             human_bytes(r["bytes"]), r["used"]] for r in rows]))
    return 0


def cmd_generate(args) -> int:
    import resource  # Unix only, as PoCL
    import time
    from .io.graph500 import diagonal_copy, kronecker
    from .io import save
    _check_outputs(args, output=(".npz", ".mtx", ".mtx.gz"))
    out = Path(args.output)
    started = time.perf_counter()
    tty = sys.stderr.isatty()
    stages: list[str] = []

    def progress(fraction: float, what: str) -> None:
        """A stderr line per stage with the fraction done (on a terminal, updated in place)."""
        new = not stages or stages[-1] != what
        if new:
            stages.append(what)
        if tty:
            lead = "\n\r" if new and len(stages) > 1 else "\r"
            print(f"{lead}generate: {fraction:4.0%} {what}", end="", file=sys.stderr, flush=True)
        elif new:
            print(f"generate: {fraction:4.0%} {what}", file=sys.stderr, flush=True)

    try:
        g = kronecker(args.scale, args.edgefactor, args.a, args.b, args.c, args.d, seed=args.seed,
                      symmetric=not args.directed, workers=args.workers, progress=progress)
    except ValueError as exc:
        raise UsageError(f"generate --scale {args.scale}: {exc}") from None
    if args.type1:
        progress(1.0, "placing each row's nonzeros around the diagonal")
        g = diagonal_copy(g)
    big = g.nnz > 10 ** 8  # deflating gigabytes of indices takes minutes and saves little
    progress(1.0, f"writing {out}{' uncompressed' if big else ''}")
    save(g, out, compressed=not big)
    if tty:
        print(file=sys.stderr)
    print(f"wrote {out}: {g.n:,} vertices, {g.nnz:,} stored entries ({g.name})")
    for note in g.notes:
        print(f"  {note}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB (bytes on macOS)
    peak *= 1 if sys.platform == "darwin" else 1024
    print(f"took {time.perf_counter() - started:.1f} s, peak memory {peak / 2 ** 30:.2f} GiB")
    return 0


def cmd_train(args) -> int:
    from .api import make_pair
    from .config import load_config
    from .split.training import ALL_GPU, RECIPES, summary, train
    config = load_config(args.config)
    pair = make_pair(cpu=args.cpu, gpu=args.gpu, memory=args.memory or "auto", config=config)
    rec = RECIPES[args.recipe]
    print(f"training on {pair.describe()}")
    print(f"recipe {rec.name}: S={','.join(map(str, rec.scales))}, {rec.quadruplets} quadruplets "
          f"per S, type 1 and 2, T_f in "
          f"{{{', '.join('all-GPU' if t == ALL_GPU else str(t) for t in rec.thresholds)}}}: "
          f"{rec.runs} runs", flush=True)
    out = train(pair, platform=args.platform or config.get("platform"), recipe=rec,
                training_root=args.training_dir, models_dir=args.models_dir, kind=args.kind,
                progress=not args.no_progress)
    print(summary(out))
    print(f"measurements: {out['measurements_path']} ({out['records']} records); "
          f"log: {out['log_path']}")
    if out.get("model") is not None:
        print(f"model written to {out['model_path']}")
        for w in out["warnings"]:
            print(f"warning: {w}")
        print(_model_tables(out["model"]))
    return 0


def _model_tables(model) -> str:
    from .features import FEATURE_NAMES
    from .report import format_table
    rows, corr = [], []
    for (g, t, r), dm in sorted(model.models.items()):
        r2 = f"{dm.r2:.2f}" + (" (!)" if dm.r2 < 0 else "")
        if dm.kind in ("linear", "loglinear"):
            rows.append([g, f"Type {t}", r.upper(), *[f"{c:.4g}" for c in dm.coef],
                         f"{dm.intercept:.4g}", r2, f"{dm.r2_log:.2f}", dm.n_samples])
        else:
            rows.append([g, f"Type {t}", r.upper(), "mlp", "", "", "", "", r2,
                         f"{dm.r2_log:.2f}", dm.n_samples])
        corr.append([g, f"Type {t}", r.upper(), *[f"{dm.correlations.get(f, 0):.2f}"
                                                  for f in FEATURE_NAMES]])
    head = (f"model {model.platform} ({'emulated pair' if model.emulated else 'two devices'}; "
            f"trained {model.meta.get('trained') or model.meta.get('date', '?')}, "
            f"recipe {(model.meta.get('recipe') or {}).get('name', '?')}, "
            f"{model.meta.get('records', '?')} measurements)\n"
            f"  file: {model.path or 'not saved'} ({model.origin or 'in memory'})\n"
            f"  cpu: {model.devices.get('cpu')}\n  gpu: {model.devices.get('gpu')}\n")
    t4 = format_table(["groups", "type", "device", "C1 (AW)", "C2 (VW)", "C3 (log NW)",
                       "C4 (log SW)", "C5", "r2", "r2 log", "samples"], rows,
                      align="lllrrrrrrrr")
    t5 = format_table(["groups", "type", "device", *FEATURE_NAMES], corr, align="lllrrrr")
    tr = model.transfer
    tail = (f"\ntransfer: latency {tr.latency_s * 1e6:.1f} us, bandwidth {tr.bandwidth / 1e9:.2f} "
            f"GB/s, one halo exchange round {tr.round_s * 1e6:.1f} us" if tr
            else "\ntransfer: none (shared memory)")
    tail += f"\nco-running step: +{model.corun_s * 1e6:.1f} us over the slower device alone"
    for role, o in sorted(model.overhead.items()):
        tail += (f"\n{role} step overhead: {o.step_s * 1e6:.1f} us for one launch, "
                 f"+{o.launch_s * 1e6:.1f} us per further launch")
    for w in model.poor_fits():
        tail += f"\nwarning: {w}"
    kinds = {dm.kind for dm in model.models.values()}
    form = "C1*AW + C2*VW + C3*log NW + C4*log SW + C5"
    eq = (f"log(throughput) = {form}" if kinds == {"loglinear"} else
          f"throughput (nnz/s) = {form}" if kinds == {"linear"} else
          f"throughput (nnz/s) = {form} (linear), exp(...) (loglinear)")
    return (head + f"\nTable 4: {eq}; r2 on the throughput and on its log (!: below 0)\n"
            + t4 + "\n\nTable 5: correlation of each feature with throughput\n" + t5 + tail)


def _devices_match(args):
    """(selection, match) for the devices the options name; (None, reason) if there
    are none to be found."""
    from .config import load_config
    from .errors import DeviceError
    from .split.perfmodel import match_model
    from .runtime import select_pair
    try:
        sel = select_pair(args.cpu, args.gpu, config=load_config(args.config))
    except DeviceError as exc:
        return None, str(exc)
    return sel, match_model(sel)


def cmd_models_list(args) -> int:
    from .split.calibrate import explain
    from .split.perfmodel import available_models, model_sources
    from .report import format_table
    models = available_models()
    sel, match = _devices_match(args)
    chosen = match.path if sel is not None else None
    rows = [[m.platform, m.origin, m.meta.get("kind", "linear"), "yes" if m.emulated else "no",
             m.devices.get("cpu", "")[:40], m.devices.get("gpu", "")[:40],
             ("<- " + ("exact" if match.exact else "nearest")) if m.path == chosen else "",
             m.path] for m in models]
    if rows:
        print(format_table(["platform", "from", "kind", "emulated", "cpu", "gpu", "applies",
                            "file"], rows))
    else:
        print("no models found (run 'finepar train')")
    print("searched, in order: " + "; ".join(f"{o} {f}" for o, f in model_sources()))
    if sel is None:
        print(f"devices in use: unknown ({match})")
    else:
        print(f"devices in use: cpu={sel.cpu.key!r}, gpu={sel.gpu.key!r}"
              f"{' (emulated)' if sel.emulated else ''}: {explain(match)}")
    return 0


def cmd_models_show(args) -> int:
    from .split.calibrate import explain
    from .errors import ModelError
    from .split.perfmodel import find_model
    sel, match = _devices_match(args)
    if args.name:
        model = find_model(args.name)
        why = _why_named(model, sel, match)
    elif sel is None:
        raise ModelError(f"no devices to find a model for ({match}); name one")
    elif match.model is None:
        raise ModelError(f"no model for these devices: {explain(match)}")
    else:
        model, why = match.model, explain(match)
    if args.json:
        print(json.dumps(model.to_dict(), indent=2))
        return 0
    print(_model_tables(model))
    print(f"applies to the devices in use: {why}")
    return 0


def _why_named(model, sel, match) -> str:
    """Whether a model named on the command line is the one for the devices in use."""
    from .split.calibrate import explain
    if sel is None:
        return f"unknown: no devices ({match})"
    if match.path and os.path.realpath(match.path) == os.path.realpath(model.path):
        return f"yes: {explain(match)}"
    other = (f"{match.model.platform} ({match.path})" if match.model else "none")
    if model.devices == {"cpu": sel.cpu.key, "gpu": sel.gpu.key} and \
            model.emulated == sel.emulated:
        return f"its devices match, but {other} comes first in lookup order"
    return f"no: trained on other devices; for the devices in use: {other}, {explain(match)}"


def cmd_models_fit(args) -> int:
    from .split.training import refit
    model = refit(args.name, training_root=args.training_dir, models_dir=args.models_dir,
                  kind=args.kind)
    print(f"model written to {model.path}")
    print(_model_tables(model))
    return 0


def cmd_compare(args) -> int:
    import time
    from . import apps
    from .api import load_graph, make_pair, memory_check
    from .baselines import ALL_METHODS, METHODS, THROTTLE_METHODS, compare
    from .config import load_config
    config = load_config(args.config)
    groups = {"table2": METHODS, "fig9": THROTTLE_METHODS, "all": ALL_METHODS}
    methods = METHODS
    if args.methods:
        methods = tuple(x for m in args.methods.split(",")
                        for x in groups.get(m.strip(), (m.strip(),)))
    bad = [m for m in methods if m not in ALL_METHODS]
    if bad:
        raise UsageError(f"--methods: unknown method(s) {', '.join(bad)} "
                         f"(choose from {', '.join(ALL_METHODS)}, or table2, fig9, all)")
    _check_outputs(args, plot=(".png",), json_=(".json",))
    pair = make_pair(cpu=args.cpu, gpu=args.gpu, memory=args.memory or "auto", config=config)
    t0 = time.perf_counter()
    graph = load_graph(args.graph, drop_zeros=args.drop_zeros,
                       check_size=memory_check(args.app, pair,
                                                        allow_isolated=args.allow_isolated))
    load_s = time.perf_counter() - t0
    params = _app_params(apps.get(args.app), args, graph)
    cmp = compare(args.app, graph, pair=pair, methods=methods, repeats=args.repeats,
                  oracle_step=args.oracle_step, model=args.model, params=params,
                  progress=not args.quiet, calibrate=False if args.no_calibrate else None)
    if args.json:
        from .files import atomic_write_json, jsonable
        from .report import environment
        doc = jsonable({**cmp.to_dict(), "load_seconds": load_s, "environment": environment()})
        if args.json == "-":
            print(json.dumps(doc, indent=2))
            args.quiet = True
        else:
            atomic_write_json(args.json, doc)
    if args.plot:
        cmp.plot(args.plot)
    if not args.quiet:
        print(cmp.table())
        if args.plot:
            print(f"plot: {args.plot}")
        if args.json:
            print(f"json: {args.json}")
    return 0 if all(r.correct for r in cmp.results) else 1


def build_parser() -> argparse.ArgumentParser:
    from . import apps
    from .baselines import METHODS, THROTTLE_METHODS
    from .mpi.cli import add_options as add_distributed_options
    p = _Parser(
        prog="finepar",
        description="Run irregular graph and sparse-matrix work on a CPU and a GPU at once, "
                    "with a fine-grained row split (FinePar).")
    p.add_argument("--version", action="version", version=f"finepar {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    d = sub.add_parser("devices", help="list OpenCL devices and the pair FinePar picks",
                       description="List every OpenCL platform and device with its role, "
                                   "compute units, memory, cache and host-unified memory, and "
                                   "show which CPU and GPU FinePar picks.")
    _add_device_options(d)
    d.add_argument("--json", metavar="PATH", help="also write the listing as JSON ('-': stdout only)")
    d.set_defaults(func=cmd_devices)

    r = sub.add_parser("run", help="run an app on a graph, split across CPU and GPU",
                       description="Run an app on a graph with a fine-grained split across the "
                                   "CPU and the GPU and print a short report. 'finepar run APP "
                                   "--help' lists the app's own options.")
    rsub = r.add_subparsers(dest="app", metavar="APP")
    rsub.required = True
    for app in apps.get_all():
        ra = rsub.add_parser(app.name, help=app.title, description=f"{app.title}. "
                             + (app.__doc__ or "").strip().split("\n\n")[0])
        ra.add_argument("graph", nargs="?", default=DEFAULT_GRAPH, help=GRAPH_HELP)
        _add_plan_options(ra)
        _add_common_options(ra)
        _add_app_params(ra, app)
        _add_device_options(ra)
        o = ra.add_argument_group("output")
        o.add_argument("--json", metavar="PATH",
                       help="write the full report as JSON ('-': to standard output, instead of "
                            "the text report)")
        o.add_argument("--output", "-o", metavar="FILE.npy",
                       help="save the result vector (the app's values)")
        o.add_argument("--force", action="store_true",
                       help="replace output files even where they are read-only")
        o.add_argument("--quiet", "-q", action="store_true", help="print nothing")
        o.add_argument("--no-warmup", action="store_true", help="time the first run too")
        o.add_argument("--no-cache", action="store_true",
                       help="neither reuse nor store the prepared plan (the prepared-graph "
                            "cache: 'finepar cache list')")
        o.add_argument("--no-server", action="store_true",
                       help="run in this process even while 'finepar serve' listens")
        add_distributed_options(ra)
        ra.set_defaults(func=cmd_run)

    sv = sub.add_parser("serve", help="stay up and run 'finepar run' commands, keeping "
                                      "devices, graphs and engines between them",
                        description="Listen on a socket and run the 'finepar run' commands "
                                    "of this user, one at a time, keeping the device pair, "
                                    "the graphs read and their prepared engines (buffers on "
                                    "the devices) between runs: a rerun on the same input "
                                    "skips opening the devices, reading the file and the "
                                    "uploads. While it listens, 'finepar run' hands its "
                                    "command to it (--no-server, or FINEPAR_NO_SERVER=1, "
                                    "runs in the caller's process).")
    sv.add_argument("--socket", default=None, metavar="PATH",
                    help="the socket (default: $FINEPAR_SERVER_SOCKET, else "
                         "finepar-UID/serve.sock in $XDG_RUNTIME_DIR or the temporary "
                         "directory)")
    sv.add_argument("--idle-timeout", type=float, default=3600.0, metavar="SECONDS",
                    help="stop after this long without a command (3600; 0: never)")
    sv.add_argument("--keep", type=_POSITIVE, default=4, metavar="N",
                    help="graphs and prepared engines kept at most, each (4; the least "
                         "recently used go first)")
    sv.add_argument("--stop", action="store_true", help="stop the server that listens")
    sv.set_defaults(func=cmd_serve)

    gen = sub.add_parser("generate", help="write a Graph500 Kronecker graph",
                         description="Generate a Graph500 Kronecker graph (2^SCALE vertices, "
                                     "EDGEFACTOR*2^SCALE edges, random vertex relabelling, "
                                     "seeded) and write it as .npz or .mtx.")
    gen.add_argument("--scale", "-s", type=_int_at_least(1), required=True,
                     help="log2 of the vertex count (1..30)")
    gen.add_argument("--edgefactor", "-e", type=_POSITIVE, default=16, help="edges per vertex (16)")
    gen.add_argument("-a", type=_UNIT_OPEN, default=0.57, help="initiator A (0.57)")
    gen.add_argument("-b", type=_UNIT_OPEN, default=0.19, help="initiator B (0.19)")
    gen.add_argument("-c", type=_UNIT_OPEN, default=0.19, help="initiator C (0.19)")
    gen.add_argument("-d", type=_UNIT_OPEN, default=0.05, help="initiator D (0.05)")
    gen.add_argument("--seed", type=_NONNEG, default=0)
    gen.add_argument("--directed", action="store_true",
                     help="keep edge directions (default: undirected, as Graph500)")
    gen.add_argument("--workers", type=_POSITIVE, default=None,
                     help="threads (default: every CPU available); the graph does not depend on it")
    gen.add_argument("--type1", action="store_true",
                     help="write the quasi-diagonal (type 1) copy: each row's nonzeros placed "
                          "around the diagonal")
    gen.add_argument("--output", "-o", required=True, help="output .npz, .mtx or .mtx.gz")
    gen.add_argument("--force", action="store_true",
                     help="replace the output file even where it is read-only")
    gen.set_defaults(func=cmd_generate)

    c = sub.add_parser("compare", help="FinePar against the partitioning baselines",
                       description="Run every partitioning method of FinePar TKDE Table 2 on one "
                                   "app and graph, check each answer against an independent "
                                   "reference, and print one table; optionally a bar chart. "
                                   "'finepar compare APP --help' lists the app's own options.")
    csub = c.add_subparsers(dest="app", metavar="APP")
    csub.required = True
    for app in apps.get_all():
        ca = csub.add_parser(app.name, help=app.title, description=app.title)
        ca.add_argument("graph", nargs="?", default=DEFAULT_GRAPH, help=GRAPH_HELP)
        ca.add_argument("--methods", metavar="LIST",
                        help="comma-separated methods: Table 2's " + ", ".join(METHODS)
                             + " (table2, the default); the throttling paper's Fig. 9 "
                             + ", ".join(THROTTLE_METHODS) + " (fig9); or all")
        ca.add_argument("--repeats", type=_POSITIVE, default=3,
                        help="timed runs per method (median, with min and max; 3)")
        ca.add_argument("--oracle-step", type=_float_in(0.0, 5.0, open_low=True, open_high=False),
                        default=5.0,
                        help="coarse oracle: percent of rows between T_c points, in (0, 5] (5)")
        _add_common_options(ca)
        _add_app_params(ca, app)
        _add_device_options(ca)
        o = ca.add_argument_group("output")
        o.add_argument("--plot", metavar="PNG", help="write a bar chart of the speedups")
        o.add_argument("--json", metavar="PATH",
                       help="write every measurement as JSON ('-': to standard output)")
        o.add_argument("--force", action="store_true",
                       help="replace output files even where they are read-only")
        o.add_argument("--quiet", "-q", action="store_true")
        ca.set_defaults(func=cmd_compare)

    k = sub.add_parser("cache", help="list or clear the prepared-graph cache",
                       description="The prepared-graph cache keeps what a run decided before "
                                   "its first step (T_f, cache-fit partitions, relabelling, the "
                                   "split-join cover) for the next run on the same input, "
                                   "devices and options, and the kernels' program binaries. "
                                   "Folder: $FINEPAR_CACHE_DIR, else the user cache directory; "
                                   "cap: $FINEPAR_CACHE_MAX_BYTES or the config's "
                                   "[prepared_cache] max_bytes.")
    ksub = k.add_subparsers(dest="cache_command", metavar="ACTION")
    ksub.required = True
    kl = ksub.add_parser("list", help="every entry: app, T_f, schedule, size, last use")
    kl.add_argument("--json", metavar="PATH", help="also write the listing as JSON ('-': stdout only)")
    kl.set_defaults(func=cmd_cache)
    kc = ksub.add_parser("clear", help="remove every entry and program binary")
    kc.set_defaults(func=cmd_cache)

    from .split.training import RECIPES
    t = sub.add_parser("train", help="measure this platform and fit its performance models",
                       description="Generate the training matrices (Graph500, type 1 and 2), "
                                   "split each at every T_f of the recipe, co-run both shares, "
                                   "record each device's throughput and fit the model (FinePar "
                                   "TKDE §3.3). Measurements, log and model go to the user data "
                                   "directory ($FINEPAR_HOME overrides it) unless "
                                   "--training-dir / --models-dir say otherwise. A rerun resumes.")
    t.add_argument("--platform", "-p", metavar="NAME",
                   help="platform name (default: derived from the devices)")
    t.add_argument("--recipe", choices=tuple(RECIPES), default="quick",
                   help="full: the paper's 3,840 runs (S=16..19; about 14 min on 2 cores, 5 on "
                        "a GPU machine); reduced: S=13..16; quick: minutes on 2 cores (default); "
                        "calibrate: what a first run on new devices measures (1-2 minutes)")
    t.add_argument("--kind", choices=("loglinear", "linear", "mlp"), default="loglinear",
                   help="loglinear: the paper's regression on log throughput (default); "
                        "linear: Eq. 1-2 as printed; mlp: §4.4")
    t.add_argument("--memory", choices=("auto", "shared", "split"), default=None)
    t.add_argument("--training-dir", default=None, metavar="DIR",
                   help="measurements root: DIR/NAME/ (default: the user data directory's "
                        "training/)")
    t.add_argument("--models-dir", default=None, metavar="DIR",
                   help="where NAME.json goes (default: the user data directory's models/)")
    t.add_argument("--no-progress", action="store_true",
                   help="no progress lines on stderr (they still go to the training log)")
    _add_device_options(t)
    t.set_defaults(func=cmd_train)

    m = sub.add_parser("models", help="list, show or refit performance models",
                       description="Inspect the fitted performance models. Lookup order: "
                                   "--model, $FINEPAR_MODELS, the user data directory, the "
                                   "models shipped with FinePar (never the current directory).")
    msub = m.add_subparsers(dest="models_command", metavar="ACTION")
    msub.required = True
    ml = msub.add_parser("list", help="every model found, where from, and which one applies "
                                      "to the devices in use")
    _add_device_options(ml)
    ml.set_defaults(func=cmd_models_list)
    ms = msub.add_parser("show", help="Table 4 (coefficients, r²) and Table 5 (correlations)")
    ms.add_argument("name", nargs="?", help="platform name or .json path (default: the model "
                                            "matching the devices in use)")
    ms.add_argument("--json", action="store_true", help="print the model file's JSON")
    _add_device_options(ms)
    ms.set_defaults(func=cmd_models_show)
    mf = msub.add_parser("fit", help="refit a model from recorded training measurements")
    mf.add_argument("name", help="platform name (DIR/NAME/ of the training measurements)")
    mf.add_argument("--kind", choices=("loglinear", "linear", "mlp"), default="loglinear",
                    help="loglinear: the paper's regression on log throughput (default); "
                         "linear: Eq. 1-2 as printed; mlp: §4.4")
    mf.add_argument("--training-dir", default=None, metavar="DIR",
                    help="measurements root (default: the user data directory's training/)")
    mf.add_argument("--models-dir", default=None, metavar="DIR",
                    help="where NAME.json goes (default: the user data directory's models/)")
    mf.set_defaults(func=cmd_models_fit)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``finepar`` console script."""
    if not (os.environ.get("FINEPAR_DEBUG") or os.environ.get("PYOPENCL_COMPILER_OUTPUT")):
        import warnings  # a driver's notes on a build that succeeded are not the user's news
        warnings.filterwarnings("ignore", message="Non-empty compiler output")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a one-line usage error
        return int(exc.code or 0)
    try:
        return int(args.func(args) or 0)
    except BuildError as exc:  # a driver's compiler failed: not the user's doing
        print(f"finepar: error: {exc}", file=sys.stderr)
        if os.environ.get("FINEPAR_DEBUG") and exc.log:
            print(exc.log, file=sys.stderr)
        return 1
    except FineParError as exc:  # what the user asked for cannot be done: say why, once
        print(f"finepar: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of our output went away (| head)
        return 0
    except OSError as exc:  # e.g. a disk that filled while writing an output
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"finepar: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("finepar: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
