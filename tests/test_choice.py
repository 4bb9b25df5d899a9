"""The whole-run choice (finepar.split.answer): the CPU alone, the GPU alone or the split,
weighed by predicted (or, for a small frontier app, measured) time to answer."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from conftest import generated_graph, shared_graph
from finepar.split import answer
from finepar.split.answer import HostCosts, Inputs, LevelProfile, weigh


def _tuning(t_split=1e-3, t_cpu=2e-3, t_gpu=1.5e-3, both=True):
    """A tuner's record: the split at T_f 8 (both shares), the ends 0 and 100."""
    pred = {"T_f": 8, "t_cpu": t_split / 2 if both else 0.0, "t_gpu": t_split, "t": t_split,
            "grouping": "none"}
    traj = [pred, {"T_f": 0, "t_cpu": t_cpu, "t_gpu": 0.0, "t": t_cpu, "grouping": "none"},
            {"T_f": 100, "t_cpu": 0.0, "t_gpu": t_gpu, "t": t_gpu, "grouping": "none"},
            {"T_f": 100, "t_cpu": 0.0, "t_gpu": 2 * t_gpu, "t": 2 * t_gpu,
             "grouping": "pow4"}]
    return {"threshold": 8, "grouping": "none", "predicted": pred, "trajectory": traj,
            "ends": {"cpu": 0, "gpu": 100}}


def _costs(both=1e-5):
    return HostCosts({"cpu": 1e-5, "gpu": 1e-5, "both": both}, {"cpu": 1e12, "gpu": 1e12})


def test_a_large_fixed_split_cost_picks_a_device_alone():
    """The split's row operation is the fastest, but its per-run fixed cost (a round trip
    on both queues) is large: the better device alone wins, and the record names every
    candidate with its predicted time."""
    inp = Inputs(costs=_costs(both=1.0), steps=10, nnz=1000, n=100)
    ch = weigh(_tuning(), inp)
    assert set(ch["candidates"]) == {"cpu", "gpu", "split"}
    assert ch["winner"] == "gpu"
    gpu = ch["candidates"]["gpu"]
    assert gpu["grouping"] == "none"  # the end's faster grouping
    assert gpu["parts"]["steps"] == pytest.approx(10 * 1.5e-3)
    assert ch["candidates"]["split"]["parts"]["round_trips"] == 1.0
    line = answer.text(ch)
    assert line.startswith("weighed (predicted): cpu ") and "cpu 20 ms, gpu 15 ms, split 1.01e+03 ms" in line
    assert "gpu alone wins" in line


def test_the_split_wins_only_by_the_margin():
    """With equal fixed costs the split 2x faster per step wins; 5% faster gives way."""
    inp = Inputs(costs=_costs(), steps=100, nnz=1000, n=100)
    assert weigh(_tuning(t_split=0.5e-3), inp)["winner"] == "split"
    assert weigh(_tuning(t_split=1.45e-3), inp)["winner"] == "gpu"


def test_a_tuner_end_is_the_device_alone_without_a_margin():
    """A split that gives the GPU every row (and no walk) is the GPU alone: no separate
    candidate and no margin, so the tuner's plan stays."""
    t = _tuning(t_split=1.5e-3, both=False)
    ch = weigh(t, Inputs(costs=_costs(), steps=100, nnz=1000, n=100))
    assert set(ch["candidates"]) == {"cpu", "split"}
    assert ch["winner"] == "split" and ch["candidates"]["split"]["roles"] == ["gpu"]


def test_a_cpu_that_cannot_hold_the_matrix_is_no_candidate():
    t = _tuning()
    t["ends"]["cpu"] = 5
    ch = weigh(t, Inputs(costs=_costs(), steps=1, nnz=1000, n=100))
    assert "cpu" not in ch["candidates"]


def test_frontier_levels_are_walked_below_the_switch_point_else_pushed():
    """Levels of 10, 10, 5000, 10 out-edges; the walk's switch point (round trip over
    seconds an edge) is 1000 edges: the CPU alone walks three levels and pushes one; the
    split hands over once (walk -> push); the GPU alone pushes all four."""
    prof = LevelProfile(np.array([10, 10, 5000, 10], np.int64), "given")
    inp = Inputs(costs=_costs(both=1e-5), steps=1, nnz=5030, n=100, levels=prof,
                 walk_edge_seconds=1e-8, vector_bytes=800)
    ch = weigh(_tuning(), inp)
    cpu, gpu, split = (ch["candidates"][k]["parts"] for k in ("cpu", "gpu", "split"))
    assert cpu["walk"] == pytest.approx(30 * 1e-8)
    assert cpu["round_trips"] == pytest.approx(2 * 1e-5)  # the walk's and one pushed level
    assert gpu["walk"] == 0.0 and gpu["round_trips"] == pytest.approx(4 * 1e-5)
    assert split["handovers"] == pytest.approx(800 / 1e12 + 2 * 1e-5)


