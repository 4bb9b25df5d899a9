"""NetworkX's own calls through its backends, end to end: plain NetworkX,
``backend="finepar"`` as a user gets it (the backend hands a call to NetworkX's own
implementation where NetworkX is measured faster at that size: ``finepar.nx.policy``),
``finepar-forced`` (FinePar at every size: ``min_edges=0``) and ``backend="graphblas"``
(graphblas-algorithms, where installed and where it implements the algorithm).

For each graph the NetworkX graph is built once (from FinePar's CSR, each edge added once;
its time and the process's resident memory growth are recorded: at Graph500 scale 20 this
alone took 5 minutes and 7.5 GiB on the 2-core box through ``from_scipy_sparse_array``,
and scale 22 holds four times as many edges). For each algorithm and backend: the
**first** call on a fresh ``G.__networkx_cache__`` (conversion included; the least of
``--first-repeats`` such calls), then ``--repeats`` **cached** calls (min / median / max);
a call faster than ``--min-time-s`` is repeated more, up to that time (30 calls at most),
and where plain NetworkX is faster than ``--pair-below-s`` each backend call follows a
NetworkX call of its own (the order alternating), compared with it.
Plain NetworkX has no conversion: all its calls are alike (a call slower than
``--nx-slow-s`` is not repeated). Generators are consumed (``list``) and lazy mappings
read into dicts, inside the timing. The first FinePar call of the process (opening the
pair, building kernels) is measured apart, on a 1,000-vertex graph. Every FinePar and
GraphBLAS answer is compared with NetworkX's (``agrees``) where NetworkX ran; a
``finepar`` record says where the call ran (``ran``: FinePar, or NetworkX by the size
rule, or at once) and counts the warnings its calls raised (``warnings``: a cached call
prints none).

``--crossover`` measures where FinePar starts to win: plain NetworkX against
``finepar-forced`` (and ``finepar``) on graphs from a few hundred to a few million entries
(the small real graphs, Graph500 scales 8 to 16, square grids, whose BFS has hundreds of
layers), and fits, per algorithm, the fewest adjacency entries from which the forced
first call was no slower than NetworkX on every graph measured (the document's
``crossover``; ``finepar.nx.policy.MIN_ENTRIES`` holds the emulated pair's and the GPU
pair's). Its summary line in the table states whether ``backend="finepar"`` stayed within
10% of plain NetworkX, first call and cached, on every graph and algorithm.

  python benchmarks/nxbackend.py --quick --json out.json --md benchmarks/RESULTS.md
  python benchmarks/nxbackend.py --crossover --json crossover.json
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (Budget, Results, choices, device_line, graph_specs, load, log,  # noqa: E402
                    main_of, ordered, put, render_docs, script_parser, stat_cell,
                    target_lines)
from measure import Targets, stats  # noqa: E402

BACKENDS = ("networkx", "finepar", "finepar-forced", "graphblas")
#: name -> (call(nx, G, arg), which graphs: "any", "undirected", "directed")
ALGORITHMS = {
    "pagerank": (lambda nx, G, a, **b: nx.pagerank(G, **b), "any"),
    "hits": (lambda nx, G, a, **b: nx.hits(G, **b), "any"),
    "connected_components": (lambda nx, G, a, **b: list(nx.connected_components(G, **b)),
                             "undirected"),
    "number_connected_components":
        (lambda nx, G, a, **b: nx.number_connected_components(G, **b), "undirected"),
    "is_connected": (lambda nx, G, a, **b: nx.is_connected(G, **b), "undirected"),
    "weakly_connected_components":
        (lambda nx, G, a, **b: list(nx.weakly_connected_components(G, **b)), "directed"),
    "bfs_layers": (lambda nx, G, a, **b: list(nx.bfs_layers(G, a["source"], **b)), "any"),
    "bfs_edges": (lambda nx, G, a, **b: list(nx.bfs_edges(G, a["source"], **b)), "any"),
    "bfs_tree": (lambda nx, G, a, **b: nx.bfs_tree(G, a["source"], **b), "any"),
    "bfs_predecessors":
        (lambda nx, G, a, **b: list(nx.bfs_predecessors(G, a["source"], **b)), "any"),
    "single_source_shortest_path_length":
        (lambda nx, G, a, **b: nx.single_source_shortest_path_length(G, a["source"], **b),
         "any"),
    "single_source_dijkstra_path_length":
        (lambda nx, G, a, **b: nx.single_source_dijkstra_path_length(G, a["source"], **b),
         "any"),
    "dijkstra_path_length":
        (lambda nx, G, a, **b: nx.dijkstra_path_length(G, a["source"], a["target"], **b),
         "any"),
    "greedy_color": (lambda nx, G, a, **b: nx.greedy_color(G, **b), "undirected"),
}
#: The targets: (algorithm, graph, backend compared, bound).
TARGETS = (("pagerank", "graph500-s22", "networkx", 20.0),
           ("pagerank", "graph500-s22", "graphblas", 3.0),
           ("bfs_layers", "graph500-s22", "networkx", 10.0),
           ("connected_components", "graph500-s22", "networkx", 10.0))
#: Reported beside the targets, without a bound: (algorithm, graph, backends).
COMPARISONS = (("connected_components", "graph500-s22", ("networkx", "graphblas")),
               ("pagerank", "graph500-s22", ("networkx", "graphblas")))
#: ``backend="finepar"`` may take this much longer than plain NetworkX (first or cached).
NOT_SLOWER = 1.10
#: The most calls of one kind (first, cached) ``--min-time-s`` adds for a fast call.
MAX_CALLS = 30
#: Warnings Python does not show by default (counted apart: a ResourceWarning of an
#: unclosed file is not a note a user sees).
QUIET = (ResourceWarning, DeprecationWarning, PendingDeprecationWarning, ImportWarning)
#: NetworkX's dispatch through a backend costs about this much per call, whoever answers
#: (``--crossover`` does not count a call slower by less as slower).
DISPATCH_S = 1e-4
#: ``--crossover``'s graphs where none are named.
CROSSOVER_REAL = ("USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,"
                  "soc-Slashdot0902")
CROSSOVER_SCALES = "8,10,11,12,13,14,15,16"
CROSSOVER_GRIDS = "32,100,316"


def rss_bytes() -> int:
    """The process's resident memory now (Linux ``/proc/self/statm``)."""
    import os
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def nx_graph(g):
    """A NetworkX graph of FinePar graph ``g`` (undirected when ``g`` is symmetric; no edge
    attributes), with the seconds and resident bytes building it took.

    Each edge is added once through ``add_edges_from`` (an undirected graph's upper
    triangle): the adjacency is that of ``nx.from_scipy_sparse_array`` (neighbours in
    column order), built about 3x faster and without its ``{None: 1.0}`` edge data."""
    import networkx as nx
    before, t0 = rss_bytes(), time.perf_counter()
    G = nx.Graph() if g.symmetric else nx.DiGraph()
    G.add_nodes_from(range(g.n))
    rows = np.repeat(np.arange(g.n, dtype=np.int64), np.diff(g.indptr))
    keep = rows <= g.indices if g.symmetric else slice(None)
    G.add_edges_from(zip(rows[keep].tolist(), g.indices[keep].tolist()))
    return G, {"seconds": time.perf_counter() - t0, "rss_bytes": rss_bytes() - before,
               "nodes": G.number_of_nodes(), "edges": G.number_of_edges(),
               "directed": G.is_directed(), "method": "add_edges_from"}


