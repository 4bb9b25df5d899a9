"""The NetworkX backend (finepar.nx): registration, the cached conversion, every dispatched
algorithm's answer against NetworkX's own (values, orders, types), the hand-backs."""

from __future__ import annotations

import inspect
import random

import numpy as np
import pytest

nx = pytest.importorskip("networkx")

from finepar.nx import FUNCTIONS, register  # noqa: E402
from finepar.nx.device import STATS  # noqa: E402
from finepar.nx.dispatch import ALGORITHMS, can_run  # noqa: E402
from finepar.nx.graph import FineParGraph, convert_from_nx, convert_to_nx  # noqa: E402
from finepar.nx.interface import BackendInterface  # noqa: E402

FP = {"backend": "finepar"}


@pytest.fixture(autouse=True)
def _finepar_at_any_size(request):
    """The answers' tests run FinePar on small graphs (``min_edges=0``); the tests of the
    size rule itself (named ``test_sizes_*``) keep the measured thresholds."""
    if request.node.name.startswith("test_sizes_"):
        yield
        return
    with nx.config.backends.finepar(min_edges=0):
        yield


def relabelled(G, seed=0):
    """``G`` with string node names, inserted in a shuffled order (row order != names)."""
    rng = random.Random(seed)
    nodes = list(G)
    rng.shuffle(nodes)
    H = G.__class__()
    H.add_nodes_from(f"v{u}" for u in nodes)
    edges = list(G.edges(data=True, keys=True) if G.is_multigraph() else G.edges(data=True))
    rng.shuffle(edges)
    for e in edges:
        H.add_edge(f"v{e[0]}", f"v{e[1]}", *e[2:-1], **e[-1])
    return H


def graphs():
    d = relabelled(nx.gnp_random_graph(120, 0.03, seed=3, directed=True), 1)
    d.add_node("lonely")
    u = relabelled(nx.gnp_random_graph(150, 0.02, seed=4), 2)
    u.add_edge("v0", "v0")  # a self-loop
    return {"directed": d, "undirected": u}


def test_registered():
    assert "finepar" in nx.utils.backends.backends
    assert set(nx.utils.backends.backend_info["finepar"]["functions"]) == set(ALGORITHMS)
    assert set(FUNCTIONS) == set(ALGORITHMS)
    from finepar.nx.policy import MIN_ENTRIES
    assert all(set(sizes) == set(ALGORITHMS) for sizes in MIN_ENTRIES.values())
    assert register() is False  # the entry points did it
    for name, (func, _) in ALGORITHMS.items():
        theirs = inspect.signature(nx.utils.backends._registered_algorithms[name])
        want = [p for p in theirs.parameters if p not in ("backend", "backend_kwargs")]
        assert list(inspect.signature(func).parameters) == want, name
        assert getattr(BackendInterface, name) is func


def test_conversion_both_ways():
    G = nx.MultiDiGraph()
    G.add_edge("a", "b", weight=2)
    G.add_edge("a", "b", weight=5)
    G.add_edge("b", "c")
    fg = convert_from_nx(G, edge_attrs={"weight": 1})
    assert fg.nodes == ["a", "b", "c"] and fg.index == {"a": 0, "b": 1, "c": 2}
    assert fg.indptr.tolist() == [0, 1, 2, 2] and fg.cols.tolist() == [1, 2]
    w = fg.values["weight"]
    assert w.total.tolist() == [7, 1] and w.least.tolist() == [2, 1] and w.integers
    assert fg.labels(np.array([2, 0])) == ["c", "a"]
    assert convert_to_nx(fg) is G
    del G  # the source is gone: rebuilt from the arrays
    back = convert_to_nx(fg)
    assert isinstance(back, nx.MultiDiGraph) and sorted(back.edges(data="weight")) == [
        ("a", "b", 7), ("b", "c", 1)]


