"""PageRank's and RWR's row operations in every variant: the contributions kept in a device's
renumbered columns (hot columns, the epilogue writing them there) or in the input's order,
Kahan-compensated or plain sums; each against the float64 reference, in both memory modes,
on one device and split across thresholds (the halo moved in each side's numbering)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import generated_graph, shared_graph
from finepar import api
from finepar.apps.pagerank import reference_pagerank
from finepar.apps.rwr import reference_rwr
from finepar.engine import Engine, EngineOptions
from finepar.partition import dynamic

SPLITS = [pytest.param({"devices": "gpu", "grouping": "adaptive"}, id="gpu-adaptive"),
          pytest.param({"devices": "gpu", "grouping": "pow4"}, id="gpu-pow4"),
          pytest.param({"threshold": 16, "grouping": "pow4"}, id="split16-pow4"),
          pytest.param({"threshold": 60, "grouping": "adaptive"}, id="split60-adaptive"),
          pytest.param({"threshold": 300, "grouping": "none"}, id="split300-none")]


def _run(app, g, pair, columns, sums, group_loop="none", **kw):
    """A run of the row operations (``group_loop='none'``), or as ``group_loop`` says."""
    return api.run(app, g, pair=pair, cache=False, warmup=False,
                   options=EngineOptions(columns=columns, group_loop=group_loop), sums=sums,
                   **kw)


@pytest.mark.parametrize("memory", ["split", "shared"])
@pytest.mark.parametrize("where", SPLITS)
@pytest.mark.parametrize("sums", ["compensated", "plain"])
def test_pagerank_in_renumbered_columns_is_the_same_answer(pairs, memory, where, sums):
    g = generated_graph(12)
    ref = reference_pagerank(g)
    plain, rep0 = _run("pagerank", g, pairs[memory], "none", sums, **where)
    hot, rep = _run("pagerank", g, pairs[memory], "hot", sums, **where)
    applied = {r: c["applied"] for r, c in rep.plan["columns"].items()}
    if memory == "split":  # every side's share renumbered, the halo moved in its numbering
        assert all(applied.values()) and set(applied) == set(rep0.plan["columns"]), applied
        assert "-hot" in hot.extra["ops"] and "-hot" not in plain.extra["ops"]
    else:  # one memory for both devices: nothing is renumbered
        assert not any(applied.values()) and "-hot" not in hot.extra["ops"]
    assert ("-plain" in hot.extra["ops"]) == (sums == "plain")
    # each row sums its entries in their stored order: the same contributions, bit for bit
    assert hot.iterations == plain.iterations
    assert np.array_equal(hot.values, plain.values)
    assert np.abs(hot.values.astype(np.float64) - ref).sum() < 1e-4
    assert hot.values.astype(np.float64).sum() == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("where", [SPLITS[0], SPLITS[3]])
def test_rwr_in_renumbered_columns(pairs, where):
    g = generated_graph(11)
    p = np.random.default_rng(5).uniform(0, 1, g.n)
    plain, _ = _run("rwr", g, pairs["split"], "none", "compensated", restart=p, **where)
    hot, rep = _run("rwr", g, pairs["split"], "hot", "compensated", restart=p, **where)
    assert all(c["applied"] for c in rep.plan["columns"].values())
    assert "-hot" in hot.extra["ops"]
    assert np.array_equal(hot.values, plain.values)
    assert np.abs(hot.values.astype(np.float64) - reference_rwr(g, p)).sum() < 1e-4


def test_the_contributions_are_kept_in_the_device_numbering(pairs):
    """The device's copy of the contribution vector is pr / outdeg in its renumbered order
    (read back in the input's); vectors by row stay as they are."""
    from finepar.device import cl
    from finepar.split import choose
    g = generated_graph(10)
    wl = api.Workload("pagerank", g)
    plan = choose.plan_for(wl.matrix, threshold=None, devices="gpu", grouping="pow4")
    eng = wl.engine(pairs["split"], plan, EngineOptions(columns="hot"))
    assert eng.columns["gpu"].names == {"contrib", "contrib_next"}
    wl.app.run(eng, g, max_iter=3)
    outdeg = np.diff(g.indptr)
    pr, contrib = eng.read("pr"), eng.read("contrib")
    want = np.where(outdeg > 0, pr / np.maximum(outdeg, 1), 0).astype(np.float32)
    assert np.allclose(contrib, want, rtol=1e-6, atol=0)
    perm = eng.columns["gpu"].perm_host(pairs["split"].gpu)
    raw = np.empty(g.n, np.float32)
    cl().enqueue_copy(pairs["split"].gpu.queue, raw, eng.buffer("contrib", "gpu"),
                      is_blocking=True)
    assert np.array_equal(raw[perm], contrib) and not np.array_equal(raw, contrib)


def test_the_dynamic_baseline_keeps_the_input_numbering(pairs):
    """Its executor copies written vectors by row ranges: no column-written vector may be
    renumbered there."""
    g = generated_graph(10)
    wl = api.Workload("pagerank", g)
    eng = Engine(pairs["split"], wl.matrix, dynamic(wl.matrix.row_lengths()), wl.app.ops,
                 options=EngineOptions(columns="hot"), column_vectors=wl.app.column_vectors)
    assert not any(c.applied for c in eng.columns.values())
    assert all("dynamic" in c.reason for c in eng.columns.values())


@pytest.mark.parametrize("name", ["wiki-Vote.txt", "ca-GrQc.mtx", "USPowerGrid.mtx"])
@pytest.mark.parametrize("sums", ["compensated", "plain"])
def test_pagerank_sums_on_real_graphs(pairs, name, sums):
    g = shared_graph(name)
    ref = reference_pagerank(g)
    res, rep = _run("pagerank", g, pairs["split"], "hot", sums, threshold=16,
                    grouping="pow4")
    assert all(c["applied"] for c in rep.plan["columns"].values())
    assert np.abs(res.values.astype(np.float64) - ref).sum() < 1e-4


def test_sums_is_checked():
    from finepar.errors import UsageError
    from finepar import apps
    with pytest.raises(UsageError, match="sums"):
        apps.get("pagerank").check_params(generated_graph(8), {"sums": "pairwise"})


def test_next_batch_predicts_from_the_last_ratio():
    from finepar.apps.pagerank import MAX_BATCH, next_batch
    assert next_batch([], 1e-6, 100) == 2 and next_batch([0.5], 1e-6, 100) == 2
    assert next_batch([], 1e-6, 1) == 1
    # halving from 0.25: 0.25 / 2**18 < 1e-6 <= 0.25 / 2**17, so 18 steps
    assert next_batch([0.5, 0.25], 1e-6, 100) == 18
    assert next_batch([0.5, 0.25], 1e-6, 3) == 3
    assert next_batch([1.0, 0.99999], 1e-9, 1000) == MAX_BATCH
    assert next_batch([0.1, 0.2, 0.3], 1e-6, 100) == 3  # growing: no prediction
    assert next_batch([1e-5, 1e-7], 1e-6, 100) == 1  # already below: the batch that ends


@pytest.mark.parametrize("name", ["luxembourg.mtx", "ca-GrQc.mtx"])
def test_device_iterations_read_few_times_and_overrun_little(pairs, name, monkeypatch):
    """One device: the predicted batches read the sums at most five times and enqueue at
    most two iterations past convergence, one of them the look-ahead behind the last read
    (doubling batches read 7 times and enqueued 62 past it on luxembourg), with the answer
    and its trace unchanged."""
    from finepar.engine import core
    g = shared_graph(name)
    reads, steps = [], []
    sums, rowop = core.Engine.sums_later, core.Engine.rowop
    monkeypatch.setattr(core.Engine, "sums_later", lambda self, *a, **k: (
        reads.append(a), sums(self, *a, **k))[1])
    monkeypatch.setattr(core.Engine, "rowop", lambda self, **k: (
        steps.append(k.get("slot")), rowop(self, **k))[1])
    res, _ = _run("pagerank", g, pairs["split"], "none", "compensated", devices="gpu")
    assert res.extra["device_steps"] and res.converged
    l1 = res.extra["l1_change"]
    assert len(l1) == res.iterations and l1[-1] < 1e-6 <= l1[-2]
    assert 2 <= len(reads) <= 5, reads
    assert res.iterations <= len(steps) <= res.iterations + 2, (len(steps), res.iterations)
    ref = reference_pagerank(g)
    assert np.abs(res.values.astype(np.float64) - ref).sum() < 1e-4


def test_an_iteration_runs_behind_each_read_of_the_sums(pairs, monkeypatch):
    """One device: each batch's sums are read with the next iteration already enqueued
    behind the read (the queue is in order: the device runs it while the host waits), and
    an iteration the look-ahead enqueued past convergence changes nothing (max_iter cut
    so the run ends mid-batch, then in full)."""
    from finepar.engine import core
    g = shared_graph("luxembourg.mtx")
    log = []
    sums, rowop = core.Engine.sums_later, core.Engine.rowop

    def later(self, *a, **k):
        wait = sums(self, *a, **k)
        log.append(("read", a[1] + a[2]))
        return lambda: (log.append(("wait",)), wait())[1]
    monkeypatch.setattr(core.Engine, "sums_later", later)
    monkeypatch.setattr(core.Engine, "rowop", lambda self, **k: (
        log.append(("step", k.get("slot"))), rowop(self, **k))[1])
    res, _ = _run("pagerank", g, pairs["split"], "none", "compensated", devices="gpu")
    reads = [i for i, e in enumerate(log) if e[0] == "read"]
    assert len(reads) >= 2
    for i in reads:  # the read, one more iteration (the slot after the batch), the wait
        assert log[i + 1] == ("step", log[i][1]) and log[i + 2] == ("wait",), log[i:i + 3]
    ref = reference_pagerank(g)
    assert np.abs(res.values.astype(np.float64) - ref).sum() < 1e-4
    for cap in (res.iterations - 1, 7):
        short, _ = _run("pagerank", g, pairs["shared"], "none", "compensated",
                        devices="gpu", max_iter=cap)
        assert short.iterations == cap and not short.converged
        full, _ = _run("pagerank", g, pairs["shared"], "none", "compensated",
                       devices="gpu", max_iter=cap, tol=1e-30)
        np.testing.assert_array_equal(short.values, full.values)


# ------------------------------------------------- every iteration in one work-group


SMALL = ["USPowerGrid.mtx", "adder_dcop_05.mtx", "ca-GrQc.mtx", "rajat01.mtx"]


@pytest.mark.parametrize("memory", ["split", "shared"])
@pytest.mark.parametrize("role", ["cpu", "gpu"])
@pytest.mark.parametrize("name", SMALL)
def test_group_loop_runs_every_iteration_in_one_launch(pairs, memory, role, name):
    """A small input on one device: one launch and one read, the scores within the float64
    reference's tolerance, a change recorded for every iteration and the last below tol,
    on a CPU (one work-item) and a GPU role (a work-group of up to 1024)."""
    from finepar.apps.powerloop import GROUP_LOOP_NNZ
    g = shared_graph(name)
    assert g.nnz <= GROUP_LOOP_NNZ
    res, rep = _run("pagerank", g, pairs[memory], "auto", "compensated", group_loop="auto",
                    devices=role)
    assert res.extra["ops"] == "pagerank-group-loop"
    assert rep.timings["launches"][role] == 1 and rep.timings["host_syncs"] == 1
    l1 = res.extra["l1_change"]
    assert res.converged and len(l1) == res.iterations and l1[-1] < 1e-6 <= l1[-2]
    assert np.abs(res.values.astype(np.float64) - reference_pagerank(g)).sum() < 1e-4


@pytest.mark.parametrize("role", ["cpu", "gpu"])
@pytest.mark.parametrize("max_iter", [5, 6])
@pytest.mark.parametrize("sums", ["compensated", "plain"])
def test_group_loop_is_the_row_operations_iteration(pairs, role, max_iter, sums):
    """Capped at an odd and an even count, the loop leaves the same scores as the row
    operations' run of as many iterations (its own buffers' parity undone), with the same
    changes, in both sums."""
    g = shared_graph("ca-GrQc.mtx")
    kw = dict(devices=role, max_iter=max_iter)
    loop, _ = _run("pagerank", g, pairs["split"], "none", sums, group_loop="always", **kw)
    ops, _ = _run("pagerank", g, pairs["split"], "none", sums, **kw)
    assert loop.extra["ops"] == "pagerank-group-loop" != ops.extra["ops"]
    assert loop.iterations == ops.iterations == max_iter and not loop.converged
    np.testing.assert_allclose(loop.values, ops.values, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(loop.extra["l1_change"], ops.extra["l1_change"], rtol=1e-3)


def test_a_gpu_takes_the_loop_to_its_own_size(pairs, monkeypatch):
    """Between GROUP_LOOP_NNZ and GPU_LOOP_NNZ entries a GPU device takes the loop under
    ``auto`` and a CPU device does not; both answers within the reference's tolerance."""
    import dataclasses
    from finepar.apps import powerloop
    g = generated_graph(12)
    assert powerloop.GROUP_LOOP_NNZ < g.nnz <= powerloop.GPU_LOOP_NNZ
    pair = pairs["split"]
    monkeypatch.setattr(pair.gpu, "info", dataclasses.replace(pair.gpu.info, kind="gpu"))
    monkeypatch.setattr(powerloop, "group_size", lambda side, role: 64)
    ref = reference_pagerank(g)
    for role, loop in (("gpu", True), ("cpu", False)):
        res, _ = _run("pagerank", g, pair, "none", "compensated", group_loop="auto",
                      devices=role)
        assert (res.extra["ops"] == "pagerank-group-loop") is loop, role
        assert np.abs(res.values.astype(np.float64) - ref).sum() < 1e-4


def test_group_loop_rwr_and_where_it_does_not_apply(pairs):
    """RWR's restart vector in the loop (against its reference); the loop is not used on a
    split, above GROUP_LOOP_NNZ under ``auto`` (but is under ``always``), or under
    ``none``."""
    from finepar.apps.powerloop import GROUP_LOOP_NNZ
    g = shared_graph("USPowerGrid.mtx")
    p = np.random.default_rng(3).uniform(0, 1, g.n)
    res, _ = _run("rwr", g, pairs["shared"], "none", "compensated", group_loop="auto",
                  devices="gpu", restart=p)
    assert res.extra["ops"] == "rwr-group-loop"
    ref = reference_rwr(g, (p / p.sum()).astype(np.float32))
    assert np.abs(res.values.astype(np.float64) - ref).sum() < 1e-4
    split, _ = _run("pagerank", g, pairs["split"], "none", "compensated", group_loop="always",
                    threshold=4, grouping="pow4")
    assert split.extra["ops"] != "pagerank-group-loop"
    big = generated_graph(12)
    assert big.nnz > GROUP_LOOP_NNZ
    for mode, want in (("auto", False), ("always", True), ("none", False)):
        r, _ = _run("pagerank", big, pairs["split"], "none", "plain", group_loop=mode,
                    devices="gpu")
        assert (r.extra["ops"] == "pagerank-group-loop") is want, mode
    r, _ = _run("pagerank", g, pairs["split"], "none", "plain", devices="gpu")
    assert r.extra["ops"] != "pagerank-group-loop"  # group_loop='none'


def test_segments_cut_long_rows_and_give_empty_ones_one():
    """A row of 70 entries in segments of 32 is three (32, 32, 6); an empty row has one
    empty segment; one segment a row without a length; every entry in exactly one
    segment, in order. The kernel's layout finishes single-segment rows in place and
    lists the long ones with their segments."""
    from finepar.apps.powerloop import layout, segments
    indptr = np.array([0, 3, 3, 73, 74])
    seg_ptr, row_seg = segments(indptr, 32)
    assert row_seg.tolist() == [0, 1, 2, 5, 6]
    assert seg_ptr.tolist() == [0, 3, 3, 35, 67, 73, 74]
    seg_ptr, row_seg = segments(indptr, None)
    assert row_seg.tolist() == [0, 1, 2, 3, 4] and seg_ptr.tolist() == [0, 3, 3, 73, 74]
    lay = layout(indptr, 32)
    assert lay["seg_row"].tolist() == [0, 1, -1, -1, -1, 3]
    assert lay["long_rows"].tolist() == [2] and lay["long_seg"].tolist() == [2, 5]
    assert layout(indptr, None)["long_rows"].size == 0
