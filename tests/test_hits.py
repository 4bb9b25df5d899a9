"""HITS (finepar/apps/hits.py): the reference is the limit the power iteration converges to;
the app reaches it by default on fast- and slow-mixing graphs alike (power iterations, then
Chebyshev spans), says so only when it has, and its Chebyshev steps, on the device or
driven from the host, are the float64 polynomial's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import generated_graph, shared_graph
from finepar import api, apps
from finepar.split import choose
from finepar.apps.hits import DEFAULT_MAX_ITER, Schedule
from finepar.io import from_scipy
from finepar.apps.hits import reference_hits, reference_hits_power

nx = pytest.importorskip("networkx")


def strip(k: int, length: int):
    """A triangulated k x length mesh (undirected, stored both ways): a finite-element
    strip whose (sigma_2 / sigma_1)^2 is within 1e-3 of 1, as meshes and road networks."""
    idx = np.arange(k * length).reshape(k, length)
    pairs = np.vstack([np.c_[idx[:-1, :].ravel(), idx[1:, :].ravel()],
                       np.c_[idx[:, :-1].ravel(), idx[:, 1:].ravel()],
                       np.c_[idx[:-1, :-1].ravel(), idx[1:, 1:].ravel()]])
    n = k * length
    a = sp.coo_array((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(np.float32)
    return from_scipy(sp.csr_array(a), name=f"strip{k}x{length}")


def grid(k: int):
    """The k x k grid, undirected: bipartite, so A A^T's largest eigenvalue is repeated."""
    g = nx.grid_2d_graph(k, k)
    return from_scipy(sp.csr_array(nx.to_scipy_sparse_array(g, format="csr"), dtype=np.float32),
                      name=f"grid{k}")


def pattern(g):
    return sp.csr_array((np.ones(g.nnz), g.indices, g.indptr), shape=g.shape)


def ratio(g) -> float:
    """(sigma_2 / sigma_1)^2 of the graph's pattern, by ARPACK."""
    from scipy.sparse.linalg import eigsh
    a = pattern(g)
    lam = eigsh(a @ a.T, k=2, which="LA", return_eigenvectors=False, tol=1e-12)
    return float(lam.min() / lam.max())


def errors(result, ref) -> tuple[float, float]:
    return (float(np.abs(result.values.astype(np.float64) - ref.hubs).sum()),
            float(np.abs(result.extra["authorities"].astype(np.float64) - ref.authorities).sum()))


def digraph(g):
    return nx.from_scipy_sparse_array(pattern(g), create_using=nx.DiGraph)


_REFS: dict = {}


def ref_of(g):
    if g.name not in _REFS:
        _REFS[g.name] = reference_hits(g)
    return _REFS[g.name]


# ------------------------------------------------------------------- the reference


@pytest.mark.parametrize("name", ["wiki-Vote.txt", "graph500:10"])
def test_reference_matches_networkx(name):
    g = generated_graph(10, 1) if name.startswith("graph500") else shared_graph(name)
    r = reference_hits(g, tol=1e-9)
    assert r.converged and r.error_bound <= 1e-9
    assert abs(r.hubs.sum() - 1) < 1e-12 and abs(r.authorities.sum() - 1) < 1e-12
    h, a = nx.hits(digraph(g), max_iter=10000, tol=1e-12)
    assert np.abs(r.hubs - np.array([h[i] for i in range(g.n)])).sum() < 1e-8
    assert np.abs(r.authorities - np.array([a[i] for i in range(g.n)])).sum() < 1e-8


def test_reference_is_the_power_iterations_limit():
    """On a slowly mixing mesh and on a bipartite grid (its top eigenvalue repeated: the
    limit is the uniform start's projection on that eigenspace), the reference is where a
    float64 power iteration run to exhaustion ends; the power iteration's own rule (an L1
    change below tol) stops it far from there."""
    for g in (strip(8, 200), grid(30)):
        r = reference_hits(g)
        assert r.converged and r.error_bound < 1e-8
        hubs, auths, it, done = reference_hits_power(g, tol=1e-15, max_iter=100_000)
        assert done
        assert np.abs(hubs - r.hubs).sum() < 1e-10 and np.abs(auths - r.authorities).sum() < 1e-10
    mesh = strip(8, 200)
    early = reference_hits_power(mesh, tol=1e-6, max_iter=100_000)
    assert early[3] and np.abs(early[0] - ref_of(mesh).hubs).sum() > 100 * 1e-6