def call_args(g) -> dict:
    """The source (largest out-degree) and a target as far from it as BFS goes."""
    from scipy.sparse import csgraph
    source = int(np.argmax(g.out_degrees()))
    order = csgraph.breadth_first_order(g.to_scipy(), source, return_predecessors=False)
    return {"source": source, "target": int(order[-1])}


def agrees(name: str, ours, ref) -> str:
    """Whether a backend's answer is NetworkX's: ``yes`` (PageRank / HITS within 1e-4 per
    entry, everything else equal, in NetworkX's order), ``other order`` (the same
    entries, listed otherwise) or ``no``."""
    if name in ("pagerank", "hits"):
        pairs = zip(ours, ref) if name == "hits" else [(ours, ref)]
        return "yes" if all(set(a) == set(b) and max(abs(a[k] - b[k]) for k in a) < 1e-4
                            for a, b in pairs) else "no"
    if name == "bfs_tree":
        ours, ref = list(ours.edges), list(ref.edges)
    elif isinstance(ref, dict):
        ours, ref = list(ours.items()), list(ref.items())
    if ours == ref:
        return "yes"
    if isinstance(ref, list) and _unordered(ours) == _unordered(ref):
        return "other order"
    return "no"


def _unordered(value):
    """A list's entries as a multiset (a list of lists: each inner list as a set)."""
    from collections import Counter
    return Counter(frozenset(x) if isinstance(x, (list, set)) else x for x in value)


