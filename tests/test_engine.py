"""The engine's seams: launches named once, the lowering of a share to segments and
launches, every mapping and executor checked against a float64 reference, 64-bit offsets."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import generated_graph, shared_graph
from finepar import api, workload
from finepar.engine import Engine, EngineOptions, RowOp
from finepar.engine.launches import (REDUCE, REDUCE_STAGE, ROWOP, cut_rows,
                                     pack_blocks)
from finepar.partition import dynamic, fine_grained, single_device
from finepar.device import cl
from finepar.apps.pagerank import reference_pagerank
from finepar.apps.spmv import reference_spmv, spmv_error_bound

SPMV = RowOp("spmv", "apps/spmv/rowop.cl", has_data=True)


def spmv_ok(g, eng, x) -> None:
    eng.vector("x", x)
    eng.vector("y", np.full(g.n, np.nan, dtype=np.float32))  # every row must be written
    eng.rowop(x="x", y="y")
    y = eng.read("y")
    bad = np.flatnonzero(~(np.abs(y - reference_spmv(g, x)) <= spmv_error_bound(g, x)))
    assert bad.size == 0, f"rows {bad[:5]} wrong"


@pytest.mark.parametrize("defines", [
    {"MAPPING": 0}, {"MAPPING": 3, "HAS_SLOTS": 1}, {"MAPPING": 3, "QUEUE": 1},
    {"MAPPING": 5}, {"MAPPING": 1, "LANES": 8, "HAS_SLOTS": 1, "FOLD_SUMS": 1},
    {"MAPPING": 3, "HAS_SLOTS": 1, "QUEUE": 1, "FOLD_SUMS": 1}])
def test_signatures_name_the_kernels_arguments(pairs, defines):
    """The Python signatures list the OpenCL kernels' arguments, in order (read from the
    compiled kernels with -cl-kernel-arg-info); ``rowop``'s leaves out what each option
    the program is built without drops (the slots', ``blk_ptr``, ``queue``, the fold's),
    so the whole list is the program with every option."""
    from finepar.engine.launches import rowop_signature
    mod = cl()
    pair = pairs["split"]
    src = "\n".join(__import__("finepar.device", fromlist=["kernel_source"]).kernel_source(n)
                    for n in ("apps/pagerank/rowop.cl", "skeleton/rowop.cl"))
    options = ["-cl-kernel-arg-info", "-DWG=64", *(f"-D{k}={v}" for k, v in defines.items())]
    prg = mod.Program(pair.cpu.context, src).build(options=options)
    sig = rowop_signature(defines)
    for s in (sig, REDUCE, REDUCE_STAGE):
        k = mod.Kernel(prg, s.kernel)
        names = tuple(k.get_arg_info(i, mod.kernel_arg_info.NAME) for i in range(k.num_args))
        assert names == s.names(), s.kernel
    assert set(sig.names()) | sig.dropped == set(ROWOP.names())
    assert not set(sig.names()) & sig.dropped
    full = {"MAPPING": 5, "HAS_SLOTS": 1, "FOLD_SUMS": 1}
    assert rowop_signature(full).names() == ROWOP.names()


def test_a_launch_ignores_the_arguments_its_program_leaves_out(pairs):
    """Binding an argument the program was built without is a no-op (the store binds every
    name); a name no program has is refused. A SpMV launch on a pattern-free plan without
    slots, queue or fold takes 11 fewer arguments than the whole list."""
    from finepar.engine.launches import rowop_signature
    g = generated_graph(9, 2)
    wl = api.Workload("spmv", g)
    eng = wl.engine(pairs["split"], single_device(wl.matrix.row_lengths(), "gpu"),
                    EngineOptions(group_loop="none"))
    L = eng.stores["gpu"].ops(eng.op(), eng.fscal["gpu"], eng.stop["gpu"]).launches[0]
    assert L.kernel.num_args == len(L.signature.args)
    if not {"seg_slot", "queue", "sums_out", "blk_ptr"} - L.signature.dropped:
        assert L.kernel.num_args == len(ROWOP.args) - 11
    L.bind(**{n: eng.dummy("gpu") for n in L.signature.dropped})  # ignored
    with pytest.raises(KeyError, match="no argument 'nonsense'"):
        L.bind(nonsense=1)
    assert rowop_signature({"MAPPING": 0}).dropped >= {"queue", "blk_ptr", "sums_done"}


def test_cut_rows_and_blocks():
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 50, 1000)
    lengths[[3, 500, 999]] = [5000, 1234, 64]
    rows = np.arange(1000)
    seg_row, seg_len, slot, apply_rows, slot_ptr = cut_rows(rows, lengths, 100)
    assert seg_len.max() <= 100
    np.testing.assert_array_equal(np.bincount(seg_row, weights=seg_len, minlength=1000), lengths)
    np.testing.assert_array_equal(apply_rows, [3, 500])
    assert slot_ptr.tolist() == [0, 50, 63]
    assert sorted(slot[slot >= 0]) == list(range(63))
    blk = pack_blocks(seg_len, 256, 64, bounds=np.array([17, 400]))
    assert blk[0] == 0 and blk[-1] == seg_len.size and np.all(np.diff(blk) > 0)
    assert {17, 400} <= set(blk.tolist())
    for a, b in zip(blk[:-1], blk[1:]):
        assert b - a <= 64
        assert seg_len[a:b].sum() <= 256 or b - a == 1  # fits local memory, or one long segment


@pytest.mark.parametrize("mode", ["shared", "split"])
@pytest.mark.parametrize("offsets", ["auto", "int64"])
def test_every_lowering_and_mapping(pairs, mode, offsets):
    """pow4 groups (item, team, group mappings), one launch, CSR-adaptive blocks with cut
    rows, on a split and on one device, with 32- and 64-bit offsets."""
    g = shared_graph("cnr-2000.mtx.gz").transpose()  # in-degrees up to 18,235: rows get cut
    x = np.random.default_rng(1).uniform(-1, 1, g.n).astype(np.float32)
    L = g.row_lengths()
    for plan in (fine_grained(L, 64, grouping="pow4"), fine_grained(L, 10**6, grouping="pow4"),
                 fine_grained(L, 16, grouping="none"), fine_grained(L, 300, grouping="adaptive"),
                 single_device(L, "gpu", grouping="adaptive")):
        eng = Engine(pairs[mode], g, plan, SPMV, options=EngineOptions(offsets=offsets))
        if offsets == "int64":
            assert all(st.offset_type == "long" for st in eng.stores.values())
        spmv_ok(g, eng, x)
    gpu = eng.describe()["gpu"]
    assert gpu["cut_rows"] > 0 and gpu["blocks"] > 0  # the adaptive share cut its long rows


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_cut_rows_fold_inside_their_launch(pairs, mode, monkeypatch):
    """A cut row's last segment to finish folds its slots and runs its epilogue: one launch
    a step, steps enqueued back to back (each row's count set back to zero by its fold)
    agree with scipy, and so does PageRank, whose epilogue adds to the step's sums."""
    from finepar.engine import launches
    monkeypatch.setattr(launches, "ADAPTIVE_SPLIT_BLOCKS", 1)  # cut past one block
    g = shared_graph("cnr-2000.mtx.gz").transpose()  # in-degrees up to 18,235
    L = g.row_lengths()
    eng = Engine(pairs[mode], g, single_device(L, "gpu", grouping="adaptive"), SPMV)
    store = eng.stores["gpu"]
    pieces = np.diff(store.low.slot_ptr)
    assert store.low.apply_rows.size > 50 and pieces.max() >= 10
    assert eng.describe()["gpu"]["launches"] == 1
    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.uniform(-1, 1, g.n).astype(np.float32)
        eng.vector("x", x)
        eng.vector("y", np.full(g.n, np.nan, dtype=np.float32))
        for _ in range(4):
            eng.rowop(x="x", y="y", wait=False)
        eng.drain()
        y = eng.read("y")
        bad = np.flatnonzero(~(np.abs(y - reference_spmv(g, x)) <= spmv_error_bound(g, x)))
        assert bad.size == 0, f"rows {bad[:5]} wrong"
        done = eng.read_buffer("gpu", np.empty(pieces.size, np.int32), store.slot_done)
        assert not done.any()  # every count set back for the next step
    wl = api.Workload("pagerank", g)
    eng = wl.engine(pairs[mode], single_device(wl.matrix.row_lengths(), "gpu",
                                               grouping="adaptive"))
    assert eng.stores["gpu"].low.apply_rows.size > 0
    res = wl.app.solve(eng, g, max_iter=200)
    assert res.converged and np.abs(res.values - reference_pagerank(g)).max() < 1e-5


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_the_stream_work_group_follows_the_shares_entries(mode):
    """A GPU share of at most ``stream_small_nnz`` entries is packed and launched in
    work-groups of ``wg_stream_small`` (128), a larger one in ``wg_stream``'s (256): each
    block holds at most that many segments, the program is built for it, and both agree
    with scipy (the shuffles' local form too)."""
    from finepar.device import make_pair
    from finepar.engine.memory import lowered_programs
    g = generated_graph(12, 3)
    x = np.random.default_rng(4).uniform(-1, 1, g.n).astype(np.float32)
    for small_nnz, wg in ((g.nnz, 128), (g.nnz - 1, 256)):
        pair = make_pair(memory=mode, gpu="emulate", keep=False,
                         config={"launch": {"gpu": {"stream_small_nnz": small_nnz}}})
        assert pair.gpu.launch.stream_wg(g.nnz) == wg
        for shuffles in ("auto", "local"):
            eng = Engine(pair, g, single_device(g.row_lengths(), "gpu", grouping="adaptive"),
                         SPMV, options=EngineOptions(shuffles=shuffles))
            low = eng.stores["gpu"].low
            assert [spec.wg for spec in low.launches] == [wg]
            assert np.diff(low.blk_ptr).max() <= wg
            assert {d["WG"] for _, d in lowered_programs(pair.gpu, low, g, SPMV)
                    if d["MAPPING"] == 3} == {wg}
            spmv_ok(g, eng, x)


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_dynamic_baseline_executors(pairs, mode):
    """Chunks from a device-side counter (shared memory) or handed out by the host (split)."""
    g = generated_graph(12, 3)
    x = np.random.default_rng(2).uniform(-1, 1, g.n).astype(np.float32)
    eng = Engine(pairs[mode], g, dynamic(g.row_lengths(), 16), SPMV)
    assert eng.executor.name == ("dynamic-device" if mode == "shared" else "dynamic-host")
    for _ in range(3):
        spmv_ok(g, eng, x)


def test_sums_of_device_steps(pairs):
    """Steps enqueued without waiting still reduce their sums on the device, into slots."""
    g = shared_graph("wiki-Vote.txt")
    wl = api.Workload("pagerank", g)
    eng = wl.engine(pairs["split"], single_device(wl.matrix.row_lengths(), "gpu"))
    res = wl.app.solve(eng, g, max_iter=200)
    assert res.extra["device_steps"] and res.converged
    l1 = res.extra["l1_change"]
    assert len(l1) == res.iterations and l1[-1] < 1e-6 <= l1[-2]
    assert abs(float(res.values.astype(np.float64).sum()) - 1) < 1e-5


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_sums_of_many_groups_take_two_passes(pairs, mode, monkeypatch):
    """A step of more work-groups than one group of the last pass reads gets a first pass of
    many groups; PageRank's sums (its dangling mass and L1 change) still match numpy."""
    from finepar.engine import memory
    monkeypatch.setattr(memory, "REDUCE_FAN_IN", 8)
    monkeypatch.setattr(memory, "REDUCE_ONE_PASS", 8)
    g = shared_graph("wiki-Vote.txt")
    wl = api.Workload("pagerank", g)
    eng = wl.engine(pairs[mode], fine_grained(wl.matrix.row_lengths(), 64, grouping="adaptive"))
    res = wl.app.solve(eng, g, max_iter=200)
    staged = [ol for st in eng.stores.values() for ol in st._ops.values()
              if ol.reduce_stage is not None]
    assert staged, "no share had enough work-groups for two passes"
    ref = reference_pagerank(g)
    assert res.converged and np.abs(res.values - ref).max() < 1e-5
    assert abs(float(res.values.astype(np.float64).sum()) - 1) < 1e-5


def test_sums_of_a_mid_size_step_take_one_pass(pairs, monkeypatch):
    """Past a first pass's fan-in but up to ``REDUCE_ONE_PASS`` work-groups a step, the
    last pass alone sums the partials (one launch after the row operation's, not two);
    past it, two passes. PageRank matches either way."""
    from finepar.engine import memory
    g = generated_graph(14)
    wl = api.Workload("pagerank", g)
    plan = single_device(wl.matrix.row_lengths(), "gpu", grouping="pow4")
    monkeypatch.setattr(memory, "REDUCE_FAN_IN", 64)
    for one_pass, staged in ((1024, False), (512, True)):
        monkeypatch.setattr(memory, "REDUCE_ONE_PASS", one_pass)
        eng = wl.engine(pairs["split"], plan)
        res = wl.app.solve(eng, g, max_iter=200)
        ols = [ol for st in eng.stores.values() for ol in st._ops.values() if ol.reduce]
        assert ols and all(512 < ol.n_partials <= 1024 for ol in ols)
        assert all((ol.reduce_stage is not None) == staged for ol in ols)
        assert res.converged and np.abs(res.values - reference_pagerank(g)).max() < 1e-5
    bfs = api.Workload("bfs", g)  # an op that does not fold its sums keeps two passes
    eng = bfs.engine(pairs["split"], single_device(bfs.matrix.row_lengths(), "gpu",
                                                   grouping="pow4"))
    bfs.app.solve(eng, g, root=0)
    ols = [ol for st in eng.stores.values() for ol in st._ops.values() if ol.reduce]
    assert ols and all(ol.reduce_stage is not None for ol in ols if ol.n_partials > 64)


def test_long_rows_sum_accurately(pairs):
    """One work-item per row over a 60,000-entry row: compensated sums keep PageRank's total
    at 1 (plain float32 summation drifted it by 2e-5)."""
    import scipy.sparse as sp
    n = 60_001
    src = np.arange(1, n)
    a = sp.csr_array((np.ones(n - 1), (src, np.zeros(n - 1, dtype=np.int64))), shape=(n, n))
    g = workload.as_graph(a)
    pr, rep = api.pagerank(g, pair=pairs["split"], devices="gpu", grouping="none", warmup=False)
    assert rep.plan["lowering"]["gpu"]["by_mapping"] == {"item": 1}
    assert abs(float(pr.astype(np.float64).sum()) - 1.0) < 2e-6
    assert np.abs(pr.astype(np.float64) - reference_pagerank(g)).sum() < 1e-5


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_ell_share_and_its_fallback(pairs, mode):
    """SpMV-ELL: a GPU share of short, regular rows in ELL (column-major, padded); a share
    that padding would blow up runs CSR-adaptive blocks instead, and says so."""
    x = np.random.default_rng(5).uniform(-1, 1, 200_000).astype(np.float32)
    road = shared_graph("luxembourg.mtx")  # degrees 1..6
    eng = Engine(pairs[mode], road, fine_grained(road.row_lengths(), 4, grouping="ell"), SPMV)
    assert eng.describe()["gpu"]["by_mapping"] == {"ell": 1}
    assert eng.describe()["cpu"]["grouping"] in ("pow4", "none")
    spmv_ok(road, eng, x[:road.n])
    web = shared_graph("wiki-Vote.txt")  # hubs: ELL would pad 893 slots per row
    eng = Engine(pairs[mode], web, single_device(web.row_lengths(), "gpu", grouping="ell"), SPMV)
    assert eng.describe()["gpu"]["grouping"] == "adaptive"
    spmv_ok(web, eng, x[:web.n])


def test_tuner_predicts_ell_only_where_it_is_built():
    from finepar.split import tuner
    from finepar.features import RowStats
    road = RowStats(shared_graph("luxembourg.mtx").row_lengths())
    web = RowStats(shared_graph("wiki-Vote.txt").row_lengths())
    assert tuner.Predictor(road, 2, throughput={"cpu": 1, "gpu": 1},
                           grouping="ell").lowering(6, "gpu") == "ell"
    p = tuner.Predictor(web, 2, throughput={"cpu": 1, "gpu": 1}, grouping="ell")
    assert p.lowering(int(web.max_length()), "gpu") == "adaptive"
    assert p.lowering(4, "cpu") == "pow4"


def test_likely_programs_are_those_a_pow4_gpu_share_builds():
    """The row-operation programs started before planning (``likely_programs``, as a real
    GPU gets them) include every one a pow4 GPU share then builds, options and all; an
    emulated pair speculates nothing."""
    from types import SimpleNamespace
    from finepar.engine.memory import likely_programs
    from finepar.device import build_options
    g = generated_graph(12)
    wl = api.Workload("pagerank", g)
    from finepar.device import DevicePair, select_pair
    pair = DevicePair(select_pair(gpu="emulate"), "shared")  # its own log of builds (not the
    # pair the process keeps, which earlier tests built on)
    assert likely_programs(pair, wl.matrix, wl.app.ops) == []
    plan = single_device(wl.matrix.row_lengths(), "gpu", grouping="pow4")
    wl.engine(pair, plan)
    pair.settle()
    built = {(tuple(b["sources"]), tuple(b["options"])) for b in pair.build_log
             if "skeleton/rowop.cl" in b["sources"]}
    assert {gr.mapping for gr in plan.shares["gpu"].groups} >= {"item", "team"}
    info = pair.gpu.info
    gpu = SimpleNamespace(info=SimpleNamespace(kind="gpu", platform=info.platform,
                                               vendor=info.vendor, max_work_group_size=(
                                                   info.max_work_group_size)),
                          launch=pair.gpu.launch)
    likely = {(tuple(src), build_options(d)) for role, src, d in likely_programs(
        SimpleNamespace(emulated=False, gpu=gpu), wl.matrix, wl.app.ops)}
    assert len(built) >= 4 and built <= likely, built - likely


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_groups_of_one_mapping_share_a_launch_and_empty_rows_make_none(pairs, mode):
    """Adjacent length groups with one mapping and team size are one launch; the group of
    rows without entries is a launch of its own, which BFS's pull (``empty_rows_idle``) does
    not make, SpMV's does (its empty rows write y = 0); both answers stay exact."""
    from finepar.apps.bfs import bfs_levels_fast
    g = generated_graph(12, 4)
    wl = api.Workload("bfs", g)
    lengths = wl.matrix.row_lengths()
    assert np.count_nonzero(lengths == 0) > 0  # isolated vertices: a group of empty rows
    plan = single_device(lengths, "gpu", grouping="pow4")
    groups = plan.shares["gpu"].groups
    eng = wl.engine(pairs[mode], plan)
    specs = eng.stores["gpu"].low.launches
    assert len(specs) < len(groups)  # some groups merged
    for a, b in zip(specs, specs[1:]):  # a merge everywhere it may be made
        assert (a.mapping, a.lanes) != (b.mapping, b.lanes) or not a.nnz or not b.nnz
    assert sum(s.hi - s.lo for s in specs) == sum(len(gr) for gr in groups)
    empty = [s for s in specs if s.nnz == 0]
    assert len(empty) == 1
    op = eng.op("bfs")
    ol = eng.stores["gpu"].ops(op, eng.fscal["gpu"], eng.stop["gpu"])
    assert len(ol.launches) == len(specs) - 1
    root = int(np.argmax(lengths))
    res, _ = wl.run(pair=pairs[mode], devices="gpu", grouping="pow4", root=root,
                    direction="bottom-up", warmup=False)
    np.testing.assert_array_equal(res.values, bfs_levels_fast(g, root))
    spmv = Engine(pairs[mode], g, plan, SPMV)
    assert len(spmv.stores["gpu"].ops(spmv.op("spmv"), spmv.fscal["gpu"],
                                      spmv.stop["gpu"]).launches) == len(specs)
    spmv_ok(g, spmv, np.random.default_rng(2).uniform(-1, 1, g.n).astype(np.float32))


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_an_op_caps_its_teams_lanes(pairs, mode):
    """``RowOp.max_lanes`` narrows the op's team launches (more rows a work-group), its
    programs built for those lanes, and the answer stays the same."""
    from dataclasses import replace
    from finepar.apps.bfs import bfs_levels_fast
    from finepar.engine.memory import geometry, lowered_programs
    g = generated_graph(12, 4)
    wl = api.Workload("bfs", g)
    plan = single_device(wl.matrix.row_lengths(), "gpu", grouping="pow4")
    base = wl.app.ops
    try:
        wl.app.ops = tuple(replace(o, max_lanes=4) for o in base)
        eng = wl.engine(pairs[mode], plan)
        store, op = eng.stores["gpu"], eng.op("bfs")
        teams = [s for s in store.low.launches if s.mapping == "team"]
        assert any(s.lanes > 4 for s in teams)  # the plan's own teams are wider
        for s in teams:
            assert geometry(store.side, s, s.hi - s.lo, op.max_lanes)[2]["LANES"] <= 4
        programs = lowered_programs(store.side, store.low, eng.matrix, op)
        lanes = {d.get("LANES") for _, d in programs if "LANES" in d}
        assert lanes and max(lanes) <= 4
        assert any(s.mapping == "group" for s in store.low.launches)  # rows a group each,
        assert all(d["MAPPING"] != 2 for _, d in programs)  # run as narrow teams
        # the capped length groups run alike: adjacent ones share one launch
        ol = store.ops(op, eng.fscal["gpu"], eng.stop["gpu"])
        runs_as_team = [s for s in store.low.launches if s.nnz and s.mapping != "item"]
        assert len(runs_as_team) > 1
        assert sum("team rows" in L.label for L in ol.launches) == 1
        assert sum(L.nnz for L in ol.launches) == wl.matrix.nnz
        root = int(np.argmax(wl.matrix.row_lengths()))
        res, _ = wl.run(pair=pairs[mode], devices="gpu", grouping="pow4", root=root,
                        direction="bottom-up", warmup=False)
        np.testing.assert_array_equal(res.values, bfs_levels_fast(g, root))
    finally:
        wl.app.ops = base


@pytest.mark.parametrize("lanes", [None, 4])
@pytest.mark.parametrize("mode", ["shared", "split"])
def test_a_team_stops_at_its_rows_first_hit(pairs, mode, lanes):
    """A bottom-up team stops together at a row's first frontier in-neighbour
    (skeleton/rowop.cl's TEAM_SCAN): every parent is the smallest in-neighbour one level up,
    as a sequential scan finds it, in every team size and grouping."""
    from dataclasses import replace
    from finepar.apps.bfs import bfs_levels_fast
    g = generated_graph(12, 4)
    wl = api.Workload("bfs", g)
    root = int(np.argmax(wl.matrix.row_lengths()))
    ref = bfs_levels_fast(g, root)
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))  # edge (rows[k], indices[k])
    tree = ref[g.indices] == ref[rows] + 1
    want = np.full(g.n, np.iinfo(np.int64).max)
    np.minimum.at(want, g.indices[tree], rows[tree])
    want[root] = root
    want[ref < 0] = -1
    base = wl.app.ops
    try:
        wl.app.ops = tuple(replace(o, max_lanes=lanes) for o in base)
        for grouping in ("pow4", "none"):
            res, _ = wl.run(pair=pairs[mode], devices="gpu", grouping=grouping, root=root,
                            direction="bottom-up", warmup=False)
            np.testing.assert_array_equal(res.values, ref)
            np.testing.assert_array_equal(res.extra["parent"], want)
    finally:
        wl.app.ops = base


