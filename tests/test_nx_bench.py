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


@pytest.mark.slow  # the benchmark script end to end
def test_every_algorithm_through_each_backend(tmp_path, monkeypatch):
    import inputs
    import nxbackend

    from finepar.nx import policy
    monkeypatch.setenv("FINEPAR_CACHE", str(tmp_path / "cache"))
    inputs._LAST.clear()
    out, md = tmp_path / "nx.json", tmp_path / "RESULTS.md"
    assert nxbackend.main(["--real", "none", "--scales", "8", "--repeats", "2",
                           "--backends", "networkx,finepar,finepar-forced,graphblas",
                           "--json", str(out), "--md", str(md)]) == 0
    doc = json.loads(out.read_text())
    [row] = doc["rows"]
    assert row["nx_build"]["nodes"] == row["n"] and row["nx_build"]["seconds"] > 0
    undirected = set(nxbackend.ALGORITHMS) - {"weakly_connected_components"}
    assert set(row["algorithms"]) == undirected  # Graph500 graphs are undirected
    for name, recs in row["algorithms"].items():
        assert recs["networkx"]["status"] == "ok"
        for backend in ("finepar", "finepar-forced"):
            fp = recs[backend]
            assert fp["status"] == "ok" and fp["agrees"] == "yes", (name, backend)
            # at least --repeats; a call this fast repeated up to --min-time-s, each after
            # a NetworkX call of its own
            assert fp["first_s"] > 0 and 2 <= fp["cached"]["n"] <= nxbackend.MAX_CALLS
            assert fp["paired_networkx"]["cached"]["n"] == fp["cached"]["n"]
            assert fp["warnings"]["cached"] == 0, fp["warnings"]  # a cached call is silent
        # where each ran: FinePar when forced, else by the size; is_connected may answer
        # from the first node's component at once
        want = ("finepar" if row["entries"] >= policy.min_entries(name, doc["pair_kind"])
                else "networkx")
        once = {"at once"} if name == "is_connected" else set()
        assert set(recs["finepar"]["ran"].split("+")) <= {want} | once, name
        assert set(recs["finepar-forced"]["ran"].split("+")) <= {"finepar"} | once, name
    assert set(doc["first_call"]) == set(nxbackend.ALGORITHMS) | {"pair_open_s"}
    assert all(t["met"] is None for t in doc["targets"][:4])  # no scale 22 here
    assert doc["targets"][4]["target"].startswith('backend="finepar" at most 1.1x')
    md2 = tmp_path / "rendered.md"
    assert nxbackend.main(["--render", str(out), "--md", str(md2)]) == 0
    assert section(md2) == section(md)
    assert "| pagerank |" in section(md)


def test_crossover_fit():
    """The fitted size: just above the largest graph on which the forced first call lost
    (by more than NetworkX's own dispatch), none where it lost on the largest."""
    import nxbackend

    def row(graph, entries, t_nx, first, cached=None):
        st = {"median": t_nx, "min": t_nx, "max": t_nx, "n": 1, "values": [t_nx]}
        return {"graph": graph, "entries": entries, "nnz": entries, "algorithms": {
            "bfs_layers": {"networkx": {"status": "ok", "cached": st},
                           "finepar-forced": {"status": "ok", "first_s": first,
                                              "cached": dict(st, min=cached or first)}}}}
    doc = {"rows": [row("a", 100, 1e-3, 5e-3), row("b", 1000, 4e-3, 3e-3),
                    row("c", 500, 2e-3, 3e-3), row("d", 5000, 1e-5, 5e-5),
                    row("e", 9000, 0.1, 0.05)]}
    fit = nxbackend.crossover(doc)["bfs_layers"]
    assert fit["min_entries"] == 1000 and fit["lost_first"] == ["a", "c"]
    doc["rows"].append(row("f", 20000, 0.1, 0.2))
    assert nxbackend.crossover(doc)["bfs_layers"]["min_entries"] is None


@pytest.mark.slow  # the benchmark script end to end
def test_crossover_run(tmp_path, monkeypatch):
    import inputs
    import nxbackend
    monkeypatch.setenv("FINEPAR_CACHE", str(tmp_path / "cache"))
    inputs._LAST.clear()
    out, md = tmp_path / "x.json", tmp_path / "RESULTS.md"
    assert nxbackend.main(["--crossover", "--real", "none", "--scales", "7", "--grids", "9",
                           "--algorithms", "pagerank,bfs_layers", "--repeats", "1",
                           "--first-repeats", "1", "--json", str(out), "--md", str(md)]) == 0
    doc = json.loads(out.read_text())
    assert [r["graph"] for r in doc["rows"]] == ["graph500-s7-ef16-seed0", "grid-9x9"]
    assert doc["rows"][1]["entries"] == 2 * 2 * 9 * 8
    for name in ("pagerank", "bfs_layers"):
        fit = doc["crossover"][name]
        assert len(fit["points"]) == 2
        assert fit["min_entries"] is None or fit["min_entries"] in (0, *(
            p["entries"] for p in fit["points"]))
    assert "Crossover (" in section(md)


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
