"""Features, type detection, plans, performance models, training and the tuner."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import SHARED_GRAPHS, generated_graph, shared_graph
from finepar import features, partition
from finepar.split import perfmodel, training, tuner
from finepar.api import Workload
from finepar.errors import ModelError
from finepar.apps.spmv import reference_spmv


def test_share_features_match_brute_force(rng):
    lengths = rng.zipf(1.7, size=5000).clip(0, 10**6) - 1
    st = features.RowStats(lengths)
    for t in (0, 1, 3, 16, 100, 10**7):
        for role, sel in (("gpu", lengths <= t), ("cpu", lengths > t)):
            f = st.share(t, role)
            part = lengths[sel].astype(np.float64)
            assert f.NW == part.size and f.SW == int(part.sum())
            if part.size:
                assert f.AW == pytest.approx(part.mean())
                assert f.VW == pytest.approx(part.var(), rel=1e-9, abs=1e-6)
    assert st.whole().SW == lengths.sum()


def test_length_groups_are_powers_of_four():
    x = [0, 1, 3, 4, 15, 16, 63, 64] + [4 ** k + d for k in range(1, 26) for d in (-1, 0, 1)]
    x += list(range(5000))
    want = [(int(v).bit_length() + 1) // 2 for v in x]  # 4**(g-1) <= v < 4**g
    assert features.length_group(np.array(x, dtype=np.int64)).tolist() == want


def test_launch_counts_match_the_plans(rng):
    from finepar.partition import fine_grained
    for trial in range(40):
        lengths = (rng.pareto(1.0, size=int(rng.integers(1, 400))) *
                   int(rng.integers(1, 60))).astype(np.int64)
        if trial % 3 == 0:
            lengths[:5] = 0  # empty rows form their own group
        st = features.RowStats(lengths)
        for t in (0, 1, 3, 4, 15, 16, 64, 1000, int(lengths.max())):
            for grouping in ("none", "pow4"):
                plan = fine_grained(lengths, t, grouping=grouping)
                for role in ("cpu", "gpu"):
                    want = sum(1 for g in plan.shares[role].groups if len(g))
                    assert st.launches(t, role, grouping) == want


def test_type_detection_sampling_agrees_with_exact_count():
    g2 = generated_graph(14, 3)
    from finepar.io.graph500 import diagonal_copy
    g1 = diagonal_copy(g2)
    for g, expect in ((g1, 1), (g2, 2)):
        exact = features.detect_type(g.indptr, g.indices, g.n, sample_ratio=None)
        sampled = features.detect_type(g.indptr, g.indices, g.n, sample_ratio=0.001)
        assert exact.matrix_type == sampled.matrix_type == expect
        assert abs(exact.fraction - sampled.fraction) < 0.15
    # the exact count by brute force
    g = shared_graph("ca-GrQc.mtx")
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    frac = np.mean(np.abs(g.indices - rows) <= g.n / 8)
    assert features.diagonal_fraction(g.indptr, g.indices, g.n) == pytest.approx(frac)


def test_plans_partition_every_row_once():
    g = shared_graph("soc-Slashdot0902.txt.gz")
    lengths = g.row_lengths()
    for plan in (partition.fine_grained(lengths, 16), partition.fine_grained(lengths, 16,
                                                                             grouping="pow4"),
                 partition.coarse_grained(lengths, g.n // 3),
                 partition.single_device(lengths, "gpu", grouping="pow4")):
        rows = np.concatenate([plan.shares["cpu"].rows, plan.shares["gpu"].rows])
        assert np.array_equal(np.sort(rows), np.arange(g.n))
        st = plan.stats
        assert st["cpu_nnz"] + st["gpu_nnz"] == g.nnz
        assert st["space_overhead_fraction"] < 0.2
    fine = partition.fine_grained(lengths, 16, grouping="pow4")
    assert lengths[fine.shares["cpu"].rows].min() > 16
    assert lengths[fine.shares["gpu"].rows].max() <= 16
    assert fine.stats["gpu_variance"] < fine.stats["matrix_variance"] < fine.stats["cpu_variance"]
    for gr in fine.shares["gpu"].groups:  # power-of-4 length groups
        lens = lengths[gr.rows]
        assert lens.min() >= gr.lo and lens.max() < gr.hi
    coarse = partition.coarse_grained(lengths, 100)
    assert np.array_equal(coarse.shares["cpu"].rows, np.arange(100))


def test_plans_of_many_chunks_match_a_plain_sort(monkeypatch):
    """The counting sort that places rows in their groups runs chunk by chunk on threads:
    over many chunks every group holds exactly the rows a plain numpy sort gives, in
    ascending order, with its nnz, and Table 3's variances equal numpy's."""
    from finepar import parallel
    monkeypatch.setattr(parallel, "n_workers", lambda workers=None: 8)
    rng = np.random.default_rng(3)
    lengths = rng.zipf(1.6, 400_000).clip(0, 1 << 20).astype(np.int32)
    lengths[rng.integers(0, lengths.size, 5000)] = 0
    for grouping in ("pow4", "adaptive", "ell", "none"):
        plan = partition.fine_grained(lengths, 40, grouping=grouping)
        for role, want in (("cpu", lengths > 40), ("gpu", lengths <= 40)):
            share = plan.shares[role]
            got = np.sort(share.rows)
            np.testing.assert_array_equal(got, np.flatnonzero(want))
            np.testing.assert_array_equal(np.concatenate([g.rows for g in share.groups]),
                                          share.rows)
            for gr in share.groups:
                assert np.all(np.diff(gr.rows) > 0) and gr.nnz == lengths[gr.rows].sum()
            var = plan.stats[f"{role}_variance"]
            assert var == pytest.approx(np.var(lengths[want].astype(np.float64)), rel=1e-9)
        assert plan.stats["matrix_variance"] == pytest.approx(np.var(lengths.astype(float)),
                                                              rel=1e-9)
    sample = partition.subset_plan(lengths, {"cpu": np.array([7, 3]), "gpu": np.array([9, 1])})
    assert sorted(sample.shares["cpu"].rows) == [3, 7] and sample.nnz == lengths.sum()


def test_hill_climbing_finds_the_local_optimum():
    f = lambda t: {"T_f": t, "t": (t - 500) ** 2}  # noqa: E731
    best, traj = tuner.hill_climb(f, 100, step=64, lo=0, hi=2000)
    assert abs(best - 500) <= 32
    assert traj[0]["T_f"] == 100 and len(traj) > 5
    # starts at a local optimum: stays
    best, traj = tuner.hill_climb(lambda t: {"T_f": t, "t": abs(t - 300)}, 300, step=64, hi=900)
    assert best == 300 and len(traj) == 3


def test_initial_threshold_matches_the_peak_ratio(rng):
    lengths = rng.zipf(1.8, size=20000).clip(0, 50000)
    st = features.RowStats(lengths)
    for ratio in (0.05, 0.5, 1.0, 3.0):
        t = tuner.initial_threshold(st, ratio)
        cpu_nnz = lengths[lengths > t].sum()
        assert cpu_nnz <= lengths.sum() * ratio / (1 + ratio)
        # the next smaller distinct length would give the CPU too much
        smaller = np.unique(lengths)[np.unique(lengths) < t]
        if smaller.size:
            assert lengths[lengths > smaller[-1]].sum() > lengths.sum() * ratio / (1 + ratio)


def _synthetic_records(rng, k=60):
    recs = []
    for grouping in ("none", "pow4"):
        for t in (1, 2):
            for role in ("cpu", "gpu"):
                for _ in range(k):
                    aw, vw = rng.uniform(1, 50), rng.uniform(0, 500)
                    nw, sw = int(rng.integers(100, 10**6)), int(rng.integers(10**3, 10**8))
                    thr = 1e8 + 2e6 * aw - 1e4 * vw + 5e6 * np.log(nw) + 1e7 * np.log(sw)
                    thr *= 2 if role == "gpu" else 1
                    recs.append({"grouping": grouping, "type": t, "role": role, "AW": aw,
                                 "VW": vw, "NW": nw, "SW": sw, "throughput": thr})
    return recs


def test_linear_and_mlp_models_fit_and_round_trip(tmp_path, rng):
    recs = _synthetic_records(rng)
    devs = {"cpu": "P|cpu", "gpu": "P|gpu"}
    lin = perfmodel.fit_platform(recs, platform="synthetic", devices=devs, emulated=True,
                                 transfer=perfmodel.TransferModel(1e-5, 1e10), kind="linear")
    m = lin.device_model(1, "gpu")
    assert m.r2 > 0.999 and m.coef[0] == pytest.approx(4e6, rel=1e-3)
    assert set(m.correlations) == {"AW", "VW", "log NW", "log SW"}
    path = tmp_path / "synthetic.json"
    lin.save(path)
    back = perfmodel.PlatformModel.load(path)
    f = features.Features(10.0, 20.0, 5000, 10**6)
    assert back.predict_seconds(f, 2, "cpu", "pow4") == pytest.approx(
        lin.predict_seconds(f, 2, "cpu", "pow4"))
    assert back.transfer.seconds(1e6) == pytest.approx(2e-5 + 1e-4)
    # the scalar path equals the vectorised one, clamping included
    for f2 in (f, features.Features(1e4, 1e12, 10**9, 10**12), features.Features(0.0, 0.0, 1, 1)):
        dm = back.device_model(1, "gpu")
        assert dm.predict(f2) == pytest.approx(float(dm.predict_many(f2.vector()[None, :])[0]))
    d = json.loads(path.read_text())
    assert d["format"] == perfmodel.FORMAT and "versions" in d["meta"]
    # loglinear: exact on data whose log throughput is linear in the features, and
    # positive far below the data, where a linear fit of the same data is not
    logrecs = [dict(r, throughput=float(np.exp(20 + 0.01 * r["AW"] - 1e-4 * r["VW"]
                                               + 0.3 * np.log(r["SW"])))) for r in recs]
    ll = perfmodel.fit_platform(logrecs, platform="syn-log", devices=devs, emulated=True)
    dm = ll.device_model(2, "cpu")
    assert dm.kind == "loglinear" and dm.coef[0] == pytest.approx(0.01, rel=1e-6)
    assert dm.coef[3] == pytest.approx(0.3, rel=1e-6) and dm.r2 > 0.999
    ll.save(tmp_path / "ll.json")
    tiny = features.Features(1.0, 0.0, 1, 1)
    assert perfmodel.PlatformModel.load(tmp_path / "ll.json").predict_seconds(
        tiny, 2, "cpu") == pytest.approx(ll.predict_seconds(tiny, 2, "cpu"))
    assert dm.predict(tiny) == pytest.approx(float(dm.predict_many(tiny.vector()[None, :])[0]))
    mlp = perfmodel.fit_platform(recs, platform="synthetic-mlp", devices=devs, emulated=True,
                                 kind="mlp")
    assert mlp.device_model(1, "cpu").r2 > 0.9
    mlp.save(tmp_path / "mlp.json")
    again = perfmodel.PlatformModel.load(tmp_path / "mlp.json")
    assert again.predict_seconds(f, 1, "gpu") == pytest.approx(mlp.predict_seconds(f, 1, "gpu"))


def test_model_files_fail_clearly(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ModelError, match="bad.json"):
        perfmodel.PlatformModel.load(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ModelError, match="not a FinePar model"):
        perfmodel.PlatformModel.load(other)
    with pytest.raises(ModelError, match="no such model"):
        perfmodel.PlatformModel.load(tmp_path / "missing.json")


def test_model_matching_exact_nearest_and_none(tmp_path, pairs, rng):
    sel = pairs["split"].selection
    devs = {"cpu": sel.cpu.key, "gpu": sel.gpu.key}
    recs = _synthetic_records(rng, 20)
    assert perfmodel.match_model(sel, dirs=[tmp_path]).model is None
    perfmodel.fit_platform(recs, platform="elsewhere", devices={"cpu": "X|other cpu",
                                                                "gpu": "X|other"},
                           emulated=True).save(tmp_path / "elsewhere.json")
    near = perfmodel.match_model(sel, dirs=[tmp_path])
    assert near.model.platform == "elsewhere" and not near.exact and "nearest" in near.message
    perfmodel.fit_platform(recs, platform="here", devices=devs,
                           emulated=True).save(tmp_path / "here.json")
    exact = perfmodel.match_model(sel, dirs=[tmp_path])
    assert exact.exact and exact.model.platform == "here"
    forced = perfmodel.match_model(sel, name=str(tmp_path / "elsewhere.json"))
    assert not forced.exact and "not on the devices in use" in forced.message


def test_training_quick_recipe_resumes_and_fits(tmp_path, pairs):
    rec = training.Recipe("tiny", (9, 10), 2, (0, 16, 64, 4096, training.ALL_GPU), repeats=1)
    out = training.train(pairs["split"], platform="tiny", recipe=rec, training_root=tmp_path / "t",
                         models_dir=tmp_path / "m", progress=False)
    # T_f = 4096 (and 64 on some) is past every row of these matrices: the same split
    # as ALL_GPU, not run
    assert out["unneeded"] >= rec.runs // 5 and out["resumed"] == 0
    assert out["measured"] == rec.runs - out["unneeded"] and out["total"] == rec.runs
    model = perfmodel.PlatformModel.load(out["model_path"])
    assert set(model.groupings()) == {"none", "pow4", "adaptive", "ell"}
    assert model.transfer is not None and model.transfer.bandwidth > 0  # split memory
    again = training.train(pairs["split"], platform="tiny", recipe=rec,
                           training_root=tmp_path / "t", models_dir=tmp_path / "m",
                           progress=False)
    assert again["measured"] == 0 and again["unneeded"] == out["unneeded"]
    assert again["resumed"] == out["measured"]
    recs = training.load_measurements(tmp_path / "t" / "tiny")
    assert all(r["throughput"] > 0 and r["SW"] > 0 for r in recs)
    # the ends: every row on one device, so only that device has a record
    assert {r["role"] for r in recs if r["T_f"] == 0} == {"cpu"}
    assert {r["role"] for r in recs if r["T_f"] == training.ALL_GPU} == {"gpu"}
    whole = {r["matrix"]: r["SW"] for r in recs if r["T_f"] == training.ALL_GPU}
    assert all(r["SW"] == whole[r["matrix"]] for r in recs if r["T_f"] == 0)
    assert {r["type"] for r in recs} == {1, 2}
    refit = training.refit("tiny", training_root=tmp_path / "t", models_dir=tmp_path / "m",
                           kind="linear")
    assert refit.models.keys() == model.models.keys()
    from finepar.errors import FineParError
    info = tmp_path / "t" / "tiny" / "recipe.json"
    d = json.loads(info.read_text())
    d["devices"] = {"cpu": "Other|cpu", "gpu": "Other|gpu"}
    info.write_text(json.dumps(d))
    with pytest.raises(FineParError, match="measurements were taken on"):
        training.train(pairs["split"], platform="tiny", recipe=rec,
                       training_root=tmp_path / "t", models_dir=tmp_path / "m", progress=False)


def test_tuner_with_a_model_and_with_profiling(pairs, tmp_path, rng):
    g = shared_graph("soc-Slashdot0902.txt.gz")
    wl = Workload("pagerank", g)
    devs = {"cpu": pairs["split"].selection.cpu.key, "gpu": pairs["split"].selection.gpu.key}
    model = perfmodel.fit_platform(_synthetic_records(rng, 30), platform="syn", devices=devs,
                                   emulated=True,
                                   transfer=perfmodel.TransferModel(1e-5, 1e9))
    tr = tuner.tune(wl, pairs["split"], model=model)
    assert tr.model == "syn" and tr.model_exact
    # grouping auto: both groupings searched, the one predicted faster kept
    assert {e["grouping"] for e in tr.trajectory} == {"none", "pow4"}
    mine = [e for e in tr.trajectory if e["grouping"] == tr.grouping]
    ts = [e["T_f"] for e in mine]
    assert ts[0] == tr.initial and tr.threshold in ts
    assert tr.predicted["t"] == min(e["t"] for e in mine if e["T_f"] == tr.threshold)
    assert tr.predicted["t"] <= min(e["t"] for e in tr.trajectory) * (1 + tuner.CORUN_MARGIN) \
        + 1e-15
    assert tr.predicted["t_transfer"] >= 0
    for g in ("none", "pow4"):
        one = tuner.tune(wl, pairs["split"], model=model, grouping=g)
        assert one.grouping == g and {e["grouping"] for e in one.trajectory} == {g}
    # an app that allows fewer groupings (BFS: per-row mappings only) gets only those
    wl.app.groupings = ("pow4",)
    try:
        mine = tuner.tune(wl, pairs["split"], model=model)
    finally:
        del wl.app.groupings
    assert mine.grouping == "pow4" and {e["grouping"] for e in mine.trajectory} == {"pow4"}
    from finepar import apps
    assert set(apps.get("bfs").groupings) == {"none", "pow4"}
    pred = tuner.Predictor(wl.row_stats, tr.matrix_type, model=model, transfer=True,
                           grouping=tr.grouping)
    near = [pred(t)["t"] for t in (max(tr.threshold - 64, 0), tr.threshold + 64)]
    assert tr.predicted["t"] <= min(near) + 1e-15 or tr.threshold in (0, wl.row_stats.max_length())
    prof = tuner.tune(wl, pairs["split"], model=perfmodel.ModelMatch(None, False, "none"))
    assert prof.model is None and 0 <= prof.threshold <= wl.row_stats.max_length()


def test_halo_estimate_is_in_the_right_range():
    g = shared_graph("wiki-Vote.txt")
    m = g.transpose()
    st = features.RowStats(m.row_lengths())
    for t in (4, 16, 64):
        own_gpu = m.row_lengths() <= t
        rows = np.repeat(np.arange(m.n), m.row_lengths())
        true = (np.sum(~own_gpu[np.unique(m.indices[own_gpu[rows]])])
                + np.sum(own_gpu[np.unique(m.indices[~own_gpu[rows]])]))
        est = tuner.halo_estimate(st, t)
        assert true / 4 <= est <= true * 4


def test_launch_overhead_is_measured_saved_and_predicted(pairs, tmp_path, rng):
    over, corun = training.measure_overhead(pairs["split"], repeats=5, scale=8)
    assert set(over) == {"cpu", "gpu"} and corun >= 0
    assert all(o.step_s > 0 and o.launch_s >= 0 for o in over.values())
    assert training.measure_exchange_round(pairs["split"], repeats=5, scale=8) > 0
    devs = {"cpu": pairs["split"].selection.cpu.key, "gpu": pairs["split"].selection.gpu.key}
    model = perfmodel.fit_platform(_synthetic_records(rng, 30), platform="syn", devices=devs,
                                   emulated=True, overhead=over, corun_s=1e-4,
                                   transfer=perfmodel.TransferModel(1e-6, 1e9, round_s=2e-4))
    model.save(tmp_path / "syn.json")
    back = perfmodel.PlatformModel.load(tmp_path / "syn.json")
    assert back.overhead["cpu"].step_s == pytest.approx(over["cpu"].step_s)
    assert back.corun_s == 1e-4 and back.transfer.round_s == 2e-4
    assert back.transfer.seconds(4000) == pytest.approx(2e-4 + 4e-6)
    lengths = np.diff(shared_graph("ca-GrQc.mtx").indptr)
    st = features.RowStats(lengths)
    with_o = tuner.Predictor(st, 2, model=back, grouping="pow4")
    bare = perfmodel.PlatformModel.load(tmp_path / "syn.json")
    bare.overhead = {}
    without = tuner.Predictor(st, 2, model=bare, grouping="pow4")
    t = 8
    k = st.launches(t, "cpu", "pow4")
    assert k >= 1
    assert with_o.device_seconds(t, "cpu") - without.device_seconds(t, "cpu") == pytest.approx(
        over["cpu"].step_s + (k - 1) * over["cpu"].launch_s)
    # an empty share costs nothing, fixed cost included
    assert with_o.device_seconds(int(lengths.max()), "cpu") == 0.0
    # a split pays the co-running extra; one device alone does not
    assert with_o(t)["t_corun"] == pytest.approx(1e-4) and with_o(t)["t_transfer"] == 0.0
    assert with_o(int(lengths.max()))["t_corun"] == 0.0
    ex = tuner.Predictor(st, 2, model=back, grouping="pow4", transfer=True)(t)
    assert ex["t_transfer"] > 2e-4
    assert ex["t"] == pytest.approx(max(ex["t_cpu"], ex["t_gpu"]) + 1e-4 + ex["t_transfer"])


def test_tuner_keeps_the_cpu_share_within_its_memory(pairs, rng):
    """Allocations no longer cap a share (chunks do, §4.3); the CPU's memory budget does."""
    from finepar.engine import EngineOptions
    g = shared_graph("cnr-2000.mtx.gz")
    wl = Workload("pagerank", g)
    pair = pairs["split"]
    st = wl.row_stats
    assert tuner.feasible_range(st, pair) == (0, st.max_length())
    cap = g.indices.nbytes // 5  # room for a fifth of the nonzeros on the CPU
    lo, hi = tuner.feasible_range(st, pair, {"cpu": cap})
    lengths = wl.matrix.row_lengths()
    assert 4 * lengths[lengths > lo].sum() <= cap < 4 * lengths[lengths > lo - 1].sum()
    assert hi == st.max_length()
    devs = {"cpu": pair.selection.cpu.key, "gpu": pair.selection.gpu.key}
    # a model that finds the CPU far faster: unconstrained, it would give the CPU everything
    recs = [dict(r, throughput=r["throughput"] * (50 if r["role"] == "cpu" else 1))
            for r in _synthetic_records(rng, 30)]
    model = perfmodel.fit_platform(recs, platform="syn", devices=devs, emulated=True)
    tr = tuner.tune(wl, pair, model=model, options=EngineOptions(cpu_memory=cap))
    assert tr.threshold >= lo and all(e["T_f"] >= lo for e in tr.trajectory)


