"""A NetworkX backend: ``nx.pagerank(G, backend="finepar")`` runs on FinePar's engine.

Installing FinePar registers the backend (entry points ``networkx.backends`` and
``networkx.backend_info``). Call one algorithm with ``backend="finepar"``, or every
dispatched call with ``nx.config.backend_priority = ["finepar"]`` (the environment's
``NETWORKX_BACKEND_PRIORITY=finepar``), in which case NetworkX itself takes the calls
the backend cannot answer exactly.

Calls on graphs too small for FinePar to win (the sizes measured per algorithm and kind
of device pair: :mod:`finepar.nx.policy`) are answered by NetworkX's own implementation,
whichever way the backend was chosen, having read nothing of the graph but its size.

The graph conversion (:mod:`finepar.nx.graph`) is read when a FinePar run needs it and
kept on the graph (``G.__networkx_cache__``) by the backend, so a cached call converts
nothing and prints no note; the device pair is opened once per process
(:mod:`finepar.nx.device`). Which calls run on FinePar and which go back to NetworkX,
and why: ``docs/networkx.md``.

Settings, ``nx.config.backends.finepar``: ``min_edges`` (None: the measured sizes decide;
a number of edges: graphs with fewer go to NetworkX, larger ones to FinePar, for every
algorithm; 0 sends every call to FinePar), ``devices`` (``auto``: FinePar's default, the
tuner's split, or the CPU alone on an emulated pair; ``both``, ``cpu`` or ``gpu``),
``threshold`` (T_f; default: the tuner's), ``memory`` (``auto``, ``shared``, ``split``),
``calibrate`` (None: the API's default), ``prepared_cache`` (use FinePar's on-disk
prepared-graph cache; default False).
"""

from __future__ import annotations

#: The dispatched algorithms, each with what it adds to NetworkX's documentation: generated
#: from the implementations' registrations by ``python -m finepar.nx.functions`` (a literal,
#: so that ``backend_info`` imports nothing; ``tests/test_nx.py`` checks it is up to date).
FUNCTIONS = {
    "connected_components": "Labels by FinePar's CC; components in NetworkX's order.",
    "weakly_connected_components": "Labels by FinePar's CC on the symmetrised graph.",
    "number_connected_components": "FinePar's CC.",
    "number_weakly_connected_components": "FinePar's CC on the symmetrised graph.",
    "is_connected": "FinePar's CC.",
    "is_weakly_connected": "FinePar's CC on the symmetrised graph.",
    "greedy_color": ("Jones-Plassmann relabelled to the strategy's order: NetworkX's colouring "
                     "exactly, for its static strategies on undirected graphs."),
    "pagerank": ("Unweighted walk (equal or absent weights; others run in NetworkX); float32 "
                 "vectors, NetworkX's stopping rule floored at an L1 change of 1e-7; "
                 "personalization and dangling as random walks with restart."),
    "hits": ("Power iteration on FinePar (float32) to ARPACK's vectors; equal or absent "
             "weights; normalized=True and max_iter >= 100 only."),
    "bfs_layers": "One source; levels by FinePar's BFS, NetworkX's order within layers.",
    "bfs_edges": ("Levels by FinePar's BFS; NetworkX's edge order and parents rebuilt on the "
                  "host; reverse follows predecessors; no sort_neighbors."),
    "bfs_tree": "As bfs_edges.",
    "bfs_predecessors": "As bfs_edges.",
    "bfs_successors": "As bfs_edges.",
    "single_source_shortest_path_length": "FinePar's BFS levels, NetworkX's order.",
    "single_source_dijkstra_path_length": ("FinePar's SSSP (BFS for equal lengths) where every "
                                           "length is a non-negative integer with path sums "
                                           "below 2**24; others run in NetworkX."),
    "dijkstra_path_length": "As single_source_dijkstra_path_length.",
}

#: ``nx.config.backends.finepar``'s defaults.
DEFAULT_CONFIG = {"min_edges": None, "devices": "auto", "threshold": None,
                  "memory": "auto", "calibrate": None, "prepared_cache": False}


def backend_info() -> dict:
    """NetworkX's ``networkx.backend_info`` entry point: the backend's name, summary,
    functions (with notes for NetworkX's docs) and default settings. Imports nothing."""
    return {
        "backend_name": "finepar",
        "project": "finepar",
        "package": "finepar",
        "short_summary": "Fine-grained CPU+GPU co-processing through OpenCL.",
        "functions": {name: {"additional_docs": doc} for name, doc in FUNCTIONS.items()},
        "default_config": dict(DEFAULT_CONFIG),
    }


def register() -> bool:
    """Register the backend in this process where FinePar runs from a source tree without
    its package metadata (so without its entry points), as NetworkX's own test setup
    registers its loopback backend. Returns False when it was registered already.

    Raises
    ------
    ImportError
        If the installed NetworkX is older than 3.4 (no backend interface to follow).
    """
    from importlib.metadata import EntryPoint

    import networkx as nx
    if tuple(int(x) for x in nx.__version__.split(".")[:2]) < (3, 4):
        raise ImportError(f"the finepar backend needs networkx >= 3.4, not {nx.__version__}")
    backends = nx.utils.backends
    if "finepar" in backends.backends:
        return False
    backends.backends["finepar"] = EntryPoint("finepar", "finepar.nx.interface:BackendInterface",
                                              "networkx.backends")
    backends.backend_info["finepar"] = backend_info()
    if "finepar" not in nx.config.backends:
        nx.config.backends = nx.utils.Config(finepar=nx.utils.Config(**DEFAULT_CONFIG),
                                             **nx.config.backends)
    return True
