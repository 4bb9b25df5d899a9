"""What the benchmark scripts share: inputs, device naming, and RESULTS.md sections.

Benchmarks are measured side by side in one run and written as Markdown
sections of ``benchmarks/RESULTS.md``, each between
``<!-- BEGIN name -->`` and ``<!-- END name -->`` markers, replaced whole
(atomically) when the benchmark runs again.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

from base import ROOT, log

from finepar.errors import FineParError, UsageError  # noqa: E402
from finepar.files import atomic_write_json, atomic_write_text  # noqa: E402

#: The real inputs (../shared/data), smallest first.
REAL_GRAPHS = ("USPowerGrid.mtx", "adder_dcop_05.mtx", "ca-GrQc.mtx", "rajat01.mtx",
               "wiki-Vote.txt", "memplus.mtx", "luxembourg.mtx", "soc-Slashdot0902.txt.gz",
               "cnr-2000.mtx.gz")


def data_dir() -> Path:
    """Where the real inputs are: ``$FINEPAR_DATA``, ``../shared/data`` or ``.data``."""
    for cand in (os.environ.get("FINEPAR_DATA"), ROOT.parent / "shared" / "data",
                 ROOT / ".data"):
        if cand and Path(cand).is_dir():
            return Path(cand)
    raise SystemExit("no input folder: set FINEPAR_DATA, or provide ../shared/data or .data")


def graph_specs(real: str, scales: str) -> list[str]:
    """Input specs from ``--real`` (``all``, ``none`` or a comma list) and ``--scales``.

    Raises
    ------
    UsageError
        For a real graph that is not in the input folder or a scale that is not an
        integer from 1 to 30 (before any work).
    """
    out = []
    if real and real != "none":
        names = REAL_GRAPHS if real == "all" else tuple(x.strip() for x in real.split(","))
        try:
            folder = data_dir()
        except SystemExit as exc:
            raise UsageError(f"--real: no input {names[0]!r} ({exc})") from None
        for n in names:  # a bundled graph may be named without its extension
            full = [f for f in REAL_GRAPHS if f == n or f.split(".")[0] == n]
            path = folder / (full[0] if full else n)
            if not path.exists():
                raise UsageError(f"--real: no input {n!r} in {data_dir()}")
            out.append(str(path))
    for s in (x.strip() for x in (scales or "").split(",")):
        if s and not (s.isdigit() and 1 <= int(s) <= 30):
            raise UsageError(f"--scales: {s!r} is not a Graph500 scale (an integer 1..30)")
        if s:
            out.append(f"graph500:{int(s)}")
    return out


def input_list(text: str) -> list[str]:
    """Input specs from a ``--graphs`` comma list: ``graph500:SCALE`` as it is, any other
    entry a file in the input folder (:func:`data_dir`); ``none`` or empty: no input."""
    if not text or text == "none":
        return []
    return [s if s.startswith("graph500:") else str(data_dir() / s)
            for s in (x.strip() for x in text.split(",")) if s]


def repeated_calls_args(args, apps):
    """``args`` of a probe of repeated calls checked and completed: ``--repeats`` at least
    1, ``--apps`` a list of ``apps``, the graphs of ``--real`` and ``--scales`` in
    ``args.specs``.

    Raises
    ------
    UsageError
        Naming the option (before any work).
    """
    if args.repeats < 1:
        raise UsageError(f"--repeats must be at least 1, not {args.repeats}")
    args.apps = choices("--apps", args.apps, apps)
    args.specs = graph_specs(args.real, args.scales)
    return args


def choices(option: str, value: str, allowed) -> list[str]:
    """The comma list ``value`` of ``option``, each one of ``allowed``.

    Raises
    ------
    UsageError
        Naming the option, the bad value and the choices (before any work).
    """
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad or not items:
        raise UsageError(f"{option}: {', '.join(bad) or 'nothing given'} not among "
                         f"{', '.join(allowed)}")
    return items


def main_of(main) -> int:
    """Run a script's ``main()``: a bad option or input (a FineParError) is one line on
    stderr and exit status 2, with nothing written."""
    try:
        return main()
    except FineParError as exc:
        print(f"{Path(sys.argv[0]).name}: error: {exc}", file=sys.stderr)
        return 2


def load(spec: str):
    """A graph through the cache of :mod:`inputs` (Graph500 graphs generated once per call);
    returns ``(graph, seconds to read it)``."""
    from inputs import load_input
    g, info = load_input(spec)
    return g, info["load_s"]


def today() -> str:
    return _dt.date.today().isoformat()


def device_line(pair) -> str:
    """``cpu: ...; gpu: ...`` naming both devices (and the emulation)."""
    return pair.describe()


def geomean(values) -> float:
    v = [x for x in values if x is not None and math.isfinite(x) and x > 0]
    return float(np.exp(np.mean(np.log(v)))) if v else float("nan")


def fmt(x: float, digits: int = 2) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def write_section(md_path: str | Path, name: str, body: str) -> None:
    """Replace (or append) section ``name`` of a Markdown file, atomically."""
    p = Path(md_path)
    text = p.read_text(encoding="utf-8") if p.exists() else "# Benchmark results\n"
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    atomic_write_text(p, text if text.endswith("\n") else text + "\n")


def write_json(path: str | Path, obj) -> None:
    from finepar.files import jsonable
    atomic_write_json(path, jsonable(obj))


class Budget:
    """A wall-clock budget: scripts stop starting new work once it is spent."""

    def __init__(self, seconds: float | None):
        self.t0 = time.perf_counter()
        self.seconds = seconds

    def left(self) -> float:
        if not self.seconds:
            return float("inf")
        return self.seconds - (time.perf_counter() - self.t0)

    def spent(self) -> bool:
        return self.left() <= 0


def load_json(path) -> dict:
    """A run's JSON document, plain or gzipped (``.json.gz``: the larger runs are committed
    so, to keep what a device call carries small)."""
    p = Path(path)
    if p.suffix == ".gz":
        import gzip
        with gzip.open(p, "rt", encoding="utf-8") as f:
            return json.load(f)
    return json.loads(p.read_text(encoding="utf-8"))


def merged_runs(paths, args, keys=(), missing=None) -> tuple[list, str, str]:
    """Rows of several runs' JSON files, in order, for ``--render``.

    Sets ``args.<key>`` from the first run for each of ``keys`` it recorded;
    for a key it did not record (an older file), ``missing[key]`` if given, else
    the command-line value stays.

    Returns
    -------
    (rows, device line, dates joined by ', ')
    """
    runs = [load_json(f) for f in paths]
    for k in keys:
        if k in runs[0]:
            setattr(args, k, runs[0][k])
        elif missing and k in missing:
            setattr(args, k, missing[k])
    rows = [r for run in runs for r in run["rows"]]
    return rows, runs[0]["device"], ", ".join(dict.fromkeys(r["date"] for r in runs))


class Results:
    """The JSON document of one benchmark run, written (atomically) after every
    measurement, with its RESULTS.md section when ``--md`` is given.

    Parameters
    ----------
    args : argparse.Namespace
        The script's options (recorded as given).
    device : str
        Both devices in words (and the array peers' GPU, if any).
    render : callable
        ``render(doc) -> str``, the section's Markdown.
    targets : callable, optional
        ``targets(doc, args) -> list of dict``, recomputed at every write.

    The document: ``script``, ``device``, ``date``, ``started`` (UTC), ``args``,
    ``environment``, ``notes`` (lines: skips and why), ``rows``, ``targets``.
    """

    def __init__(self, script: str, args, device: str, render, targets=None):
        from finepar.report import environment
        self.args, self.render, self.targets = args, render, targets
        self.doc = {"script": script, "device": device, "date": today(),
                    "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                    "args": {k: v for k, v in vars(args).items() if k != "render"},
                    "environment": environment(), "notes": [], "rows": [], "targets": []}

    def note(self, line: str) -> None:
        """Log a line and keep it in the document (a skipped peer, a budget stop)."""
        log(line)
        self.doc["notes"].append(line)
        self.save()

    def add(self, row: dict) -> None:
        """Append a row (filled in as it is measured) and write the document."""
        self.doc["rows"].append(row)
        self.save()

    def save(self) -> None:
        """Write the JSON (``--json``) and the section (``--md``), atomically."""
        if self.targets is not None:
            self.doc["targets"] = self.targets(self.doc, self.args)
        if self.args.json:
            write_json(self.args.json, self.doc)
        if self.args.md:
            write_section(self.args.md, self.args.section, self.render(self.doc))


def merged_docs(paths, targets=None, args=None) -> dict:
    """Several runs' documents as one (rows and notes in order, dates joined), for
    ``--render``; targets recomputed over all rows when ``targets`` is given."""
    docs = [load_json(p) for p in paths]
    out = dict(docs[0])
    out["rows"] = [r for d in docs for r in d["rows"]]
    out["notes"] = list(dict.fromkeys(n for d in docs for n in d.get("notes", [])))
    out["date"] = ", ".join(dict.fromkeys(d["date"] for d in docs))
    if targets is not None:
        out["targets"] = targets(out, args)
    return out


def put(row: dict, key: str, label: str, rec: dict) -> None:
    """``row[key][label] = rec``, the labels' order kept in ``row['order'][key]`` (the JSON
    files sort their keys)."""
    row.setdefault(key, {})[label] = rec
    order = row.setdefault("order", {}).setdefault(key, [])
    if label not in order:
        order.append(label)


def ordered(row: dict, key: str) -> list[tuple[str, dict]]:
    """``row[key]``'s (label, record) pairs in the order they were measured."""
    order = (row.get("order") or {}).get(key) or list(row[key])
    return [(k, row[key][k]) for k in order if k in row[key]]


