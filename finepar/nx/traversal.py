"""Breadth-first search: ``bfs_layers``, ``bfs_edges``, ``bfs_tree``, ``bfs_predecessors``,
``bfs_successors`` and ``single_source_shortest_path_length`` from FinePar's BFS levels.

FinePar's BFS gives every vertex its level (exact) and some BFS tree; NetworkX's answers
are ordered: a layer lists vertices in the order NetworkX's queue meets them, and a
vertex's parent is the first vertex of the layer above, in that order, with an edge to
it. :func:`layers` recovers both from the levels on the host, one vectorised pass per
layer over the layer's out-edges in NetworkX's adjacency order (kept by the
conversion): the candidates one level further, their first occurrences in order (found
by ``np.minimum.at`` in linear time). The
result is NetworkX's order exactly, so FinePar's own parents are not used.
"""

from __future__ import annotations

import numpy as np

from ..graph import row_positions
from .device import run
from .dispatch import implements, networkx_call


def levels(G, root: int, reverse: bool = False) -> np.ndarray:
    """FinePar's BFS levels from row ``root`` (int32, -1 unreached), along in-edges with
    ``reverse``."""
    return run(G, "bfs", G.structure(reverse), root=root).values


def layers(G, root: int, depth_limit: int | None = None, reverse: bool = False,
           parents: bool = True):
    """The BFS layers from ``root`` in NetworkX's order, each with its vertices' parents.

    Returns
    -------
    list of (ndarray, ndarray or None)
        Per layer, its rows in NetworkX's order and each one's parent row (the root's
        layer: ``[root]`` and ``[-1]``; None without ``parents``), down to
        ``depth_limit`` layers below the root; along predecessors with ``reverse`` (a
        digraph).

    Raises
    ------
    LookupError
        ``reverse`` after the source graph was freed (:meth:`FineParGraph.adjacency`).
    """
    indptr, cols = G.adjacency(reverse)
    lev = levels(G, root, reverse)
    cur = np.array([root], np.int64)
    out = [(cur, np.array([-1], np.int64))]
    # each vertex's first position among its layer's candidates (ufunc.at runs in order;
    # a vertex is a candidate in one layer only, so the array is never reset)
    first = np.full(G.n, np.iinfo(np.int64).max, np.int64)
    depth = 0
    while depth_limit is None or depth < depth_limit:
        pos = row_positions(indptr, cur)
        cand = cols[pos]
        keep = lev[cand] == depth + 1
        if not keep.any():
            break
        parent = np.repeat(cur, indptr[cur + 1] - indptr[cur])[keep] if parents else None
        cand = cand[keep]
        at = np.arange(cand.size, dtype=np.int64)
        np.minimum.at(first, cand, at)
        head = first[cand] == at
        cur = cand[head].astype(np.int64)
        out.append((cur, parent[head] if parents else None))
        depth += 1
    return out


def _single_source(a: dict):
    G, sources = a["G"], a["sources"]
    if sources in G:
        return True
    if isinstance(sources, (list, tuple)) and len(sources) == 1 and sources[0] in G:
        return True
    return "several sources (FinePar's BFS has one root), or a source not in G"


def _edges_args(a: dict):
    if a.get("sort_neighbors") is not None:
        return "sort_neighbors is given"
    if a["source"] not in a["G"]:
        return "source is not in G (NetworkX raises its own error)"
    return True


def _depth(G, depth_limit):
    return len(G) if depth_limit is None else depth_limit


@implements("bfs_layers", can_run=_single_source)
def bfs_layers(G, sources):
    source = sources if sources in G else sources[0]
    if G.nnz == 0:
        yield from networkx_call("bfs_layers", G, sources)
        return
    for rows, _ in layers(G, G.row(source), parents=False):
        yield G.labels(rows)


def _edge_rows(G, source, depth_limit, reverse=False):
    """(parent rows, child rows) of NetworkX's ``bfs_edges`` order."""
    if _depth(G, depth_limit) <= 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    found = layers(G, G.row(source), _depth(G, depth_limit), reverse)[1:]
    if not found:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return (np.concatenate([p for _, p in found]), np.concatenate([c for c, _ in found]))


@implements("bfs_edges", can_run=_edges_args)
def bfs_edges(G, source, reverse=False, depth_limit=None, sort_neighbors=None):
    try:
        if G.nnz == 0:
            raise LookupError("no edges")
        parents, children = _edge_rows(G, source, depth_limit, reverse)
    except LookupError:  # no edges, or the predecessor order went with the source graph
        yield from networkx_call("bfs_edges", G, source, reverse, depth_limit, sort_neighbors)
        return
    yield from zip(G.labels(parents), G.labels(children))


@implements("bfs_tree", can_run=_edges_args)
def bfs_tree(G, source, reverse=False, depth_limit=None, sort_neighbors=None):
    import networkx as nx
    T = nx.DiGraph()
    T.add_node(source)
    T.add_edges_from(bfs_edges(G, source, reverse, depth_limit, sort_neighbors))
    return T


@implements("bfs_predecessors", can_run=_edges_args)
def bfs_predecessors(G, source, depth_limit=None, sort_neighbors=None):
    for parent, child in bfs_edges(G, source, depth_limit=depth_limit):
        yield child, parent


@implements("bfs_successors", can_run=_edges_args)
def bfs_successors(G, source, depth_limit=None, sort_neighbors=None):
    parent, children = source, []
    for p, c in bfs_edges(G, source, depth_limit=depth_limit):
        if p == parent:
            children.append(c)
            continue
        yield parent, children
        children, parent = [c], p
    yield parent, children


def _length_args(a: dict):
    if a["source"] not in a["G"]:
        return "source is not in G (NetworkX raises NodeNotFound)"
    return True


@implements("single_source_shortest_path_length", can_run=_length_args)
def single_source_shortest_path_length(G, source, cutoff=None):
    if G.nnz == 0 or (cutoff is not None and cutoff < 1):
        return networkx_call("single_source_shortest_path_length", G, source, cutoff)
    limit = None if cutoff is None or cutoff >= len(G) else int(np.ceil(cutoff))
    out = {}
    for depth, (rows, _) in enumerate(layers(G, G.row(source), limit, parents=False)):
        out.update(dict.fromkeys(G.labels(rows), depth))
    return out