def test_max_lanes_is_a_power_of_two():
    for bad in (0, 1, 3, 12, -4):
        with pytest.raises(ValueError, match="power of two"):
            RowOp("bfs", "apps/bfs/rowop.cl", max_lanes=bad)
    assert RowOp("bfs", "apps/bfs/rowop.cl", max_lanes=8).max_lanes == 8


@pytest.mark.parametrize("app", ["bfs", "sssp", "cc", "coloring", "pagerank"])
@pytest.mark.parametrize("devices", ["cpu", "gpu", "auto"])
def test_an_engine_goes_when_its_run_returns(pairs, monkeypatch, app, devices):
    """No reference cycle keeps a run's engine (and its device buffers) alive after
    ``finepar.run`` returns: the app's helpers in ``engine.state`` (frontier queues,
    walks, Afforest) hold it weakly (:class:`finepar.engine.backref.EngineRef`), so it
    goes by reference counting, not at a cycle collection inside a later run's steps."""
    import gc
    import weakref
    made = []
    init = Engine.__init__

    def tracked(self, *args, **kw):
        init(self, *args, **kw)
        made.append(weakref.ref(self))
    monkeypatch.setattr(Engine, "__init__", tracked)
    g = shared_graph("ca-GrQc.mtx")
    gc.collect()
    gc.disable()
    try:
        result, _ = api.run(app, g, pair=pairs["split"], devices=devices, cache=False)
        assert made, "the run made no engine"
        assert result.values is not None
        del result
        alive = [ref for ref in made if ref() is not None]
        assert not alive, f"{len(alive)} of {len(made)} engines outlived the run"
    finally:
        gc.enable()