# -------------------------------------------------------------- slow-mixing graphs


@pytest.mark.parametrize("mode,kw", [("shared", {"devices": "gpu"}),
                                     ("split", {"threshold": 4}),
                                     ("split", {"devices": "cpu"})],
                         ids=["device-steps", "host-steps", "cpu-alone"])
def test_a_mesh_converges_by_default(pairs, mode, kw):
    """A mesh whose 100-iteration answer was 0.33 from the limit (L1), and which the power
    iteration's rule stopped after 5,791 iterations 1e-3 from it, converges by default,
    through Chebyshev spans, on the device's own steps and on the host-driven ones, within
    its tolerance of the float64 limit."""
    g = strip(8, 200)
    assert ratio(g) > 0.999
    res, rep = api.run("hits", g, pair=pairs[mode], warmup=False, **kw)
    assert res.extra["device_steps"] == (kw.get("devices") is not None)
    assert res.converged and not res.extra["stalled"]
    assert res.extra["spans"] > 0 and res.extra["accelerated"] > res.iterations / 2
    assert res.iterations < 2000 and res.extra["error_estimate"] < 1e-6
    eh, ea = errors(res, ref_of(g))
    assert eh < 1e-6 and ea < 1e-6, (eh, ea)
    assert not apps.get("hits").check(g, res, ref_of(g), {})
    assert rep.timings["steps"] == 2 * res.iterations
    assert "chebyshev" in dict(apps.get("hits").summary(res, g))


def test_a_road_network_converges_by_default(pairs):
    """luxembourg: 100 iterations left the hubs 0.19 (L1) from the limit, and the power
    iteration's rule stopped 896 iterations in, 2.7e-4 from it."""
    g = shared_graph("luxembourg.mtx")
    res, _ = api.run("hits", g, pair=pairs["shared"], devices="gpu", warmup=False)
    assert res.converged and res.iterations < 1000
    eh, ea = errors(res, ref_of(g))
    assert max(eh, ea) < 3e-6, (eh, ea)  # float32 rounding: 1.3e-6 here
    assert not apps.get("hits").check(g, res, ref_of(g), {})


@pytest.mark.parametrize("tol", [1e-4, 1e-5])
def test_converged_means_within_tol_of_the_limit(pairs, tol):
    g = strip(8, 200)
    res, _ = api.run("hits", g, pair=pairs["shared"], devices="gpu", warmup=False, tol=tol)
    assert res.converged and res.extra["error_estimate"] < tol
    eh, ea = errors(res, ref_of(g))
    assert eh < tol and ea < tol, (eh, ea)
    assert not apps.get("hits").check(g, res, ref_of(g), {"tol": tol})


def test_an_unconverged_answer_says_so(pairs):
    """At a cap, or where float32 rounding cannot reach tol, converged is False; whether
    the caller set the cap is in the result."""
    g = strip(8, 200)
    capped, _ = api.run("hits", g, pair=pairs["shared"], devices="gpu", warmup=False,
                        max_iter=50)
    assert capped.iterations == 50 and not capped.converged
    assert capped.extra["max_iter"] == 50 and capped.extra["max_iter_given"]
    assert errors(capped, ref_of(g))[0] > 1e-3
    assert apps.get("hits").check(g, capped, ref_of(g), {})
    g = shared_graph("wiki-Vote.txt")
    stuck, _ = api.run("hits", g, pair=pairs["shared"], devices="gpu", warmup=False, tol=1e-10)
    assert not stuck.converged and stuck.extra["stalled"]
    assert stuck.iterations < 1000 and stuck.extra["max_iter"] == DEFAULT_MAX_ITER
    assert not stuck.extra["max_iter_given"]
    assert "NOT converged" in dict(apps.get("hits").summary(stuck, g))["iterations"]


