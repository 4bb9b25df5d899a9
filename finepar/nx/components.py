"""Connected components (undirected) and weakly connected components (directed) on
FinePar's CC app, whose label of a vertex is the smallest row of its component.

NetworkX yields components in the order of their first node in ``G``: rows follow
``G``'s node order, so sorting components by label is NetworkX's order exactly.

``is_connected`` and ``is_weakly_connected``: NetworkX searches from the graph's first node
and compares that component's size with the graph's, so a first node in a small component
(an isolated node, common in generated and real graphs) answers in microseconds. The
backend first searches from that node too, before anything else (the graph's size
included), within :data:`PROBE_NODES` nodes and :data:`PROBE_ENTRIES` adjacency entries,
and answers from the component where it ends within them; FinePar's CC answers otherwise.
"""

from __future__ import annotations

import numpy as np

from .device import run
from .dispatch import implements, networkx_call

#: The first node's component is searched in Python before FinePar's CC while it has at
#: most this many nodes and adjacency entries (about 30 us at most; 0 nodes: no search).
PROBE_NODES, PROBE_ENTRIES = 64, 1024


def _labels(G) -> np.ndarray:
    """Each row's component label (the smallest row of its component)."""
    return run(G, "cc", G.structure()).values


def _components(G, name: str):
    if G.nnz == 0:
        yield from networkx_call(name, G)
        return
    yield from _component_sets(G, _labels(G))


def _component_sets(G, labels: np.ndarray) -> list:
    """The components as sets of nodes, in NetworkX's order, made with the collector off:
    each new set would count towards a full collection, which walks every object of the
    NetworkX graph too, so a million components (Graph500 scale 22) cost minutes with it on
    and seconds with it off (nothing made here forms a cycle)."""
    import gc
    order = np.argsort(labels, kind="stable")
    cuts = (np.flatnonzero(np.diff(labels[order])) + 1).tolist()
    nodes = G.labels(order)  # one list; each component a slice of it
    on = gc.isenabled()
    gc.disable()
    try:
        return [set(nodes[a:b]) for a, b in zip([0, *cuts], [*cuts, len(nodes)])]
    finally:
        if on:
            gc.enable()


def _count(G, name: str) -> int:
    if G.nnz == 0:
        return networkx_call(name, G)
    return int(np.unique(_labels(G)).size)


def first_component_size(G) -> int | None:
    """The size of the component of the graph's first node, where small.

    Parameters
    ----------
    G : finepar.nx.graph.FineParGraph
        Searched on its NetworkX graph (successors and predecessors of a digraph: weakly).

    Returns
    -------
    int or None
        The component's nodes where the search ends within :data:`PROBE_NODES` nodes and
        :data:`PROBE_ENTRIES` adjacency entries; None otherwise, where the NetworkX graph
        is gone or empty, or with ``PROBE_NODES`` 0.
    """
    source = G.source_graph()
    if source is None or not len(source) or PROBE_NODES <= 0:  # gone, empty, or off
        return None
    sides = (source._succ, source._pred) if source.is_directed() else (source._adj,)
    start = next(iter(source._adj))
    seen, todo, scanned = {start}, [start], 0
    while todo:
        v = todo.pop()
        for side in sides:
            nbrs = side[v]
            scanned += len(nbrs)
            if scanned > PROBE_ENTRIES:
                return None
            for w in nbrs:
                if w not in seen:
                    if len(seen) == PROBE_NODES:
                        return None
                    seen.add(w)
                    todo.append(w)
    return len(seen)


def _connected_at_once(G) -> bool | None:
    """NetworkX's connectivity answer where the first node's component is small (see
    :func:`first_component_size`), else None."""
    if not G.n:  # NetworkX's error for the null graph
        return None
    size = first_component_size(G)
    return None if size is None else size == G.n


def _connected(G, name: str) -> bool:
    if G.nnz == 0:  # NetworkX's answer, or its error for the null graph
        return networkx_call(name, G)
    return bool(np.all(_labels(G) == 0))


@implements("connected_components",
            docs="Labels by FinePar's CC; components in NetworkX's order.")
def connected_components(G):
    return _components(G, "connected_components")


@implements("weakly_connected_components",
            docs="Labels by FinePar's CC on the symmetrised graph.")
def weakly_connected_components(G):
    return _components(G, "weakly_connected_components")


@implements("number_connected_components",
            docs="FinePar's CC.")
def number_connected_components(G):
    return _count(G, "number_connected_components")


@implements("number_weakly_connected_components",
            docs="FinePar's CC on the symmetrised graph.")
def number_weakly_connected_components(G):
    return _count(G, "number_weakly_connected_components")


@implements("is_connected", quick=_connected_at_once,
            docs="FinePar's CC.")
def is_connected(G):
    return _connected(G, "is_connected")


@implements("is_weakly_connected", quick=_connected_at_once,
            docs="FinePar's CC on the symmetrised graph.")
def is_weakly_connected(G):
    return _connected(G, "is_weakly_connected")
