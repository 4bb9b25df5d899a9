"""``finepar compare APP GRAPH``: every partitioning method of FinePar TKDE Table 2 on one
app and graph, each answer checked, in one table."""

from __future__ import annotations

import json

from ..errors import UsageError
from .options import (DEFAULT_GRAPH, GRAPH_HELP, POSITIVE, add_app_params, add_common_options,
                      add_device_options, app_params, check_outputs, float_in)


def cmd_compare(args) -> int:
    import time
    from .. import apps
    from ..api import load_graph, make_pair, memory_check
    from ..baselines import ALL_METHODS, METHODS, THROTTLE_METHODS, compare
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
    check_outputs(args, plot=(".png",), json_=(".json",))
    pair = make_pair(cpu=args.cpu, gpu=args.gpu, memory=args.memory or "auto", config=config)
    t0 = time.perf_counter()
    graph = load_graph(args.graph, drop_zeros=args.drop_zeros,
                       check_size=memory_check(args.app, pair,
                                                        allow_isolated=args.allow_isolated))
    load_s = time.perf_counter() - t0
    params = app_params(apps.get(args.app), args, graph)
    cmp = compare(args.app, graph, pair=pair, methods=methods, repeats=args.repeats,
                  oracle_step=args.oracle_step, model=args.model, params=params,
                  progress=not args.quiet, calibrate=False if args.no_calibrate else None)
    if args.json:
        from ..files import atomic_write_json, jsonable
        from ..report import environment
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


def add(sub) -> None:
    """``finepar compare APP``, one subcommand per registered app."""
    from .. import apps
    from ..baselines import METHODS, THROTTLE_METHODS
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
        ca.add_argument("--repeats", type=POSITIVE, default=3,
                        help="timed runs per method (median, with min and max; 3)")
        ca.add_argument("--oracle-step", type=float_in(0.0, 5.0, open_low=True, open_high=False),
                        default=5.0,
                        help="coarse oracle: percent of rows between T_c points, in (0, 5] (5)")
        add_common_options(ca)
        add_app_params(ca, app)
        add_device_options(ca)
        o = ca.add_argument_group("output")
        o.add_argument("--plot", metavar="PNG", help="write a bar chart of the speedups")
        o.add_argument("--json", metavar="PATH",
                       help="write every measurement as JSON ('-': to standard output)")
        o.add_argument("--force", action="store_true",
                       help="replace output files even where they are read-only")
        o.add_argument("--quiet", "-q", action="store_true")
        ca.set_defaults(func=cmd_compare)