def test_streaming_cost_enters_the_prediction(rng):
    """The part of the GPU share beyond its memory streams every step: its bytes over the
    bandwidth, overlapped with compute (the larger sets the pace)."""
    g = shared_graph("wiki-Vote.txt")
    st = features.RowStats(g.row_lengths())
    model = perfmodel.fit_platform(_synthetic_records(rng, 30), platform="syn",
                                   devices={"cpu": "P|c", "gpu": "P|g"}, emulated=False)
    t = int(st.max_length())
    free = tuner.Predictor(st, 2, model=model, grouping="pow4")(t)
    tight = tuner.Predictor(st, 2, model=model, grouping="pow4", gpu_resident=g.nnz // 4,
                            bytes_per_nnz=4, h2d_bandwidth=1e6)(t)
    assert free["t_stream"] == 0.0 and free["streamed_nnz"] == 0
    assert tight["streamed_nnz"] == g.nnz - g.nnz // 4
    assert tight["t_stream"] == pytest.approx(4 * tight["streamed_nnz"] / 1e6)
    assert tight["t_gpu"] == pytest.approx(max(free["t_gpu"], tight["t_stream"]))
    # with the GPU's memory this tight, giving the CPU its long rows pays more
    lower = tuner.Predictor(st, 2, model=model, grouping="pow4", gpu_resident=g.nnz // 4,
                            bytes_per_nnz=4, h2d_bandwidth=1e6)(8)
    assert lower["streamed_nnz"] < tight["streamed_nnz"]


