"""Teams and work-groups that reduce with sub-group shuffles (``rowop.cl``'s ``SG_SHFL``):
PTX's ``shfl.sync`` on NVIDIA, here the same code with each exchange through local memory
(``EngineOptions(shuffles='local')``), against the apps' independent references."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from conftest import generated_graph, shared_graph
from finepar import api, apps
from finepar.apps.pagerank import reference_pagerank
from finepar.apps.spmv import SpMV, reference_spmv, spmv_error_bound
from finepar.engine import Engine, EngineOptions
from finepar.engine.memory import lowered_programs, rowop_defines, shuffle_mode
from finepar.partition import single_device

LOCAL = EngineOptions(shuffles="local", group_loop="none", walk="none")


def test_the_mode_follows_the_compiler_the_option_and_the_group_size():
    """PTX's shuffles only where NVIDIA's compiler builds, whole sub-groups only; ``local``
    anywhere a group is whole sub-groups; ``none`` never."""
    assert [shuffle_mode(ptx, 256, "auto") for ptx in (True, False)] == [1, 0]
    assert [shuffle_mode(True, wg, "auto") for wg in (32, 64, 16, 48)] == [1, 1, 0, 0]
    assert [shuffle_mode(False, wg, "local") for wg in (64, 8)] == [2, 0]
    assert shuffle_mode(True, 256, "none") == 0
    valued = SimpleNamespace(pattern=False)
    d = rowop_defines(SpMV.ops[0], valued, "team", 128, compact=False, has_slots=False,
                      offset_type="int", ptx=True, LANES=8)
    assert d["SG_SHFL"] == 1 and d["SG_SIZE"] == 32 and "PTX_FENCE" not in d
    d = rowop_defines(SpMV.ops[0], valued, "item", 8, compact=False, has_slots=True,
                      offset_type="int", ptx=True)
    assert "SG_SHFL" not in d and d["PTX_FENCE"] == 1


def test_entries_load_evict_first_only_where_nvidia_builds(monkeypatch):
    """``PTX_LOADS`` (the entries' evict-first loads in inline PTX) only for NVIDIA's
    compiler, and not while a probe turns ``memory.PTX_LOADS`` off; the row operation's
    fragments that gather read their entries through ``COL`` / ``VAL``."""
    from pathlib import Path
    from finepar.engine import memory
    valued = SimpleNamespace(pattern=False)

    def defines(ptx):
        return rowop_defines(SpMV.ops[0], valued, "team", 128, compact=False,
                             has_slots=False, offset_type="int", ptx=ptx, LANES=8)
    assert defines(True)["PTX_LOADS"] == 1 and "PTX_LOADS" not in defines(False)
    monkeypatch.setattr(memory, "PTX_LOADS", False)
    assert "PTX_LOADS" not in defines(True)
    root = Path(__file__).resolve().parents[1] / "opencl" / "apps"
    for app in ("spmv", "pagerank", "hits"):
        terms = [ln for ln in (root / app / "rowop.cl").read_text().splitlines()
                 if ln.startswith("#define TERM(k)")]
        assert terms and all("COL(k)" in t and "indices[" not in t for t in terms)


@pytest.mark.parametrize("mode", ["shared", "split"])
@pytest.mark.parametrize("app_name", apps.names())
def test_every_app_with_shuffles_matches_its_reference(app_name, mode, pairs):
    """Every app, on a Graph500 graph and a real one, split at a threshold in §4.1's length
    groups (work-item, team and work-group mappings) and on the GPU alone in CSR-adaptive's
    row blocks (teams sized to each block, the longest rows reduced by a whole group),
    equals its reference with every reduction of the row operation through shuffles."""
    app = apps.get(app_name)
    for g in (generated_graph(11, 2), shared_graph("soc-Slashdot0902.txt.gz")):
        params = app.reference_params(g, app.check_params(g, {}))
        expect = app.reference(g, params)
        for kw in ({"threshold": 16, "grouping": "pow4"},
                   {"devices": "gpu", "grouping": "adaptive"}):
            res, rep = api.run(app_name, g, pair=pairs[mode], warmup=False, options=LOCAL,
                               **kw, **params)
            problem = app.check(g, res, expect, params)
            assert not problem, f"{g.name} {kw}: {problem}"


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_shuffled_sums_and_cut_rows(pairs, mode, monkeypatch):
    """Rows cut past one block fold inside their launch with teams that shuffle, and
    PageRank's step sums (the L1 change and the dangling mass) cross each work-group's
    sub-groups once: SpMV agrees with scipy, PageRank with its float64 reference, and the
    programs built are the shuffles' (``SG_SHFL=2``)."""
    from finepar.engine import launches
    monkeypatch.setattr(launches, "ADAPTIVE_SPLIT_BLOCKS", 1)
    g = shared_graph("cnr-2000.mtx.gz").transpose()
    eng = Engine(pairs[mode], g, single_device(g.row_lengths(), "gpu", grouping="adaptive"),
                 SpMV.ops[0], options=LOCAL)
    store = eng.stores["gpu"]
    assert store.low.apply_rows.size > 50
    programs = lowered_programs(store.side, store.low, g, SpMV.ops[0], shuffles="local")
    assert {d.get("SG_SHFL") for _, d in programs} == {2}
    x = np.random.default_rng(5).uniform(-1, 1, g.n).astype(np.float32)
    eng.vector("x", x)
    eng.vector("y", np.zeros(g.n, dtype=np.float32))
    for _ in range(3):
        eng.rowop(x="x", y="y", wait=False)
    eng.drain()
    bad = np.flatnonzero(~(np.abs(eng.read("y") - reference_spmv(g, x))
                           <= spmv_error_bound(g, x)))
    assert bad.size == 0, f"rows {bad[:5]} wrong"
    wl = api.Workload("pagerank", g)
    eng = wl.engine(pairs[mode], single_device(wl.matrix.row_lengths(), "gpu",
                                               grouping="adaptive"), LOCAL)
    res = wl.app.solve(eng, g, max_iter=200)
    assert res.converged and np.abs(res.values - reference_pagerank(g)).max() < 1e-5


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_the_last_work_group_folds_the_steps_sums(pairs, mode, monkeypatch):
    """With the shuffles' code and few enough work-groups, the step's last launch of an op
    that asks (PageRank's; not BFS's) folds its sums (no reduce launch): PageRank's steps on the GPU alone, in §4.1's length groups
    (three launches a step) and in CSR-adaptive's blocks, give the same sums, step by step,
    as the reduce launch does, and each fold sets its count back; past
    ``REDUCE_ONE_PASS`` work-groups the reduce launch sums them."""
    from finepar.apps.pagerank import PageRank
    from finepar.engine import memory
    g = shared_graph("wiki-Vote.txt")
    wl = api.Workload("pagerank", g)
    for grouping in ("pow4", "adaptive"):
        plan = single_device(wl.matrix.row_lengths(), "gpu", grouping=grouping)
        sums = {}
        for shuffles in ("local", "none"):
            eng = wl.engine(pairs[mode], plan, EngineOptions(shuffles=shuffles))
            app: PageRank = wl.app
            app.prepare(eng, g)
            app.start(eng, g.n)
            eng.scalars([0.15 / g.n, 0.85, 0.15 / g.n, 0.85 / g.n, 1e-6])
            op = app.step_ops(eng, "compensated")[1]
            ol = eng.stores["gpu"].ops(eng.op(op), eng.fscal["gpu"], eng.stop["gpu"])
            assert ol.fold == (shuffles == "local"), (grouping, shuffles)
            for slot in range(3):
                eng.rowop(op=op, wait=False, slot=slot, **app._args(False, eng))
                app._swap(eng)
            sums[shuffles] = eng.sums("gpu", 0, 3, op=op)
            eng.drain()
            if ol.fold:
                done = eng.read_buffer("gpu", np.empty(1, np.int32),
                                       ol.launches[-1]._values["sums_done"])
                assert done[0] == 0
        np.testing.assert_allclose(sums["local"], sums["none"], rtol=1e-5, atol=1e-7)
    bfs = api.Workload("bfs", g)  # an op that does not ask keeps its reduce launch
    eng = bfs.engine(pairs[mode], plan, EngineOptions(shuffles="local"))
    bfs.app.solve(eng, g, root=0)
    assert not any(ol.fold for st in eng.stores.values() for ol in st._ops.values())
    monkeypatch.setattr(memory, "REDUCE_ONE_PASS", 4)
    monkeypatch.setattr(memory, "REDUCE_FAN_IN", 4)
    eng = wl.engine(pairs[mode], plan, EngineOptions(shuffles="local"))
    res = wl.app.solve(eng, g, max_iter=200)
    assert not any(ol.fold for st in eng.stores.values() for ol in st._ops.values())
    assert res.converged and np.abs(res.values - reference_pagerank(g)).max() < 1e-5
