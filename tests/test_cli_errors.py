"""A newcomer's mistakes: every bad option or output path is one line, exit status 2,
detected before any work, and leaves no file; graphs that once crashed the tuner run."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from finepar.cli import main
from finepar.io import load
from finepar.apps.bfs import bfs_levels
from conftest import data_file


def run_cli(capsys, *argv):
    rc = main(list(map(str, argv)))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def path3(tmp_path):
    """The 3-vertex path (SNAP ids 1, 2, 3) that crashed the tuner's profiling."""
    p = tmp_path / "path3.txt"
    p.write_text("1 2\n2 3\n")
    return p


BAD_OPTIONS = [
    (("run", "pagerank", "{g}", "--threshold", "-5"), "--threshold"),
    (("run", "pagerank", "{g}", "--damping", "2"), "--damping"),
    (("run", "pagerank", "{g}", "--damping", "0"), "--damping"),
    (("run", "pagerank", "{g}", "--max-iter", "-3"), "--max-iter"),
    (("run", "pagerank", "{g}", "--max-iter", "0"), "--max-iter"),
    (("run", "pagerank", "{g}", "--tol", "-1"), "--tol"),
    (("run", "bfs", "{g}", "--frontier-fraction", "5"), "--frontier-fraction"),
    (("run", "bfs", "{g}", "--root", "99"), "--root 99"),
    (("run", "bfs", "{g}", "--root", "-1"), "--root -1"),
    (("run", "bfs", "{g}", "--root", "0"), "--root 0"),  # SNAP ids start at 1 here
    (("run", "spmv", "{g}", "--repeat", "0"), "--repeat"),
    (("compare", "pagerank", "{g}", "--repeats", "0"), "--repeats"),
    (("compare", "pagerank", "{g}", "--methods", "bogus"), "--methods"),
    (("compare", "pagerank", "{g}", "--oracle-step", "7"), "--oracle-step"),
    (("run", "pagerank", "{g}", "-o", "{tmp}"), "--output"),
    (("run", "pagerank", "{g}", "-o", "{tmp}/x.txt"), "--output"),
    (("run", "pagerank", "{g}", "-o", "{tmp}/missing/x.npy"), "does not exist"),
    (("run", "pagerank", "{g}", "--json", "{tmp}/missing/r.json"), "--json"),
    (("compare", "pagerank", "{g}", "--plot", "{tmp}/p.jpg"), "--plot"),
    (("generate", "--scale", "0", "-o", "{tmp}/g.npz"), "--scale"),
    (("generate", "--scale", "4", "-o", "{tmp}/g.txt"), "--output"),
    (("generate", "--scale", "4", "-o", "{tmp}/nodir/g.npz"), "does not exist"),
]


@pytest.mark.parametrize("argv,needle", BAD_OPTIONS, ids=[" ".join(a[0][:1] + a[0][3:])
                                                          for a in BAD_OPTIONS])
def test_bad_option_is_one_line_exit_2(capsys, tmp_path, path3, argv, needle):
    before = set(os.listdir(tmp_path))
    rc, out, err = run_cli(capsys, *(a.format(g=path3, tmp=tmp_path) for a in argv))
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("finepar: error:"), err
    assert needle in lines[0]
    assert "Traceback" not in err and out == ""
    assert set(os.listdir(tmp_path)) == before  # no output, no temporary file


def test_read_only_output_is_kept_unless_forced(capsys, tmp_path, path3):
    target = tmp_path / "pr.npy"
    np.save(target, np.zeros(1))
    target.chmod(stat.S_IRUSR | stat.S_IRGRP)
    rc, out, err = run_cli(capsys, "run", "pagerank", path3, "-o", target)
    assert rc == 2 and "read-only" in err and "--force" in err
    assert np.load(target).shape == (1,)
    rc, out, err = run_cli(capsys, "run", "pagerank", path3, "-o", target, "--force", "-q")
    assert rc == 0, err
    assert np.load(target).shape == (3,)


def test_json_dash_means_standard_output(capsys, tmp_path, path3, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli(capsys, "run", "pagerank", path3, "--json", "-")
    assert rc == 0 and not (tmp_path / "-").exists()
    import json
    assert json.loads(out)["app"] == "pagerank"


@pytest.mark.parametrize("app", ["pagerank", "bfs", "cc", "spmv"])
def test_graphs_that_crashed_the_tuner_run(capsys, tmp_path, path3, app):
    """A 3-vertex path, and a graph whose every 10th row (the profiling sample) is empty."""
    sparse = tmp_path / "tenth.txt"
    # rows 0, 10, 20, ... have no out-edges; the others point to their successor
    sparse.write_text("".join(f"{i} {i + 1}\n" for i in range(1, 60) if i % 10))
    for path in (path3, sparse):
        rc, out, err = run_cli(capsys, "run", app, path, "--max-iter", "50")
        assert rc == 0, err
    rc, out, err = run_cli(capsys, "compare", app, path3, "--repeats", "1", "-q")
    assert rc == 0, err


def test_root_takes_the_input_ids(capsys, tmp_path, path3):
    """SNAP ids are compacted; --root names the input's id and the report shows both."""
    rc, out, err = run_cli(capsys, "run", "bfs", path3, "--root", 2, "-o", tmp_path / "lv.npy")
    assert rc == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "lv.npy"), [-1, 0, 1])
    assert "root       2 (row 1)" in out


