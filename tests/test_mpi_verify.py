"""Answers checked by range (finepar/mpi/verify.py), and several apps on one load
(finepar.mpi.runner.run_rows).

In one process (one rank, no mpiexec): Graph500's BFS rules accept scipy's BFS on a
symmetric and a directed graph and name the rule each planted fault breaks; the PageRank
residual is zero at the float64 fixed point and, divided by ``1 - d``, bounds the L1
error of perturbed scores. Under ``mpiexec -n P`` (P = 2, 3, slow): the same checks over
ranks, each rank on its own rows, agree with one rank's; and PageRank then BFS on one
load of a generated graph give the answers of separate runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse.csgraph as csgraph

pytest.importorskip("mpi4py")

from test_mpi import mpiexec  # noqa: E402

HERE = Path(__file__).resolve().parent


def scipy_bfs(graph, root: int):
    """Levels and parents of scipy's BFS (int32, -1 where unreached)."""
    from finepar.apps.bfs import bfs_levels
    a = graph.to_scipy()
    _, pred = csgraph.breadth_first_order(a, root, directed=True, return_predecessors=True)
    parent = np.where(pred < 0, -1, pred).astype(np.int32)
    parent[root] = root
    return bfs_levels(graph, root).astype(np.int32), parent


@pytest.fixture(scope="module")
def loaded():
    """One rank's rows (all of them) of a symmetric and a directed graph, and the graphs."""
    from finepar.io.graph500 import kronecker
    from finepar.mpi.comm import Communicator
    from finepar.mpi.load import load_rows
    comm = Communicator()
    directed = kronecker(9, seed=3, symmetric=False)
    return comm, {"symmetric": (kronecker(9, seed=1), load_rows(kronecker(9, seed=1), comm)),
                  "directed": (directed, load_rows(directed, comm))}


@pytest.mark.parametrize("kind", ["symmetric", "directed"])
def test_bfs_rules_accept_scipys_bfs(loaded, kind):
    from finepar.mpi.verify import check_bfs
    comm, graphs = loaded
    graph, rows = graphs[kind]
    root = int(np.argmax(np.diff(graph.indptr)))
    level, parent = scipy_bfs(graph, root)
    assert check_bfs(comm, rows, level, parent, root) == []
    assert check_bfs(comm, rows, level, parent, root, workers=3) == []


def _planted(graph, level, parent, root, fault: str):
    """A copy of (level, parent) with one fault planted."""
    level, parent = level.copy(), parent.copy()
    reached = np.flatnonzero((level > 0))
    deep = reached[np.argmax(level[reached])]
    if fault == "level":  # one vertex a level too deep: its parent is two levels up
        level[deep] += 1
    elif fault == "parent":  # a parent one level up that is no in-neighbour
        a = graph.to_scipy().tocsc()
        for v in reached:
            ins = set(a.indices[a.indptr[v]:a.indptr[v + 1]].tolist())
            up = [u for u in np.flatnonzero(level == level[v] - 1) if u not in ins]
            if up:
                parent[v] = up[0]
                break
    elif fault == "unreached":  # a reached vertex dropped: an edge leaves the reached set
        level[deep], parent[deep] = -1, -1
    elif fault == "stray":  # an unreached vertex keeps a parent
        out = np.flatnonzero(level < 0)
        parent[out[0]] = root
    elif fault == "root":
        parent[root] = parent[deep]
    return level, parent


@pytest.mark.parametrize("fault, rule", [
    ("level", "a parent is not exactly one level up"),
    ("parent", "a tree edge (parent, vertex) is not an edge of the graph"),
    ("unreached", "an edge leaves the reached set"),
    ("stray", "an unreached vertex has a level or parent"),
    ("root", "the root is not its own parent at level 0")])
def test_bfs_rules_name_the_fault(loaded, fault, rule):
    from finepar.mpi.verify import check_bfs
    comm, graphs = loaded
    graph, rows = graphs["directed"]
    root = int(np.argmax(np.diff(graph.indptr)))
    level, parent = _planted(graph, *scipy_bfs(graph, root), root, fault)
    assert rule in check_bfs(comm, rows, level, parent, root)


@pytest.mark.parametrize("kind", ["symmetric", "directed"])
def test_pagerank_residual_bounds_the_error(loaded, kind):
    from finepar.apps.pagerank import reference_pagerank
    from finepar.mpi.verify import pagerank_residual
    comm, graphs = loaded
    graph, rows = graphs[kind]
    exact = reference_pagerank(graph, 0.85, tol=1e-14)
    assert pagerank_residual(comm, rows, exact, 0.85) < 1e-12
    rng = np.random.default_rng(5)
    for scale in (1e-6, 1e-4, 1e-2):
        noisy = np.abs(exact + scale * rng.standard_normal(graph.n) / graph.n)
        noisy /= noisy.sum()
        r = pagerank_residual(comm, rows, noisy.astype(np.float32), 0.85)
        error = float(np.abs(noisy.astype(np.float32).astype(np.float64) - exact).sum())
        assert error <= r / 0.15 * (1 + 1e-9)
        assert r > 0.1 * error  # a residual, not a constant