def test_emulated_pair_predicts_the_sum_of_both_shares(rng):
    g = shared_graph("wiki-Vote.txt")
    st = features.RowStats(g.row_lengths())
    model = perfmodel.fit_platform(_synthetic_records(rng, 30), platform="syn",
                                   devices={"cpu": "P|c", "gpu": "P|c"}, emulated=True)
    two = tuner.Predictor(st, 2, model=model, grouping="pow4")
    one = tuner.Predictor(st, 2, model=model, grouping="pow4", serial=True)
    t = 16
    a, b = two(t), one(t)
    assert a["t_cpu"] > 0 and a["t_gpu"] > 0
    assert a["t"] == pytest.approx(max(a["t_cpu"], a["t_gpu"]) + a["t_corun"] + a["t_transfer"])
    assert b["t"] == pytest.approx(b["t_cpu"] + b["t_gpu"] + b["t_corun"] + b["t_transfer"])


def test_model_listing_skips_dangling_links_and_sees_files_fixed_in_place(tmp_path, rng):
    import os
    devs = {"cpu": "P|c", "gpu": "P|g"}
    good = perfmodel.fit_platform(_synthetic_records(rng, 10), platform="good", devices=devs,
                                  emulated=True)
    good.save(tmp_path / "good.json")
    os.symlink(tmp_path / "gone.json", tmp_path / "dangling.json")
    (tmp_path / "bad.json").write_text("{not json")
    assert [m.platform for m in perfmodel.available_models([tmp_path])] == ["good"]
    assert perfmodel.available_models([tmp_path])[0].origin == "path"
    # the malformed file fixed in place (same name, the folder itself unchanged)
    fixed = perfmodel.fit_platform(_synthetic_records(rng, 10), platform="fixed", devices=devs,
                                   emulated=True)
    (tmp_path / "bad.json").write_text(json.dumps(fixed.to_dict()))
    assert sorted(m.platform for m in perfmodel.available_models([tmp_path])) == ["fixed", "good"]
    # an older format still loads; an unknown one is refused clearly
    d = json.loads((tmp_path / "good.json").read_text())
    (tmp_path / "good.json").write_text(json.dumps(dict(d, format="finepar-model/1")))
    assert perfmodel.PlatformModel.load(tmp_path / "good.json").platform == "good"
    (tmp_path / "good.json").write_text(json.dumps(dict(d, format="finepar-model/99")))
    with pytest.raises(ModelError, match="this version reads"):
        perfmodel.PlatformModel.load(tmp_path / "good.json")


