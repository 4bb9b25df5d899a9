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
def _quiet_cache_note():
    nx.config.warnings_to_ignore.add("cache")
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
    cached = G.__networkx_cache__["backends"]["finepar"]
    assert any(isinstance(v, FineParGraph) for v in cached.values())
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


def test_should_run_leaves_small_graphs_to_networkx():
    G = nx.gnp_random_graph(100, 0.05, seed=2)
    runs = STATS["runs"]
    with nx.config.backend_priority(algos=["finepar"]):
        assert nx.number_connected_components(G) == nx.number_connected_components(
            G, backend="networkx")
        assert STATS["runs"] == runs  # below min_edges: NetworkX ran it
        with nx.config.backends.finepar(min_edges=0):
            nx.number_connected_components(G)
        assert STATS["runs"] == runs + 1