def materialized(out):
    """A lazy mapping (graphblas-algorithms answers with NodeMaps) read into the dict that
    NetworkX and FinePar return, through the NodeMap's own bulk ``vector_to_dict`` (one
    ``to_coo``; ``dict(nodemap)`` would look up every key in GraphBLAS); tuples (HITS)
    entry by entry."""
    from collections.abc import Mapping
    if isinstance(out, tuple):
        return tuple(materialized(x) for x in out)
    if not isinstance(out, Mapping) or isinstance(out, dict):
        return out
    bulk = getattr(out, "vector_to_dict", None)
    if bulk is not None and not getattr(out, "_values_are_keys", True):
        return bulk(out.vector.dup(), fill_value=getattr(out, "_fill_value", None))
    return dict(out)


def grid_graph(width: int):
    """The ``width`` x ``width`` square grid as a FinePar graph (symmetric, 4 neighbours
    inside): a BFS from its centre has ``width`` layers of up to ``2 width`` vertices, the
    shape of a road network's search."""
    from finepar.io import from_csr
    n = width * width
    idx = np.arange(n, dtype=np.int64).reshape(width, width)
    a = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    b = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    rows, cols = np.concatenate([a, b]), np.concatenate([b, a])
    order = np.lexsort((cols, rows))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    g = from_csr(indptr, cols[order], None, n, name=f"grid-{width}x{width}", pattern=True)
    from dataclasses import replace
    return replace(g, symmetric=True)


def load_spec(spec: str):
    """``(graph, seconds)`` of a spec: ``grid:W`` here, others through :mod:`inputs`."""
    if spec.startswith("grid:"):
        t0 = time.perf_counter()
        g = grid_graph(int(spec.split(":")[1]))
        return g, time.perf_counter() - t0
    return load(spec)


def entries(G) -> int:
    """Adjacency entries of a NetworkX graph (an undirected edge twice, a self-loop once):
    the size the backend's thresholds are in."""
    return sum(map(len, G._adj.values()))


def timed(fn) -> tuple[float, object]:
    """Seconds of ``fn()`` with its answer materialized, and the answer. No collection runs
    before it: a full one leaves the caches cold, which cost a call through the backend's
    dispatch a fifth more on a 1 ms call and NetworkX's own call less (a call's share of
    the collector's passes, 18 or 70 ms for a NetworkX BFS on memplus by whether one fell in
    it, is evened out by the repeats)."""
    t0 = time.perf_counter()
    out = materialized(fn())
    return time.perf_counter() - t0, out


class _Calls:
    """One backend's calls of one algorithm: the keywords, the settings around them
    (``finepar-forced``: ``min_edges=0``; ``graphblas``: NetworkX's cache note ignored,
    as it is printed on each of its cached calls) and what the backend reports: where each
    ``finepar`` call was answered (``ran``: ``networkx``, handed back by size;
    ``finepar``, a FinePar run; ``at once``, neither: is_connected's first-node search),
    the warnings raised."""

    def __init__(self, backend: str):
        self.backend = backend
        self.kw = {} if backend == "networkx" else {
            "backend": "finepar" if backend.startswith("finepar") else backend}
        self.by_size = 0
        self.calls = 0
        self.ran: set[str] = set()
        self.warned: list[str] = []
        self.quiet: list[str] = []

    def __call__(self, fn):
        import networkx as nx

        from finepar.nx.device import STATS
        before, runs = STATS["by_size"], STATS["runs"]
        ignored = self.backend == "graphblas" and "cache" not in nx.config.warnings_to_ignore
        if ignored:
            nx.config.warnings_to_ignore.add("cache")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if self.backend == "finepar-forced":
                    with nx.config.backends.finepar(min_edges=0):
                        out = timed(lambda: fn(**self.kw))
                else:
                    out = timed(lambda: fn(**self.kw))
        finally:
            if ignored:
                nx.config.warnings_to_ignore.discard("cache")
        self.calls += 1
        self.by_size += STATS["by_size"] - before
        self.ran.add("networkx" if STATS["by_size"] > before else
                     "finepar" if STATS["runs"] > runs else "at once")
        self.warned += [f"{w.category.__name__}: {str(w.message).splitlines()[0]}"
                        for w in caught if not issubclass(w.category, QUIET)]
        self.quiet += [f"{w.category.__name__}: {str(w.message).splitlines()[0]}"
                       for w in caught if issubclass(w.category, QUIET)]
        return out