def test_a_share_of_empty_rows_still_costs_its_launch(rng):
    lengths = np.array([0] * 50 + [3] * 50 + [40] * 10)
    st = features.RowStats(lengths)
    over = {r: perfmodel.LaunchOverhead(50e-6, 10e-6) for r in ("cpu", "gpu")}
    model = perfmodel.fit_platform(_synthetic_records(rng, 30), platform="syn",
                                   devices={"cpu": "P|c", "gpu": "P|g"}, emulated=False,
                                   overhead=over, corun_s=100e-6,
                                   transfer=perfmodel.TransferModel(0.0, 1e9, round_s=300e-6))
    p = tuner.Predictor(st, 2, model=model, grouping="pow4", transfer=True)(0)
    # T_f = 0: the 50 empty rows stay on the GPU, so both devices run every step
    assert st.share(0, "gpu").NW == 50 and st.share(0, "gpu").SW == 0
    assert p["t_gpu"] == pytest.approx(50e-6) and p["t_corun"] == pytest.approx(100e-6)
    assert p["t_transfer"] >= 300e-6 - 1e-12
    alone = tuner.Predictor(features.RowStats(lengths[50:]), 2, model=model, grouping="pow4",
                            transfer=True)(0)
    assert alone["t_gpu"] == 0.0 and alone["t_corun"] == 0.0 and alone["t_transfer"] == 0.0