def test_second_call_converts_nothing(monkeypatch):
    from finepar.api import Workload
    prepared = []
    real = Workload.prepare
    monkeypatch.setattr(Workload, "prepare", lambda self, *a, **k: prepared.append(1)
                        or real(self, *a, **k))
    G = nx.gnp_random_graph(200, 0.05, seed=1, directed=True)
    first = nx.pagerank(G, **FP)
    conversions, runs = STATS["conversions"], STATS["runs"]
    again = nx.pagerank(G, **FP)
    assert STATS["conversions"] == conversions and STATS["runs"] == runs + 1
    assert again == first
    assert len(prepared) == 1  # the second call ran on the engine the first one prepared
    other = nx.pagerank(G, alpha=0.7, **FP)  # other parameters, the same engine
    assert len(prepared) == 1
    close(other, nx.pagerank(G, alpha=0.7), 1e-4)
    nx.hits(G, **FP)  # another app: its engine replaces PageRank's (one a graph)
    nx.pagerank(G, **FP)
    assert len(prepared) == 3
    assert isinstance(G.__networkx_cache__["finepar"], FineParGraph)  # the backend's own
    assert not G.__networkx_cache__["backends"]["finepar"]  # NetworkX's reference dropped
    G.add_edge(0, 1)  # a mutation through the API clears NetworkX's cache
    nx.pagerank(G, **FP)
    assert STATS["conversions"] == conversions + 1


def close(a: dict, b: dict, tol: float):
    assert list(a) == list(b)
    assert max(abs(a[k] - b[k]) for k in a) < tol


@pytest.mark.parametrize("kind", ["directed", "undirected"])
def test_pagerank(kind):
    G = graphs()[kind]
    nodes = list(G)
    rng = np.random.default_rng(5)
    pers = {u: float(x) for u, x in zip(nodes, rng.random(len(nodes)))}
    dang = {u: float(x) for u, x in zip(nodes[:10], rng.random(10))}
    # NetworkX's stopping rule, its iterates: the same vector up to float32 rounding
    close(nx.pagerank(G, **FP), nx.pagerank(G), 1e-6)
    for kw in ({"alpha": 0.9}, {"personalization": pers},
               {"personalization": {nodes[3]: 1}}, {"dangling": dang},
               {"personalization": pers, "dangling": dang}, {"nstart": pers}):
        close(nx.pagerank(G, tol=1e-9, max_iter=300, **kw, **FP),
              nx.pagerank(G, tol=1e-12, max_iter=500, **kw), 2e-6)
    with pytest.raises(nx.PowerIterationFailedConvergence):
        nx.pagerank(G, max_iter=2, **FP)
    with pytest.raises(ZeroDivisionError):
        nx.pagerank(G, personalization={nodes[0]: 0}, **FP)


def test_pagerank_weights():
    G = graphs()["directed"]
    nx.set_edge_attributes(G, 3, "w")
    runs, back = STATS["runs"], STATS["networkx"]
    close(nx.pagerank(G, weight="w", **FP), nx.pagerank(G, weight="w"), 1e-6)
    assert STATS["runs"] == runs + 1 and STATS["networkx"] == back  # equal weights: here
    for i, (u, v) in enumerate(G.edges):
        G[u][v]["w"] = 1 + i % 3
    G.__networkx_cache__.clear()  # edge data changed in place: NetworkX's rule
    assert nx.pagerank(G, weight="w", **FP) == nx.pagerank(G, weight="w")
    assert STATS["networkx"] == back + 1  # unequal weights: NetworkX's answer


def test_hits():
    G = graphs()["directed"]
    h, a = nx.hits(G, **FP)
    h0, a0 = nx.hits(G, tol=1e-12)
    close(h, h0, 1e-4)
    close(a, a0, 1e-4)
    assert can_run("hits", (G,), {"max_iter": 10}).startswith("max_iter")
    with pytest.raises(nx.PowerIterationFailedConvergence):
        nx.hits(G, max_iter=0, **FP)


def test_components():
    G = graphs()["undirected"]
    assert list(nx.connected_components(G, **FP)) == list(nx.connected_components(G))
    assert nx.number_connected_components(G, **FP) == nx.number_connected_components(G)
    assert nx.is_connected(G, **FP) is nx.is_connected(G) is False
    assert nx.is_connected(nx.path_graph(5), **FP) is True
    D = graphs()["directed"]
    assert (list(nx.weakly_connected_components(D, **FP))
            == list(nx.weakly_connected_components(D)))
    assert (nx.number_weakly_connected_components(D, **FP)
            == nx.number_weakly_connected_components(D))
    assert nx.is_weakly_connected(D, **FP) is nx.is_weakly_connected(D)