def measure(name, G, a, backend, args, ref, t_nx: float | None = None) -> tuple[dict, object]:
    """One algorithm through one backend: first calls (each on a fresh cache), then cached
    calls. Where plain NetworkX took less than ``--pair-below-s`` (``t_nx``, its fastest
    call), each of the backend's calls is paired with a plain NetworkX call of its own
    (``paired_networkx``; the order alternating): on a shared machine the two blocks of
    calls, minutes apart, can differ by a tenth in speed, more than the difference
    measured."""
    import networkx as nx
    call, _ = ALGORITHMS[name]
    calls = _Calls(backend)
    pair = backend != "networkx" and t_nx is not None and t_nx < args.pair_below_s
    paired: dict[str, list] = {"first": [], "cached": []}

    def one(which):
        """The backend's call, after or (every other pair) before its NetworkX call: the
        collector's full passes fall on every few calls, and a fixed order could give them
        all to one side."""
        if not pair:
            return calls(lambda **kw: call(nx, G, a, **kw))
        first = len(paired[which]) % 2
        if first:
            out = calls(lambda **kw: call(nx, G, a, **kw))
        paired[which].append(timed(lambda: call(nx, G, a))[0])
        if not first:
            out = calls(lambda **kw: call(nx, G, a, **kw))
        return out

    def enough(count: int, seconds: float | None) -> int:
        """``count`` calls, or more of a fast call: as many as take ``--min-time-s``."""
        if not seconds or seconds <= 0:
            return count
        return max(count, min(MAX_CALLS, int(np.ceil(args.min_time_s / seconds))))

    firsts, out = [], None
    tries = 1 if backend == "networkx" else enough(max(1, args.first_repeats), t_nx)
    try:
        for _ in range(tries):
            G.__networkx_cache__.clear()
            t, out = one("first")
            firsts.append(t)
    except NotImplementedError as exc:
        return {"status": "not implemented", "detail": str(exc).split(".")[0]}, None
    except Exception as exc:  # noqa: BLE001 - a peer that fails (graphblas's ARPACK) is a row
        if backend.startswith("finepar"):
            raise
        return {"status": "failed", "detail": f"{type(exc).__name__}: {exc}"[:200]}, None
    first = min(firsts)
    times = [firsts[-1]]
    slow = first >= args.nx_slow_s
    more = (enough(args.repeats, t_nx) if backend != "networkx" else
            0 if slow else enough(args.repeats, first) - 1)
    cached_warnings = len(calls.warned)
    for _ in range(more):
        times.append(one("cached")[0])
    cached_warnings = len(calls.warned) - cached_warnings
    rec = {"status": "ok", "first_s": first, "first": stats(firsts),
           "cached": stats(times[1:] if backend != "networkx" else times)}
    if pair:
        rec["paired_networkx"] = {k: stats(v) for k, v in paired.items()}
    if backend.startswith("finepar"):
        rec["ran"] = "+".join(sorted(calls.ran))
        rec["warnings"] = {"first": len(calls.warned) - cached_warnings,
                           "cached": cached_warnings, "text": sorted(set(calls.warned)),
                           "not_shown": sorted(set(calls.quiet))}
    if ref is not None and backend != "networkx":
        rec["agrees"] = agrees(name, out, ref)
    return rec, out


def first_call_cost(names) -> dict:
    """Seconds of each algorithm's first FinePar call in this process, on a 1,000-vertex
    graph (the pair opened once, each app's kernels built), and of a second call; FinePar
    at that size whatever the thresholds (``min_edges=0``)."""
    import networkx as nx

    from finepar.nx.device import STATS
    G = nx.gnp_random_graph(1000, 0.01, seed=1)
    a = {"source": 0, "target": 1}
    out = {}
    with nx.config.backends.finepar(min_edges=0):
        for name in names:
            call, kind = ALGORITHMS[name]
            H = G if kind != "directed" else G.to_directed()
            t1, _ = timed(lambda: call(nx, H, a, backend="finepar"))
            t2, _ = timed(lambda: call(nx, H, a, backend="finepar"))
            out[name] = {"first_s": t1, "second_s": t2}
    out["pair_open_s"] = STATS["pair_seconds"]
    return out


