"""The command line, end to end: devices, run, generate, compare, train, models."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import data_file, shared_graph
from finepar.cli import main
from finepar.apps.bfs import bfs_levels
from finepar.apps.cc import reference_components
from finepar.apps.pagerank import reference_pagerank


def run_cli(capsys, *argv):
    rc = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return rc, out, err


def test_devices_lists_and_selects(capsys):
    rc, out, err = run_cli(capsys, "devices")
    assert rc == 0
    assert "platform" in out and "selected: cpu =" in out and "memory mode (auto)" in out
    assert "between ranks (mpiexec): halos through host memory (the pair is emulated" in out
    rc, out, _ = run_cli(capsys, "devices", "--json", "-")
    d = json.loads(out)
    assert d["devices"] and d["selection"]["cpu"]["kind"] == "cpu"
    assert d["between_ranks"]["gpu_to_gpu"] is False


def test_device_times_flag_chooses_the_queues(capsys, tmp_path):
    """``--device-times``: a run on one device takes plain queues by default (its report
    says the kernels were not timed), ``batch`` times them from profiling events; the
    levels are right either way."""
    g = shared_graph("ca-GrQc.mtx")
    for flag, timed in ((), False), (("--device-times", "batch"), True):
        out_json, out_npy = tmp_path / f"bfs-{timed}.json", tmp_path / f"bfs-{timed}.npy"
        rc, out, err = run_cli(capsys, "run", "bfs", data_file("ca-GrQc.mtx"), "--devices",
                               "gpu", "--root", 3, "--json", out_json, "--output", out_npy,
                               *flag)
        assert rc == 0, err
        assert np.array_equal(np.load(out_npy), bfs_levels(g, 3))
        rep = json.loads(out_json.read_text())
        assert rep["timings"]["profile"] == ("batch" if timed else "none")
        assert ("kernels not timed" in out) != timed
        assert (sum(rep["timings"]["kernel"].values()) > 0) == timed
    rc, _, err = run_cli(capsys, "run", "bfs", data_file("ca-GrQc.mtx"), "--device-times",
                         "often")
    assert rc == 2 and "--device-times" in err and "often" in err


def test_run_pagerank_on_cnr_matches_reference(capsys, tmp_path):
    g = shared_graph("cnr-2000.mtx.gz")
    out_npy, out_json = tmp_path / "pr.npy", tmp_path / "pr.json"
    rc, out, err = run_cli(capsys, "run", "pagerank", data_file("cnr-2000.mtx.gz"), "--output",
                           out_npy, "--json", out_json, "--devices", "both")
    assert rc == 0, err
    pr = np.load(out_npy)
    assert np.abs(pr - reference_pagerank(g)).sum() < 1e-4
    rep = json.loads(out_json.read_text())
    assert rep["app"] == "pagerank" and rep["result"]["converged"]
    st = rep["plan"]["stats"]
    assert st["gpu_nnz"] + st["cpu_nnz"] == g.transpose().nnz
    assert rep["threshold_source"] == "tuner" and rep["tuning"]["trajectory"]
    assert {"gpu_variance", "cpu_variance", "matrix_variance"} <= set(rep["plan"]["stats"])
    assert rep["timings"]["kernel"]["gpu"] >= 0 and rep["throughput"]["nnz_per_s"] > 0
    assert "top vertices" in out and "EMULATED" in out


@pytest.mark.parametrize("flag, launches", [("auto", 1), ("none", None)])
def test_group_loop_flag(capsys, tmp_path, flag, launches):
    """``--group-loop``: a small PageRank on one device runs every iteration in one launch
    by default, and a launch or more an iteration with ``none``; both answers right."""
    g = shared_graph("USPowerGrid.mtx")
    out_npy, out_json = tmp_path / "pr.npy", tmp_path / "pr.json"
    rc, _, err = run_cli(capsys, "run", "pagerank", data_file("USPowerGrid.mtx"), "--devices",
                         "gpu", "--group-loop", flag, "--output", out_npy, "--json", out_json)
    assert rc == 0, err
    rep = json.loads(out_json.read_text())
    iters, got = rep["result"]["iterations"], rep["timings"]["launches"]["gpu"]
    assert got == launches if launches else got >= iters
    assert np.abs(np.load(out_npy) - reference_pagerank(g)).sum() < 1e-4


def test_run_bfs_cc_spmv_outputs(capsys, tmp_path):
    g = shared_graph("wiki-Vote.txt")
    src = data_file("wiki-Vote.txt")
    rc, out, _ = run_cli(capsys, "run", "bfs", src, "--root", 3, "-o", tmp_path / "lv.npy",
                         "--memory", "split", "-T", 8)
    assert rc == 0 and "reached" in out and "depth" in out
    np.testing.assert_array_equal(np.load(tmp_path / "lv.npy"),
                                  bfs_levels(g, g.vertex_index(3)))  # --root: input id
    assert np.array_equal(np.load(tmp_path / "lv.ids.npy"), g.ids)  # compacted SNAP ids
    rc, out, _ = run_cli(capsys, "run", "cc", src, "-o", tmp_path / "cc.npy", "--devices", "cpu")
    assert rc == 0 and "components" in out
    np.testing.assert_array_equal(np.load(tmp_path / "cc.npy"), reference_components(g))
    rc, out, _ = run_cli(capsys, "run", "spmv", src, "-o", tmp_path / "y.npy", "--repeat", 3,
                         "--grouping", "none")
    assert rc == 0 and "|y|_2" in out


@pytest.mark.parametrize("content,phrase", [
    ("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n", "malformed Matrix Market"),
    ("%%MatrixMarket matrix coordinate real general\n2 3 1\n1 1 1.0\n", "not square"),
    ("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 nan\n", "NaN"),
    ("%%MatrixMarket matrix coordinate real general\n3 3 0\n", "empty"),
])
def test_bad_input_is_one_line_and_writes_nothing(capsys, tmp_path, content, phrase):
    bad = tmp_path / "bad.mtx"
    bad.write_text(content)
    out_npy, out_json = tmp_path / "o.npy", tmp_path / "o.json"
    rc, out, err = run_cli(capsys, "run", "pagerank", bad, "-o", out_npy, "--json", out_json)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("finepar: error: ")
    assert "bad.mtx" in lines[0] and phrase in lines[0]
    assert not out_npy.exists() and not out_json.exists()
    assert list(tmp_path.iterdir()) == [bad]


def test_console_script_reports_errors_without_traceback(tmp_path):
    bad = tmp_path / "broken.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\nthis is not a size line\n")
    r = subprocess.run([sys.executable, "-m", "finepar", "run", "cc", str(bad)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "broken.mtx" in r.stderr


def test_generate_then_run(capsys, tmp_path):
    out = tmp_path / "g.npz"
    rc, text, _ = run_cli(capsys, "generate", "--scale", 9, "--seed", 4, "-o", out)
    assert rc == 0 and out.exists() and "512 vertices" in text
    rc, text, _ = run_cli(capsys, "run", "cc", out, "-T", 16)
    assert rc == 0
    # a scipy .npz, as README says: scipy reads the generated pattern graph itself
    import scipy.sparse as sp

    from finepar.io import load
    m, g = sp.load_npz(out), load(out)
    assert m.shape == (512, 512) and m.nnz == g.nnz and g.pattern and g.symmetric
    np.testing.assert_array_equal(m.indptr, g.indptr)
    np.testing.assert_array_equal(m.indices, g.indices)
    assert m.data.all()
    rc, _, err = run_cli(capsys, "generate", "--scale", 9, "-o", tmp_path / "g.txt")
    assert rc == 2 and "npz" in err


def test_compare_table_plot_and_json(capsys, tmp_path):
    png, js = tmp_path / "c.png", tmp_path / "c.json"
    rc, out, err = run_cli(capsys, "compare", "pagerank", data_file("ca-GrQc.mtx"), "--plot", png,
                           "--json", js, "--repeats", 1, "--oracle-step", 5, "-q")
    assert rc == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    d = json.loads(js.read_text())
    methods = [r["method"] for r in d["results"]]
    assert methods == ["cpu-plain", "gpu-plain", "cpu-only", "gpu-only", "adaptive", "dynamic",
                       "coarse-oracle", "finepar-original", "finepar"]
    assert all(r["correct"] for r in d["results"])
    # the single-device rows run FinePar's engine on one device: on an emulated pair the
    # finepar row is the cpu-only row's plan (the CPU alone, a work-item per row)
    rows = {r["method"]: r for r in d["results"]}
    assert rows["cpu-only"]["plan"] == rows["finepar"]["plan"]
    assert rows["cpu-plain"]["plan"]["executor"] == rows["cpu-only"]["plan"]["executor"]
    sweep = next(r for r in d["results"] if r["method"] == "coarse-oracle")["detail"]["sweep"]
    assert len(sweep) == 21 and sweep[0]["T_c"] == 0 and sweep[-1]["percent"] == 100
    assert d["single_device"] in ("cpu-only", "gpu-only")


@pytest.mark.parametrize("app", ["spmv", "bfs", "cc"])
def test_compare_other_apps_check_every_answer(capsys, app):
    rc, out, err = run_cli(capsys, "compare", app, data_file("rajat01.mtx"), "--repeats", 1,
                           "--methods", "cpu-only,gpu-only,dynamic,finepar", "--memory", "split")
    assert rc == 0, err
    assert "WRONG" not in out and "speedup" in out and "dynamic" in out


def test_train_and_models_commands(capsys, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("FINEPAR_HOME", str(home))
    monkeypatch.delenv("FINEPAR_MODELS", raising=False)
    monkeypatch.chdir(tmp_path)  # nothing goes to, or is read from, the current directory
    rc, out, err = run_cli(capsys, "train", "--recipe", "quick", "--platform", "here")
    assert rc == 0, err
    model = home / "models" / "here.json"
    assert model.exists() and (home / "training" / "here" / "measurements.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]
    progress = [ln for ln in err.splitlines() if " runs done; " in ln]  # stderr: no terminal
    assert len(progress) == 2 * 4 * 2 and progress[-1].count("768/768 runs done") == 1
    assert "768 runs: " in out and f"model written to {model}" in out
    assert str(home / "training" / "here" / "measurements.json") in out
    assert "Table 4" in out and "r2" in out
    rc, out, _ = run_cli(capsys, "models", "list")
    assert rc == 0 and "here" in out
    row = next(ln for ln in out.splitlines() if ln.startswith("here "))
    assert " user " in row and "<- exact" in row and str(model) in row
    rc, out, _ = run_cli(capsys, "models", "show", "here")
    assert rc == 0 and "Type 1" in out and "Type 2" in out and "Table 5" in out
    assert f"{model} (user)" in out and "applies to the devices in use: yes: exact" in out
    rc, out, _ = run_cli(capsys, "models", "show")  # the one matching the devices
    assert rc == 0 and "model here" in out
    rc, out, _ = run_cli(capsys, "run", "spmv", "graph500:10", "--repeat", 2, "--devices", "both")
    assert rc == 0 and "T_f from tuner" in out and f"model here ({model}, user)" in out
    rc, _, err = run_cli(capsys, "models", "show", "nope")
    assert rc == 2 and "no model named" in err


def test_compare_throttling_methods(capsys):
    """The throttling paper's Fig. 9 methods, checked like every method, with a legend."""
    rc, out, err = run_cli(capsys, "compare", "pagerank", data_file("wiki-Vote.txt"),
                           "--repeats", 1, "--methods", "gpu-only,fig9", "--memory", "split")
    assert rc == 0, err
    for m in ("org", "org+r", "cf", "cf-q", "sj", "sj-q"):
        assert f"\n{m} " in out
    assert "WRONG" not in out and "columns:" in out


