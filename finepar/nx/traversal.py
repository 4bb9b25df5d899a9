"""Breadth-first search: ``bfs_layers``, ``bfs_edges``, ``bfs_tree``, ``bfs_predecessors``,
``bfs_successors`` and ``single_source_shortest_path_length`` from FinePar's BFS levels.

FinePar's BFS gives every vertex its level (exact) and some BFS tree; NetworkX's answers
are ordered: a layer lists vertices in the order NetworkX's queue meets them, and a
vertex's parent is the first vertex of the layer above, in that order, with an edge to
it. :func:`layers` recovers both from the levels on the host. One vectorised pass over
the reached rows keeps the *forward* entries (from a vertex at level d to one at d + 1),
in NetworkX's adjacency order (kept by the conversion); then each layer's forward
entries, in its vertices' order, are the next layer's candidates, and their first
occurrences (found in linear time by ``np.minimum.at``) are the next layer in order, each
with its parent: a dozen array operations a layer (about 15 us on the 2-core box, so a
road network's thousand layers cost 15 ms; an expansion in Python was slower even there).
The result is NetworkX's order exactly, so FinePar's own parents are not used.
"""

from __future__ import annotations

import numpy as np

from .device import run
from .dispatch import implements, networkx_call


def levels(G, root: int, reverse: bool = False) -> np.ndarray:
    """FinePar's BFS levels from row ``root`` (int32, -1 unreached), along in-edges with
    ``reverse``."""
    return run(G, "bfs", G.structure(reverse), root=root).values