def run_graph(spec, args, res, backends, names, budget) -> None:
    g, load_s = load_spec(spec)
    log(f"{g.name}: {g.n:,} vertices, {g.nnz:,} entries; building the networkx graph")
    G, build = nx_graph(g)
    a = call_args(g)
    row = {"graph": g.name, "n": g.n, "nnz": g.nnz, "entries": entries(G),
           "edges": G.number_of_edges(), "directed": G.is_directed(), "load_s": load_s,
           "nx_build": build, "args": a, "algorithms": {}}
    res.add(row)
    log(f"  networkx graph: {build['seconds']:.1f} s, {build['rss_bytes'] / 2**30:.2f} GiB")
    for name in names:
        kind = ALGORITHMS[name][1]
        if kind != "any" and (kind == "directed") != G.is_directed():
            continue
        if budget.spent():
            res.note(f"budget spent: {g.name} {name} and after not measured")
            return
        recs, ref = {}, None
        put(row, "algorithms", name, recs)
        t_nx = None
        for backend in backends:
            rec, value = measure(name, G, a, backend, args, ref, t_nx)
            if backend == "networkx":
                ref = value
                t_nx = rec["cached"]["min"] if rec["status"] == "ok" else None
            recs[backend] = rec
            res.save()
            log(f"  {name:36s} {backend:14s} " + (
                f"first {rec['first_s']:.4f} s, cached {stat_cell(rec['cached'], 1, 4)} s"
                + (f", agrees {rec['agrees']}" if "agrees" in rec else "")
                + (f", ran on {rec['ran']}" if "ran" in rec else "")
                if rec["status"] == "ok" else rec["status"]))
    del G  # the graph and its cached conversions go before the next graph is built


def speed(row, name, backend, ours: str = "finepar", which: str = "cached") -> float | None:
    """``backend``'s cached median over ``ours``' (``which``: ``cached`` median or
    ``first`` call) for ``name`` in a row (None: not both)."""
    recs = row["algorithms"].get(name, {})
    fp, other = recs.get(ours, {}), recs.get(backend, {})
    if fp.get("status") != "ok" or other.get("status") != "ok":
        return None
    mine = fp["cached"]["median"] if which == "cached" else fp["first_s"]
    return other["cached"]["median"] / mine if mine > 0 else None


def _nx_best(recs: dict) -> float | None:
    rec = recs.get("networkx", {})
    return rec["cached"]["min"] if rec.get("status") == "ok" else None


def crossover(doc) -> dict:
    """Per algorithm, the fewest adjacency entries from which ``finepar-forced``'s first
    call (the least of its tries) was no slower than plain NetworkX's fastest call on every
    graph measured at that size or larger (None: slower on the largest graph measured, or
    nothing measured), with the points it rests on. A call slower by less than
    :data:`DISPATCH_S` does not count as slower: that is NetworkX's own dispatch through a
    backend (its arguments bound twice, its cache looked up), paid whoever answers, which
    a call NetworkX answers in microseconds (``is_connected`` from an isolated first node)
    shows as a ratio."""
    points: dict[str, list] = {}
    for row in doc["rows"]:
        for name, recs in row["algorithms"].items():
            forced, t_nx = recs.get("finepar-forced", {}), _nx_best(recs)
            if forced.get("status") != "ok" or t_nx is None:
                continue
            points.setdefault(name, []).append({
                "graph": row["graph"], "entries": row.get("entries", row["nnz"]),
                "networkx_s": t_nx, "first_s": forced["first_s"],
                "cached_s": forced["cached"]["min"]})
    def lost(p, key):
        return p[key] > p["networkx_s"] + DISPATCH_S

    out = {}
    for name, pts in points.items():
        pts.sort(key=lambda p: p["entries"])
        limit = 0
        for p in pts:  # just above the largest size lost (in any run, when merged)
            if lost(p, "first_s"):
                limit = min((q["entries"] for q in pts if q["entries"] > p["entries"]),
                            default=None)
        out[name] = {"min_entries": limit,
                     "lost_first": [p["graph"] for p in pts if lost(p, "first_s")],
                     "lost_cached": [p["graph"] for p in pts if lost(p, "cached_s")],
                     "points": pts}
    return out