def target_lines(targets: list) -> list[str]:
    """Markdown list lines: each target met, MISSED, or not measured, with its numbers."""
    word = {True: "met", False: "**MISSED**", None: "not measured"}
    return [f"- {word[t['met']]}: {t['target']} ({t['detail']})" for t in targets]


def stat_cell(st: dict | None, scale: float = 1e3, digits: int = 3) -> str:
    """``median (min-max)`` of a :func:`measure.stats` dict, scaled (ms by default)."""
    if not st:
        return "-"
    return (f"{st['median'] * scale:.{digits}f} ({st['min'] * scale:.{digits}f}-"
            f"{st['max'] * scale:.{digits}f})")


def script_parser(doc: str, section: str):
    """The argument parser of a benchmark script, with the options they all take:
    ``--render``, ``--model``, ``--memory``, ``--md``, ``--json``, ``--section``,
    ``--budget-s``; the script adds its own."""
    import argparse
    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--render", metavar="JSON", nargs="+",
                   help="only re-render the table of earlier runs' JSON files (rows merged, in "
                        "order) into --md")
    p.add_argument("--model", default=None, help="platform model (default: matching)")
    p.add_argument("--memory", default="auto")
    p.add_argument("--md", default=None, help=f"RESULTS.md to update (section '{section}')")
    p.add_argument("--json", default=None)
    p.add_argument("--section", default=section, help="RESULTS.md section name")
    p.add_argument("--budget-s", type=float, default=None,
                   help="stop starting graphs after this many seconds")
    return p


