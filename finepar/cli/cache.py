"""``finepar cache list|clear``: the prepared-graph cache."""

from __future__ import annotations

import json

from ..report import human_bytes
from .options import check_outputs


def cmd_cache(args) -> int:
    """``finepar cache list|clear``."""
    import datetime as dt
    from ..prepcache import PrepCache
    cache = PrepCache()
    if args.cache_command == "clear":
        count, freed = cache.clear()
        print(f"removed {count} prepared entries and {human_bytes(freed)} from {cache.root}")
        return 0
    if args.json:
        check_outputs(args, json_=(".json",))
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
        from ..files import atomic_write_text
        atomic_write_text(args.json, text + "\n")
    from ..report import format_table
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


def add(sub) -> None:
    """``finepar cache list|clear``."""
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