def test_measured_scale_corrects_only_one_device_off():
    pred = {"t_cpu": 1e-3, "t_gpu": 2e-3}
    assert tuner.measured_scale(pred, {"cpu": 3e-3, "gpu": 6e-3}) is None  # both off alike
    r = tuner.measured_scale(pred, {"cpu": 7e-3, "gpu": 2e-3})
    assert r == pytest.approx({"cpu": 7.0, "gpu": 1.0})
    assert tuner.measured_scale({"t_cpu": 0.0, "t_gpu": 1e-3}, {"cpu": 0.0, "gpu": 1e-3}) is None
    r = tuner.measured_scale({"t_cpu": 1e-3, "t_gpu": 0.0}, {"cpu": 9e-3, "gpu": 3e-5})
    assert r == pytest.approx({"cpu": 9.0, "gpu": 1.0})  # the GPU's empty rows: no ratio


def _fast_cpu_model(pair, rng):
    """A model that thinks the CPU 100x faster than it is."""
    recs = _synthetic_records(rng, 30)
    for r in recs:
        if r["role"] == "cpu":
            r["throughput"] *= 100
    devs = {"cpu": pair.selection.cpu.key, "gpu": pair.selection.gpu.key}
    return perfmodel.fit_platform(recs, platform="fast-cpu", devices=devs, emulated=True,
                                  transfer=perfmodel.TransferModel(1e-5, 1e9))


