"""NetworkX's ``networkx.backends`` entry point: :class:`BackendInterface`.

NetworkX looks up each dispatched algorithm as an attribute of this class, converts
graphs with :meth:`~BackendInterface.convert_from_nx` (caching the result on the
graph) and asks :meth:`~BackendInterface.can_run` / :meth:`~BackendInterface.should_run`
first (NetworkX's ``networkx/utils/backends.py`` defines the protocol).
"""

from __future__ import annotations

from . import components, coloring, link_analysis, shortest_paths, traversal  # noqa: F401
from .device import STATS, config
from .dispatch import ALGORITHMS, can_run
from .graph import FineParGraph, convert_from_nx, convert_to_nx


def _graph_argument(args, kwargs):
    return args[0] if args else kwargs.get("G")


def should_run(name: str, args, kwargs):
    """Under automatic dispatch, leave graphs with fewer than ``min_edges`` edges to
    NetworkX (conversion and launches cost more than the work); a graph already
    converted always runs here."""
    G = _graph_argument(args, kwargs)
    if isinstance(G, FineParGraph):
        return True
    cache = getattr(G, "__networkx_cache__", None) or {}
    if cache.get("backends", {}).get("finepar"):
        return True
    edges = G.number_of_edges()
    if edges < config().min_edges:
        return f"{edges:,} edges, fewer than min_edges ({config().min_edges:,})"
    return True


class BackendInterface:
    """The FinePar backend as NetworkX sees it."""

    convert_from_nx = staticmethod(convert_from_nx)
    convert_to_nx = staticmethod(convert_to_nx)
    can_run = staticmethod(can_run)
    should_run = staticmethod(should_run)
    stats = STATS


for _name, (_func, _) in ALGORITHMS.items():
    setattr(BackendInterface, _name, staticmethod(_func))
