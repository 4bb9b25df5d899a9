"""The backend's graph: a NetworkX graph's adjacency as CSR arrays, node ids kept both ways,
read when a FinePar run first needs it, and kept on the graph by the backend itself.

:func:`convert_from_nx` returns a :class:`FineParGraph` that has read nothing yet (its
size, one pass over the nodes, is counted when first asked for): a call that NetworkX
answers faster at that size (:mod:`finepar.nx.policy`) is handed back without paying a
conversion. The first FinePar run reads ``G._adj`` once,
in NetworkX's own adjacency order (the order in which NetworkX's traversals meet
neighbours), into ``indptr`` / ``cols`` and, for each edge attribute a call reads, a
float64 array of values beside ``cols``. FinePar's own :class:`~finepar.graph.Graph`
(canonical CSR: columns sorted in a row) and the app :class:`~finepar.api.Workload`
built on it are made from those arrays on first use and kept on the
:class:`FineParGraph`.

The cache. The backend keeps its graph in ``G.__networkx_cache__["finepar"]``, beside
NetworkX's own cache of conversions (``G.__networkx_cache__["backends"]``), so the same
events drop it: every change through NetworkX's API and ``G.__networkx_cache__.clear()``;
``nx.config.cache_converted_graphs = False`` or ``G.__networkx_cache__ = None`` keep
nothing. NetworkX would otherwise find the conversion in its own cache and, on every
reuse, print its note that a cached graph is in use (``networkx/utils/backends.py``,
``_convert_graph``; a note of what may be, not of a change it saw: it cannot see edge data
changed in place). The backend removes NetworkX's reference once a call has it
(:func:`release_networkx_entry`), so a cached call prints nothing; what that note warns
of, edge data changed in place (``G[u][v]["weight"] = x``), the backend looks for itself:
each converted attribute keeps :data:`PROBES` edge data dicts spread over the graph and
their values, compared on every call that reads the attribute; a change found is read
again and reported by an :class:`EdgeDataChangedWarning` (a change to a few edges can go
unseen: clear the cache after changing edge data in place, as NetworkX documents).

Multigraphs keep one CSR entry per neighbour; an attribute's values over parallel
edges are kept both summed (PageRank and HITS: NetworkX's adjacency matrix sums them)
and as their minimum (Dijkstra: NetworkX takes the lightest parallel edge).
"""

from __future__ import annotations

import numbers
import warnings
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from itertools import chain
from operator import methodcaller

import numpy as np

from ..graph import Graph
from ..io import from_csr

#: Float32 holds every integer below this exactly (sums of integral weights included).
FLOAT32_EXACT = float(1 << 24)
#: Where the backend keeps its graph in ``G.__networkx_cache__``.
CACHE_KEY = "finepar"
#: Edge data dicts each converted attribute keeps, spread over the graph, to see a change
#: of edge data made in place (re-weighting every edge is seen; a change to one edge of a
#: large graph is seen only if it is among them).
PROBES = 64


