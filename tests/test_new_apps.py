"""RWR, HITS, SSSP and graph colouring beyond the generic test (tests/test_apps.py): the
references against networkx, weighted and exact SSSP, restart vectors, Jones-Plassmann
replayed on the host, and bad parameters through the command line (HITS's own tests are
in tests/test_hits.py)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import SHARED_GRAPHS, data_file, generated_graph, shared_graph
from finepar import api, apps, reference
from finepar.split import choose
from finepar.cli import main
from finepar.errors import InputError, UsageError
from finepar.io import from_scipy

nx = pytest.importorskip("networkx")


def digraph(g, weighted=False):
    """The graph as a networkx DiGraph (edge weights the values, when asked)."""
    a = g.to_scipy() if weighted else sp.csr_array((np.ones(g.nnz), g.indices, g.indptr),
                                                   shape=g.shape)
    return nx.from_scipy_sparse_array(a, create_using=nx.DiGraph)


@pytest.fixture(scope="module")
def weighted():
    """A Graph500 graph (scale 10) whose two directions of an edge have their own lengths,
    spanning five decades, so that float32 sums round differently along different paths."""
    g = generated_graph(10, 3)
    w = (10.0 ** np.random.default_rng(7).uniform(-2, 3, g.nnz)).astype(np.float32)
    return from_scipy(sp.csr_array((w, g.indices, g.indptr), shape=g.shape), name="weighted")


# ------------------------------------------------------------------- references


def test_rwr_reference_matches_networkx():
    g = shared_graph("wiki-Vote.txt")
    G = digraph(g)
    p = np.zeros(g.n)
    p[[3, 50, 700]] = [1.0, 2.0, 5.0]
    for restart in (np.eye(1, g.n, 17).ravel(), p):
        got = reference.rwr(g, restart, restart_prob=0.2)
        want = nx.pagerank(G, alpha=0.8, personalization=dict(enumerate(restart)), tol=1e-13,
                           max_iter=1000, weight=None)
        assert np.abs(got - np.array([want[i] for i in range(g.n)])).sum() < 1e-8


def test_sssp_reference_matches_networkx(weighted):
    g = weighted
    root = int(np.argmax(g.out_degrees()))
    dist, hops = reference.sssp(g, root)
    want = nx.single_source_dijkstra_path_length(digraph(g, weighted=True), root)
    reach = np.array(sorted(want))
    np.testing.assert_allclose(dist[reach], [want[v] for v in reach], rtol=1e-12)
    assert np.isinf(np.delete(dist, reach)).all() and (np.delete(hops, reach) == -1).all()
    unit_hops = reference.sssp(generated_graph(11, 2), 5)[1]  # unit lengths: hops are levels
    np.testing.assert_array_equal(unit_hops, reference.bfs_levels_fast(generated_graph(11, 2), 5))


@pytest.mark.parametrize("name", ["USPowerGrid.mtx", "wiki-Vote.txt", "graph500:10"])
def test_greedy_coloring_is_networkx_largest_first(name):
    g = generated_graph(10, 4) if name.startswith("graph500") else shared_graph(name)
    G = nx.from_scipy_sparse_array(reference.undirected_simple(g))
    want = nx.greedy_color(G, strategy="largest_first")
    np.testing.assert_array_equal(reference.greedy_coloring(g), [want[i] for i in range(g.n)])


# ------------------------------------------------------------------------- SSSP


def test_sssp_weighted_is_one_float32_answer_every_way(weighted, pairs):
    """Pull, push and mixed rounds, on either memory mode and split, give the one float32
    fixed point bit for bit; it passes the exact check and the bound to Dijkstra."""
    g = weighted
    root = int(np.argmax(g.out_degrees()))
    ref = reference.sssp(g, root)
    runs = []
    for mode in ("shared", "split"):
        for kw in ({"static": True}, {"frontier_fraction": 1.0}, {}):
            res, _ = api.run("sssp", g, pair=pairs[mode], threshold=8, warmup=False, root=root,
                             **kw)
            runs.append(res)
            assert not reference.validate_sssp(g, root, res.values, "values", *ref), kw
    for res in runs[1:]:
        np.testing.assert_array_equal(res.values, runs[0].values)
    directions = {s["direction"] for r in runs for s in r.extra["trace"]}
    assert directions == {"push", "pull"}
    exact = runs[0].values.astype(np.float64) == ref[0]
    assert not exact.all()  # float32 rounding shows, within the bound


def test_sssp_validation_catches_broken_answers(weighted):
    g = weighted
    root = int(np.argmax(g.out_degrees()))
    ref = reference.sssp(g, root)
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    rounded = ref[0].astype(np.float32)  # Dijkstra's, rounded: some fall below every float32
    assert reference.validate_sssp(g, root, rounded, "values", *ref)  # path sum, so refused
    fixed = np.full(g.n, np.inf, np.float32)
    fixed[root] = 0
    while True:  # Bellman-Ford on the host, float32: the fixed point
        before = fixed.copy()
        np.minimum.at(fixed, g.indices, fixed[rows] + g.data)
        if np.array_equal(before, fixed):
            break
    assert not reference.validate_sssp(g, root, fixed, "values", *ref)
    off = reference.validate_sssp(g, root, fixed, "values", ref[0] * 1.001, ref[1])
    assert "more than float32 rounding" in off[0]
    v = int(np.flatnonzero(np.isfinite(fixed) & (ref[1] >= 2))[0])
    for bad, rule in ((np.nextafter(fixed[v], np.float32(np.inf)), "shortens"),
                      (np.float32(fixed[v] * 0.999), "no path"),
                      (np.float32(np.inf), "reached set")):
        broken = fixed.copy()
        broken[v] = bad
        problems = reference.validate_sssp(g, root, broken, "values", *ref)
        assert any(rule in p for p in problems), (rule, problems)


def test_sssp_unit_lengths_are_bfs_levels_and_teps(pairs):
    g = generated_graph(12, 5)
    root = int(np.argmax(g.out_degrees()))
    res, rep = api.run("sssp", g, pair=pairs["split"], threshold=16, warmup=False, root=root)
    level = reference.bfs_levels_fast(g, root)
    np.testing.assert_array_equal(res.values, np.where(level >= 0, level, np.inf))
    reached = level >= 0
    assert res.work_edges == int(g.out_degrees()[reached].sum()) // 2  # undirected: once
    assert rep.throughput["teps"] > 0 and res.extra["reached"] == int(reached.sum())


def test_sssp_abs_weights_and_negative_ones(pairs):
    g = shared_graph("adder_dcop_05.mtx")
    with pytest.raises(InputError, match=r"adder_dcop_05.mtx: [\d,]+ negative edge weights"):
        api.run("sssp", g, pair=pairs["shared"], threshold=8, warmup=False)
    res, _ = api.run("sssp", g, pair=pairs["shared"], threshold=8, warmup=False, weights="abs",
                     root=3)
    ref = reference.sssp(g, 3, "abs")
    assert not reference.validate_sssp(g, 3, res.values, "abs", *ref)
    assert np.isfinite(res.values).sum() > 1


# ------------------------------------------------------------------------- RWR


def test_rwr_restart_vector_and_seed(pairs, monkeypatch):
    """A one-hot restart vector is the seed; a uniform one is PageRank; a vector is
    uploaded once per array object, not once per run."""
    g = shared_graph("wiki-Vote.txt")
    wl = api.Workload("rwr", g)
    seed_res, _ = api.run("rwr", wl, pair=pairs["split"], threshold=16, warmup=False, seed=40)
    onehot = np.zeros(g.n)
    onehot[40] = 3.0
    vec_res, _ = api.run("rwr", wl, pair=pairs["split"], threshold=16, warmup=False,
                         restart=onehot)
    assert np.abs(seed_res.values - vec_res.values).sum() < 1e-6
    assert np.abs(seed_res.values - reference.rwr(g, onehot)).sum() < 1e-4
    uniform, _ = api.run("rwr", g, pair=pairs["shared"], devices="cpu", warmup=False,
                         restart=np.ones(g.n), restart_prob=0.3)
    assert np.abs(uniform.values - reference.pagerank(g, damping=0.7)).sum() < 1e-4
    p = np.random.default_rng(1).uniform(0, 1, g.n)
    eng = wl.engine(pairs["shared"], choose.plan_for(wl.matrix, threshold=16, devices="both",
                                                   grouping="pow4"))
    writes = []
    monkeypatch.setattr(eng, "write", lambda name, *a, **k: writes.append(name) or
                        type(eng).write(eng, name, *a, **k))
    app = apps.get("rwr")
    for _ in range(3):
        res = app.solve(eng, g, restart=p)
        assert np.abs(res.values - reference.rwr(g, p)).sum() < 1e-4
    assert writes.count("restart") == 1


@pytest.mark.parametrize("bad,needle", [
    (np.ones(5), "shape"), (-np.ones(7115), "non-negative"), (np.zeros(7115), "positive"),
    (np.full(7115, np.nan), "finite")])
def test_rwr_bad_restart_vectors(bad, needle):
    g = shared_graph("wiki-Vote.txt")
    with pytest.raises(UsageError, match=needle):
        apps.get("rwr").check_params(g, {"restart": bad})
    with pytest.raises(UsageError, match="not both"):
        apps.get("rwr").check_params(g, {"restart": np.ones(g.n), "seed": 3})


# ---------------------------------------------------------------------- colouring


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
    colors = reference.greedy_coloring(g)
    assert not reference.validate_coloring(g, colors)
    u = int(np.argmax(g.out_degrees()))
    clash = colors.copy()
    clash[u] = colors[g.indices[g.indptr[u]]]
    assert "join two vertices" in reference.validate_coloring(g, clash)[0]
    clash[u] = -1
    assert "not coloured" in reference.validate_coloring(g, clash)[0]


# --------------------------------------------------------------- vertex relabelling


@pytest.mark.parametrize("app_name", ["rwr", "hits", "sssp", "coloring"])
def test_relabelled_runs_answer_in_input_ids(app_name, pairs):
    """A run on the relabelled graph, its parameters mapped (permute_params) and its
    result mapped back (unpermute), answers as the run on the input does."""
    g = shared_graph("wiki-Vote.txt")
    perm = np.random.default_rng(0).permutation(g.n)
    app = apps.get(app_name)
    given = {"restart": np.random.default_rng(1).uniform(0, 1, g.n)} if app_name == "rwr" else {}
    params = app.check_params(g, given)
    kw = dict(pair=pairs["split"], threshold=16, warmup=False)
    res, _ = api.run(app_name, g, **kw, **params)
    rel, _ = api.run(app_name, g.permuted(perm), **kw, **app.permute_params(params, perm))
    rel = app.unpermute(rel, perm)
    if app_name == "sssp":
        np.testing.assert_array_equal(rel.values, res.values)
    elif app_name == "coloring":
        assert not reference.validate_coloring(g, rel.values)
    else:
        assert np.abs(rel.values - res.values).sum() < 1e-5
    if app_name == "hits":
        assert np.abs(rel.extra["authorities"] - res.extra["authorities"]).sum() < 1e-5


# -------------------------------------------------------------------- the command line


BAD = [
    (("sssp", "{memplus}"), "memplus.mtx: 76,396 negative edge weights"),
    (("sssp", "{wiki}", "--root", "99999"), "--root 99999"),
    (("sssp", "{wiki}", "--weights", "signed"), "--weights"),
    (("rwr", "{wiki}", "--restart-prob", "0"), "--restart-prob"),
    (("rwr", "{wiki}", "--restart-prob", "1"), "--restart-prob"),
    (("rwr", "{wiki}", "--seed", "0"), "--seed 0"),  # SNAP ids of wiki-Vote start at 3
    (("hits", "{wiki}", "--tol", "-1"), "--tol"),
    (("hits", "{wiki}", "--max-iter", "0"), "--max-iter"),
    (("coloring", "{wiki}", "--seed", "-2"), "--seed"),
]


@pytest.mark.parametrize("argv,needle", BAD, ids=[" ".join(a[0][:1] + a[0][2:]) for a in BAD])
def test_bad_parameters_are_one_line_errors(capsys, tmp_path, argv, needle):
    files = {"memplus": data_file("memplus.mtx"), "wiki": data_file("wiki-Vote.txt")}
    out_npy = tmp_path / "out.npy"
    rc = main(["run", *(a.format(**files) for a in argv), "--gpu", "emulate", "-o",
               str(out_npy)])
    out, err = capsys.readouterr()
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("finepar: error:"), err
    assert needle in lines[0] and out == ""
    assert not os.listdir(tmp_path)


def test_run_saves_each_new_apps_answer(capsys, tmp_path):
    """finepar run APP -o FILE for each new app: the saved values are the app's answer."""
    g = shared_graph("USPowerGrid.mtx")
    saved = {}
    for app in ("rwr", "hits", "sssp", "coloring"):
        out_npy = tmp_path / f"{app}.npy"
        rc = main(["run", app, str(data_file("USPowerGrid.mtx")), "--gpu", "emulate",
                   "--threshold", "4", "-q", "-o", str(out_npy)])
        assert rc == 0, capsys.readouterr().err
        saved[app] = np.load(out_npy)
    root = int(np.argmax(g.out_degrees()))
    p = np.eye(1, g.n, root).ravel()
    assert np.abs(saved["rwr"] - reference.rwr(g, p)).sum() < 1e-4
    assert np.abs(saved["hits"] - reference.hits(g)[0]).sum() < 1e-4
    assert not reference.validate_sssp(g, root, saved["sssp"], "values",
                                       *reference.sssp(g, root))
    assert not reference.validate_coloring(g, saved["coloring"])


def test_api_wrappers_of_the_new_apps(pairs):
    """finepar.rwr / hits / sssp / coloring return what their docstrings say."""
    import finepar
    from finepar import reference
    g = shared_graph("wiki-Vote.txt")
    pair = pairs["split"]
    kw = dict(pair=pair, threshold=64, warmup=False)
    root = int(np.argmax(g.out_degrees()))
    scores, rep = finepar.rwr(g, seed=root, **kw)
    assert rep.app == "rwr" and abs(float(scores.sum()) - 1) < 1e-5
    hubs, auth, _ = finepar.hits(g, **kw)
    assert hubs.shape == auth.shape == (g.n,) and abs(float(auth.sum()) - 1) < 1e-5
    dist, _ = finepar.sssp(g, root=root, **kw)
    np.testing.assert_array_equal(np.isfinite(dist), reference.bfs_levels_fast(g, root) >= 0)
    colours, _ = finepar.coloring(g, **kw)
    assert not reference.validate_coloring(g, colours)