def _mispredicted_spmv(pairs, rng, steps: float):
    """SpMV prepared on the split pair with :func:`_fast_cpu_model` for a run of ``steps``
    row operations: ``(graph, x, workload, engine, tuning)``."""
    from finepar import api
    from finepar.throttle.plan import ThrottleOptions
    pair = pairs["split"]
    model = _fast_cpu_model(pair, rng)
    g = shared_graph("soc-Slashdot0902.txt.gz") if SHARED_GRAPHS else generated_graph(13, 3)
    x = np.random.default_rng(5).uniform(-1, 1, g.n).astype(np.float32)
    wl = api.Workload("spmv", g)
    *_, eng, _, tuning = wl.prepare(pair, throttle=ThrottleOptions(), threshold=None,
                                    devices="both", grouping="auto", model=model, step=64,
                                    calibrate=None, steps=steps)
    return g, x, wl, eng, tuning


def test_a_split_the_model_mispredicts_is_tuned_again(pairs, rng):
    """A model that thinks the CPU 100x faster than it is gives the CPU most rows; one
    measured step shows the CPU off by far more than the GPU, and for a long run the split
    is tuned again with the CPU's predictions rescaled: fewer rows on the CPU, the same
    answer."""
    g, x, wl, eng, tuning = _mispredicted_spmv(pairs, rng, 1e9)
    fix = tuning["correction"]
    assert fix["scale"]["cpu"] > tuner.CORRECTION_RATIO * fix["scale"]["gpu"]
    assert fix["rebuild"]["done"]
    assert fix["rebuild"]["saving_seconds"] > fix["rebuild"]["cost_seconds"]
    assert fix["threshold_before"] < tuning["threshold"] == eng.plan.threshold
    res, _ = wl.run(engine=eng, x=x, warmup=False)
    np.testing.assert_allclose(res.values, reference_spmv(g, x), rtol=1e-4, atol=1e-4)