def forward(indptr: np.ndarray, cols: np.ndarray, lev: np.ndarray,
            depth_limit: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The forward entries of a BFS: those from a reached vertex at level ``d`` to one at
    ``d + 1`` (``d < depth_limit``), in adjacency order.

    Parameters
    ----------
    indptr : ndarray of int64, shape (n + 1,)
    cols : ndarray of int32, shape (nnz,)
    lev : ndarray of int, shape (n,)
        Levels, -1 where unreached.
    depth_limit : int, optional

    Returns
    -------
    start, end : ndarray of int64, shape (n,)
        Row ``u``'s forward entries are ``fcols[start[u]:end[u]]`` (empty where unreached).
    fcols : ndarray of int32

    Only the reached rows are read: a source whose component is a small part of the graph
    costs that part (and two passes over ``n`` levels), not the whole adjacency.
    """
    n = lev.shape[0]
    rows = np.flatnonzero(lev >= 0)
    if depth_limit is not None:
        rows = rows[lev[rows] < depth_limit]
    deg = indptr[rows + 1] - indptr[rows]
    total = int(deg.sum())
    if rows.size == n:  # every row: the adjacency as it is
        pos = None
        src = np.repeat(lev, deg)
        cand = cols
    else:
        ends = np.cumsum(deg)
        pos = np.repeat(indptr[rows] - (ends - deg), deg) + np.arange(total, dtype=np.int64)
        src = np.repeat(lev[rows], deg)
        cand = cols[pos]
    keep = lev[cand] == src + 1
    counts = np.zeros(total + 1, np.int64)
    np.cumsum(keep, out=counts[1:])
    bounds = np.zeros(rows.size + 1, np.int64)
    np.cumsum(deg, out=bounds[1:])
    start = np.zeros(n, np.int64)
    end = np.zeros(n, np.int64)
    start[rows] = counts[bounds[:-1]]
    end[rows] = counts[bounds[1:]]
    return start, end, cand[keep]


def layers(G, root: int, depth_limit: int | None = None, reverse: bool = False,
           parents: bool = True):
    """The BFS layers from ``root`` in NetworkX's order, each with its vertices' parents.

    Returns
    -------
    list of (rows, parent rows or None)
        Per layer, its rows in NetworkX's order and each one's parent row (int arrays;
        the root's layer: ``[root]`` and ``[-1]``; None without ``parents``), down to
        ``depth_limit`` layers below the root; along predecessors with ``reverse`` (a
        digraph).

    Raises
    ------
    LookupError
        ``reverse`` after the source graph was freed (:meth:`FineParGraph.adjacency`).
    """
    indptr, cols = G.adjacency(reverse)
    lev = levels(G, root, reverse)
    start, end, fcols = forward(indptr, cols, lev, depth_limit)
    count = end - start
    cur = np.array([root], np.int64)
    out = [(cur, np.array([-1], np.int64) if parents else None)]
    # each vertex's first position among its layer's candidates (ufunc.at runs in order;
    # a vertex is a candidate in one layer only, so the array is never reset)
    first = np.full(G.n, np.iinfo(np.int64).max, np.int64)
    depth = 0
    while depth_limit is None or depth < depth_limit:
        lens = count[cur]
        at = np.arange(int(lens.sum()), dtype=np.int64)
        if not at.size:
            break
        pos = np.repeat(start[cur] - (np.cumsum(lens) - lens), lens)
        pos += at
        cand = fcols[pos]
        np.minimum.at(first, cand, at)
        head = first[cand] == at
        out.append((cand[head], np.repeat(cur, lens)[head] if parents else None))
        cur = out[-1][0]
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


@implements("bfs_layers", can_run=_single_source,
            docs="One source; levels by FinePar's BFS, NetworkX's order within layers.")
def bfs_layers(G, sources):
    source = sources if sources in G else sources[0]
    if G.nnz == 0:
        yield from networkx_call("bfs_layers", G, sources)
        return
    for rows, _ in layers(G, G.row(source), parents=False):
        yield G.labels(rows)


def joined(pieces) -> np.ndarray:
    """The rows of :func:`layers`' pieces one after another, int64."""
    pieces = list(pieces)
    if not pieces:
        return np.empty(0, np.int64)
    return np.concatenate(pieces).astype(np.int64, copy=False)


def _edge_rows(G, source, depth_limit, reverse=False):
    """(parent rows, child rows) of NetworkX's ``bfs_edges`` order."""
    if _depth(G, depth_limit) <= 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    found = layers(G, G.row(source), _depth(G, depth_limit), reverse)[1:]
    return joined(p for _, p in found), joined(c for c, _ in found)


@implements("bfs_edges", can_run=_edges_args,
            docs=("Levels by FinePar's BFS; NetworkX's edge order and parents rebuilt on the "
                  'host; reverse follows predecessors; no sort_neighbors.'))
def bfs_edges(G, source, reverse=False, depth_limit=None, sort_neighbors=None):
    try:
        if G.nnz == 0:
            raise LookupError("no edges")
        parents, children = _edge_rows(G, source, depth_limit, reverse)
    except LookupError:  # no edges, or the predecessor order went with the source graph
        yield from networkx_call("bfs_edges", G, source, reverse, depth_limit, sort_neighbors)
        return
    yield from zip(G.labels(parents), G.labels(children))


@implements("bfs_tree", can_run=_edges_args,
            docs='As bfs_edges.')
def bfs_tree(G, source, reverse=False, depth_limit=None, sort_neighbors=None):
    import networkx as nx
    T = nx.DiGraph()
    T.add_node(source)
    T.add_edges_from(bfs_edges(G, source, reverse, depth_limit, sort_neighbors))
    return T


@implements("bfs_predecessors", can_run=_edges_args,
            docs='As bfs_edges.')
def bfs_predecessors(G, source, depth_limit=None, sort_neighbors=None):
    if G.nnz == 0:
        yield from networkx_call("bfs_predecessors", G, source, depth_limit, sort_neighbors)
        return
    parents, children = _edge_rows(G, source, depth_limit)
    yield from zip(G.labels(children), G.labels(parents))


@implements("bfs_successors", can_run=_edges_args,
            docs='As bfs_edges.')
def bfs_successors(G, source, depth_limit=None, sort_neighbors=None):
    if G.nnz == 0:
        yield from networkx_call("bfs_successors", G, source, depth_limit, sort_neighbors)
        return
    parents, children = _edge_rows(G, source, depth_limit)
    if not children.size:  # NetworkX yields the source with no children
        yield source, []
        return
    # a parent's children are met together, while its adjacency is scanned
    cuts = [0, *(np.flatnonzero(np.diff(parents)) + 1).tolist(), parents.size]
    heads, kids = G.labels(parents[cuts[:-1]]), G.labels(children)
    for head, a, b in zip(heads, cuts, cuts[1:]):
        yield head, kids[a:b]


def _length_args(a: dict):
    if a["source"] not in a["G"]:
        return "source is not in G (NetworkX raises NodeNotFound)"
    return True


@implements("single_source_shortest_path_length", can_run=_length_args,
            docs="FinePar's BFS levels, NetworkX's order.")
def single_source_shortest_path_length(G, source, cutoff=None):
    if G.nnz == 0 or (cutoff is not None and cutoff < 1):
        return networkx_call("single_source_shortest_path_length", G, source, cutoff)
    limit = None if cutoff is None or cutoff >= len(G) else int(np.ceil(cutoff))
    found = [rows for rows, _ in layers(G, G.row(source), limit, parents=False)]
    depth = np.repeat(np.arange(len(found)), [rows.size for rows in found])
    return dict(zip(G.labels(joined(found)), depth.tolist()))