def test_many_components_with_the_collector_left_as_it_was():
    """Thousands of components come back as NetworkX's sets in its order; the sets are made
    with the garbage collector paused (a collection per few hundred sets would walk the
    whole NetworkX graph), and it is on again afterwards (off, if it was off)."""
    import gc
    G = nx.disjoint_union_all([nx.path_graph(k % 4 + 1) for k in range(3000)])
    want = list(nx.connected_components(G))
    assert gc.isenabled()
    runs = STATS["runs"]
    assert list(nx.connected_components(G, **FP)) == want and len(want) == 3000
    assert STATS["runs"] == runs + 1  # FinePar answered
    assert gc.isenabled()
    gc.disable()
    try:
        assert list(nx.connected_components(G, **FP)) == want
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize("kind", ["directed", "undirected"])
def test_bfs_orders(kind):
    G = graphs()[kind]
    src = max(G, key=G.degree)
    assert list(nx.bfs_layers(G, src, **FP)) == list(nx.bfs_layers(G, src))
    assert list(nx.bfs_layers(G, [src], **FP)) == list(nx.bfs_layers(G, [src]))
    for depth in (None, 0, 2):
        assert (list(nx.bfs_edges(G, src, depth_limit=depth, **FP))
                == list(nx.bfs_edges(G, src, depth_limit=depth)))
        assert (list(nx.bfs_predecessors(G, src, depth_limit=depth, **FP))
                == list(nx.bfs_predecessors(G, src, depth_limit=depth)))
        assert (list(nx.bfs_successors(G, src, depth_limit=depth, **FP))
                == list(nx.bfs_successors(G, src, depth_limit=depth)))
    for reverse in (False, True):  # reverse: along predecessors, in G.pred's order
        T, T0 = nx.bfs_tree(G, src, reverse, **FP), nx.bfs_tree(G, src, reverse)
        assert list(T.edges) == list(T0.edges) and list(T) == list(T0)
    for cutoff in (None, 1, 2.5):
        got = nx.single_source_shortest_path_length(G, src, cutoff, **FP)
        want = nx.single_source_shortest_path_length(G, src, cutoff)
        assert list(got.items()) == list(want.items())


def test_dijkstra():
    G = graphs()["undirected"]
    src = max(G, key=G.degree)
    got = nx.single_source_dijkstra_path_length(G, src, **FP)
    assert list(got.items()) == list(nx.single_source_dijkstra_path_length(G, src).items())
    for i, (u, v) in enumerate(G.edges):
        G[u][v]["weight"] = (i * 7) % 5  # zero lengths too
    G.__networkx_cache__.clear()
    want = nx.single_source_dijkstra_path_length(G, src, cutoff=6)
    got = nx.single_source_dijkstra_path_length(G, src, cutoff=6, **FP)
    assert got == want and list(got)[0] == src
    assert all(type(x) is int for x in got.values())
    far = max(want, key=want.get)
    assert nx.dijkstra_path_length(G, src, far, **FP) == nx.dijkstra_path_length(G, src, far)
    with pytest.raises(nx.NetworkXNoPath):
        nx.dijkstra_path_length(G, src, "nowhere", **FP)
    back = STATS["networkx"]
    nx.set_edge_attributes(G, 0.1, "weight")  # fractional lengths: NetworkX's sums
    assert (nx.single_source_dijkstra_path_length(G, src, **FP)
            == nx.single_source_dijkstra_path_length(G, src))
    assert STATS["networkx"] == back + 1


def test_multigraph_dijkstra():
    G = nx.MultiGraph()
    G.add_edges_from([(0, 1, {"weight": 5}), (0, 1, {"weight": 2}), (1, 2, {"weight": 1})])
    assert nx.single_source_dijkstra_path_length(G, 0, **FP) == {0: 0, 1: 2, 2: 3}


@pytest.mark.parametrize("strategy", ["largest_first", "smallest_last",
                                      "connected_sequential_bfs", "connected_sequential_dfs"])
def test_greedy_color_is_networkx_colouring(strategy):
    G = graphs()["undirected"]
    G.remove_edge("v0", "v0")  # networkx's smallest_last fails on self-loops
    G.add_edges_from(nx.complete_graph(12).edges)  # a 12-clique: 12 colours
    got = nx.greedy_color(G, strategy, **FP)
    assert list(got.items()) == list(nx.greedy_color(G, strategy).items())


def test_greedy_color_random_is_proper():
    G = graphs()["undirected"]
    colours = nx.greedy_color(G, "random_sequential", **FP)
    assert set(colours) == set(G)
    assert all(colours[u] != colours[v] for u, v in G.edges if u != v)