# ----------------------------------------------------------------------- fast graphs


def test_device_and_host_paths(pairs):
    """One device (iterations batched, the stop test on the device) and two (the host
    combines each step's sums) stop at the same iteration, at most two after the power
    iteration's own rule would, with networkx's hubs and authorities."""
    g = shared_graph("wiki-Vote.txt")
    alone, rep1 = api.run("hits", g, pair=pairs["shared"], devices="gpu", warmup=False)
    both, rep2 = api.run("hits", g, pair=pairs["split"], threshold=16, warmup=False)
    assert alone.extra["device_steps"] and not both.extra["device_steps"]
    power = reference_hits_power(g, tol=1e-6)
    assert alone.iterations == both.iterations and alone.converged and both.converged
    assert power[2] <= alone.iterations <= power[2] + 2 and alone.extra["spans"] == 0
    for res in (alone, both):
        assert not apps.get("hits").check(g, res, ref_of(g), {})
        assert abs(res.values.sum() - 1) < 1e-6
    assert rep1.timings["steps"] == 2 * alone.iterations  # none past convergence counted
    h, a = nx.hits(digraph(g), max_iter=1000, tol=1e-10)
    assert np.abs(alone.values - np.array([h[i] for i in range(g.n)])).sum() < 1e-5
    assert np.abs(alone.extra["authorities"] - np.array([a[i] for i in range(g.n)])).sum() < 1e-5
    capped, _ = api.run("hits", g, pair=pairs["shared"], devices="gpu", warmup=False,
                        max_iter=3)
    assert capped.iterations == 3 and not capped.converged


# -------------------------------------------------------------------- the kernels


def chebyshev64(g, plain: int, m: int, s: float):
    """float64: ``plain`` power iterations from uniform hubs, then the Chebyshev polynomial
    ``T_m((M - c) / c)`` on them, ``c = s lambda / 2`` with ``lambda`` the authorities'
    Rayleigh quotient; hubs and authorities summing to 1."""
    a_mat = pattern(g)
    h = np.full(g.n, 1.0 / g.n)
    for _ in range(plain):
        a = a_mat.T @ h
        a /= a.sum()
        h = a_mat @ a
        v = h.sum()
        h /= v
    lam = v * v * (h @ h) / (a @ a)
    c = s * lam / 2
    def step(x):
        return (a_mat @ (a_mat.T @ x) - c * x) / c
    prev, cur = h, step(h)
    for _ in range(m - 1):
        prev, cur = cur, 2 * step(cur) - prev
    auths = a_mat.T @ prev  # the last step's authorities: from the hubs before it
    return cur / cur.sum(), auths / auths.sum(), c


@pytest.mark.parametrize("mode", ["shared", "split"])
@pytest.mark.parametrize("devices,threshold", [("gpu", None), ("cpu", None), ("both", 4),
                                               ("both", 32)])
def test_chebyshev_steps_are_the_float64_polynomial(pairs, mode, devices, threshold):
    """Three plain iterations, then a Chebyshev span of 12 steps, run on one device (its
    reduce kernel sets each step's scalars) or on two (the host sets them), equal the
    float64 polynomial of the same hubs."""
    g = shared_graph("wiki-Vote.txt")
    app = apps.get("hits")
    wl = api.Workload("hits", g)
    eng = wl.engine(pairs[mode], choose.plan_for(wl.matrix, threshold=threshold, devices=devices,
                                              grouping="pow4"))
    iterate = app._device_iterations if eng.device_iterations else app._host_iterations
    eng.fill("ha", np.float32(1.0 / g.n))
    state = {"w": g.nnz / g.n, "v": 0.0, "slot": 0}
    assert len(iterate(eng, state, 3, 0.0, 0.0, 0.0)) == 3
    ha = eng.read("ha").astype(np.float64)
    h, a = ha[:g.n], ha[g.n:]
    lam = state["v"] ** 2 * (h @ h) / (a @ a)
    want_h, want_a, c = chebyshev64(g, 3, 12, 0.99)
    assert abs(0.99 * lam / 2 - c) < 1e-5 * c
    changes = iterate(eng, state, 12, 0.0, c, c * c / 4)
    ha = eng.read("ha").astype(np.float64)
    got_h, got_a = ha[:g.n] / ha[:g.n].sum(), ha[g.n:] / ha[g.n:].sum()
    assert len(changes) == 12
    assert np.abs(got_h - want_h).sum() < 2e-5
    assert np.abs(got_a - want_a).sum() < 2e-5
    assert abs(state["w"] - float(got_h @ np.diff(g.indptr))) < 1e-4 * state["w"]


