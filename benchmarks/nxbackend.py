"""NetworkX's own calls through three backends: plain NetworkX, ``backend="finepar"`` and
``backend="graphblas"`` (graphblas-algorithms, where installed and where it implements
the algorithm), end to end.

For each graph the NetworkX graph is built once (from FinePar's CSR, each edge added once;
its time and the process's resident memory growth are recorded: at Graph500 scale 20 this
alone took 5 minutes and 7.5 GiB on the 2-core box through ``from_scipy_sparse_array``,
and scale 22 holds four times as many edges). For each algorithm and backend: the
**first** call on a fresh ``G.__networkx_cache__`` (conversion included), then
``--repeats`` **cached** calls (min / median / max). Plain NetworkX has no conversion: all its calls are alike (a call
slower than ``--nx-slow-s`` is not repeated). Generators are consumed (``list``) and lazy
mappings read into dicts, inside the timing. The
first FinePar call of the process (opening the pair, building kernels) is measured
apart, on a 1,000-vertex graph. Every FinePar and GraphBLAS answer is compared with
NetworkX's (``agrees``) where NetworkX ran.

  python benchmarks/nxbackend.py --quick --json out.json --md benchmarks/RESULTS.md
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

BACKENDS = ("networkx", "finepar", "graphblas")
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
#: The targets of the issue: (algorithm, graph, backend compared, bound).
TARGETS = (("pagerank", "graph500-s22", "networkx", 20.0),
           ("pagerank", "graph500-s22", "graphblas", 3.0),
           ("bfs_layers", "graph500-s22", "networkx", 10.0),
           ("connected_components", "graph500-s22", "networkx", 10.0))


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


def timed(fn) -> tuple[float, object]:
    """Seconds of ``fn()`` with its answer materialized, and the answer."""
    t0 = time.perf_counter()
    out = materialized(fn())
    return time.perf_counter() - t0, out


def measure(name, G, a, backend, repeats, nx_slow_s, ref) -> dict:
    """One algorithm through one backend: first call (fresh cache), then cached calls."""
    import networkx as nx
    call, _ = ALGORITHMS[name]
    kw = {} if backend == "networkx" else {"backend": backend}
    G.__networkx_cache__.clear()
    try:
        first, out = timed(lambda: call(nx, G, a, **kw))
    except NotImplementedError as exc:
        return {"status": "not implemented", "detail": str(exc).split(".")[0]}, None
    times = [first]
    more = repeats if backend != "networkx" else (repeats - 1 if first < nx_slow_s else 0)
    for _ in range(more):
        times.append(timed(lambda: call(nx, G, a, **kw))[0])
    rec = {"status": "ok", "first_s": first,
           "cached": stats(times[1:] if backend != "networkx" else times)}
    if ref is not None and backend != "networkx":
        rec["agrees"] = agrees(name, out, ref)
    return rec, out


def first_call_cost(names) -> dict:
    """Seconds of each algorithm's first FinePar call in this process, on a 1,000-vertex
    graph (the pair opened once, each app's kernels built), and of a second call."""
    import networkx as nx

    from finepar.nx.device import STATS
    G = nx.gnp_random_graph(1000, 0.01, seed=1)
    a = {"source": 0, "target": 1}
    out = {}
    for name in names:
        call, kind = ALGORITHMS[name]
        H = G if kind != "directed" else G.to_directed()
        t1, _ = timed(lambda: call(nx, H, a, backend="finepar"))
        t2, _ = timed(lambda: call(nx, H, a, backend="finepar"))
        out[name] = {"first_s": t1, "second_s": t2}
    out["pair_open_s"] = STATS["pair_seconds"]
    return out


def run_graph(spec, args, res, backends, names, budget) -> None:
    g, load_s = load(spec)
    log(f"{g.name}: {g.n:,} vertices, {g.nnz:,} entries; building the networkx graph")
    G, build = nx_graph(g)
    a = call_args(g)
    row = {"graph": g.name, "n": g.n, "nnz": g.nnz, "load_s": load_s, "nx_build": build,
           "args": a, "algorithms": {}}
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
        for backend in backends:
            rec, value = measure(name, G, a, backend, args.repeats, args.nx_slow_s, ref)
            if backend == "networkx":
                ref = value
            recs[backend] = rec
            res.save()
            log(f"  {name:36s} {backend:9s} " + (
                f"first {rec['first_s']:.3f} s, cached {stat_cell(rec['cached'], 1, 3)} s"
                + (f", agrees {rec['agrees']}" if "agrees" in rec else "")
                if rec["status"] == "ok" else rec["status"]))
    del G  # the graph and its cached conversions go before the next graph is built


def speed(row, name, backend) -> float | None:
    """``backend``'s cached median over FinePar's for ``name`` in a row (None: not both)."""
    recs = row["algorithms"].get(name, {})
    fp, other = recs.get("finepar", {}), recs.get(backend, {})
    if fp.get("status") != "ok" or other.get("status") != "ok":
        return None
    return other["cached"]["median"] / fp["cached"]["median"]


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
    return t.items


def render(doc, args) -> str:
    lines = [f"### NetworkX backend: plain NetworkX, `backend=\"finepar\"`, "
             f"`backend=\"graphblas\"` ({doc['date']})", "",
             f"Device: {doc['device']}. Seconds; *first* is a call on a fresh cache "
             f"(conversion included), *cached* the median (min-max) of later calls, each with "
             f"its answer as a dict (graphblas-algorithms' lazy NodeMaps read into one); "
             f"speed-ups are cached medians against FinePar's.", ""]
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
                  "| algorithm | networkx | finepar first | finepar cached | graphblas first "
                  "| graphblas cached | vs networkx | vs graphblas | agrees |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name, recs in ordered(row, "algorithms"):
            cells = [name, _cached(recs.get("networkx"))]
            for backend in ("finepar", "graphblas"):
                r = recs.get(backend) or {}
                ok = r.get("status") == "ok"
                cells += [f"{r['first_s']:.3f}" if ok else r.get("status", "-"),
                          _cached(r) if ok else "-"]
            for other in ("networkx", "graphblas"):
                x = speed(row, name, other)
                cells.append(f"{x:.1f}x" if x else "-")
            agree = [f"{k}: {r['agrees']}" for k, r in recs.items() if "agrees" in r]
            cells.append(", ".join(agree) or "-")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += [*(f"- {n}" for n in doc.get("notes", [])), *target_lines(doc["targets"])]
    return "\n".join(lines)


def _cached(rec) -> str:
    return stat_cell(rec.get("cached"), 1, 3) if rec and rec.get("status") == "ok" else "-"


def main(argv=None) -> int:
    p = script_parser(__doc__, "nxbackend")
    p.add_argument("--real", default="cnr-2000.mtx.gz,soc-Slashdot0902.txt.gz")
    p.add_argument("--scales", default="20,22")
    p.add_argument("--algorithms", default=",".join(ALGORITHMS))
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--repeats", type=int, default=3, help="cached calls per backend (3)")
    p.add_argument("--nx-slow-s", type=float, default=20.0,
                   help="a plain NetworkX call slower than this is not repeated (20)")
    p.add_argument("--quick", action="store_true",
                   help="one cached call each, scale 20 at most")
    args = p.parse_args(argv)
    if args.render:
        return render_docs(args, render, targets)
    names = choices("--algorithms", args.algorithms, ALGORITHMS)
    backends = choices("--backends", args.backends, BACKENDS)
    if backends[0] != "networkx" and "networkx" in backends:
        backends.remove("networkx")
        backends.insert(0, "networkx")  # the reference answer first
    specs = graph_specs(args.real, args.scales)
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
    nx.config.warnings_to_ignore.add("cache")
    warnings.filterwarnings("ignore", category=UserWarning)
    from finepar.nx.device import pair
    res = Results("nxbackend.py", args, device_line(pair()), lambda doc: render(doc, args),
                  targets)
    res.doc["networkx"] = nx.__version__
    if "finepar" in backends:
        res.doc["first_call"] = first_call_cost(names)
        res.save()
    budget = Budget(args.budget_s)
    for spec in specs:
        if budget.spent():
            res.note(f"budget spent: {spec} and after not measured")
            break
        run_graph(spec, args, res, backends, names, budget)
    for line in target_lines(res.doc["targets"]):
        log(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
