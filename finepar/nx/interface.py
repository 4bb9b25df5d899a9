"""NetworkX's ``networkx.backends`` entry point: :class:`BackendInterface`.

NetworkX looks up each dispatched algorithm as an attribute of this class, converts
graphs with :meth:`~BackendInterface.convert_from_nx` (the backend keeps the result on
the graph itself: :mod:`finepar.nx.graph`) and asks :meth:`~BackendInterface.can_run` /
:meth:`~BackendInterface.should_run` first (NetworkX's ``networkx/utils/backends.py``
defines the protocol).
"""

from __future__ import annotations

from . import components, coloring, link_analysis, shortest_paths, traversal  # noqa: F401
from .device import STATS
from .dispatch import ALGORITHMS, can_run
from .graph import FineParGraph, backend_graph, convert_from_nx, convert_to_nx


def _graph_argument(args, kwargs):
    return args[0] if args else kwargs.get("G")


def should_run(name: str, args, kwargs):
    """NetworkX's ``should_run`` hook (asked under automatic dispatch only): True, or why
    NetworkX answers this call faster (:func:`finepar.nx.policy.prefer_networkx`: the
    measured sizes, or ``min_edges`` where set). Reads nothing but the graph's size, kept
    on the graph (:func:`finepar.nx.graph.backend_graph`) for the call's conversion."""
    import networkx as nx
    from .policy import prefer_networkx
    G = _graph_argument(args, kwargs)
    if isinstance(G, FineParGraph):
        fg = G
    elif isinstance(G, nx.Graph):
        fg = backend_graph(G)
    else:
        return True
    why = prefer_networkx(name, fg)
    return True if why is None else why


class BackendInterface:
    """The FinePar backend as NetworkX sees it."""

    convert_from_nx = staticmethod(convert_from_nx)
    convert_to_nx = staticmethod(convert_to_nx)
    can_run = staticmethod(can_run)
    should_run = staticmethod(should_run)
    stats = STATS


for _name, (_func, _) in ALGORITHMS.items():
    setattr(BackendInterface, _name, staticmethod(_func))
