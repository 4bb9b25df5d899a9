"""benchmarks/nxbackend.py at a tiny scale on the emulated pair: every algorithm through every
installed backend, answers checked against NetworkX's, --render rebuilds the section, bad
options are one line before any work."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("networkx")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))


def section(md: Path) -> str:
    text = md.read_text()
    return text[text.index("<!-- BEGIN nxbackend -->"):text.index("<!-- END nxbackend -->")]


def test_every_algorithm_through_each_backend(tmp_path, monkeypatch):
    import inputs
    import nxbackend
    monkeypatch.setenv("FINEPAR_CACHE", str(tmp_path / "cache"))
    inputs._LAST.clear()
    out, md = tmp_path / "nx.json", tmp_path / "RESULTS.md"
    assert nxbackend.main(["--real", "none", "--scales", "8", "--repeats", "2",
                           "--json", str(out), "--md", str(md)]) == 0
    doc = json.loads(out.read_text())
    [row] = doc["rows"]
    assert row["nx_build"]["nodes"] == row["n"] and row["nx_build"]["seconds"] > 0
    undirected = set(nxbackend.ALGORITHMS) - {"weakly_connected_components"}
    assert set(row["algorithms"]) == undirected  # Graph500 graphs are undirected
    for name, recs in row["algorithms"].items():
        assert recs["networkx"]["status"] == "ok"
        fp = recs["finepar"]
        assert fp["status"] == "ok" and fp["agrees"] == "yes", name
        assert fp["first_s"] > 0 and fp["cached"]["n"] == 2
    assert set(doc["first_call"]) == set(nxbackend.ALGORITHMS) | {"pair_open_s"}
    assert all(t["met"] is None for t in doc["targets"])  # no scale 22 here
    md2 = tmp_path / "rendered.md"
    assert nxbackend.main(["--render", str(out), "--md", str(md2)]) == 0
    assert section(md2) == section(md)
    assert "| pagerank |" in section(md)


def test_bad_algorithm_is_one_line(tmp_path, capsys, monkeypatch):
    import nxbackend
    from common import main_of
    out = tmp_path / "out.json"
    monkeypatch.setattr(sys, "argv", ["nxbackend.py"])
    assert main_of(lambda: nxbackend.main(["--algorithms", "pagerank,nope",
                                           "--json", str(out)])) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("nxbackend.py: error: --algorithms: nope not among "
                   + ", ".join(nxbackend.ALGORITHMS))
    assert not out.exists()


def test_targets_merge_the_backends_of_separate_runs():
    import nxbackend
    st = {"median": 1.0, "min": 1.0, "max": 1.0, "n": 1, "values": [1.0]}

    def ok(median):
        return {"status": "ok", "first_s": 1.0, "cached": dict(st, median=median)}
    g = "graph500-s22-ef16-seed0"
    doc = {"rows": [{"graph": g, "algorithms": {"pagerank": {"networkx": ok(30.0)}}},
                    {"graph": g, "algorithms": {"pagerank": {"finepar": ok(1.0),
                                                             "graphblas": ok(2.0)}}}]}
    got = {t["target"]: (t["met"], t["detail"]) for t in nxbackend.targets(doc, None)}
    assert got["pagerank on graph500-s22, cached: >= 20x networkx"] == (True, "30.0x")
    assert got["pagerank on graph500-s22, cached: >= 3x graphblas"] == (False, "2.0x")
    assert got["bfs_layers on graph500-s22, cached: >= 10x networkx"][0] is None
