"""Which calls NetworkX answers faster: the backend's measured size thresholds.

A call through the backend pays what NetworkX does not: reading the graph into arrays
(about 45 ns an adjacency entry, a third of what NetworkX's own connected components take),
preparing an engine (plan, tuned threshold, uploads; milliseconds), a run's launches, and
the answer rebuilt as NetworkX's Python objects. On a small graph that is more than
NetworkX's whole call. :data:`MIN_ENTRIES` holds, per algorithm and per kind of device
pair, the graph size (adjacency entries: an undirected edge counts twice) from which a
call on a graph the backend has not seen before, conversion included, was measured no
slower than plain NetworkX; below it the call goes to NetworkX:

* under automatic dispatch (``nx.config.backend_priority``), :func:`should_run` says so
  and NetworkX runs the call without converting anything;
* with ``backend="finepar"`` given explicitly (NetworkX then asks no ``should_run``),
  the backend runs NetworkX's own implementation on the original graph
  (:func:`finepar.nx.dispatch.implements`), having read nothing of it but its size.

The measurements: ``benchmarks/runs/emulated-2026-11-27/`` (``benchmarks/nxbackend.py
--crossover``), summarised in ``docs/networkx.md``. The GPU pair's column comes from the
H100 runs of 2026-11-25 (``benchmarks/runs/h100-2026-11-25b/nxbackend-*.json``) until it
is measured the same way. The two differ because a first call on a real GPU pair also
uploads the graph and prepares device buffers over PCIe, and its launches cost a driver's
latency: on the H100 the first connected-components and ``bfs_layers`` calls still lost
to NetworkX at 3.2 million entries, where the emulated pair (the CPU alone, no copies) won
from about 0.2 million.

``nx.config.backends.finepar.min_edges`` overrides the table: a number of edges (as
``G.number_of_edges()`` counts them) below which every algorithm goes to NetworkX; 0 sends
every call to FinePar.
"""

from __future__ import annotations

import math

#: Per kind of device pair (:func:`pair_kind`), per algorithm: the adjacency entries from
#: which FinePar's first call on a graph (conversion included) was measured no slower than
#: plain NetworkX's call on every graph of that size or larger (``math.inf``: NetworkX was
#: faster on every graph measured). Each is the size of the smallest graph measured above
#: the largest one on which FinePar lost, so the crossover itself lies a little below.
#:
#: ``emulated``: measured 2026-11-27 on the 2-core box (PoCL on an AMD EPYC, the GPU role
#: emulated; FinePar's default devices there: the CPU alone), commit a494443 and this
#: backend, ``benchmarks/nxbackend.py --crossover``, twice
#: (``benchmarks/runs/emulated-2026-11-27/nxbackend-crossover-{1,2}.json``; is_connected
#: from ``nxbackend-crossover-is_connected.json``): 21 graphs from 3,968 to 1,819,246
#: entries (the small real graphs, Graph500 scales 8, 10-16, square grids of width 32, 100
#: and 316); a size is lost if FinePar lost there in either run. Not measured, taken from
#: the same app's nearest call: number_weakly_connected_components and
#: is_weakly_connected (weakly_connected_components'), bfs_successors (bfs_predecessors').
#: FinePar's Jones-Plassmann colouring lost 5-12x on every graph (the strategy's order is
#: NetworkX's own work, then a relabelled graph and engine per call).
#:
#: ``gpu``: provisional, from the H100 runs of 2026-11-25 (``benchmarks/runs/
#: h100-2026-11-25b/nxbackend-*.json``: soc-Slashdot0902 948,464 entries, cnr-2000
#: 3,216,152, Graph500 scale 20 31,404,492), until ``--crossover`` runs there: the
#: smallest graph on which the first call won with no loss above; the CC app's calls lost
#: their first call on cnr-2000 (uploads and the device's preparation) and won at scale 20,
#: as did bfs_layers; none was measured below 948,464 entries. The H200 run of
#: 2026-11-27 (``benchmarks/runs/h200-2026-11-27/nxbackend-real.json.gz``) lost bfs_edges's
#: first call on soc-Slashdot0902 (1.3x: the conversion; cached 11x faster), so bfs_edges
#: starts at cnr-2000's size; its ``--crossover`` over graphs of up to 203,710 entries
#: (``nxbackend-crossover-small.json``) lost every traversal's and CC's first call there.
_EMULATED = {"pagerank": 11_097, "hits": 426_320,
             "connected_components": 239_332, "number_connected_components": 203_710,
             "is_connected": 203_710, "weakly_connected_components": 103_689,
             "number_weakly_connected_components": 103_689, "is_weakly_connected": 103_689,
             "bfs_layers": 239_332, "bfs_edges": 203_710, "bfs_tree": 126_150,
             "bfs_predecessors": 126_150, "bfs_successors": 126_150,
             "single_source_shortest_path_length": 426_320,
             "single_source_dijkstra_path_length": 126_150, "dijkstra_path_length": 126_150,
             "greedy_color": math.inf}
