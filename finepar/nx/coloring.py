"""``greedy_color`` by FinePar's Jones-Plassmann colouring (``algorithm="jp"``; the
speculative colouring's order is its own), relabelled to give NetworkX's greedy colouring
exactly.

Jones-Plassmann with fixed priorities colours each vertex after all its higher-priority
neighbours, with the smallest colour they do not use: the sequential greedy colouring
in decreasing priority order (Jones and Plassmann 1993). FinePar's priorities are a
fixed hash of the row (:func:`finepar.apps.coloring.priorities`), so the vertices are
relabelled: the ``k``-th node of the strategy's order gets the row of the ``k``-th
highest priority. The colours are then those of NetworkX's loop over that order, for
every strategy whose order does not depend on the colours as they are given
(:data:`STATIC`); ``independent_set``, DSatur, other callables, ``interchange`` and
directed graphs (NetworkX colours against successors only) go to NetworkX.
"""

from __future__ import annotations

import numpy as np

from .device import run
from .dispatch import implements, networkx_call

#: Strategies whose node order is fixed before colouring starts.
STATIC = ("largest_first", "random_sequential", "smallest_last", "connected_sequential_bfs",
          "connected_sequential_dfs", "connected_sequential")


def _strategy(strategy):
    """NetworkX's function for ``strategy`` when it is a static one, else None."""
    from networkx.algorithms.coloring import greedy_coloring as gc
    funcs = {name: gc.STRATEGIES[name] for name in STATIC}
    if isinstance(strategy, str):
        return funcs.get(strategy)
    return strategy if any(strategy is f for f in funcs.values()) else None


def _args(a: dict):
    if a["interchange"]:
        return "interchange=True"
    if a["G"].is_directed():
        return "directed graph (NetworkX colours against successors only)"
    if _strategy(a["strategy"]) is None:
        return "a strategy whose order depends on the colours (or not a strategy)"
    return True


@implements("greedy_color", can_run=_args,
            docs=("Jones-Plassmann relabelled to the strategy's order: NetworkX's colouring "
                  'exactly, for its static strategies on undirected graphs.'))
def greedy_color(G, strategy="largest_first", interchange=False):
    from ..apps.coloring import priorities
    from .graph import convert_to_nx
    if G.n == 0:
        return {}
    if G.nnz == 0:
        return networkx_call("greedy_color", G, strategy, interchange)
    order = list(_strategy(strategy)(convert_to_nx(G), {}))
    rows = np.fromiter(map(G.row, order), np.int64, len(order))
    ranked = np.argsort(priorities(G.n, 0), kind="stable")[::-1]  # decreasing priority
    perm = np.empty(G.n, np.int64)
    perm[rows] = ranked
    relabelled = G.structure().permuted(perm, note="relabelled by the strategy's order")
    colours = run(G, "coloring", relabelled, keep=False, algorithm="jp", seed=0).values
    return dict(zip(order, colours[perm[rows]].tolist()))