def test_unconverged_at_the_default_cap_exits_3_unless_the_cap_was_asked_for(capsys, tmp_path):
    """An answer stopped short of its tolerance is impossible to miss: one line and exit
    status 3, the answer still written; a user's --max-iter is the user's choice."""
    g, out = data_file("ca-GrQc.mtx"), tmp_path / "pr.npy"
    rc, text, err = run_cli(capsys, "run", "pagerank", g, "--tol", "1e-30", "-o", out)
    assert rc == 3 and "NOT converged" in text and out.exists()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "did not converge in 100 iterations" in lines[0]
    assert "--max-iter" in lines[0]
    rc, text, err = run_cli(capsys, "run", "pagerank", g, "--tol", "1e-30", "--max-iter", 7)
    assert rc == 0 and err == "" and "NOT converged" in text
    rc, _, err = run_cli(capsys, "run", "pagerank", g, "-q")
    assert rc == 0 and err == ""


@pytest.mark.parametrize("app", ["pagerank", "bfs", "spmv"])
def test_max_iter_help_says_its_default(capsys, app):
    with pytest.raises(SystemExit):
        from finepar.cli import build_parser
        build_parser().parse_args(["run", app, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--max-iter INT iteration cap (>= 1; default " in text


def test_report_text_is_titled_by_the_call_that_made_it(capsys, pairs):
    import finepar
    g = shared_graph("ca-GrQc.mtx")
    _, report = finepar.pagerank(g, pair=pairs["shared"])
    assert report.text().startswith("finepar.pagerank on ")
    rc, text, _ = run_cli(capsys, "run", "pagerank", data_file("ca-GrQc.mtx"))
    assert rc == 0 and text.startswith("finepar run pagerank on ")


def test_an_emulated_pair_runs_the_cpu_alone_by_default_and_says_why(capsys, tmp_path):
    """No GPU: the gpu role would share the CPU's cores, so FinePar's default (devices
    auto) runs the CPU alone and the report names the reason; --devices both splits."""
    g = data_file("ca-GrQc.mtx")
    rc, out, err = run_cli(capsys, "run", "pagerank", g, "--json", tmp_path / "a.json")
    rep = json.loads((tmp_path / "a.json").read_text())
    assert rc == 0 and rep["devices"]["emulated"]
    assert rep["plan"]["stats"]["gpu_nnz"] == 0 and rep["plan"]["stats"]["cpu_rows"] > 0
    assert rep["threshold_source"].startswith("the CPU alone: no GPU")
    assert "T_f from the CPU alone: no GPU" in out
    rc, out, err = run_cli(capsys, "run", "pagerank", g, "--devices", "both", "--json",
                           tmp_path / "b.json")
    assert rc == 0 and json.loads((tmp_path / "b.json").read_text())["threshold_source"] == "tuner"


def test_compare_on_an_emulated_pair_says_finepars_choice(capsys, tmp_path):
    js = tmp_path / "c.json"
    rc, out, err = run_cli(capsys, "compare", "spmv", data_file("ca-GrQc.mtx"), "--methods",
                           "cpu-only,finepar", "--repeats", 1, "--json", js, "-q")
    assert rc == 0, err
    d = json.loads(js.read_text())
    assert d["choice"].startswith("the CPU alone: no GPU")
    fp = next(r for r in d["results"] if r["method"] == "finepar")
    assert fp["split"] == "all rows on cpu (FinePar's choice)" and fp["correct"]
    rc, out, _ = run_cli(capsys, "compare", "spmv", data_file("ca-GrQc.mtx"), "--methods",
                         "finepar", "--repeats", 1)
    assert "finepar's choice: the CPU alone: no GPU" in out


def test_an_unreachable_tolerance_says_why(capsys, tmp_path):
    """HITS whose change stalls at float32's rounding: exit 3, and the line says why."""
    rc, _, err = run_cli(capsys, "run", "hits", data_file("wiki-Vote.txt"), "--tol", "1e-12",
                         "-q")
    assert rc == 3 and "float32's rounding" in err and len(err.strip().splitlines()) == 1