_SLASHDOT, _CNR, _SCALE20 = 948_464, 3_216_152, 31_404_492
_GPU = {"pagerank": _SLASHDOT, "hits": _SLASHDOT,
        **dict.fromkeys(("connected_components", "number_connected_components", "is_connected",
                         "weakly_connected_components", "number_weakly_connected_components",
                         "is_weakly_connected", "bfs_layers"), _SCALE20),
        **dict.fromkeys(("bfs_tree", "bfs_predecessors", "bfs_successors",
                         "single_source_shortest_path_length",
                         "single_source_dijkstra_path_length", "dijkstra_path_length"),
                        _SLASHDOT),
        "bfs_edges": _CNR,
        "greedy_color": math.inf}
MIN_ENTRIES: dict[str, dict[str, float]] = {"emulated": _EMULATED, "gpu": _GPU}

_KIND: list = []


def pair_kind() -> str:
    """``emulated`` where the backend's GPU role is played by a CPU context (or
    ``devices`` is ``cpu``), else ``gpu``: from the open pair, or from the devices FinePar
    would select (:func:`finepar.device.select_pair`; listing them costs a few tenths of a
    second once a process, and is done only for a size between the two kinds'
    thresholds).

    Raises
    ------
    finepar.errors.DeviceError
        If no OpenCL device can be selected.
    """
    from . import device
    if device.config().devices == "cpu":
        return "emulated"
    if device._PAIR is not None:
        return "emulated" if device._PAIR.selection.emulated else "gpu"
    if not _KIND:
        from ..device import select_pair
        _KIND.append("emulated" if select_pair().emulated else "gpu")
    return _KIND[0]


def min_entries(name: str, kind: str) -> float:
    """The adjacency entries from which FinePar runs ``name`` (a dispatched algorithm) on
    a ``kind`` pair (``emulated`` or ``gpu``); ``math.inf`` where it never does.

    Raises
    ------
    KeyError
        For a ``kind`` not in :data:`MIN_ENTRIES`.
    """
    return MIN_ENTRIES[kind].get(name, math.inf)


def prefer_networkx(name: str, fg) -> str | None:
    """Why NetworkX should answer a call, or None where FinePar is measured faster.

    ``min_edges`` set (not None) decides alone; otherwise :data:`MIN_ENTRIES` for the
    pair's kind, asked of the devices only when the size lies between the kinds'
    thresholds. A pair that cannot be opened (no OpenCL device) sends the call to
    NetworkX, with the reason.

    Parameters
    ----------
    name : str
        The dispatched algorithm.
    fg : finepar.nx.graph.FineParGraph
        The graph; only its size is read (``entries``, or ``edges`` under ``min_edges``:
        one pass over the nodes the first time).

    Returns
    -------
    str or None
        The reason (NetworkX's ``should_run`` takes it as such), or None.
    """
    from .device import config
    cfg = config()
    if cfg.min_edges is not None:
        if fg.edges < int(cfg.min_edges):
            return f"{fg.edges:,} edges, fewer than min_edges ({int(cfg.min_edges):,})"
        return None
    limits = {kind: min_entries(name, kind) for kind in MIN_ENTRIES}
    if fg.entries >= max(limits.values()):
        return None
    if fg.entries < min(limits.values()):
        kind = "every kind of"
        limit = min(limits.values())
    else:
        from ..errors import FineParError
        try:
            kind = pair_kind()
        except FineParError as exc:
            return f"no FinePar device pair ({exc})"
        limit = limits[kind]
        if fg.entries >= limit:
            return None
    if math.isinf(limit):
        return f"NetworkX's {name} was faster on every graph measured on the {kind} pair"
    return (f"{fg.entries:,} adjacency entries, below the {int(limit):,} from which "
            f"FinePar's {name} was measured faster ({kind} pair)")