def probe_parser(doc: str, name: str):
    """The argument parser of a probe (one graph, its configurations side by side), with
    the options the probes share: ``--graph``, ``--scale`` (default 24), ``--memory``,
    ``--devices``, ``--json`` (default ``NAME.json``) and ``--budget-s``; the probe adds
    its own."""
    import argparse
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--graph", default=None, help="an input (graph500:SCALE or a file); "
                    "default graph500:SCALE")
    ap.add_argument("--scale", type=int, default=24)
    ap.add_argument("--memory", default="auto", choices=("auto", "shared", "split"),
                    help="the pair's memory mode (auto: FinePar's default)")
    ap.add_argument("--devices", default="auto", choices=("auto", "gpu", "both"),
                    help="the plan's devices (auto: FinePar's default)")
    ap.add_argument("--shuffles", default="auto", choices=("auto", "local", "none"),
                    help="how teams and work-groups reduce (EngineOptions.shuffles: auto, "
                         "PTX's warp shuffles on NVIDIA; none, a tree in local memory)")
    ap.add_argument("--launch", default="", type=launch_overrides,
                    help="the GPU's work-group geometry, KEY=VALUE comma list of "
                         "LaunchConfig's fields (e.g. wg_stream=128); default FinePar's")
    ap.add_argument("--json", default=f"{name}.json")
    ap.add_argument("--budget-s", type=float, default=480.0)
    return ap