@pytest.mark.parametrize("scale", [8, 11])
def test_level_profile_counts_each_levels_out_edges(scale):
    """The host BFS's level profile against networkx's levels from the same root, each
    level's out-degrees summed (counts)."""
    g = generated_graph(scale, 2)
    prof = answer.level_profile(g)
    a = sp.csr_matrix((np.ones(g.nnz), g.indices, g.indptr), shape=(g.n, g.n))
    G = nx.from_scipy_sparse_array(a, create_using=nx.DiGraph)
    deg = np.diff(g.indptr)
    root = int(np.argmax(deg))
    dist = nx.single_source_shortest_path_length(G, root)
    ref = np.zeros(max(dist.values()) + 1, np.int64)
    for v, d in dist.items():
        ref[d] += deg[v]
    assert np.array_equal(prof.edges, ref) and prof.how == f"host BFS from vertex {root}"


def test_a_measured_step_far_off_hands_the_run_to_a_device_alone():
    """One measured step of the split 10x its prediction: weighed again, the GPU alone wins
    and the predictions before are kept."""
    inp = Inputs(costs=_costs(), steps=100, nnz=1000, n=100)
    ch = weigh(_tuning(t_split=0.5e-3), inp)
    assert ch["winner"] == "split"
    again = answer.remeasured(ch, 5e-3, None, 100, 0.5e-3)
    assert again["winner"] == "gpu" and again["by"] == "corrected"
    assert again["before"]["split"] == ch["candidates"]["split"]["seconds"]
    assert again["candidates"]["split"]["parts"]["steps"] == pytest.approx(100 * 5e-3)


def test_host_costs_are_measured_once_per_pair(pairs):
    pair = pairs["split"]
    pair.__dict__.pop("answer_costs", None)
    c = answer.host_costs(pair)
    assert answer.host_costs(pair) is c
    assert set(c.round_trip) == {"cpu", "gpu", "both"} and min(c.round_trip.values()) > 0
    assert set(c.upload) == {"cpu", "gpu"} and min(c.upload.values()) > 0


@pytest.fixture
def real_pair(pairs, monkeypatch):
    """The split pair seen as a real one (a default run weighs the candidates)."""
    from finepar.device.pair import DevicePair
    monkeypatch.setattr(DevicePair, "emulated", property(lambda self: False))
    return pairs["split"]


def test_a_default_bfs_runs_the_measured_winner_and_answers_right(real_pair):
    """A small frontier app decides by one measured run of each candidate: the winner is
    the rule's (the split only 15% ahead), the report names every candidate, and the
    answer passes the Graph500 validation."""
    import finepar
    from finepar import apps
    g = generated_graph(9, 4)
    res, rep = finepar.run("bfs", g, pair=real_pair, cache=False, calibrate=False)
    ch = rep.tuning["choice"]
    assert ch["by"] == "measured" and ch["levels"]["levels"] >= 2
    meas = {n: c["measured"] for n, c in ch["candidates"].items()}
    alone = min((meas[n], n) for n in meas if n != "split")
    want = ("split" if meas["split"] * (1 + answer.CORUN_MARGIN) < alone[0] else alone[1])
    assert ch["winner"] == want
    assert rep.plan["method"] == ("single" if want != "split" else "fine")
    assert "choice     weighed (predicted): cpu" in rep.text()
    app = apps.get("bfs")
    params = app.check_params(g, {})
    assert app.check(g, res, app.reference(g, params), params) == ""


def test_a_default_pagerank_with_a_costly_split_runs_one_device(real_pair, monkeypatch):
    """An iterative app whose split is given a second of fixed cost a run runs one device
    alone (predicted: no measured runs here); its scores match the reference."""
    import finepar
    from finepar import apps
    from finepar.apps import powerloop
    monkeypatch.setattr(powerloop, "GROUP_LOOP_NNZ", 0)  # no work-group loop: a choice
    monkeypatch.setattr(powerloop, "GPU_LOOP_NNZ", 0)
    real_pair.answer_costs = _costs(both=1.0)
    try:
        g = generated_graph(10, 1)
        res, rep = finepar.run("pagerank", g, pair=real_pair, cache=False, calibrate=False)
    finally:
        del real_pair.answer_costs
    ch = rep.tuning["choice"]
    assert ch["winner"] in ("cpu", "gpu") or ch["candidates"]["split"]["roles"] != [
        "cpu", "gpu"]
    assert rep.plan["method"] in ("single", "fine")
    app = apps.get("pagerank")
    params = app.check_params(g, {})
    assert app.check(g, res, app.reference(g, params), params) == ""


