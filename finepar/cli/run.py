"""``finepar run APP GRAPH``: one app on one graph, split across the pair (one process;
``mpiexec`` and ``--distributed`` take :mod:`finepar.cli.mpirun`)."""

from __future__ import annotations


from ..files import check_output
from .options import (DEFAULT_GRAPH, GRAPH_HELP, add_app_params, add_common_options,
                      add_device_options, add_plan_options, app_params, check_outputs,
                      engine_options, prepared_cache, throttle_options)
from .outputs import finish_run


def cmd_run(args) -> int:
    from .mpirun import wanted
    if wanted(args):  # mpiexec started several ranks, or --distributed
        from .mpirun import cmd_run as distributed
        return distributed(args)
    import time
    from .. import apps
    from ..api import load_graph, memory_check, open_pair, run
    from ..errors import UsageError
    from .config import load_config
    if getattr(args, "check", False):
        raise UsageError("--check: checks a distributed run's answer by range; run under "
                         "mpiexec, or add --distributed for one rank")
    started = _process_seconds()
    app = apps.get(args.app)
    config = load_config(args.config)
    check_outputs(args, output=(".npy",), json_=(".json",))
    if args.output:
        check_output(str(args.output)[:-4] + ".ids.npy", "--output", force=args.force)
    t0 = begun = time.perf_counter()
    opening = open_pair(cpu=args.cpu, gpu=args.gpu, memory=args.memory or "auto",
                        config=config)  # devices chosen; their contexts open while it loads
    devices_s = time.perf_counter() - t0
    options = engine_options(app, 0, args, config)
    cache = False if args.no_cache else prepared_cache(config)
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
    params = app_params(app, args, graph)
    options.reserve_bytes = app.state_bytes(graph.n)
    result, report = run(app.name, graph, pair=pair, threshold=args.threshold,
                         devices=args.devices, grouping=args.grouping,
                         warmup=not args.no_warmup, load_seconds=load_s, model=args.model,
                         step=(config.get("tuner") or {}).get("step", 64),
                         options=options,
                         calibrate=False if args.no_calibrate else None,
                         throttle=throttle_options(args, config), cache=cache, **params)
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
    from ..device import resident
    from .serve import process_seconds
    store = resident.current()
    if store is not None:
        return store.start_seconds
    return process_seconds()


def add(sub) -> None:
    """``finepar run APP``, one subcommand per registered app."""
    from .. import apps
    from .mpirun import add_options as add_distributed_options
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
        add_plan_options(ra)
        add_common_options(ra)
        add_app_params(ra, app)
        add_device_options(ra)
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
