"""The backend's graph: a NetworkX graph's adjacency as CSR arrays, node ids kept both ways.

:func:`convert_from_nx` reads ``G._adj`` once, in NetworkX's own adjacency order (the
order in which NetworkX's traversals meet neighbours), into ``indptr`` / ``cols`` and,
for each edge attribute the call needs, a float64 array of values beside ``cols``.
FinePar's own :class:`~finepar.graph.Graph` (canonical CSR: columns sorted in a row)
and the app :class:`~finepar.api.Workload` built on it are made from those arrays on
first use and kept on the :class:`FineParGraph`, which NetworkX caches in
``G.__networkx_cache__``: a second call on the same graph converts nothing.

Multigraphs keep one CSR entry per neighbour; an attribute's values over parallel
edges are kept both summed (PageRank and HITS: NetworkX's adjacency matrix sums them)
and as their minimum (Dijkstra: NetworkX takes the lightest parallel edge).
"""

from __future__ import annotations

import numbers
import weakref
from dataclasses import dataclass, replace
from itertools import chain
from operator import methodcaller

import numpy as np

from ..graph import Graph
from ..io import from_csr

#: Float32 holds every integer below this exactly (sums of integral weights included).
FLOAT32_EXACT = float(1 << 24)


@dataclass
class EdgeValues:
    """One edge attribute's values, beside :attr:`FineParGraph.cols`.

    Attributes
    ----------
    total : ndarray of float64, shape (nnz,)
        Per neighbour pair; summed over parallel edges in a multigraph.
    least : ndarray of float64, shape (nnz,)
        The lightest parallel edge (the same array as `total` for a simple graph).
    integers : bool
        Every value was a Python ``int`` (or a missing attribute's int default): NetworkX's
        sums of them are ints.
    numeric : bool
        Every value was a real number (False: a value NetworkX may handle but FinePar
        cannot, such as None or a string).
    """

    total: np.ndarray
    least: np.ndarray
    integers: bool
    numeric: bool

    def uniform(self, which: str = "total") -> bool:
        """All values equal and positive: a weighted walk equals the unweighted one."""
        v = self.total if which == "total" else self.least
        return bool(self.numeric and v.size and v[0] > 0 and np.all(v == v[0]))

    def exact_lengths(self, n: int) -> bool:
        """Non-negative integral lengths whose path sums (at most ``n - 1`` edges) are
        exact in float32, so FinePar's SSSP equals Dijkstra's float64 sums."""
        v = self.least
        if not self.numeric or (v.size and (v.min() < 0 or not np.all(v == np.floor(v)))):
            return False
        return not v.size or float(v.max()) * max(n - 1, 1) < FLOAT32_EXACT