class EdgeDataChangedWarning(UserWarning):
    """Edge data read by the backend was changed in place since (``G[u][v][k] = x``): the
    backend read it again. NetworkX's cache cannot see such a change at all; the backend
    sees a change to many edges but can miss one to a few."""


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
    default : object
        The value of an edge without the attribute (NetworkX's ``edge_attrs`` default).
    probes : list of dict
        Up to :data:`PROBES` of the graph's edge data dicts (the objects, spread over the
        adjacency), and `seen`, the attribute's values in them when read.
    """

    total: np.ndarray
    least: np.ndarray
    integers: bool
    numeric: bool
    default: object = 1
    probes: list = field(default_factory=list, repr=False)
    seen: list = field(default_factory=list, repr=False)
    _uniform: dict = field(default_factory=dict, repr=False)

    def uniform(self, which: str = "total") -> bool:
        """All values equal and positive: a weighted walk equals the unweighted one. Read
        once per values read (a pass over every edge: 0.1 s at Graph500 scale 22, each
        cached PageRank call paid it)."""
        if which not in self._uniform:
            v = self.total if which == "total" else self.least
            self._uniform[which] = bool(self.numeric and v.size and v[0] > 0
                                        and np.all(v == v[0]))
        return self._uniform[which]

    def exact_lengths(self, n: int) -> bool:
        """Non-negative integral lengths whose path sums (at most ``n - 1`` edges) are
        exact in float32, so FinePar's SSSP equals Dijkstra's float64 sums."""
        v = self.least
        if not self.numeric or (v.size and (v.min() < 0 or not np.all(v == np.floor(v)))):
            return False
        return not v.size or float(v.max()) * max(n - 1, 1) < FLOAT32_EXACT

    def unchanged(self, attr: str) -> bool:
        """The probed edges still hold the values read (the same objects or equal ones)."""
        now = map(methodcaller("get", attr, self.default), self.probes)
        return all(a is b or a == b for a, b in zip(now, self.seen))


class _Values(Mapping):
    """:attr:`FineParGraph.values`: attribute -> :class:`EdgeValues`, each read from the
    source graph on first use."""

    def __init__(self, fg: "FineParGraph"):
        self._fg = fg

    def __getitem__(self, attr: str) -> EdgeValues:
        return self._fg._edge_values(attr)

    def __iter__(self):
        return iter(dict.fromkeys([*self._fg._values, *self._fg._wanted]))

    def __len__(self) -> int:
        return len(set(self._fg._values) | set(self._fg._wanted))

    def __contains__(self, attr) -> bool:
        return attr in self._fg._values or attr in self._fg._wanted


class FineParGraph:
    """A NetworkX graph seen by the FinePar backend (``__networkx_backend__ = 'finepar'``):
    its size, adjacency and edge attributes, each read when first needed.

    Parameters
    ----------
    source : networkx.Graph, DiGraph, MultiGraph or MultiDiGraph
        The graph, held weakly (the backend keeps this object in the graph's own cache):
        read while a call has it, and where calls the backend hands back are run by
        NetworkX (:func:`finepar.nx.dispatch.networkx_call`).

    Attributes
    ----------
    n : int
        Nodes.
    entries : int
        Adjacency entries (``sum(len(G[u]) for u in G)``: an undirected edge counts twice,
        a self-loop once), the size :mod:`finepar.nx.policy` decides by (counted on first
        use).
    nodes : list
        The NetworkX nodes in ``G``'s order: row ``i`` is ``nodes[i]`` (read on first use,
        as are `indptr`, `cols` and `values`).
    indptr : ndarray of int64, shape (n + 1,)
    cols : ndarray of int32, shape (entries,)
        Neighbours (successors of a digraph) in NetworkX's adjacency order.
    values : mapping of str to EdgeValues
        The edge attributes asked for (NetworkX's ``edge_attrs``), each read on first use.
    directed, multigraph : bool
    graph : dict
        ``G.graph`` (a copy).
    """

    __networkx_backend__ = "finepar"

    def __init__(self, source):
        self.directed, self.multigraph = source.is_directed(), source.is_multigraph()
        self.graph = dict(source.graph)
        self.n = len(source._adj)
        self._entries: int | None = None
        self._source = weakref.ref(source)
        self._nodes: list | None = None
        self._indptr = self._cols = None
        self.range_ids = False
        self._values: dict[str, EdgeValues] = {}
        self._wanted: dict[str, object] = {}
        self._index: dict | None = None
        self._cache: dict = {}

    # ------------------------------------------------------------ reading the source
    @property
    def read(self) -> bool:
        """Whether the adjacency has been read."""
        return self._cols is not None

    def _graph(self):
        source = self.source_graph()
        if source is None:
            raise LookupError("the NetworkX graph went before its adjacency was read")
        return source

    def _read(self) -> None:
        if self._cols is not None:
            return
        G = self._graph()
        nodes = list(G._adj)
        range_ids = _is_range(nodes)
        indptr, cols = _csr(G._adj, None if range_ids else {v: i for i, v in enumerate(nodes)})
        self._nodes, self._indptr, self._cols, self.range_ids = nodes, indptr, cols, range_ids
        self._entries = int(cols.size)
        from .device import STATS
        STATS["conversions"] += 1

    def _edge_values(self, attr: str) -> EdgeValues:
        vals = self._values.get(attr)
        if vals is not None:
            return vals
        if attr not in self._wanted:
            raise KeyError(attr)
        self._read()
        G = self._graph()
        vals = _edge_values(G, attr, self._wanted.pop(attr), self.entries)
        vals.probes = _probes(G, self)
        vals.seen = [d.get(attr, vals.default) for d in vals.probes]
        self._values[attr] = vals
        return vals

    def want(self, edge_attrs: dict | None) -> None:
        """Ask for edge attributes, each read when first used.

        An attribute read before is kept where its default is the same and its probed
        edges (:data:`PROBES`) still hold the values read; otherwise it is read again, and
        what was made from it (its FinePar graphs, their workloads and engine) dropped.

        Parameters
        ----------
        edge_attrs : dict of str to object, optional
            Attribute name -> the value of an edge without it (NetworkX's ``edge_attrs``);
            a None name is ignored.

        Warns
        -----
        EdgeDataChangedWarning
            Naming the attributes whose probed edges were changed in place.
        """
        changed = []
        for attr, default in (edge_attrs or {}).items():
            if attr is None:
                continue
            vals = self._values.get(attr)
            if vals is not None:
                if vals.default == default and type(vals.default) is type(default) and \
                        vals.unchanged(attr):
                    continue
                if vals.default == default and type(vals.default) is type(default):
                    changed.append(attr)
                del self._values[attr]
                self._drop_derived(attr)
            self._wanted[attr] = default
        if changed:
            warnings.warn(
                f"finepar: the edge data {', '.join(map(repr, changed))} of a graph it had "
                f"converted was changed in place (G[u][v][key] = value) and is read again. "
                f"A change to a few edges can go unseen (NetworkX's cache cannot see any): "
                f"after changing edge data in place, call G.__networkx_cache__.clear().",
                EdgeDataChangedWarning, stacklevel=2)

    def _drop_derived(self, attr: str) -> None:
        """Forget what was made from ``attr``'s values (its graphs, their workloads and the
        engine kept for them)."""
        graphs = {id(g) for k, g in self._cache.items() if k[:2] == ("weighted", attr)}
        for k in [k for k in self._cache if k[:2] == ("weighted", attr)
                  or k[0] == "workload" and k[2] in graphs]:
            del self._cache[k]
        kept = self._cache.get("engine")
        if kept is not None and kept[0][1] in graphs:
            del self._cache["engine"]

    def materialize(self) -> "FineParGraph":
        """Read the adjacency and every attribute asked for now (the source may go later:
        a generator's answer is made after the call returns)."""
        self._read()
        for attr in list(self._wanted):
            self._edge_values(attr)
        return self

    @property
    def entries(self) -> int:
        """Adjacency entries, counted on first use (one pass over the nodes)."""
        if self._entries is None:  # one pass over the nodes (about 20 ns each)
            self._entries = sum(map(len, self._graph()._adj.values()))
        return self._entries

    @property
    def nodes(self) -> list:
        self._read()
        return self._nodes

    @property
    def indptr(self) -> np.ndarray:
        self._read()
        return self._indptr

    @property
    def cols(self) -> np.ndarray:
        self._read()
        return self._cols

    @property
    def values(self) -> Mapping:
        return _Values(self)

    # ------------------------------------------------------------ graph protocol
    def __len__(self) -> int:
        return self.n

    @property
    def nnz(self) -> int:
        """Stored CSR entries (an undirected edge counts twice, a self-loop once)."""
        return self.entries

    @property
    def edges(self) -> int:
        """NetworkX's ``number_of_edges()``, up to half the self-loops of an undirected
        graph (counted from `entries`, without a pass over the edges)."""
        return self.entries if self.directed else (self.entries + 1) // 2

    def is_directed(self) -> bool:
        return self.directed

    def is_multigraph(self) -> bool:
        return self.multigraph

    def __contains__(self, node) -> bool:
        source = self.source_graph()
        if source is not None:
            return node in source
        if self.range_ids and isinstance(node, int):
            return 0 <= node < self.n
        try:
            return node in self.index
        except TypeError:  # unhashable: not a node (NetworkX's own answer)
            return False

    def __repr__(self) -> str:
        kind = ("Multi" if self.multigraph else "") + ("DiGraph" if self.directed else "Graph")
        return f"FineParGraph({kind}, n={self.n:,}, nnz={self.nnz:,})"

    def __reduce__(self):
        """A copy or pickle of the graph holding this one (``copy.deepcopy(G)``,
        ``pickle.dumps(G)``) carries None in its place: device buffers and the weak
        reference to the source cannot be copied, and the copy converts itself when used."""
        return _not_kept, ()

    # ------------------------------------------------------------ ids
    @property
    def index(self) -> dict:
        """node -> row (built on first use)."""
        if self._index is None:
            self._index = {v: i for i, v in enumerate(self.nodes)}
        return self._index

    def row(self, node) -> int:
        self._read()
        return node if self.range_ids else self.index[node]

    def labels(self, rows) -> list:
        """The nodes of ``rows`` (an int array or list; Python objects, never numpy
        scalars)."""
        if not isinstance(rows, list):
            rows = np.asarray(rows).tolist()
        self._read()
        if self.range_ids:
            return rows
        return list(map(self._nodes.__getitem__, rows))

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
        """The engine kept for ``key`` (an app, the id of its graph and its device
        settings), made by ``make()`` where the graph keeps another one or none: one engine
        a graph, so the device memory the backend holds stays one graph's share."""
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


def _not_kept():
    """What a copied or unpickled :class:`FineParGraph` becomes: None."""
    return None


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


def _probes(G, fg: FineParGraph) -> list:
    """Up to :data:`PROBES` edge data dicts of ``G`` at entries spread evenly over the
    adjacency (every parallel edge of a multigraph's pair)."""
    if not fg.entries:
        return []
    pos = np.unique(np.linspace(0, fg.entries - 1, min(PROBES, fg.entries)).astype(np.int64))
    rows = np.searchsorted(fg.indptr, pos, side="right") - 1
    us, vs = fg.labels(rows), fg.labels(fg.cols[pos])
    adj = G._adj
    if fg.multigraph:
        return [d for u, v in zip(us, vs) for d in adj[u][v].values()]
    return [adj[u][v] for u, v in zip(us, vs)]


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
        return EdgeValues(vals, vals, integers, ok, default)
    # one dict of parallel edges per neighbour pair
    counts = np.fromiter(map(len, pairs()), np.int64, nnz)
    flat, integers, ok = _numbers(lambda: chain.from_iterable(map(dict.values, pairs())),
                                  int(counts.sum()), attr, default)
    if not flat.size:
        return EdgeValues(flat, flat, integers, ok, default)
    starts = np.zeros(counts.size, np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    return EdgeValues(np.add.reduceat(flat, starts), np.minimum.reduceat(flat, starts),
                      integers, ok, default)


# ---------------------------------------------------------------------------- the cache
def _cache_of(G) -> dict | None:
    """``G.__networkx_cache__`` where NetworkX's settings let conversions be kept (None:
    ``nx.config.cache_converted_graphs`` is off, the graph's cache is None, or NetworkX is
    running its own tests against the backend, where it keeps no conversion)."""
    import networkx as nx
    if not nx.config.cache_converted_graphs:
        return None
    if getattr(nx.utils.backends._dispatchable, "_is_testing", False):
        return None
    cache = getattr(G, "__networkx_cache__", None)
    return cache if isinstance(cache, dict) else None


def backend_graph(G) -> FineParGraph:
    """The backend's graph of a NetworkX graph.

    Parameters
    ----------
    G : networkx.Graph, DiGraph, MultiGraph or MultiDiGraph

    Returns
    -------
    FineParGraph
        The one kept in ``G.__networkx_cache__["finepar"]``, or a new one (which has read
        nothing yet), kept there where caching is on (:func:`_cache_of`).
    """
    cache = _cache_of(G)
    fg = cache.get(CACHE_KEY) if cache is not None else None
    if isinstance(fg, FineParGraph) and fg.source_graph() is G:
        return fg
    fg = FineParGraph(G)
    if cache is not None:
        cache[CACHE_KEY] = fg
    return fg


def release_networkx_entry(fg: FineParGraph) -> None:
    """Remove NetworkX's own references to ``fg`` from its source graph's cache.

    NetworkX stores every conversion it asks for in ``G.__networkx_cache__["backends"]``
    and prints its cache note whenever it finds one there (``networkx/utils/backends.py``,
    ``_convert_graph``). Without its reference, NetworkX's next lookup misses and asks
    :func:`convert_from_nx`, which finds the backend's own graph, silently. Nothing else
    of the cache is touched (another backend's entries, NetworkX's failed conversions).

    Parameters
    ----------
    fg : FineParGraph
        Its source graph, where still alive, is the one whose cache is cleaned.
    """
    source = fg.source_graph()
    cache = getattr(source, "__networkx_cache__", None) if source is not None else None
    if not isinstance(cache, dict):
        return
    ours = cache.get("backends", {}).get("finepar")
    if ours:
        for key in [k for k, v in list(ours.items()) if v is fg]:
            ours.pop(key, None)


def convert_from_nx(G, edge_attrs=None, node_attrs=None, preserve_edge_attrs=False,
                    preserve_node_attrs=False, preserve_graph_attrs=False, name=None,
                    graph_name=None) -> FineParGraph:
    """A NetworkX graph as a :class:`FineParGraph` (NetworkX's backend interface): the one
    the backend keeps on ``G``, or a new one that has read nothing yet when NetworkX
    converts for a call (``name`` given), or everything at once when called directly
    (``name`` None: the arrays outlive ``G``).

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
        Ignored: ``G.graph`` is always copied (it names the graph).
    name, graph_name : str, optional
        The algorithm and argument converting.

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
    fg = backend_graph(G)
    fg.want(edge_attrs)
    if name is None:
        fg.materialize()
    return fg


def convert_to_nx(obj, *, name=None):
    """A backend result as NetworkX expects it: a :class:`FineParGraph` back to a NetworkX
    graph of the same kind (its source graph while that lives; else rebuilt: nodes in
    order, the converted edge attributes, parallel edges merged into one carrying their
    sum); anything else unchanged."""
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
    attrs = {a: v.total.tolist() for a, v in obj._values.items()}
    G.add_edges_from((u, v, {a: vals[k] for a, vals in attrs.items()})
                     for k, (u, v) in enumerate(zip(us, vs)))
    return G