def test_a_helper_after_its_engine_says_so():
    """A helper's weak back-reference read after its engine is gone raises, naming the
    helper (no silent None)."""
    from finepar.engine.backref import EngineRef

    class Helper:
        engine = EngineRef()

    class Owner:
        pass
    h, owner = Helper(), Owner()
    h.engine = owner
    assert h.engine is owner
    del owner
    with pytest.raises(ReferenceError, match="Helper: its engine is gone"):
        h.engine


def test_bind_changed_sets_only_changed_arguments():
    """``bind_changed`` sets an argument only where it changed: a buffer by identity, a
    NumPy scalar by type and value (a new object of the same value is skipped, one of
    another type or value is set), and a kernel object with other arguments starts
    afresh; then a real kernel on PoCL reads what it was given."""
    from finepar.engine.binding import bind_changed

    class Recorder:
        def __init__(self):
            self.sets = []

        def set_arg(self, i, a):
            self.sets.append(i)

    k, buf, other = Recorder(), object(), object()
    bind_changed(k, (np.int32(3), buf))
    assert k.sets == [0, 1]
    bind_changed(k, (np.int32(3), buf))  # equal scalar (a new object), same buffer
    assert k.sets == [0, 1]
    bind_changed(k, (np.int64(3), other))  # another type, another buffer
    assert k.sets == [0, 1, 0, 1]
    bind_changed(k, (np.int64(4), other))
    assert k.sets == [0, 1, 0, 1, 0]
    bind_changed(k, (np.int64(4), other, np.int32(0)))  # another arity: every one set
    assert k.sets == [0, 1, 0, 1, 0, 0, 1, 2]

    from finepar.api import make_pair
    from finepar.device import alloc, cl
    pair = make_pair()
    side = pair.side("gpu")
    prg = cl().Program(side.context, "__kernel void put(const int v, __global int *out)"
                                     "{ out[get_global_id(0)] = v; }").build()
    kern, out = prg.put, alloc(side, nbytes=16)
    got = np.zeros(4, np.int32)
    for v in (5, 5, 7):
        bind_changed(kern, (np.int32(v), out))
        cl().enqueue_nd_range_kernel(side.queue, kern, (4,), None)
        cl().enqueue_copy(side.queue, got, out)
        assert (got == v).all()