# ---------------------------------------------------------------------- the schedule


def run_schedule(g, tol: float, max_iter: int = DEFAULT_MAX_ITER) -> tuple:
    """:class:`Schedule` driving float64 steps as the kernels run them (the hub step's
    three-term recurrence on sums that make each half sum to 1)."""
    a_mat = pattern(g)
    at = a_mat.T.tocsr()
    outdeg, indeg = np.diff(g.indptr).astype(float), np.bincount(g.indices, minlength=g.n)
    h = np.full(g.n, 1.0 / g.n)
    st = {"w": g.nnz / g.n, "v": 0.0, "a": None}
    sched = Schedule(tol, max_iter)

    def iterate(k, stop_below, sigma, beta):
        nonlocal h
        prev, p, trace = np.zeros(g.n), 0.0, []
        for steps in range(k):
            a = (at @ h) / st["w"]
            v = float(a @ indeg)
            b = 0.0 if not sigma or steps == 0 else (2 * beta if steps == 1 else beta)
            inv = 1.0 / (st["w"] * v - sigma - b * p)
            hn = (st["w"] * (a_mat @ a) - sigma * h - b * prev) * inv
            if sigma:
                prev, p = h * inv, inv
            trace.append(float(np.abs(hn - h).sum()))
            h, st["v"], st["a"], st["w"] = hn, v, a, float(hn @ outdeg)
            if trace[-1] < stop_below:
                break
        return trace

    while (todo := sched.next()) is not None:
        if todo[0] == "power":
            sched.power_done(iterate(todo[1], todo[2], 0.0, 0.0))
            continue
        changes = []
        if todo[0] == "span":
            changes = iterate(todo[1], 0.0, todo[3], todo[4]) + iterate(todo[2], 0.0, 0.0, 0.0)
        sched.read_done(h, st["a"], st["v"], changes)
    return sched, h / h.sum()


def test_the_schedule_stops_within_tol_of_the_limit():
    """Without float32's rounding the schedule's estimate holds: stopped by it, the hubs
    are within tol of the limit, on a slow mesh (Chebyshev spans, the ratio raised from its
    first guess) and on a fast graph (power iterations, the power iteration's count or
    two more)."""
    mesh = strip(8, 200)
    r = ratio(mesh)
    for tol in (1e-5, 1e-6):
        sched, hubs = run_schedule(mesh, tol)
        assert sched.converged and sched.spans > 0 and Schedule.FIRST_RATIO < sched.ratio < 1
        assert np.abs(hubs - ref_of(mesh).hubs).sum() < tol
        power_its = math.log(tol * (1 - r)) / math.log(r)
        assert sched.iterations < power_its / 10
    g = shared_graph("wiki-Vote.txt")
    sched, hubs = run_schedule(g, 1e-6)
    assert sched.converged and sched.spans == 0 and sched.ratio is None
    assert np.abs(hubs - ref_of(g).hubs).sum() < 1e-6
    assert sched.iterations <= reference_hits_power(g, tol=1e-6)[2] + 2
    sched, _ = run_schedule(mesh, 1e-6, max_iter=40)
    assert sched.iterations == 40 and not sched.converged and not sched.stalled