class FineParGraph:
    """A NetworkX graph converted for the FinePar backend (``__networkx_backend__ =
    'finepar'``).

    Parameters
    ----------
    nodes : list
        The NetworkX nodes in ``G``'s order: row ``i`` is ``nodes[i]``.
    indptr : ndarray of int64, shape (n + 1,)
    cols : ndarray of int32, shape (nnz,)
        Neighbours (successors of a digraph) in NetworkX's adjacency order.
    values : dict of str to EdgeValues
        The edge attributes converted.
    directed, multigraph : bool
    graph_attrs : dict
        ``G.graph`` (a copy).
    source : networkx.Graph, optional
        The graph converted, held weakly: calls the backend cannot answer exactly are run
        by NetworkX on it (:func:`finepar.nx.dispatch.networkx_call`).
    """

    __networkx_backend__ = "finepar"

    def __init__(self, nodes: list, indptr: np.ndarray, cols: np.ndarray,
                 values: dict[str, EdgeValues], *, directed: bool, multigraph: bool,
                 graph_attrs: dict | None = None, source=None):
        self.nodes = nodes
        self.indptr, self.cols, self.values = indptr, cols, values
        self.directed, self.multigraph = directed, multigraph
        self.graph = dict(graph_attrs or {})
        self._source = weakref.ref(source) if source is not None else None
        self._index: dict | None = None
        self._cache: dict = {}
        #: nodes are 0 .. n-1 in order: ids need no dictionary either way
        self.range_ids = _is_range(nodes)

    # ------------------------------------------------------------ graph protocol
    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def n(self) -> int:
        return len(self.nodes)

    @property
    def nnz(self) -> int:
        """Stored CSR entries (an undirected edge counts twice, a self-loop once)."""
        return int(self.cols.shape[0])

    def is_directed(self) -> bool:
        return self.directed

    def is_multigraph(self) -> bool:
        return self.multigraph

    def __contains__(self, node) -> bool:
        if self.range_ids and isinstance(node, int):
            return 0 <= node < self.n
        try:
            return node in self.index
        except TypeError:  # unhashable: not a node (NetworkX's own answer)
            return False

    def __repr__(self) -> str:
        kind = ("Multi" if self.multigraph else "") + ("DiGraph" if self.directed else "Graph")
        return f"FineParGraph({kind}, n={self.n:,}, nnz={self.nnz:,})"

    # ------------------------------------------------------------ ids
    @property
    def index(self) -> dict:
        """node -> row (built on first use)."""
        if self._index is None:
            self._index = {v: i for i, v in enumerate(self.nodes)}
        return self._index

    def row(self, node) -> int:
        return node if self.range_ids else self.index[node]

    def labels(self, rows) -> list:
        """The nodes of ``rows`` (Python objects, never numpy scalars)."""
        rows = np.asarray(rows).tolist()
        if self.range_ids:
            return rows
        nodes = self.nodes
        return [nodes[i] for i in rows]

    def source_graph(self):
        """The NetworkX graph converted (None once it has been freed)."""
        return self._source() if self._source is not None else None

    def adjacency(self, reverse: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, cols)`` in NetworkX's order: the successors, or with ``reverse`` (a
        digraph) the predecessors in ``G._pred``'s order, read from the source graph on
        first use.

        Raises
        ------
        LookupError
            For ``reverse`` once the source graph is gone (its order with it).
        """
        if not reverse or not self.directed:
            return self.indptr, self.cols
        source = self.source_graph()
        if source is None and ("pred",) not in self._cache:
            raise LookupError("the predecessor order went with the source graph")
        return self.cached(("pred",), lambda: _csr(source._pred, None if self.range_ids
                                                   else self.index))

    # ------------------------------------------------------------ FinePar views
    def structure(self, reverse: bool = False) -> Graph:
        """The FinePar pattern graph (row ``i`` the out-neighbours of ``nodes[i]``, or with
        ``reverse`` its in-neighbours); flagged symmetric for an undirected graph."""
        if reverse and self.directed:
            return self.cached(("structure", "reverse"), lambda: self.structure().transpose())
        return self.cached(("structure",), lambda: self._finepar(None))

    def weighted(self, attr: str, which: str) -> Graph:
        """The FinePar graph whose values are ``attr``'s (``which``: ``total`` or
        ``least`` over parallel edges)."""
        return self.cached(("weighted", attr, which),
                           lambda: self._finepar(getattr(self.values[attr], which)))

    def workload(self, app: str, graph: Graph):
        """The :class:`~finepar.api.Workload` of ``app`` on ``graph`` (its matrix built
        once)."""
        from ..api import Workload
        return self.cached(("workload", app, id(graph)), lambda: Workload(app, graph))

    def engine(self, key: tuple, make):
        """The engine kept for ``key`` (an app and its device settings), made by ``make()``
        where the graph keeps another one or none: one engine a graph, so the device memory
        the backend holds stays one graph's share."""
        kept = self._cache.get("engine")
        if kept is None or kept[0] != key:
            self._cache["engine"] = kept = (key, make())
        return kept[1]

    def cached(self, key: tuple, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _finepar(self, data: np.ndarray | None) -> Graph:
        name = str(self.graph.get("name") or "networkx")
        g = from_csr(self.indptr, self.cols, data, self.n, name=name, pattern=data is None,
                     notes=["converted from networkx"])
        return g if self.directed else replace(g, symmetric=True)


def _is_range(nodes: list) -> bool:
    n = len(nodes)
    if not n or type(nodes[0]) is not int or type(nodes[-1]) is not int:
        return False
    return nodes[0] == 0 and nodes[-1] == n - 1 and nodes == list(range(n))


def _csr(adj: dict, index: dict | None) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, cols)`` of an adjacency dict of dicts, each row in the dict's order;
    ``index`` maps nodes to rows (None: the nodes are 0 .. n-1)."""
    n = len(adj)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.fromiter(map(len, adj.values()), np.int64, n), out=indptr[1:])
    neighbours = chain.from_iterable(adj.values())
    if index is not None:
        neighbours = map(index.__getitem__, neighbours)
    return indptr, np.fromiter(neighbours, np.int32, int(indptr[-1]))


def _numbers(dicts, count: int, attr: str, default) -> tuple[np.ndarray, bool, bool]:
    """``attr`` of the ``count`` edge data dicts ``dicts()`` iterates (``default`` where
    absent) as float64, whether all were integers (NetworkX then sums ints) and whether all
    were real numbers."""
    if not any(map(len, dicts())):  # no edge carries data (an unweighted graph): no reads
        ok = isinstance(default, numbers.Real)
        return (np.full(count, float(default) if ok else 0.0),
                isinstance(default, numbers.Integral), ok)
    raw = list(map(methodcaller("get", attr, default), dicts()))
    kinds = set(map(type, raw))
    ok = all(issubclass(k, numbers.Real) for k in kinds)
    vals = np.fromiter(raw, np.float64, count) if ok else np.zeros(count)
    return vals, all(issubclass(k, numbers.Integral) for k in kinds), ok


def _edge_values(G, attr: str, default, nnz: int) -> EdgeValues:
    """``attr`` of every neighbour pair, in adjacency order."""
    def pairs():
        return chain.from_iterable(map(dict.values, G._adj.values()))
    if not G.is_multigraph():
        vals, integers, ok = _numbers(pairs, nnz, attr, default)
        return EdgeValues(vals, vals, integers, ok)
    # one dict of parallel edges per neighbour pair
    counts = np.fromiter(map(len, pairs()), np.int64, nnz)
    flat, integers, ok = _numbers(lambda: chain.from_iterable(map(dict.values, pairs())),
                                  int(counts.sum()), attr, default)
    if not flat.size:
        return EdgeValues(flat, flat, integers, ok)
    starts = np.zeros(counts.size, np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    return EdgeValues(np.add.reduceat(flat, starts), np.minimum.reduceat(flat, starts),
                      integers, ok)


def convert_from_nx(G, edge_attrs=None, node_attrs=None, preserve_edge_attrs=False,
                    preserve_node_attrs=False, preserve_graph_attrs=False, name=None,
                    graph_name=None) -> FineParGraph:
    """A NetworkX graph as a :class:`FineParGraph` (NetworkX's backend interface).

    Parameters
    ----------
    G : networkx.Graph, DiGraph, MultiGraph or MultiDiGraph
    edge_attrs : dict of str to default, optional
        The edge attributes to convert and each one's value where an edge lacks it
        (NetworkX passes ``{"weight": 1}`` for ``pagerank(G, weight="weight")``).
    node_attrs, preserve_node_attrs : ignored
        No dispatched algorithm reads node attributes.
    preserve_edge_attrs : bool or dict
        A dict maps a graph's name to its ``edge_attrs`` (HITS: ``{"G": {"weight": 1}}``);
        ``True`` converts only ``weight`` (default 1), the one attribute read.
    preserve_graph_attrs : bool
    name, graph_name : str, optional
        The algorithm and argument converting (unused).

    Returns
    -------
    FineParGraph

    Raises
    ------
    TypeError
        If ``G`` is not a NetworkX graph.
    """
    import networkx as nx
    if isinstance(G, FineParGraph):
        return G
    if not isinstance(G, nx.Graph):
        raise TypeError(f"expected a networkx graph, not {type(G).__name__}")
    if isinstance(preserve_edge_attrs, dict):
        edge_attrs = preserve_edge_attrs.get(graph_name, edge_attrs)
    elif preserve_edge_attrs is True:
        edge_attrs = {"weight": 1}
    nodes = list(G._adj)
    indptr, cols = _csr(G._adj, None if _is_range(nodes) else
                        {v: i for i, v in enumerate(nodes)})
    values = {a: _edge_values(G, a, d, cols.size) for a, d in (edge_attrs or {}).items()
              if a is not None}
    from .device import STATS
    STATS["conversions"] += 1
    return FineParGraph(nodes, indptr, cols, values, directed=G.is_directed(),
                        multigraph=G.is_multigraph(),
                        graph_attrs=G.graph if preserve_graph_attrs else None, source=G)


def convert_to_nx(obj, *, name=None):
    """A backend result as NetworkX expects it: a :class:`FineParGraph` back to a NetworkX
    graph of the same kind (nodes in order, the converted edge attributes, parallel edges
    merged into one carrying their sum); anything else unchanged."""
    if not isinstance(obj, FineParGraph):
        return obj
    import networkx as nx
    source = obj.source_graph()
    if source is not None:
        return source
    cls = {(False, False): nx.Graph, (True, False): nx.DiGraph,
           (False, True): nx.MultiGraph, (True, True): nx.MultiDiGraph}
    G = cls[(obj.directed, obj.multigraph)](**obj.graph)
    G.add_nodes_from(obj.nodes)
    rows = np.repeat(np.arange(obj.n), np.diff(obj.indptr))
    us, vs = obj.labels(rows), obj.labels(obj.cols)
    attrs = {a: v.total.tolist() for a, v in obj.values.items()}
    G.add_edges_from((u, v, {a: vals[k] for a, vals in attrs.items()})
                     for k, (u, v) in enumerate(zip(us, vs)))
    return G