def test_check_answer_reports_each_app(loaded):
    from finepar.apps.base import AppResult
    from finepar.apps.pagerank import reference_pagerank
    from finepar.mpi.verify import check_answer
    comm, graphs = loaded
    graph, rows = graphs["directed"]
    root = int(np.argmax(np.diff(graph.indptr)))
    level, parent = scipy_bfs(graph, root)
    ok = check_answer(comm, "bfs", rows, AppResult(level, 1, extra={"parent": parent,
                                                                    "root": root}))
    assert ok["passed"] and ok["detail"] == "every rule holds"
    level, parent = _planted(graph, level, parent, root, "unreached")
    bad = check_answer(comm, "bfs", rows, AppResult(level, 1, extra={"parent": parent,
                                                                     "root": root}))
    assert not bad["passed"] and "an edge leaves the reached set" in bad["detail"]
    uniform = np.full(graph.n, 1 / graph.n, np.float32)  # far from the fixed point
    pr = check_answer(comm, "pagerank", rows, AppResult(uniform, 1, extra={"damping": 0.85}))
    assert not pr["passed"] and pr["bound"] > 1e-4
    exact = reference_pagerank(graph, 0.85, tol=1e-14).astype(np.float32)
    assert check_answer(comm, "pagerank", rows, AppResult(exact, 1,
                                                          extra={"damping": 0.85}))["passed"]
    with pytest.raises(ValueError, match="no check by range for 'cc'"):
        check_answer(comm, "cc", rows, AppResult(level, 1))


def test_row_blocks_cover_every_row_once():
    from finepar.mpi.verify import row_blocks
    indptr = np.concatenate(([0], np.cumsum([5, 0, 0, 30, 1, 0, 7, 2])))
    spans = row_blocks(indptr, block=6)
    assert spans[0][0] == 0 and spans[-1][1] == 8
    assert all(a < b and b == c for (a, b), (c, _) in zip(spans, spans[1:]))
    assert row_blocks(np.zeros(1, np.int64)) == []


def test_answers_move_to_the_rows_order():
    from types import SimpleNamespace
    from finepar.mpi.verify import in_run_order
    perm = np.array([2, 0, 3, 1])  # input vertex v is perm[v] here
    rows = SimpleNamespace(perm=perm)
    level = np.array([0, 1, -1, 2], np.int32)
    parent = np.array([0, 0, -1, 1], np.int32)
    assert in_run_order(rows, level).tolist() == [1, 2, 0, -1]
    assert in_run_order(rows, parent, vertices=True).tolist() == [2, 0, 2, -1]
    assert in_run_order(SimpleNamespace(perm=None), level) is level


def test_one_app_releases_its_engine_before_the_next(loaded):
    import gc
    from finepar.mpi.engine import DistEngine
    from finepar.mpi.runner import run_rows
    comm, graphs = loaded
    _, rows = graphs["symmetric"]
    result, _ = run_rows("bfs", rows, comm=comm, gpu="emulate", memory="split")
    assert result.values[result.extra["root"]] == 0
    assert not any(isinstance(o, DistEngine) for o in gc.get_objects())


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")
@pytest.mark.parametrize("ranks", [2, 3])
def test_checks_and_one_load_over_ranks(tmp_path, ranks):
    proc = subprocess.run([mpiexec(), "-n", str(ranks), sys.executable,
                           str(HERE / "mpi_verify_cases.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads((tmp_path / "verify.json").read_text())
    assert got["ranks"] == ranks
    assert got["generated_rows_equal"] is True
    assert got["bfs_right"] == [] and got["bfs_directed_right"] == []
    assert "a tree edge (parent, vertex) is not an edge of the graph" in got["bfs_parent_fault"]
    assert "an edge leaves the reached set" in got["bfs_dropped"]
    assert got["pagerank_exact"] < 1e-12
    assert got["pagerank_noisy"] == pytest.approx(got["pagerank_noisy_one_rank"], rel=1e-9)
    assert got["directed_noisy"] == pytest.approx(got["directed_noisy_one_rank"], rel=1e-9)
    assert got["one_load_equal"] == {"pagerank": True, "bfs": True}
    assert got["finepar_bfs"] == [] and got["finepar_pagerank_bound"] < 1e-4


def test_check_asks_for_a_distributed_run(capsys):
    from finepar.cli import main
    assert main(["run", "bfs", "graph500:8", "--check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--check: checks a distributed run" in err[0]


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")
def test_command_line_checks_by_range_under_mpiexec(tmp_path):
    report = tmp_path / "report.json"
    proc = subprocess.run([mpiexec(), "-n", "2", sys.executable, "-m", "finepar", "run",
                           "pagerank", "graph500:10", "--gpu", "emulate", "--check", "--json",
                           str(report)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    chk = json.loads(report.read_text())["result"]["check"]
    assert chk["passed"] and chk["bound"] < 1e-4 and chk["residual"] > 0
    assert proc.stdout.count("check      passed: residual") == 1
    bad = subprocess.run([mpiexec(), "-n", "2", sys.executable, "-m", "finepar", "run", "cc",
                          "graph500:10", "--gpu", "emulate", "--check"],
                         capture_output=True, text=True, timeout=600)
    errors = [ln for ln in bad.stderr.splitlines() if ln.startswith("finepar: error:")]
    assert bad.returncode == 2 and len(errors) == 1 and "--check: cc's answer" in errors[0]