def test_default_root_is_the_highest_degree_vertex(capsys, tmp_path):
    p = tmp_path / "star.txt"
    p.write_text("0 1\n5 0\n5 1\n5 2\n5 3\n5 4\n")
    rc, out, err = run_cli(capsys, "run", "bfs", p, "-o", tmp_path / "lv.npy")
    assert rc == 0, err
    g = load(p)
    np.testing.assert_array_equal(np.load(tmp_path / "lv.npy"), bfs_levels(g, 5))


@pytest.mark.parametrize("command", ["run", "compare"])
def test_a_size_line_of_mostly_isolated_vertices_is_refused_before_any_work(
        capsys, tmp_path, command):
    """93 bytes declaring 200,000,000 vertices and 3 entries: one line naming the declared
    size and the option that allows it (PageRank once ran 146 s and wrote 800 MB)."""
    path = tmp_path / "huge.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n"
                    "200000000 200000000 3\n1 2 1.0\n2 3 1.0\n3 1 1.0\n")
    before = set(os.listdir(tmp_path))
    out_args = ("-o", tmp_path / "pr.npy") if command == "run" else ()
    rc, out, err = run_cli(capsys, command, "pagerank", path, *out_args)
    assert rc == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "200,000,000 vertices" in lines[0] and "3 stored" in lines[0]
    assert "--allow-isolated" in lines[0]
    assert set(os.listdir(tmp_path)) == before


def test_isolated_vertex_check_bounds_and_its_option():
    from finepar.inputs import memory_check
    from finepar.errors import UsageError
    from finepar.device import select_pair
    sel = select_pair(None, "emulate")
    check = memory_check("bfs", sel)
    check(10_000_000, 3)  # at the vertex bound: allowed
    check(20_000_000, 20_000)  # 1,000 vertices an entry: allowed
    with pytest.raises(UsageError, match="20,000,001 vertices for 20,000 stored"):
        check(20_000_001, 20_000)
    memory_check("bfs", sel, allow_isolated=True)(20_000_001, 3)


def test_a_sub_gib_memory_limit_shows_its_numbers():
    from finepar.inputs import memory_check
    from finepar.engine import EngineOptions
    from finepar.errors import UsageError
    from finepar.device import select_pair
    sel = select_pair(None, "emulate")
    with pytest.raises(UsageError) as exc:
        memory_check("pagerank", sel, EngineOptions(gpu_memory=1 << 20))(1 << 20, 1 << 22)
    text = str(exc.value)
    assert "0.0 GiB" not in text and "1.0 MiB (--gpu-memory)" in text


def test_an_explicit_schedule_the_cpu_alone_cannot_use_is_refused_before_any_work(
        capsys, tmp_path, path3):
    rc, out, err = run_cli(capsys, "run", "spmv", path3, "--devices", "cpu", "--schedule", "cf",
                           "-o", tmp_path / "y.npy")
    lines = err.strip().splitlines()
    assert rc == 2 and out == "" and len(lines) == 1, err
    assert "--schedule cf" in lines[0] and "--devices cpu" in lines[0]
    assert not (tmp_path / "y.npy").exists()


@pytest.mark.parametrize("schedule,remap", [("sj", "none"), ("auto", "degree"), ("cf", "dbwp")])
def test_an_explicit_schedule_is_refused_where_the_plan_gives_the_gpu_no_rows(
        pairs, schedule, remap):
    """Once dropped silently when the tuner gave every row to the CPU."""
    import finepar
    from finepar.errors import UsageError
    from finepar.partition import fine_grained, single_device
    from finepar.throttle.plan import ThrottleOptions
    g = load(data_file("ca-GrQc.mtx"))
    cpu_only = single_device(np.diff(g.indptr), "cpu")  # as a tuner's T_f below every row
    assert "gpu" not in cpu_only.active_roles()
    with pytest.raises(UsageError, match="gives the GPU no rows"):
        finepar.run("spmv", g, pair=pairs["shared"], plan=cpu_only,
                    throttle=ThrottleOptions(schedule=schedule, remap=remap))
    # the same options on a plan with GPU rows take effect
    both = fine_grained(np.diff(g.indptr), 8)
    _, rep = finepar.run("spmv", g, pair=pairs["shared"], plan=both,
                         throttle=ThrottleOptions(schedule=schedule, remap=remap))
    if schedule != "auto":
        assert rep.plan["throttle"]["schedule"] == schedule
    if remap != "none":
        assert rep.plan["remap"]["kind"] == remap
