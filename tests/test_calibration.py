"""Where models are found (lookup order, package data, never the current directory),
calibration on first use, and training's progress lines, counts and warnings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import generated_graph
from finepar.split import calibrate, perfmodel, training, tuner
from finepar.api import Workload
from finepar.errors import ModelError
from test_model_tuner import _synthetic_records

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """FINEPAR_HOME in tmp_path, no $FINEPAR_MODELS."""
    monkeypatch.setenv("FINEPAR_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FINEPAR_MODELS", raising=False)
    return tmp_path / "home"


@pytest.fixture
def no_shipped(monkeypatch):
    """Hide the shipped models, so that no model matches the devices in use."""
    sources = perfmodel.model_sources
    monkeypatch.setattr(perfmodel, "model_sources",
                        lambda: [s for s in sources() if s[0] != "shipped"])


def _model(rng, name, devices, emulated=True):
    return perfmodel.fit_platform(_synthetic_records(rng, 10), platform=name, devices=devices,
                                  emulated=emulated)


def _selection(devices, emulated):
    return SimpleNamespace(cpu=SimpleNamespace(key=devices["cpu"]),
                           gpu=SimpleNamespace(key=devices["gpu"]), emulated=emulated)


def test_lookup_order_is_named_env_user_shipped(home, tmp_path, monkeypatch, rng):
    shipped = perfmodel.available_models()
    assert shipped and {m.origin for m in shipped} == {"shipped"}
    target = shipped[0]
    sel = _selection(target.devices, target.emulated)
    m = perfmodel.match_model(sel)
    assert m.exact and m.origin == "shipped" and m.path == target.path and m.path in m.message
    _model(rng, "mine", target.devices, target.emulated).save(home / "models" / "mine.json")
    m = perfmodel.match_model(sel)
    assert (m.model.platform, m.origin, m.path) == ("mine", "user",
                                                     str(home / "models" / "mine.json"))
    env = tmp_path / "env"
    _model(rng, "from-env", target.devices, target.emulated).save(env / "from-env.json")
    monkeypatch.setenv("FINEPAR_MODELS", str(env))
    m = perfmodel.match_model(sel)
    assert (m.model.platform, m.origin) == ("from-env", "env")
    origins = [x.origin for x in perfmodel.available_models()]
    assert origins[:2] == ["env", "user"] and set(origins[2:]) == {"shipped"}
    # a model named explicitly comes first: by platform name, or by path
    assert perfmodel.match_model(sel, name="mine").origin == "user"
    by_path = perfmodel.match_model(sel, name=str(home / "models" / "mine.json"))
    assert by_path.origin == "path" and by_path.exact and by_path.model.platform == "mine"


def test_lookup_never_depends_on_the_current_directory(home, tmp_path, monkeypatch, rng, pairs):
    pair = pairs["split"]
    devs = {"cpu": pair.selection.cpu.key, "gpu": pair.selection.gpu.key}
    env = tmp_path / "env"
    _model(rng, "env-exact", devs, pair.emulated).save(env / "env-exact.json")
    monkeypatch.setenv("FINEPAR_MODELS", str(env))
    cwd = tmp_path / "elsewhere"
    for folder in (cwd / "models", cwd):  # what a ./models lookup would have found
        _model(rng, "in-cwd", devs, pair.emulated).save(folder / "in-cwd.json")
    wl = Workload("pagerank", generated_graph(11))

    def state():
        tr = tuner.tune(wl, pair, calibrate=False)
        return ([(m.platform, m.path) for m in perfmodel.available_models()],
                tr.model_path, tr.threshold, tr.grouping)
    start = os.getcwd()
    before = state()
    assert before[1] == str(env / "env-exact.json")
    os.chdir(cwd)
    try:
        assert state() == before
        assert "in-cwd" not in {name for name, _ in before[0]}
        with pytest.raises(ModelError, match="no model named 'in-cwd'"):
            perfmodel.find_model("in-cwd")
    finally:
        os.chdir(start)
    assert state() == before


def test_shipped_models_are_package_data_of_an_installed_copy(tmp_path):
    lib = tmp_path / "lib"  # what a wheel holds: setuptools' build_py of pyproject.toml
    subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "-q",
                    "build_py", "--build-lib", str(lib)], cwd=ROOT, check=True,
                   capture_output=True)
    away = tmp_path / "away"
    away.mkdir()
    env = dict(os.environ, PYTHONPATH=str(lib), FINEPAR_HOME=str(tmp_path / "home"))
    env.pop("FINEPAR_MODELS", None)
    code = ("import json, finepar; from finepar.split import perfmodel; print(json.dumps("
            "[finepar.__file__, [(m.platform, m.origin, m.path) "
            "for m in perfmodel.available_models()]]))")
    res = subprocess.run([sys.executable, "-c", code], cwd=away, env=env, check=True,
                         capture_output=True, text=True)
    where, found = json.loads(res.stdout)
    assert Path(where).is_relative_to(lib)
    want = sorted(p.stem for p in (ROOT / "models").glob("*.json"))  # top-level models/
    assert want and sorted(name for name, _, _ in found) == want
    for name, origin, path in found:
        assert origin == "shipped" and Path(path).parent == lib / "finepar" / "models"
    res = subprocess.run([sys.executable, "-m", "finepar", "models", "show", want[0]], cwd=away,
                         env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert f"model {want[0]}" in res.stdout and "(shipped)" in res.stdout


def test_a_truncated_model_file_is_reported_once(home, rng, capsys):
    good = _model(rng, "good", {"cpu": "P|c", "gpu": "P|g"})
    good.save(home / "models" / "good.json")
    text = (home / "models" / "good.json").read_text()
    cut = home / "models" / "cut.json"
    cut.write_text(text[: len(text) // 2])
    assert [m.platform for m in perfmodel.available_models() if m.origin == "user"] == ["good"]
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "cut.json" in ln]
    assert len(lines) == 1 and lines[0].startswith("finepar: warning: model file skipped: ")
    assert str(cut) in lines[0] and "truncated" in lines[0]
    perfmodel.available_models()
    assert "cut.json" not in capsys.readouterr().err  # once per state of the file
    cut.write_text(text.replace('"good"', '"fixed"'))
    assert "fixed" in {m.platform for m in perfmodel.available_models()}
    with pytest.raises(ModelError, match="cut.json: not a readable model file, truncated"):
        perfmodel.PlatformModel.from_json(text[:100], str(cut))


def test_first_run_calibrates_and_later_runs_use_the_cached_model(home, no_shipped, monkeypatch,
                                                                   pairs, capsys):
    monkeypatch.delenv(calibrate.NO_CALIBRATE_ENV, raising=False)
    pair = pairs["split"]
    wl = Workload("spmv", generated_graph(10))
    assert perfmodel.match_model(pair.selection).model is None
    rec = training.Recipe("tiny-calibrate", (8, 9), 2, (0, 16, 64, training.ALL_GPU), repeats=1)
    first = tuner.tune(wl, pair, calibrate=rec)
    err = capsys.readouterr().err
    assert len([ln for ln in err.splitlines() if "calibrating once" in ln]) == 1
    path = Path(first.model_path)
    assert path.parent == home / "models" and path.is_file()
    assert first.model_exact and first.model_origin == "user" and first.calibration_seconds > 0
    d = first.to_dict()
    assert d["model_path"] == str(path) and str(path) in d["summary"]
    assert (home / "training" / path.stem / "measurements.json").is_file()
    stamp = path.stat().st_mtime_ns
    # later runs, with the default switch: the cached model is an exact match
    second = tuner.tune(wl, pair)
    assert second.model_path == str(path) and second.model_exact
    assert second.calibration_seconds == 0 and second.model_origin == "user"
    _, report = wl.run(pair=pair, repeat=1, devices="both")  # the split, on the emulated pair
    assert str(path) in report.text()
    assert "calibrating" not in capsys.readouterr().err and path.stat().st_mtime_ns == stamp


def test_a_failed_calibration_is_reported_and_the_run_goes_on(tmp_path, no_shipped, monkeypatch,
                                                                pairs, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("FINEPAR_HOME", str(blocker))  # no user data directory can be made
    monkeypatch.delenv("FINEPAR_MODELS", raising=False)
    monkeypatch.delenv(calibrate.NO_CALIBRATE_ENV, raising=False)
    rec = training.Recipe("tiny-calibrate", (8,), 1, (0, training.ALL_GPU), repeats=1)
    tr = tuner.tune(Workload("spmv", generated_graph(10)), pairs["split"], calibrate=rec)
    assert tr.model is None and tr.calibration_seconds == 0  # measured profiling
    err = capsys.readouterr().err.splitlines()
    assert len([ln for ln in err if "calibrating once" in ln]) == 1
    assert len([ln for ln in err if ln.startswith("finepar: warning: calibration failed")]) == 1


def test_the_calibration_switch(home, no_shipped, monkeypatch, tmp_path, pairs, rng, capsys):
    pair = pairs["split"]
    wl = Workload("spmv", generated_graph(10))
    monkeypatch.setenv(calibrate.NO_CALIBRATE_ENV, "1")
    assert not calibrate.enabled() and calibrate.enabled(True) and not calibrate.enabled(False)
    tr = tuner.tune(wl, pair)  # switched off by the environment, and no model: profiling
    assert tr.model is None and tr.model_path is None and tr.calibration_seconds == 0
    assert not (home / "models").exists()
    other = tmp_path / "env" / "other-box.json"
    _model(rng, "other-box", {"cpu": "X|other cpu", "gpu": "X|other gpu"},
           pair.emulated).save(other)
    monkeypatch.setenv("FINEPAR_MODELS", str(other.parent))
    monkeypatch.delenv(calibrate.NO_CALIBRATE_ENV)
    assert calibrate.enabled()
    capsys.readouterr()
    tr = tuner.tune(wl, pair, calibrate=False)  # off by argument: the nearest, with a warning
    assert tr.model == "other-box" and not tr.model_exact and tr.model_path == str(other)
    warned = [ln for ln in capsys.readouterr().err.splitlines()
              if ln.startswith("finepar: warning")]
    assert len(warned) == 1 and "nearest" in warned[0] and str(other) in warned[0]
    match = perfmodel.match_model(pair.selection)
    assert "calibrates" in calibrate.explain(match) and "other-box" in calibrate.explain(match)
    assert calibrate.explain(match, False).startswith("nearest")
    assert not (home / "models").exists()


def test_calibration_keeps_apart_from_other_devices_of_the_same_name(home, pairs):
    pair = pairs["split"]
    base = perfmodel.platform_name(pair.selection)
    assert calibrate.calibration_name(pair) == base
    folder = home / "training" / base
    folder.mkdir(parents=True)
    (folder / "recipe.json").write_text(json.dumps({"devices": {"cpu": "A|x", "gpu": "B|y"}}))
    other = calibrate.calibration_name(pair)
    assert other.startswith(base + "-") and len(other) == len(base) + 9
    assert calibrate.calibration_name(pair) == other


def test_train_progress_lines_and_counts_that_reconcile(home, pairs, capsys):
    assert not sys.stderr.isatty()
    rec = training.Recipe("tiny", (8, 9), 2, (0, 16, 64, 4096, training.ALL_GPU), repeats=1)
    out = training.train(pairs["split"], platform="p", recipe=rec, fit=False)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if " runs done; " in ln]
    assert len(lines) == len(rec.scales) * rec.quadruplets * 2  # one per matrix
    done = [int(ln.split(" runs done; ")[0].rsplit("; ", 1)[1].split("/")[0]) for ln in lines]
    assert done == sorted(done) and lines[-1].count(f"{rec.runs}/{rec.runs} runs done") == 1
    assert all(" left" in ln and " elapsed" in ln for ln in lines)
    assert out["total"] == rec.runs and out["resumed"] == 0 and out["unneeded"] > 0
    assert out["measured"] + out["resumed"] + out["unneeded"] == out["total"]
    log = Path(out["log_path"]).read_text()
    assert all(ln in log for ln in lines) and training.summary(out) in log
    # lose one matrix's measurements: the rerun measures just those
    path = Path(out["measurements_path"])
    data = json.loads(path.read_text())
    victim = data["records"][0]["matrix"]
    lost = {(r["matrix"], r["T_f"], r["split"]) for r in data["records"]
            if r["matrix"] == victim}
    data["records"] = [r for r in data["records"] if r["matrix"] != victim]
    path.write_text(json.dumps(data))
    again = training.train(pairs["split"], platform="p", recipe=rec, fit=False)
    assert again["measured"] == len(lost) and again["unneeded"] == out["unneeded"]
    assert again["resumed"] == out["measured"] - len(lost)
    assert again["measured"] + again["resumed"] + again["unneeded"] == again["total"]
    assert len([ln for ln in capsys.readouterr().err.splitlines() if " runs done; " in ln]) == 1


def test_time_left_is_weighted_by_matrix_size():
    todo = [(t, "none") for t in range(4)]
    plan = [{"scale": 10, "todo": todo}, {"scale": 12, "todo": todo}]
    eta = training._ETA(plan)
    # 4 runs of 4x the edges each: 4x the time of the 4 runs done (run counts would say 1x)
    assert eta.done(plan[0], 1.0) == pytest.approx(4.0)
    assert eta.done(plan[1], 5.0) == 0.0


def _nonsense(pair, rec, folder, rng):
    """Training measurements with throughputs unrelated to the features: one record
    per split of ``rec``, so a training run has nothing left to measure."""
    devices = {"cpu": pair.selection.cpu.key, "gpu": pair.selection.gpu.key}
    folder.mkdir(parents=True)
    (folder / "recipe.json").write_text(json.dumps({"devices": devices,
                                                    "emulated": pair.emulated}))
    records = []
    for s in rec.scales:
        for q in range(rec.quadruplets):
            for m in (1, 2):
                for t, g in ((t, g) for t in rec.thresholds for g in rec.groupings):
                    nw = int(rng.integers(10, 10**5))
                    records.append({"matrix": training._matrix_key(s, q, m), "T_f": t,
                                    "grouping": g, "type": m,
                                    "role": ("cpu", "gpu")[int(rng.integers(2))],
                                    "AW": rng.uniform(1, 50), "VW": rng.uniform(0, 1e3),
                                    "NW": nw, "SW": nw * 10,
                                    "throughput": 10.0 ** rng.choice([6, 9])})
    (folder / "measurements.json").write_text(json.dumps({"records": records}))


def test_models_with_negative_r2_are_warned_about(home, pairs, capsys, rng):
    pair = pairs["shared"]
    rec = training.Recipe("nonsense", (8, 9), 4, (0, 16, 64), repeats=1)
    _nonsense(pair, rec, home / "training" / "nonsense", rng)
    out = training.train(pair, platform="nonsense", recipe=rec, progress=False)
    assert out["measured"] == 0 and out["resumed"] == out["total"]
    assert out["warnings"] and out["warnings"] == out["model"].poor_fits()
    err = capsys.readouterr().err
    for w in out["warnings"]:
        assert "r2" in w and "< 0" in w
        assert f"finepar: warning: {w}" in err.splitlines()
        assert f"warning: {w}" in Path(out["log_path"]).read_text()
    training.refit("nonsense", kind="loglinear")  # models fit: the same warnings
    assert capsys.readouterr().err.splitlines() == [f"finepar: warning: {w}"
                                                    for w in out["warnings"]]
    from finepar.cli.models import _model_tables
    assert "(!)" in _model_tables(out["model"])


def test_models_list_says_where_each_comes_from_and_what_applies(home, no_shipped, monkeypatch,
                                                                  tmp_path, pairs, rng, capsys):
    from finepar.cli import main
    monkeypatch.delenv(calibrate.NO_CALIBRATE_ENV, raising=False)
    _model(rng, "faraway", {"cpu": "X|c", "gpu": "X|g"}, pairs["split"].emulated).save(
        home / "models" / "faraway.json")
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "faraway" in out and " user " in out and "first run calibrates" in out
    assert f"user {home / 'models'}" in out
    monkeypatch.setenv(calibrate.NO_CALIBRATE_ENV, "1")
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "<- nearest" in out and "calibration off" in out
    sel = pairs["split"].selection
    _model(rng, "right-here", {"cpu": sel.cpu.key, "gpu": sel.gpu.key}, sel.emulated).save(
        home / "models" / "right-here.json")
    assert main(["models", "show"]) == 0
    out = capsys.readouterr().out
    assert "model right-here" in out and "applies to the devices in use: exact match" in out
    assert f"{home / 'models' / 'right-here.json'} (user)" in out
    assert main(["models", "show", "faraway"]) == 0
    assert "applies to the devices in use: no: trained on other devices" in \
        capsys.readouterr().out