def test_can_run_reasons():
    D = graphs()["directed"]
    assert can_run("greedy_color", (D,), {}) is not True
    assert can_run("greedy_color", (nx.path_graph(3), "DSATUR"), {}) is not True
    assert can_run("greedy_color", (nx.path_graph(3),), {"interchange": True}) is not True
    assert can_run("bfs_edges", (D, "nowhere"), {}) is not True
    assert can_run("bfs_edges", (D, "v1"), {"sort_neighbors": sorted}) is not True
    assert can_run("bfs_layers", (D, ["v1", "v2"]), {}) is not True
    assert can_run("pagerank", (D,), {"weight": lambda u, v, d: 1}) is not True
    assert can_run("pagerank", (D,), {"alpha": 1.0}) is not True
    assert can_run("pagerank", (D,), {"tol": 1e-3}) is True
    with pytest.raises(NotImplementedError, match="finepar"):
        list(nx.bfs_edges(D, "v1", sort_neighbors=sorted, **FP))


def test_bfs_orders_through_many_layers():
    """A grid searched from a corner: 2w - 1 layers, each a diagonal met in NetworkX's
    order; string names inserted shuffled so rows and names differ."""
    G = relabelled(nx.convert_node_labels_to_integers(nx.grid_2d_graph(25, 25)), 7)
    src = "v0"
    assert list(nx.bfs_layers(G, src, **FP)) == list(nx.bfs_layers(G, src))
    assert list(nx.bfs_edges(G, src, **FP)) == list(nx.bfs_edges(G, src))
    for cutoff in (None, 7):
        got = nx.single_source_shortest_path_length(G, src, cutoff, **FP)
        assert list(got.items()) == list(
            nx.single_source_shortest_path_length(G, src, cutoff).items())
    assert len(list(nx.bfs_layers(G, src, **FP))) == 49


# --------------------------------------------------------------- the size rule
@pytest.fixture
def table(monkeypatch):
    """The measured thresholds replaced for a test: ``table(kind, **min_entries)``, the
    pair's kind fixed (``emulated`` unless given)."""
    from finepar.nx import policy

    def set_table(kind="emulated", **limits):
        monkeypatch.setattr(policy, "MIN_ENTRIES",
                            {"emulated": dict(limits), "gpu": dict(limits)})
        monkeypatch.setattr(policy, "pair_kind", lambda: kind)
    return set_table


def test_sizes_explicit_backend_hands_small_graphs_back_without_converting():
    """backend="finepar" on a graph below the measured size: NetworkX's own implementation
    answers (NetworkX asks no should_run then), and nothing of the graph is read."""
    G = nx.gnp_random_graph(60, 0.1, seed=2)
    runs, conversions, by_size = STATS["runs"], STATS["conversions"], STATS["by_size"]
    assert list(nx.connected_components(G, **FP)) == list(nx.connected_components(G))
    assert list(nx.bfs_layers(G, 0, **FP)) == list(nx.bfs_layers(G, 0))
    assert nx.greedy_color(G, **FP) == nx.greedy_color(G)
    assert STATS["runs"] == runs and STATS["conversions"] == conversions
    assert STATS["by_size"] == by_size + 3
    fg = G.__networkx_cache__["finepar"]
    assert not fg.read and fg.entries == 2 * G.number_of_edges()


def test_sizes_should_run_follows_the_measured_table(table):
    """Under automatic dispatch should_run answers by each algorithm's measured size, and
    for the pair's kind; min_edges, where set, overrides the table for every algorithm."""
    from finepar.nx.interface import should_run
    G = nx.gnp_random_graph(100, 0.05, seed=2)
    entries = sum(map(len, G._adj.values()))
    table(pagerank=entries, connected_components=entries + 1)
    assert should_run("pagerank", (G,), {}) is True
    why = should_run("connected_components", (G,), {})
    assert isinstance(why, str) and f"{entries:,} adjacency entries" in why
    table("gpu", connected_components=entries + 1)
    from finepar.nx import policy
    policy.MIN_ENTRIES["gpu"]["connected_components"] = 1  # another kind, another size
    assert should_run("connected_components", (G,), {}) is True
    runs = STATS["runs"]
    with nx.config.backend_priority(algos=["finepar"]):
        table(number_connected_components=entries + 1)
        assert nx.number_connected_components(G) == nx.number_connected_components(
            G, backend="networkx")
        assert STATS["runs"] == runs  # NetworkX ran it, converting nothing
        table(number_connected_components=entries)
        nx.number_connected_components(G)
        assert STATS["runs"] == runs + 1
        with nx.config.backends.finepar(min_edges=G.number_of_edges() + 1):
            nx.number_connected_components(G)
        assert STATS["runs"] == runs + 1
        with nx.config.backends.finepar(min_edges=0):
            assert should_run("greedy_color", (G,), {}) is True