def test_scalar_arguments_take_the_buffer_path(monkeypatch):
    """``set_arg`` gives a NumPy scalar's bytes through the kernel's buffer path where it
    has one (anything else, a kernel without it, or ``FAST_SCALARS`` off: through
    ``set_arg``); ``call`` sets every argument so: on PoCL one kernel object reads an int, a
    float, a long and a buffer as given, in launches that change only the scalars, and a
    call short of an argument is refused before any is set."""
    from finepar.engine import binding

    class Recorder:
        def __init__(self):
            self.sets, self.bufs = [], []

        def set_arg(self, i, a):
            self.sets.append(i)

        def _set_arg_buf(self, i, a):
            self.bufs.append(i)

    class Plain:  # no buffer path: every argument through set_arg
        def __init__(self):
            self.sets = []

        def set_arg(self, i, a):
            self.sets.append(i)

    k, plain = Recorder(), Plain()
    binding.set_arg(k, 0, np.int32(1))
    binding.set_arg(k, 1, object())
    binding.set_arg(k, 2, np.float32(2.0))
    assert (k.bufs, k.sets) == ([0, 2], [1])
    binding.set_arg(plain, 0, np.int32(1))
    assert plain.sets == [0]
    monkeypatch.setattr(binding, "FAST_SCALARS", False)
    binding.set_arg(k, 3, np.int32(1))
    assert (k.bufs, k.sets) == ([0, 2], [1, 3])
    monkeypatch.setattr(binding, "FAST_SCALARS", True)

    from finepar.api import make_pair
    from finepar.device import alloc, cl
    side = make_pair().side("gpu")
    prg = cl().Program(side.context, "__kernel void put(const int a, const float b, "
                                     "const long c, __global float *out)"
                                     "{ out[get_global_id(0)] = a + b + (float)c; }").build()
    put = cl().Kernel(prg, "put")  # one kernel object: only its scalars change
    out, got = alloc(side, nbytes=16), np.zeros(4, np.float32)
    for a, b, c in ((1, 0.5, 2), (3, 0.25, 2), (3, 0.25, -7)):
        binding.call(put, side.queue, (4,), None, np.int32(a), np.float32(b),
                      np.int64(c), out)
        cl().enqueue_copy(side.queue, got, out)
        assert (got == np.float32(a + b + c)).all()
    with pytest.raises(TypeError, match="takes 4 arguments, 3 given"):
        binding.call(put, side.queue, (4,), None, np.int32(9), np.float32(0.0), out)
    binding.call(put, side.queue, (4,), None, np.int32(0), np.float32(0.0), np.int64(0), out)
    cl().enqueue_copy(side.queue, got, out)
    assert (got == 0).all()  # the refused call set nothing