def test_a_short_run_keeps_the_measured_split(pairs, rng):
    """The same misprediction in a run too short to pay for a second engine: the split
    stays, the answer is right, and the report says what was weighed."""
    g, x, wl, eng, tuning = _mispredicted_spmv(pairs, rng, 1e-9)
    fix = tuning["correction"]
    assert fix["scale"]["cpu"] > tuner.CORRECTION_RATIO * fix["scale"]["gpu"]
    assert fix["rebuild"]["done"] is False and fix["rebuild"]["threshold"] > tuning["threshold"]
    assert "threshold_before" not in fix and eng.plan.threshold == tuning["threshold"]
    params = wl.app.check_params(g, {"x": x})
    res, rep = wl._execute(eng, params, False, 0.0, "tuner", tuning)
    assert "kept: the corrected split" in rep.text()
    np.testing.assert_allclose(res.values, reference_spmv(g, x), rtol=1e-4, atol=1e-4)




def test_a_share_past_the_training_range_is_not_promised_more_than_the_cap():
    """A fit extrapolated past the largest shares it saw is capped at EXTRAPOLATION_CAP
    times its training median; inside the range the fit stands, above the cap or not."""
    from finepar.features import Features
    from finepar.split.perfmodel import EXTRAPOLATION_CAP, DeviceModel
    dm = DeviceModel(kind="loglinear", coef=[0.0, 0.0, 0.0, 2.0], intercept=0.0,
                     median_throughput=1e6, x_min=[0.0, 0.0, 0.0, 0.0],
                     x_max=[1e9, 1e18, 30.0, 12.0])
    inside = Features(AW=10.0, VW=1.0, NW=10, SW=100_000)  # log SW 11.5: inside
    outside = Features(AW=10.0, VW=1.0, NW=10, SW=10_000_000)  # log SW 16.1: past 12
    assert dm.predict(inside) == pytest.approx(1e10, rel=1e-9)
    assert dm.predict(outside) == pytest.approx(EXTRAPOLATION_CAP * 1e6)
    both = dm.predict_many(np.array([inside.vector(), outside.vector()]))
    assert both == pytest.approx([1e10, EXTRAPOLATION_CAP * 1e6], rel=1e-9)


