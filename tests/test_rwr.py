"""RWR beyond the generic test (tests/test_apps.py): its reference against networkx,
restart vectors and seeds, bad restart vectors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import shared_graph
from finepar import api, apps
from finepar.split import choose
from finepar.errors import UsageError
from finepar.apps.pagerank import reference_pagerank
from finepar.apps.rwr import reference_rwr

nx = pytest.importorskip("networkx")


def digraph(g, weighted=False):
    """The graph as a networkx DiGraph (edge weights the values, when asked)."""
    a = g.to_scipy() if weighted else sp.csr_array((np.ones(g.nnz), g.indices, g.indptr),
                                                   shape=g.shape)
    return nx.from_scipy_sparse_array(a, create_using=nx.DiGraph)


def test_rwr_reference_matches_networkx():
    g = shared_graph("wiki-Vote.txt")
    G = digraph(g)
    p = np.zeros(g.n)
    p[[3, 50, 700]] = [1.0, 2.0, 5.0]
    for restart in (np.eye(1, g.n, 17).ravel(), p):
        got = reference_rwr(g, restart, restart_prob=0.2)
        want = nx.pagerank(G, alpha=0.8, personalization=dict(enumerate(restart)), tol=1e-13,
                           max_iter=1000, weight=None)
        assert np.abs(got - np.array([want[i] for i in range(g.n)])).sum() < 1e-8


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
    assert np.abs(seed_res.values - reference_rwr(g, onehot)).sum() < 1e-4
    uniform, _ = api.run("rwr", g, pair=pairs["shared"], devices="cpu", warmup=False,
                         restart=np.ones(g.n), restart_prob=0.3)
    assert np.abs(uniform.values - reference_pagerank(g, damping=0.7)).sum() < 1e-4
    p = np.random.default_rng(1).uniform(0, 1, g.n)
    eng = wl.engine(pairs["shared"], choose.plan_for(wl.matrix, threshold=16, devices="both",
                                                   grouping="pow4"))
    writes = []
    monkeypatch.setattr(eng, "write", lambda name, *a, **k: writes.append(name) or
                        type(eng).write(eng, name, *a, **k))
    app = apps.get("rwr")
    for _ in range(3):
        res = app.solve(eng, g, restart=p)
        assert np.abs(res.values - reference_rwr(g, p)).sum() < 1e-4
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