@pytest.mark.parametrize("app", ["sssp", "bfs"])
def test_device_seconds_stay_within_the_runs_wall_time(app):
    """A step the host waits for is recorded after the steps enqueued before it without a
    wait (``Engine.add_record``): their span over the device ends where its launches
    begin, so a run's device seconds (the steps' spans, summed) stay within its wall time.
    Before, SSSP's frontier batches took in the waited steps between them too: 48.9 ms of
    device time in a run of 30.8 (Graph500 scale 16, the emulated GPU role)."""
    g = generated_graph(14)
    wl = api.Workload(app, g)
    for _ in range(2):
        _, rep = wl.run(devices="gpu", options=EngineOptions(profile="batch"))
        t = rep.timings
        assert t["steps"] > 1 and t["profile"] == "batch"
        assert 0 < sum(t["kernel"].values()) <= 1.05 * t["run"] + 1e-4, t


@pytest.mark.parametrize("app", ["spmv", "bfs", "pagerank"])
def test_a_run_on_one_device_enqueues_on_plain_queues(app, pairs):
    """``EngineOptions.profile`` ``auto``: an engine on the GPU alone with the static
    executor enqueues the GPU's commands on its plain queue (no profiling: NVIDIA's enqueue
    is cheaper there) and reports no device times; its answers match the reference as the
    profiling queue's do. The CPU alone, two devices, or ``profile='batch'`` keep the
    profiling queues and positive kernel times."""
    from finepar import apps
    g = generated_graph(10, 3)
    a = apps.get(app)
    params = a.check_params(g, {})
    ref = a.reference(g, a.reference_params(g, params))
    for mode, pair in pairs.items():
        for devices, profile, timed in (("gpu", "auto", False), ("cpu", "auto", True),
                                        ("gpu", "batch", True), ("both", "auto", True)):
            opts = EngineOptions(profile=profile, group_loop="none")
            res, rep = api.run(app, g, pair=pair, devices=devices, options=opts,
                               cache=False, calibrate=False, threshold=4 if devices == "both"
                               else None)
            assert a.check(g, res, ref, params) == "", (mode, devices, profile)
            t = rep.timings
            assert t["profile"] == ("batch" if timed else "none"), (mode, devices, profile)
            assert (sum(t["kernel"].values()) > 0) == timed, (mode, devices, t)
            line = "kernels not timed" in rep.text()
            assert line != timed