@pytest.mark.parametrize("app", ["pagerank", "rwr"])
def test_a_small_default_power_iteration_plans_the_gpu_loop_alone(app, real_pair,
                                                                   monkeypatch):
    """PageRank and RWR on an input of at most GPU_LOOP_NNZ entries: the GPU alone, by
    the app's rule (nothing tuned, no candidate measured, no row operation built ahead),
    every iteration in one launch, the scores right; with ``group_loop='none'`` the run is
    weighed again."""
    import finepar
    from finepar import apps
    from finepar.engine import EngineOptions
    g = shared_graph("USPowerGrid.mtx")
    res, rep = finepar.run(app, g, pair=real_pair, cache=False, calibrate=False)
    assert rep.plan["method"] == "single" and "(on the gpu)" in rep.threshold_source
    assert not (rep.tuning or {}).get("choice")
    assert res.extra["ops"] == f"{app}-group-loop" and rep.timings["launches"]["gpu"] == 1
    a = apps.get(app)
    params = a.check_params(g, {})
    assert a.check(g, res, a.reference(g, a.reference_params(g, params)), params) == ""
    res, rep = finepar.run(app, g, pair=real_pair, cache=False, calibrate=False,
                           options=EngineOptions(group_loop="none"))
    assert res.extra["ops"] != f"{app}-group-loop" and rep.tuning["choice"]


def test_a_gpu_alone_run_by_the_apps_rule_guesses_no_row_operations(real_pair, monkeypatch):
    """``--devices gpu`` on a small input takes the app's one-device rule as the default
    does (PageRank's loop, BFS's one work-group): no row operation's program is guessed
    ahead, so a warm call waits for no build it never uses, nor are the hot columns'
    programs started (the loop keeps the input's numbering); where the rule does not apply
    (``group_loop='none'``) the usual plan's programs are still guessed."""
    import dataclasses
    import finepar
    from finepar import apps
    from finepar.apps import powerloop
    from finepar.engine import EngineOptions, grouplevels
    pair = real_pair
    monkeypatch.setattr(pair.gpu, "info", dataclasses.replace(pair.gpu.info, kind="gpu"))
    monkeypatch.setattr(grouplevels, "group_size", lambda side: 1)
    monkeypatch.setattr(powerloop, "group_size", lambda side, role: 1)
    guessed, started = [], []
    monkeypatch.setattr(type(pair), "guess_build", lambda self, fn, *a: guessed.append(a))
    real_start = type(pair).start_build
    monkeypatch.setattr(type(pair), "start_build",
                        lambda self, fn, *a: started.append(a) or real_start(self, fn, *a))
    g = shared_graph("USPowerGrid.mtx")
    for app, where in (("pagerank", "pagerank-group-loop"), ("bfs", "group")):
        res, rep = finepar.run(app, g, pair=pair, devices="gpu", cache=False,
                               calibrate=False)
        assert "one-device algorithm" in rep.threshold_source
        assert where in (res.extra.get("ops"), res.extra.get("where"))
        a = apps.get(app)
        params = a.check_params(g, {})
        assert a.check(g, res, a.reference(g, a.reference_params(g, params)), params) == ""
    assert guessed == []
    assert not any("skeleton/columns.cl" in a[1] for a in started if len(a) > 1), started
    finepar.run("pagerank", g, pair=pair, devices="gpu", cache=False, calibrate=False,
                options=EngineOptions(group_loop="none"))
    assert guessed


def test_measured_candidates_run_with_the_runs_parameters(real_pair):
    """The measured runs of a default SSSP take the run's own parameters: a signed input
    with ``weights='abs'`` (refused with the default lengths) runs, and its lengths are
    the float32 fixed point over the magnitudes."""
    import finepar
    from finepar import apps
    from finepar.io import from_scipy
    a = sp.random(300, 300, density=0.03, format="csr", random_state=5, dtype=np.float32)
    a.data -= 0.5  # about half the lengths negative
    g = from_scipy(a + a.T)
    res, rep = finepar.run("sssp", g, pair=real_pair, cache=False, calibrate=False,
                           weights="abs", root=0)
    assert rep.tuning["choice"]["by"] == "measured"
    app = apps.get("sssp")
    params = app.check_params(g, {"weights": "abs", "root": 0})
    assert app.check(g, res, app.reference(g, params), params) == ""


def test_one_device_given_runs_the_models_fastest_grouping(pairs):
    """``devices='gpu'`` (or ``cpu``) with ``grouping='auto'`` takes the grouping the
    platform model predicts fastest for every row on that device, not always the length
    groups; a frontier app keeps its own (``pow4``), and a given grouping is kept."""
    import finepar
    from finepar.split.tuner import alone_grouping
    from finepar.workload import Workload
    from pathlib import Path
    model = str(Path(__file__).resolve().parents[1] / "models" / "nvidia-h200-xeon.json")
    g = generated_graph(12, 2)
    pair = pairs["split"]
    for role in ("gpu", "cpu"):
        best, seconds = alone_grouping(Workload("spmv", g), pair, role, model=model)
        assert len(seconds) >= 2 and seconds[best] == min(seconds.values())
        _, rep = finepar.run("spmv", g, pair=pair, devices=role, model=model, cache=False)
        assert rep.plan["grouping"] == best
    assert alone_grouping(Workload("bfs", g), pair, "gpu", model=model) == ("pow4", {})
    _, rep = finepar.run("spmv", g, pair=pair, devices="gpu", model=model, cache=False,
                         grouping="none")
    assert rep.plan["grouping"] == "none"
