"""``single_source_dijkstra_path_length`` and ``dijkstra_path_length`` on FinePar's SSSP app.

FinePar's SSSP sums float32 lengths; NetworkX's Dijkstra sums the attribute's Python
numbers. The two agree exactly when every length is a non-negative integer and no path
sum reaches 2**24 (:meth:`~finepar.nx.graph.EdgeValues.exact_lengths`); other graphs go
to NetworkX. Lengths come back as ints where every weight was an int (NetworkX's sums
then are ints), else as floats; the source's is 0.

Order of the returned dict: NetworkX's is its heap's pop order. With all lengths equal
that is the BFS order, which :func:`finepar.nx.traversal.layers` reproduces exactly;
otherwise the dict is ordered by distance, ties by row (NetworkX breaks them by push
order), with the same keys and values.
"""

from __future__ import annotations

import numpy as np

from .device import run
from .dispatch import implements, networkx_call
from .traversal import joined, layers


def _args(a: dict):
    if callable(a["weight"]):
        return "weight is a function"
    if a["source"] not in a["G"]:
        return "source is not in G (NetworkX raises NodeNotFound)"
    return True


def _exact(G, weight) -> bool:
    vals = G.values.get(weight) if weight is not None else None
    return G.nnz > 0 and (vals is None or vals.exact_lengths(G.n))


def _lengths(G, source, weight):
    """(distances float32 by row, as_int, uniform length or None)."""
    vals = G.values.get(weight) if weight is not None else None
    if vals is None or vals.uniform("least"):
        step = 1.0 if vals is None else float(vals.least[0])
        lev = run(G, "bfs", G.structure(), root=G.row(source)).values
        dist = np.where(lev >= 0, lev.astype(np.float64) * step, np.inf)
        return dist, vals is None or vals.integers, step
    dist = run(G, "sssp", G.weighted(weight, "least"), root=G.row(source)).values
    return dist.astype(np.float64), vals.integers, None


@implements("single_source_dijkstra_path_length", can_run=_args,
            docs=("FinePar's SSSP (BFS for equal lengths) where every length is a non-negative "
                  'integer with path sums below 2**24; others run in NetworkX.'))
def single_source_dijkstra_path_length(G, source, cutoff=None, weight="weight"):
    if not _exact(G, weight):
        return networkx_call("single_source_dijkstra_path_length", G, source, cutoff, weight)
    dist, as_int, step = _lengths(G, source, weight)
    if step is not None:  # NetworkX's heap pops in BFS order
        rows = joined(r for r, _ in layers(G, G.row(source), parents=False))
    else:
        rows = np.flatnonzero(np.isfinite(dist))
        rows = rows[np.argsort(dist[rows], kind="stable")]
    if cutoff is not None:
        rows = rows[dist[rows] <= cutoff]
    d = dist[rows]
    values = d.astype(np.int64).tolist() if as_int else d.tolist()
    out = {source: 0}  # NetworkX's start: popped first, an int whatever the weights
    out.update(zip(G.labels(rows), values))
    out[source] = 0
    return out


@implements("dijkstra_path_length", can_run=_args,
            docs='As single_source_dijkstra_path_length.')
def dijkstra_path_length(G, source, target, weight="weight"):
    import networkx as nx
    if source == target:
        return 0
    if not _exact(G, weight):
        return networkx_call("dijkstra_path_length", G, source, target, weight)
    if target not in G:
        raise nx.NetworkXNoPath(f"Node {target} not reachable from {source}")
    dist, as_int, _ = _lengths(G, source, weight)
    d = dist[G.row(target)]
    if not np.isfinite(d):
        raise nx.NetworkXNoPath(f"Node {target} not reachable from {source}")
    return int(d) if as_int else float(d)
