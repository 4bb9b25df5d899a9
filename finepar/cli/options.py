"""The options the commands share (devices, the plan, the memory budgets, throttling,
the apps' parameters) and their parsing: one-line errors, exit status 2."""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import UsageError
from ..files import check_output


DEFAULT_GRAPH = "graph500:16"


GRAPH_HELP = (f"input: .mtx, .mtx.gz, SNAP .txt/.txt.gz, .npz, or graph500:SCALE[:SEED] "
              f"(default {DEFAULT_GRAPH})")


class Parser(argparse.ArgumentParser):
    """argparse with FinePar's one-line errors: ``finepar: error: ...``, exit status 2."""

    def error(self, message: str):
        print(f"finepar: error: {message} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(2)


def int_at_least(low: int):
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


def float_in(low: float, high: float, *, open_low: bool, open_high: bool):
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


def byte_size(text: str) -> int:
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


NONNEG = int_at_least(0)


POSITIVE = int_at_least(1)


UNIT_OPEN = float_in(0.0, 1.0, open_low=True, open_high=True)


UNIT_CLOSED = float_in(0.0, 1.0, open_low=False, open_high=False)


POSITIVE_FLOAT = float_in(0.0, float("inf"), open_low=True, open_high=True)


def add_device_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("devices")
    g.add_argument("--cpu", metavar="SEL",
                   help="device for the cpu role: 'P:D', or a substring of 'platform|device' "
                        "(env FINEPAR_CPU_DEVICE; default: the first CPU device, PoCL preferred)")
    g.add_argument("--gpu", metavar="SEL",
                   help="device for the gpu role, or 'emulate' for a second PoCL context "
                        "(env FINEPAR_GPU_DEVICE; default: the GPU with most compute units)")
    g.add_argument("--config", metavar="TOML",
                   help="platform config (env FINEPAR_CONFIG; default ./finepar.toml if present)")


def add_plan_options(p: argparse.ArgumentParser) -> None:
    """How the work is split and lowered (run)."""
    from ..partition import GROUPINGS
    g = p.add_argument_group("split")
    g.add_argument("--threshold", "-T", type=NONNEG, metavar="N",
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
    from ..throttle.dbwp import BISECTIONS
    from ..throttle.plan import REMAP_CHOICES, SCHEDULE_CHOICES
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
    w = p.add_argument_group("frontiers (FinePar TKDE §4.2)")
    w.add_argument("--walk", type=walk_option, default="auto", metavar="auto|none|EDGES",
                   help="BFS's and SSSP's small frontiers on one CPU work-item walking a queue: "
                        "auto (default) while a frontier's out-edges cost the walk less than a "
                        "level costs the push device (both measured), none never, or a fixed "
                        "number of out-edges")
    w.add_argument("--group-loop", choices=("auto", "always", "none"), default="auto",
                   help="a small input's form of a run: PageRank's and RWR's iterations "
                        "in one work-group's launch, BFS's levels and SSSP's rounds in one "
                        "work-group on a GPU alone, CC's every edge linked with no sampling "
                        "(one launch on a CPU, three on a GPU); auto (default) on inputs of "
                        "at most 65,536 entries (on a GPU, BFS and SSSP: 1,048,576, CC: "
                        "16,777,216), always on any, none never")
    t.add_argument("--cache-bytes", type=byte_size, default=None, metavar="SIZE",
                   help="the cache partitions must fit, e.g. 24MB or 50MiB (default: the GPU's "
                        "L2, from known sizes where the driver misreports it)")
    m = p.add_argument_group("memory (FinePar TKDE §4.3)")
    m.add_argument("--gpu-memory", type=byte_size, default=None, metavar="SIZE",
                   help="memory FinePar may use on the GPU, e.g. 8GB; a share that does not fit "
                        "is cut into chunks: resident while they fit, streamed from the host "
                        "every iteration beyond (default: the GPU's memory)")
    m.add_argument("--cpu-memory", type=byte_size, default=None, metavar="SIZE",
                   help="the same for the CPU side (default: the host's memory limit)")
    g.add_argument("--offsets", choices=("auto", "int64"), default="auto",
                   help="int64: 64-bit offsets in the kernels at any size (default: only for "
                        "shares past 2^31-1 entries)")
    g.add_argument("--device-times", choices=("auto", "batch", "launch"), default="auto",
                   help="the kernels' device times in the report: batch (each batch's span, "
                        "from profiling events), launch (every launch's); auto (default): "
                        "batch, but a run on the GPU alone enqueues on a plain queue "
                        "(NVIDIA's enqueue costs 7-10 us less a launch) and keeps none")


def add_common_options(p: argparse.ArgumentParser) -> None:
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


def param_type(param):
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


def add_app_params(p: argparse.ArgumentParser, app) -> None:
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
                           type=int if prm.kind == "vertex" else param_type(prm),
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


def app_params(app, args, graph) -> dict:
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


def check_outputs(args, **suffixes) -> None:
    """Check every output option before any work (see :func:`finepar.files.check_output`).

    ``suffixes`` maps an attribute of ``args`` (``json_`` for ``args.json``) to its
    accepted endings; ``--json -`` (standard output) needs no check."""
    for attr, ends in suffixes.items():
        name = attr.rstrip("_")
        path = getattr(args, name, None)
        if path and not (name == "json" and path == "-"):
            check_output(path, f"--{name}", force=getattr(args, "force", False), suffixes=ends)


def walk_option(text: str):
    """``--walk``: ``auto``, ``none`` or a count of out-edges (an int >= 0)."""
    import argparse
    if text in ("auto", "none"):
        return text
    if text.isdigit():
        return int(text)
    raise argparse.ArgumentTypeError(f"must be auto, none or a number of out-edges, not {text!r}")


def engine_options(app, n: int, args, config: dict):
    """EngineOptions from the flags, else the config's [budget] table."""
    from ..engine import EngineOptions
    budget = config.get("budget") or {}
    return EngineOptions(
        offsets=getattr(args, "offsets", "auto"), columns=getattr(args, "columns", "auto"),
        walk=getattr(args, "walk", "auto"), group_loop=getattr(args, "group_loop", "auto"),
        profile=getattr(args, "device_times", "auto"),
        gpu_memory=args.gpu_memory if args.gpu_memory is not None else budget.get("gpu_memory"),
        cpu_memory=args.cpu_memory if args.cpu_memory is not None else budget.get("cpu_memory"),
        reserve_bytes=app.state_bytes(n))


def throttle_options(args, config: dict):
    """ThrottleOptions from the flags, else the config's [throttle] table, else defaults."""
    from ..throttle.plan import ThrottleOptions
    table = dict(config.get("throttle") or {})
    for key in ("schedule", "bisect", "remap", "cache_bytes"):
        if getattr(args, key, None) is not None:
            table[key] = getattr(args, key)
    return ThrottleOptions(**table).check()


def prepared_cache(config: dict):
    """The prepared-graph cache of a run (its cap from the config), or False when
    ``$FINEPAR_NO_CACHE`` is set."""
    from ..prepcache import PrepCache, default_max_bytes
    return False if os.environ.get("FINEPAR_NO_CACHE") else PrepCache(
        max_bytes=default_max_bytes(config))