def test_plain_queues_are_the_engines_own(pairs):
    """The plain queues' engine sees the GPU side with its own queue on the same context and
    device (made once a pair, sharing the side's staging chunks), and the CPU side and
    everything else as the pair's, what a run sets on it included (the walk's measured
    costs); a wrong profile name, or ``none`` (the engine's own resolution), is refused
    before any work."""
    from finepar.device import PlainQueues
    from finepar.errors import UsageError
    pair = pairs["split"]
    g = generated_graph(9, 1)
    wl = api.Workload("spmv", g)
    eng = wl.engine(pair, single_device(wl.matrix.row_lengths(), "gpu"))
    assert eng.profile == "none" and isinstance(eng.pair, PlainQueues)
    side = eng.pair.side("gpu")
    assert side.queue is not pair.gpu.queue and side.queue is pair.plain_side("gpu").queue
    assert side.context is pair.gpu.context and side.info is pair.gpu.info
    assert eng.pair.shared == pair.shared and eng.pair.describe() == pair.describe()
    prof = cl().command_queue_properties.PROFILING_ENABLE
    assert not side.queue.properties & prof and pair.gpu.queue.properties & prof
    assert eng.pair.side("cpu") is pair.cpu
    assert side.__dict__["_stage_box"] is pair.gpu.__dict__["_stage_box"]
    before = pair.__dict__.get("walk_edge_seconds")
    eng.pair.walk_edge_seconds = {"levels": 1e-9}
    assert pair.walk_edge_seconds == {"levels": 1e-9} and "walk_edge_seconds" not in vars(
        eng.pair)
    pair.walk_edge_seconds = before if before is not None else {}
    for bad in ("often", "none"):
        with pytest.raises(UsageError, match=f"unknown profile '{bad}'"):
            wl.engine(pair, single_device(wl.matrix.row_lengths(), "gpu"),
                      EngineOptions(profile=bad))