def test_sizes_cached_call_prints_no_warning():
    """A cached call prints nothing (NetworkX printed its multi-paragraph cache note on
    every call after the first), while NetworkX's own settings are left as they were."""
    import warnings
    G = nx.gnp_random_graph(200, 0.05, seed=4, directed=True)
    with nx.config.backends.finepar(min_edges=0), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        nx.config.warnings_to_ignore.discard("cache")
        first = nx.pagerank(G, **FP)
        runs = STATS["runs"]
        for _ in range(3):
            assert nx.pagerank(G, **FP) == first
            list(nx.weakly_connected_components(G, **FP))
    notes = [str(x.message)[:80] for x in w if issubclass(x.category, UserWarning)]
    assert STATS["runs"] == runs + 6 and not notes, notes
    assert "cache" not in nx.config.warnings_to_ignore


def test_edge_data_changed_in_place_is_seen():
    """Re-weighting every edge in place (what NetworkX's note warns of, and cannot see) is
    found by the probed edges: the values are read again, the answer is NetworkX's on the
    new weights, and a warning says so (a warning the user should see)."""
    from finepar.nx.graph import EdgeDataChangedWarning
    G = graphs()["undirected"]
    src = max(G, key=G.degree)
    nx.set_edge_attributes(G, 1, "weight")
    before = nx.single_source_dijkstra_path_length(G, src, **FP)
    for u, v, d in G.edges(data=True):
        d["weight"] = 3
    with pytest.warns(EdgeDataChangedWarning, match="changed in place"):
        got = nx.single_source_dijkstra_path_length(G, src, **FP)
    assert got == nx.single_source_dijkstra_path_length(G, src)
    assert got != before


def test_graph_with_a_conversion_copies_and_pickles():
    """The backend's conversion kept on a graph (device buffers, a weak reference) does
    not travel with a copy or a pickle: the copy converts again when used."""
    import copy
    import pickle
    G = graphs()["undirected"]
    want = list(nx.connected_components(G, **FP))
    for H in (copy.deepcopy(G), pickle.loads(pickle.dumps(G))):
        assert H.__networkx_cache__.get("finepar") is None
        assert list(nx.connected_components(H, **FP)) == want


def test_sizes_pair_kind(monkeypatch):
    """The table's column: the GPU role played by a CPU context (or devices='cpu') reads
    the emulated pair's sizes."""
    from finepar.nx import policy
    from finepar.nx.device import pair
    with nx.config.backends.finepar(devices="cpu"):
        assert policy.pair_kind() == "emulated"
    want = "emulated" if pair().selection.emulated else "gpu"
    assert policy.pair_kind() == want
    from finepar.nx import device
    monkeypatch.setattr(device, "_PAIR", None)  # not opened yet: the devices' selection
    monkeypatch.setattr(policy, "_KIND", [])
    assert policy.pair_kind() == want and policy._KIND == [want]


def test_is_connected_answers_from_a_small_first_component():
    """NetworkX's is_connected searches from the first node: where that node's component
    is small the backend answers from it too, at once (no FinePar run, not even the graph's
    size counted); a large one goes to FinePar's CC."""
    G = nx.Graph()
    G.add_node("first")  # isolated, and first
    G.add_edges_from(nx.path_graph(300).edges)
    runs = STATS["runs"]
    assert nx.is_connected(G, **FP) is nx.is_connected(G) is False
    assert STATS["runs"] == runs and G.__networkx_cache__["finepar"]._entries is None
    H = nx.path_graph(300)
    H.add_node("last")
    assert nx.is_connected(H, **FP) is nx.is_connected(H) is False
    assert STATS["runs"] == runs + 1
    D = nx.DiGraph([(1, 0), (2, 1)])  # weakly: along predecessors too
    assert nx.is_weakly_connected(D, **FP) is nx.is_weakly_connected(D) is True


def test_the_documented_function_list_is_the_registrations():
    """finepar.nx.FUNCTIONS (what NetworkX's docs list for the backend) is generated from
    the implementations' registrations, and is up to date."""
    from finepar.nx import FUNCTIONS, backend_info
    from finepar.nx.dispatch import ALGORITHMS
    from finepar.nx.functions import generated, literal
    assert FUNCTIONS == generated()
    assert set(FUNCTIONS) == set(ALGORITHMS) and all(FUNCTIONS.values())
    assert set(backend_info()["functions"]) == set(FUNCTIONS)
    namespace: dict = {}
    exec(literal({"x": "a note " * 30}), namespace)  # the writer's literal reads back
    assert namespace["FUNCTIONS"] == {"x": "a note " * 30}