def not_slower(doc) -> dict:
    """``backend="finepar"`` against plain NetworkX on every graph and algorithm measured:
    the calls slower than ``NOT_SLOWER`` times NetworkX. Each kind of call (first, cached)
    is compared as its median against the median of the NetworkX calls paired with it,
    where measured (:func:`measure`: the two alike exposed to the machine's load, and a
    median robust to NetworkX's own two-valued times: ARPACK's random start in ``hits``, 33
    or 78 ms on rajat01; the collector's full passes over the graph, which fall in runs of
    calls, 22 or 88 ms for ``bfs_edges`` on memplus), else as the fastest against
    NetworkX's fastest; ``slower`` counts those slower by more than NetworkX's own dispatch
    too (:data:`DISPATCH_S`, paid whoever answers), ``strict`` all of them."""
    worse, strict, count = [], [], 0
    for row in doc["rows"]:
        for name, recs in ordered(row, "algorithms"):
            fp, ref = recs.get("finepar", {}), recs.get("networkx", {})
            if fp.get("status") != "ok" or ref.get("status") != "ok":
                continue
            paired = fp.get("paired_networkx") or {}
            for which in ("first", "cached"):
                ours, theirs = fp.get(which) or {}, paired.get(which) or {}
                if ours.get("values") and theirs.get("values"):
                    ratio, t_nx = ours["median"] / theirs["median"], theirs["median"]
                else:
                    t = fp["first_s"] if which == "first" else fp["cached"]["min"]
                    t_nx = ref["cached"]["min"]
                    ratio = t / t_nx
                count += 1
                if ratio > NOT_SLOWER:
                    item = {"graph": row["graph"], "algorithm": name, "call": which,
                            "ratio": ratio, "networkx_s": t_nx, "ran": fp.get("ran")}
                    strict.append(item)
                    if ratio * t_nx > NOT_SLOWER * t_nx + DISPATCH_S:
                        worse.append(item)
    return {"calls": count, "slower": worse, "strict": strict}


def targets(doc, args) -> list:
    t = Targets()
    for name, graph, backend, bound in TARGETS:
        # the backends of one algorithm may come from separate runs (--render A B): merged
        recs: dict = {}
        for r in doc["rows"]:
            if r["graph"].startswith(graph):
                recs.update(r["algorithms"].get(name, {}))
        x = speed({"algorithms": {name: recs}}, name, backend)
        t.ratio(f"{name} on {graph}, cached: >= {bound:g}x {backend}", x, bound,
                f"{x:.1f}x" if x else "", "not measured")
    ns = not_slower(doc)
    worst = max(ns["slower"], key=lambda w: w["ratio"], default=None)
    strict = ", ".join(f"{w['algorithm']} on {w['graph']} ({w['call']}, {w['ratio']:.2f}x of "
                       f"{w['networkx_s'] * 1e3:.2f} ms)" for w in ns["strict"])
    t.add(f"backend=\"finepar\" at most {NOT_SLOWER:g}x plain NetworkX (plus NetworkX's own "
          f"{DISPATCH_S * 1e3:g} ms dispatch), first and cached calls, every graph and "
          f"algorithm measured", (not ns["slower"]) if ns["calls"] else None,
          f"{ns['calls']} calls; " + (f"{len(ns['slower'])} slower, the worst "
                                      f"{worst['algorithm']} on {worst['graph']} "
                                      f"({worst['call']}, {worst['ratio']:.2f}x)"
                                      if worst else "none slower")
          + (f"; above {NOT_SLOWER:g}x without the dispatch: {strict}" if strict else ""))
    return t.items


def comparison_lines(doc) -> list[str]:
    """The COMPARISONS: cached medians of FinePar and the others, where measured."""
    lines = []
    for name, graph, others in COMPARISONS:
        recs: dict = {}
        for r in doc["rows"]:
            if r["graph"].startswith(graph):
                recs.update(r["algorithms"].get(name, {}))
        cells = [f"{b} {recs[b]['cached']['median']:.3f} s" for b in ("finepar", *others)
                 if recs.get(b, {}).get("status") == "ok"]
        lines.append(f"- {name} on {graph}, cached: " + (", ".join(cells) or "not measured"))
    return lines