def test_a_split_must_beat_the_better_device_alone_by_the_margin():
    """A split predicted a little faster than the GPU alone gives way to it; one predicted
    faster by more than CORUN_MARGIN stays; the ends join the trajectory."""
    def predict(times):
        return lambda t: {"T_f": t, "t": times[t]}
    close = {0: 10.0, 50: 1.00, 100: 1.00 * (1 + tuner.CORUN_MARGIN) - 1e-9}
    trajectory = [{"T_f": 50, "t": 1.0}]
    assert tuner.one_device_unless_split_wins(predict(close), 50, trajectory, 0, 100) == \
        (100, close[100])
    assert {e["T_f"] for e in trajectory} == {0, 50, 100}
    far = {0: 10.0, 50: 1.00, 100: 1.00 * (1 + tuner.CORUN_MARGIN) + 1e-3}
    assert tuner.one_device_unless_split_wins(predict(far), 50, [], 0, 100) == (50, 1.0)


def test_a_gpu_work_item_walking_a_long_row_sets_a_floor(rng):
    """Under grouping ``none`` a GPU share's time is at least its longest row walked by one
    work-item (ITEM_ENTRY_S an entry), which a fit on the share's moments can miss; other
    groupings cut long rows, and on an emulated pair (one CPU) there is no such floor."""
    lengths = np.array([4] * 2000 + [200_000])
    st = features.RowStats(lengths)
    model = perfmodel.fit_platform(_synthetic_records(rng, 30), platform="syn",
                                   devices={"cpu": "P|c", "gpu": "P|g"}, emulated=False)
    t = int(st.max_length())
    walk = 200_000 * tuner.ITEM_ENTRY_S
    none = tuner.Predictor(st, 2, model=model, grouping="none")(t)
    assert none["t_gpu"] >= walk
    assert model.predict_seconds(st.share(t, "gpu"), 2, "gpu", "none") < walk  # the fit alone
    short = tuner.Predictor(st, 2, model=model, grouping="none")(4)  # the long row on the CPU
    assert short["t_gpu"] < walk
    assert tuner.Predictor(st, 2, model=model, grouping="pow4")(t)["t_gpu"] < walk
    assert tuner.Predictor(st, 2, model=model, grouping="none", serial=True)(t)["t_gpu"] < walk


def test_adaptive_and_ell_launch_counts_match_their_lowerings(rng):
    """CSR-adaptive is one launch of row blocks, its cut rows (longer than the split)
    folded inside it; ELL one launch: the counts the tuner adds launch costs for are the
    lowerings' own."""
    from finepar.engine.launches import lower_adaptive, lower_ell
    from finepar.io import from_csr
    cut = 0
    for trial in range(12):
        n = int(rng.integers(2, 300))
        lengths = (rng.pareto(1.0, size=n) * int(rng.integers(1, 40))).astype(np.int64)
        lengths = np.minimum(lengths, n)
        lengths[int(rng.integers(n))] = min(n, 150 * int(rng.integers(1, 3)))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        indices = np.concatenate([np.sort(rng.choice(n, int(k), replace=False))
                                  for k in lengths] + [np.zeros(0, np.int64)])
        g = from_csr(indptr, indices.astype(np.int32), None, n, name="t", pattern=True)
        st = features.RowStats(lengths)
        low = lower_adaptive(g, "gpu", np.arange(n, dtype=np.int32), block_nnz=32,
                             max_segments=32, split=200)
        cut += int(low.apply_rows.size > 0)
        assert st.launches(int(lengths.max()), "gpu", "adaptive") == len(low.launches) == 1
    assert cut > 0  # some trials cut a row, and still made one launch
    even = np.full(64, 5)  # rows of one length: ELL pads nothing
    idx = np.concatenate([np.arange(5) + i % 59 for i in range(64)]).astype(np.int32)
    g = from_csr(np.arange(65) * 5, idx, None, 64, name="even", pattern=True)
    ell = lower_ell(g, "gpu", np.arange(64, dtype=np.int32), with_data=False)
    assert features.RowStats(even).launches(5, "gpu", "ell") == len(ell.launches) == 1

