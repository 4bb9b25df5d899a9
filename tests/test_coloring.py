"""Graph colouring beyond the generic test (tests/test_apps.py): greedy largest-first as
networkx colours, Jones-Plassmann replayed on the host, colour counts, the validation
(the speculative rounds are tests/test_speculative.py's)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import SHARED_GRAPHS, generated_graph, shared_graph
from finepar import api, apps, reference
from finepar.io import from_scipy
from finepar.apps.coloring import greedy_coloring, validate_coloring

nx = pytest.importorskip("networkx")


@pytest.mark.parametrize("name", ["USPowerGrid.mtx", "wiki-Vote.txt", "graph500:10"])
def test_greedy_coloring_is_networkx_largest_first(name):
    g = generated_graph(10, 4) if name.startswith("graph500") else shared_graph(name)
    G = nx.from_scipy_sparse_array(reference.undirected_simple(g))
    want = nx.greedy_color(G, strategy="largest_first")
    np.testing.assert_array_equal(greedy_coloring(g), [want[i] for i in range(g.n)])


def priorities(n, seed):
    """The colouring's priorities as the host computes them."""
    apps.names()  # the registry loads every app first (importing one app module would not)
    from finepar.apps.coloring import priorities as host_priorities
    return host_priorities(n, seed)


def jones_plassmann(g, seed):
    """Jones-Plassmann replayed on the host with the devices' priorities."""
    s = reference.undirected_simple(g)
    rows = np.repeat(np.arange(g.n), np.diff(s.indptr))
    prio = priorities(g.n, seed).astype(np.int64)
    color = np.full(g.n, -1)
    while (color < 0).any():
        best = np.full(g.n, -1)
        unc = color[s.indices] < 0
        np.maximum.at(best, rows[unc], prio[s.indices[unc]])
        win = np.flatnonzero((color < 0) & (best < prio))
        for v in win:  # winners are never adjacent: the order does not matter
            used = set(color[s.indices[s.indptr[v]:s.indptr[v + 1]]].tolist())
            color[v] = next(c for c in range(len(used) + 1) if c not in used)
    return color


def clique_and_graph500():
    """A 70-clique joined to a Graph500 graph: 70 colours at least, so winners look through
    a second window of colours."""
    g = generated_graph(9, 2)
    k = 70
    a = sp.block_diag([sp.csr_array(np.ones((k, k)) - np.eye(k)), g.to_scipy()], format="csr")
    bridge = sp.csr_array((np.ones(2), ([3, k + 5], [k + 5, 3])), shape=a.shape)
    return from_scipy(a + bridge, name="clique", pattern=True)


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_coloring_is_jones_plassmann(mode, pairs):
    for g in (shared_graph("ca-GrQc.mtx"), clique_and_graph500()):
        for seed in (0, 5):
            res, rep = api.run("coloring", g, pair=pairs[mode], threshold=8, warmup=False,
                               seed=seed, algorithm="jp")
            np.testing.assert_array_equal(res.values, jones_plassmann(g, seed))
            assert res.extra["colors"] == res.values.max() + 1
    assert res.extra["colors"] >= 70 and res.extra["assign_steps"] > res.iterations
    assert "greedy largest-first" in dict(rep.result["summary"])["colours"]
    assert np.unique(priorities(10**6, 3)).size == 10**6


def test_coloring_counts_near_greedy():
    """On every shared graph, Jones-Plassmann's colours are within 1.5x + 2 of greedy
    largest-first's (networkx's count; the greedy order itself is tested above)."""
    pair = api.make_pair(memory="shared", gpu="emulate")
    for name in SHARED_GRAPHS:
        g = shared_graph(name)
        res, _ = api.run("coloring", g, pair=pair, devices="cpu", grouping="none",
                         warmup=False, algorithm="jp")
        greedy = apps.get("coloring").reference(g, {})
        assert not apps.get("coloring").check(g, res, greedy, {})
        assert res.extra["colors"] <= 1.5 * greedy + 2, (name, res.extra["colors"], greedy)


def test_coloring_validation_catches_clashes():
    g = shared_graph("USPowerGrid.mtx")
    colors = greedy_coloring(g)
    assert not validate_coloring(g, colors)
    u = int(np.argmax(g.out_degrees()))
    clash = colors.copy()
    clash[u] = colors[g.indices[g.indptr[u]]]
    assert "join two vertices" in validate_coloring(g, clash)[0]
    clash[u] = -1
    assert "not coloured" in validate_coloring(g, clash)[0]