def render(doc, args) -> str:
    lines = [f"### NetworkX backend: plain NetworkX, `backend=\"finepar\"`, "
             f"`backend=\"graphblas\"` ({doc['date']})", "",
             f"Device: {doc['device']}. Seconds; *first* is a call on a fresh cache "
             f"(conversion included), *cached* the median (min-max) of later calls, each with "
             f"its answer as a dict (graphblas-algorithms' lazy NodeMaps read into one); "
             f"speed-ups are cached medians against FinePar's (*first*: against its first "
             f"call); *ran*: what answered `backend=\"finepar\"`'s calls (`finepar`: a "
             f"FinePar run; `networkx`: NetworkX's own code, below the measured size; `at "
             f"once`: is_connected's search from the first node); *forced*: FinePar at "
             f"every size (`min_edges=0`).", ""]
    fc = doc.get("first_call")
    if fc:
        lines += [f"First FinePar call of a process: pair opened in "
                  f"{fc['pair_open_s']:.2f} s; per algorithm (1,000 vertices) "
                  + ", ".join(f"{k} {fc[k]['first_s']:.2f} s then "
                              f"{fc[k]['second_s'] * 1e3:.0f} ms" for k in ALGORITHMS if k in fc)
                  + ".", ""]
    for row in doc["rows"]:
        b = row["nx_build"]
        lines += [f"**{row['graph']}** ({row['n']:,} vertices, {row['nnz']:,} entries): "
                  f"networkx graph built ({b.get('method', 'from_scipy_sparse_array')}) in "
                  f"{b['seconds']:.1f} s, "
                  f"{b['rss_bytes'] / 2**30:.2f} GiB resident.", "",
                  "| algorithm | networkx | finepar first | finepar cached | ran | forced first "
                  "| forced cached | graphblas first | graphblas cached | first vs networkx "
                  "| vs networkx | vs graphblas | agrees |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for name, recs in ordered(row, "algorithms"):
            cells = [name, _cached(recs.get("networkx"))]
            for backend in ("finepar", "finepar-forced", "graphblas"):
                r = recs.get(backend) or {}
                ok = r.get("status") == "ok"
                cells += [f"{r['first_s']:.4f}" if ok else r.get("status", "-"),
                          _cached(r) if ok else "-"]
                if backend == "finepar":
                    cells.append(r.get("ran", "-"))
            x = speed(row, name, "networkx", which="first")
            cells.append(f"{x:.2f}x" if x else "-")
            for other in ("networkx", "graphblas"):
                x = speed(row, name, other)
                cells.append(f"{x:.2f}x" if x else "-")
            agree = [f"{k}: {r['agrees']}" for k, r in recs.items() if "agrees" in r]
            cells.append(", ".join(agree) or "-")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    co = crossover(doc)  # from the rows (of every run merged by --render)
    if co:
        lines += [f"Crossover ({doc.get('pair_kind', '?')} pair): per algorithm, the fewest "
                  f"adjacency entries from which FinePar's first call (forced) was no slower "
                  f"than NetworkX on every graph measured at that size or larger.", "",
                  "| algorithm | from entries | first call slower on | cached call slower on |",
                  "|---|---|---|---|"]
        for name in ALGORITHMS:
            c = co.get(name)
            if c:
                lim = "never" if c["min_entries"] is None else f"{c['min_entries']:,}"
                lines.append(f"| {name} | {lim} | {', '.join(c['lost_first']) or '-'} | "
                             f"{', '.join(c['lost_cached']) or '-'} |")
        lines.append("")
    lines += [*(f"- {n}" for n in doc.get("notes", [])), *comparison_lines(doc),
              *target_lines(doc["targets"])]
    return "\n".join(lines)


def _cached(rec) -> str:
    return stat_cell(rec.get("cached"), 1, 4) if rec and rec.get("status") == "ok" else "-"


def main(argv=None) -> int:
    p = script_parser(__doc__, "nxbackend")
    p.add_argument("--real", default=None,
                   help="real graphs (default cnr-2000.mtx.gz,soc-Slashdot0902.txt.gz; with "
                        f"--crossover {CROSSOVER_REAL})")
    p.add_argument("--scales", default=None,
                   help=f"Graph500 scales (default 20,22; with --crossover {CROSSOVER_SCALES})")
    p.add_argument("--grids", default=None,
                   help=f"square grids' widths (default none; with --crossover "
                        f"{CROSSOVER_GRIDS})")
    p.add_argument("--algorithms", default=",".join(ALGORITHMS))
    p.add_argument("--backends", default=None,
                   help="default networkx,finepar,graphblas; with --crossover "
                        "networkx,finepar,finepar-forced")
    p.add_argument("--repeats", type=int, default=3, help="cached calls per backend (3)")
    p.add_argument("--first-repeats", type=int, default=None,
                   help="first calls per FinePar backend, each on a fresh cache; the least "
                        "is reported (1; with --crossover 3)")
    p.add_argument("--min-time-s", type=float, default=0.3,
                   help="a fast call is repeated until its calls of one kind (first, cached) "
                        f"take this long, {MAX_CALLS} at most (0.3)")
    p.add_argument("--pair-below-s", type=float, default=1.0,
                   help="where plain NetworkX takes less, each backend call is paired with a "
                        "NetworkX call of its own, compared with it (1.0)")
    p.add_argument("--nx-slow-s", type=float, default=20.0,
                   help="a plain NetworkX call slower than this is not repeated (20)")
    p.add_argument("--quick", action="store_true",
                   help="one cached call each, scale 20 at most")
    p.add_argument("--crossover", action="store_true",
                   help="measure where FinePar starts to win (small graphs, forced FinePar) "
                        "and fit the thresholds")
    args = p.parse_args(argv)
    if args.render:
        return render_docs(args, render, targets)
    cross = args.crossover
    args.real = args.real if args.real is not None else (
        CROSSOVER_REAL if cross else "cnr-2000.mtx.gz,soc-Slashdot0902.txt.gz")
    args.scales = args.scales if args.scales is not None else (
        CROSSOVER_SCALES if cross else "20,22")
    args.grids = args.grids if args.grids is not None else (CROSSOVER_GRIDS if cross else "")
    args.backends = args.backends or ("networkx,finepar,finepar-forced" if cross
                                      else "networkx,finepar,graphblas")
    args.first_repeats = args.first_repeats or (3 if cross else 1)
    names = choices("--algorithms", args.algorithms, ALGORITHMS)
    backends = choices("--backends", args.backends, BACKENDS)
    if backends[0] != "networkx" and "networkx" in backends:
        backends.remove("networkx")
        backends.insert(0, "networkx")  # the reference answer first
    specs = graph_specs(args.real, args.scales)
    for w in (x.strip() for x in args.grids.split(",")):
        if w:
            if not (w.isdigit() and 2 <= int(w) <= 10_000):
                from finepar.errors import UsageError
                raise UsageError(f"--grids: {w!r} is not a grid width (an integer 2..10000)")
            specs.append(f"grid:{int(w)}")
    if args.quick:
        args.repeats = 1
        specs = [s for s in specs if not s.startswith("graph500:") or int(s.split(":")[1]) <= 20]
    if "graphblas" in backends:
        try:
            import graphblas_algorithms  # noqa: F401
        except ImportError as exc:
            backends.remove("graphblas")
            log(f"skip: graphblas-algorithms not installed ({exc})")
    import networkx as nx

    from finepar.nx import register
    if register():
        log("finepar backend registered by hand (FinePar runs without its package metadata)")
    from finepar.nx.device import pair
    from finepar.nx.policy import pair_kind
    res = Results("nxbackend.py", args, device_line(pair()), lambda doc: render(doc, args),
                  targets)
    res.doc["networkx"] = nx.__version__
    res.doc["pair_kind"] = pair_kind()
    if any(b.startswith("finepar") for b in backends):
        res.doc["first_call"] = first_call_cost(names)
        res.save()
    budget = Budget(args.budget_s)
    for spec in specs:
        if budget.spent():
            res.note(f"budget spent: {spec} and after not measured")
            break
        run_graph(spec, args, res, backends, names, budget)
        if cross:
            res.doc["crossover"] = crossover(res.doc)
            res.save()
    for line in comparison_lines(res.doc) + target_lines(res.doc["targets"]):
        log(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