def launch_overrides(text: str) -> dict:
    """``--launch``'s ``KEY=VALUE`` list as ``{key: int}`` (argparse's type: a bad entry is
    its usage error)."""
    import argparse
    from finepar.device.info import LaunchConfig
    out = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        if key not in LaunchConfig.__dataclass_fields__ or not value.isdigit():
            raise argparse.ArgumentTypeError(f"{item!r} is not KEY=VALUE of LaunchConfig")
        out[key] = int(value)
    return out


def probe_start(args, script: str):
    """A probe's opening: its budget, the pair, the graph of ``--graph`` (or
    ``graph500:--scale``) and its JSON document's head (``script``, ``date``, ``device``,
    ``graph``, ``n``, ``nnz``, ``load_s``, ``args``, ``notes``), with the line that names
    them logged. Returns ``(budget, pair, graph, out)``."""
    from finepar.api import make_pair
    budget = Budget(args.budget_s)
    spec = args.graph or f"graph500:{args.scale}"
    launch = getattr(args, "launch", None)
    pair = make_pair(memory=args.memory, config={"launch": {"gpu": launch}} if launch else None)
    g, load_s = load(spec)
    out = {"script": f"benchmarks/{script}.py", "date": today(), "device": device_line(pair),
           "graph": spec, "n": int(g.n), "nnz": int(g.nnz), "load_s": load_s,
           "args": vars(args), "notes": []}
    log(f"{spec}: {g.n:,} vertices, {g.nnz:,} entries; {out['device']}")
    return budget, pair, g, out


def render_docs(args, render, targets=None) -> int:
    """``--render``: merge the runs' documents (:func:`merged_docs`, targets recomputed
    with ``targets``) and write the section with the script's ``render(doc, args)``."""
    write_section(args.md, args.section, render(merged_docs(args.render, targets, args), args))
    return 0


def render_only(args, render, keys=(), missing=None) -> int:
    """``--render``: merge the runs' JSON (:func:`merged_runs`) and write the
    section with the script's ``render(rows, device, args, dates)``."""
    rows, device, dates = merged_runs(args.render, args, keys, missing)
    write_section(args.md, args.section, render(rows, device, args, dates))
    return 0


def transfer_probe_args(doc: str, name: str, repeats: int, argv=None):
    """The options of a probe that times copies of several sizes: ``--json`` (default
    ``NAME.json``), ``--sizes-mb`` (comma-separated, default 4 and 54: a scale-26 BFS
    level's words and PageRank halo at two ranks) as ``sizes`` (floats), ``--repeats``.

    Raises
    ------
    UsageError
        A size that is not a positive number, or ``--repeats`` below 1 (before any work).
    """
    import argparse
    from finepar.errors import UsageError
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--json", default=f"{name}.json")
    ap.add_argument("--sizes-mb", default="4,54", help="sizes in MB, comma-separated")
    ap.add_argument("--repeats", type=int, default=repeats, help="timed copies a case")
    args = ap.parse_args(argv)
    try:
        args.sizes = [float(s) for s in args.sizes_mb.split(",") if s.strip()]
    except ValueError:
        raise UsageError(f"--sizes-mb: {args.sizes_mb!r} is not a list of numbers") from None
    if not args.sizes or min(args.sizes) <= 0:
        raise UsageError(f"--sizes-mb: {args.sizes_mb!r} needs sizes above 0")
    if args.repeats < 1:
        raise UsageError(f"--repeats must be at least 1, not {args.repeats}")
    return args


def rate_stats(seconds: list, nbytes: int) -> dict:
    """GB/s min / median / max of copies of ``nbytes`` that took ``seconds``, and their
    median in ms."""
    import numpy as np
    rates = sorted(nbytes / s / 1e9 for s in seconds)
    return {"gbps_min": rates[0], "gbps_median": float(np.median(rates)), "gbps_max": rates[-1],
            "ms_median": float(np.median(seconds)) * 1e3}
