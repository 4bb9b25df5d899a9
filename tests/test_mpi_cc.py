"""Connected components across ranks (finepar.apps.ccranks) under ``mpiexec -n P`` on the
emulated pair.

One ``mpiexec`` per rank count (1, 2, 3, 4) runs every case (``tests/mpi_cc_cases.py``):
graphs whose components span the ranks (a giant, a path that crosses the ranks at every
edge, small components tied through ghosts; one graph with no giant at all) in both
memory modes, and Graph500 graphs generated rank by rank. The labels must equal
scipy.sparse.csgraph's components named by their smallest vertex; each rank's counts of
what crossed the ranks must equal counts made here from scipy's components of each
rank's own subgraph, and stay below one round of the every-label scheme.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csgraph, csr_matrix

pytest.importorskip("mpi4py")

from finepar.apps.ccranks import PEEK_RECORDS, PROBES  # noqa: E402
from test_mpi import launch  # noqa: E402  (one mpiexec of a cases runner)

HERE = Path(__file__).resolve().parent
WORKER = HERE / "mpi_cc_cases.py"
RANKS = (1, 2, 3, 4)
CASES = ([{"id": f"spanning-{mem}", "graph": "spanning.npz", "memory": mem}
          for mem in ("shared", "split")]
         + [{"id": "nogiant-split", "graph": "nogiant.npz", "memory": "split"},
            {"id": "nogiant-overflow", "graph": "nogiant.npz", "memory": "shared",
             "min_records": 1},
            {"id": "nogiant-peek-gpu-exchange", "graph": "nogiant.npz", "memory": "split",
             "peek_records": 3, "exchange": "gpu"},
            {"id": "spanning-gpu-exchange", "graph": "spanning.npz", "memory": "split",
             "exchange": "gpu"},
            {"id": "bridged-split", "graph": "bridged.npz", "memory": "split"},
            {"id": "g500-10-gpu-exchange", "graph": "graph500:10", "memory": "shared",
             "exchange": "gpu"},
            {"id": "g500-9-split", "graph": "graph500:9", "memory": "split"},
            {"id": "g500-10-shared", "graph": "graph500:10", "memory": "shared"}])


def _undirected(n: int, src, dst, name: str):
    from finepar.io import from_csr
    a = csr_matrix((np.ones(len(src), np.float32), (src, dst)), shape=(n, n))
    a = ((a + a.T) > 0).astype(np.float32).tocsr()
    a.setdiag(0)
    a.eliminate_zeros()
    a.sort_indices()
    return from_csr(a.indptr, a.indices, a.data, n, name=name, pattern=True)


def spanning_graph():
    """600 vertices, shuffled so that every rank's range holds a part of everything: a
    giant (random edges over 240 vertices), a 60-vertex path, pairs of small components
    tied across ranks only through ghosts (u1-v1, u2-v1, u2-v2 patterns), isolated
    vertices."""
    rng = np.random.default_rng(5)
    n = 600
    perm = rng.permutation(n)
    src, dst = list(rng.integers(0, 240, 720)), list(rng.integers(0, 240, 720))
    path = np.arange(240, 300)
    src += list(path[:-1])
    dst += list(path[1:])
    for base in range(300, 420, 4):  # u1-v1, u2-v1, u2-v2
        src += [base, base + 1, base + 1]
        dst += [base + 2, base + 2, base + 3]
    src += list(rng.integers(420, 520, 60))
    dst += list(rng.integers(420, 520, 60))  # small random pieces; 520.. isolated
    return _undirected(n, perm[src], perm[dst], "spanning")


def nogiant_graph():
    """500 vertices in paths of 5 and triangles, shuffled: no component dominates any
    rank, so most cross edges are between small components."""
    rng = np.random.default_rng(11)
    n = 500
    perm = rng.permutation(n)
    src, dst = [], []
    for base in range(0, 250, 5):
        src += list(range(base, base + 4))
        dst += list(range(base + 1, base + 5))
    for base in range(250, 490, 3):
        src += [base, base + 1, base + 2]
        dst += [base + 1, base + 2, base]
    return _undirected(n, perm[src], perm[dst], "nogiant")


def bridged_graph():
    """300 vertices: three blobs of random edges (0-79, 100-179, 200-279, about one rank's
    giant each at three ranks), the second and third tied only through vertex 42, in the
    first blob's range but outside it (40-41-42 no blob edges); 40 and 41 attach to one
    of them each, with smaller ids than 42's: only the giants' `links` word of a rank
    outside its giant joins them (the smallest attached roots, the gmin words, differ)."""
    rng = np.random.default_rng(3)
    src, dst = [], []
    for base in (0, 100, 200):
        ends = [v for v in range(base, base + 80) if v not in (40, 41, 42)]
        src += list(rng.choice(ends, 240))
        dst += list(rng.choice(ends, 240))
    src += [40, 41, 42, 42]
    dst += [150, 250, 160, 260]
    return _undirected(300, np.array(src), np.array(dst), "bridged")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from finepar.io import save
    from finepar.io.graph500 import kronecker
    d = tmp_path_factory.mktemp("mpi-cc")
    graphs = {"spanning.npz": spanning_graph(), "nogiant.npz": nogiant_graph(),
              "bridged.npz": bridged_graph(),
              "graph500:9": kronecker(9), "graph500:10": kronecker(10)}
    for name in ("spanning.npz", "nogiant.npz", "bridged.npz"):
        save(graphs[name], d / name, compressed=False)
    return d, graphs


_RUNS: dict = {}


def distributed(ranks: int, inputs) -> Path:
    """Every case on ``ranks`` ranks, once (one mpiexec); the folder of answers."""
    if ranks not in _RUNS:
        _RUNS[ranks] = launch(WORKER, inputs[0], ranks, CASES, timeout=600)
    return _RUNS[ranks]


def expected_counts(graph, bounds, giant_roots) -> list[dict]:
    """Each rank's counts, from scipy: its subgraph's components, its giant (the component
    holding the reported giant root), its ghosts, the cross edges between two
    components outside their ranks' giants (the records, and their number by their
    ghosts' ranks), the cross entries of its rows
    outside (``hook_entries``) and inside (``giant_entries``) its giant, and its vertices
    with more than ROUNDS edges in its subgraph: all of them (``listable``) and those
    outside its giant (``listed_least``), its subgraph's entries and largest degree."""
    from finepar.apps.afforest import ROUNDS
    a = csr_matrix((np.ones(graph.nnz), graph.indices, graph.indptr), shape=(graph.n,) * 2)
    P = len(bounds) - 1
    root = np.empty(graph.n, np.int64)
    for r in range(P):
        lo, hi = bounds[r], bounds[r + 1]
        _, lab = csgraph.connected_components(a[lo:hi, lo:hi], directed=False)
        root[lo:hi] = lab + r * graph.n  # distinct across ranks
    in_giant = np.zeros(graph.n, bool)
    for r in range(P):
        lo, hi = bounds[r], bounds[r + 1]
        in_giant[lo:hi] = root[lo:hi] == root[giant_roots[r]]
    owner = np.searchsorted(bounds, np.arange(graph.n), side="right") - 1
    rows = np.repeat(np.arange(graph.n), np.diff(graph.indptr))
    cols = graph.indices
    cross = owner[rows] != owner[cols]
    local_deg = np.bincount(rows[~cross], minlength=graph.n)
    out = []
    for r in range(P):
        lo, hi = bounds[r], bounds[r + 1]
        mine = cross & (owner[rows] == r)
        ghosts = np.unique(cols[mine])
        asked_of_me = [np.unique(cols[cross & (owner[rows] == a) & (owner[cols] == r)]).size
                       for a in range(P)]
        out.append({"ghosts": int(ghosts.size), "cross_edges": int(mine.sum()),
                    "boundary_rows": int(np.unique(rows[mine]).size),
                    "bit_words_sent": int(sum(-(-c // 32) for c in asked_of_me)),
                    "records": int((mine & ~in_giant[rows] & ~in_giant[cols]).sum()),
                    "records_to": np.bincount(owner[cols[mine & ~in_giant[rows]
                                                         & ~in_giant[cols]]],
                                              minlength=P).tolist(),
                    "hook_entries": int((mine & ~in_giant[rows]).sum()),
                    "giant_entries": int((mine & in_giant[rows]).sum()),
                    "listable": int((local_deg[lo:hi] > ROUNDS).sum()),
                    "local_entries": int(local_deg[lo:hi].sum()),
                    "largest_degree": int(local_deg[lo:hi].max(initial=0)),
                    "listed_least": int(((local_deg[lo:hi] > ROUNDS)
                                         & ~in_giant[lo:hi]).sum())})
    return out


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")
@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_labels_and_exchange_counts(ranks, case, inputs):
    from finepar.apps.cc import reference_components
    out = distributed(ranks, inputs)
    err = out / f"{case['id']}.error"
    assert not err.exists(), err.read_text()
    graph = inputs[1][case["graph"]]
    want = reference_components(graph)
    got = np.load(out / f"{case['id']}.npy")
    np.testing.assert_array_equal(got, want)
    info = json.loads((out / f"{case['id']}.json").read_text())
    assert info["algorithm"] == "afforest"
    assert info["components"] == np.unique(want).size
    report = json.loads((out / f"{case['id']}.report.json").read_text())
    bounds = report["partition"]["bounds"]
    per = info["ranks"]
    assert len(per) == ranks
    if ranks == 1:
        assert per[0]["rounds"] == 0 and per[0]["cross_edges"] == 0
        return
    spans = np.unique(want[np.searchsorted(bounds, np.arange(graph.n), side="right") - 1
                           != np.searchsorted(bounds, want, side="right") - 1]).size
    assert spans > 0  # some component's smallest vertex is on another rank
    expect = expected_counts(graph, bounds, [p["giant_root"] for p in per])
    total_records = sum(e["records"] for e in expect)
    for r, (p, e) in enumerate(zip(per, expect)):
        for key in ("ghosts", "cross_edges", "boundary_rows", "bit_words_sent", "records",
                    "hook_entries"):
            assert p[key] == e[key], (r, key)
        # the cross kernels read each cross entry at most once: the hooking those of the
        # rows outside the giant, the giant's rows only where the sample missed a link,
        # and a sample of at most PROBES per other rank
        assert p["giant_row_entries"] == (0 if p["probe_found"] else e["giant_entries"])
        assert p["hook_entries"] + p["giant_row_entries"] <= p["cross_edges"]
        assert p["probe_entries"] == min(p["cross_edges"], PROBES * (ranks - 1))
        # the final hooking lists no vertex that the sampling linked along every edge
        assert e["listed_least"] <= p["hooked"] <= e["listable"], r
        assert p["times"] == ranks
        shape = {"listed": p["hooked"], "local_entries": e["local_entries"],
                 "largest_degree": e["largest_degree"]}
        assert all(q["shapes"][r] == shape for q in per), r  # every rank's rank-r line
        assert p["records_gathered"] == total_records
        # a first buffer of a sixteenth of the cross edges overflows, and the hook reruns
        # once (in the warm-up run: the timed run finds the grown buffer)
        small = case.get("min_records") and e["records"] > e["cross_edges"] // 16
        assert p["records_grown"] == (1 if small else 0) and p["hooks"] == 1, r
        assert p["rounds"] == 3  # the giant bits, the sizes, the records
        # the bits GPU to GPU where asked (PoCL: the path's emulation), else the host
        assert p["bits_path"] == ("emulated" if case.get("exchange") == "gpu" else "host")
        # host waits: the bits (their read, or their kernel before the peers' copies),
        # each hooking with its records' count and first records, the giant's rows where
        # the sample missed a link, the records past the first read (Afforest's giant is
        # found on the device: none for its sample)
        peek = case.get("peek_records", PEEK_RECORDS)
        assert p["waits"] == 1 + p["hooks"] + (not p["probe_found"]) + (
            p["records"] > peek), r
        assert p["records_to"] == e["records_to"], r
        assert p["bytes_sent"] == 4 * p["bit_words_sent"] + 4 * (ranks - 1) * (
            2 + 3 * ranks + 4 * p["records"])
        if case["graph"].startswith("graph500"):  # below one round of every label
            assert p["bytes_sent"] < 4 * (bounds[r + 1] - bounds[r]) * (ranks - 1)
    if case.get("min_records"):  # the case overflows somewhere
        assert any(p["records_grown"] for p in per)
    found = [p["probe_found"] for p in per]
    if case["graph"].startswith("graph500"):  # the sample finds the giants' direct links
        assert all(found)
    elif case["graph"] == "nogiant.npz":  # none there: every giant edge was looked at
        assert not any(found)
    rep_ranks = report["ranks"]
    assert all(r["gathers"]["count"] == 3 for r in rep_ranks)


def test_rank_rows_split_into_subgraph_and_cross_edges():
    """split_rows against scipy's submatrix: the subgraph (local ids), each row's cross
    entries and their columns, for every range of a 3-way cut (empty rows included)."""
    from finepar.apps.ccranks import split_rows
    g = spanning_graph()
    a = csr_matrix((np.ones(g.nnz), g.indices, g.indptr), shape=(g.n, g.n))
    for lo, hi in ((0, 150), (150, 451), (451, 600)):
        local, xcount, cross = split_rows(g, lo, hi)
        sub = a[lo:hi, lo:hi].tocsr()
        sub.sort_indices()
        np.testing.assert_array_equal(local.indptr, sub.indptr)
        np.testing.assert_array_equal(local.indices, sub.indices)
        rest = a[lo:hi].tocoo()
        far = (rest.col < lo) | (rest.col >= hi)
        rest = csr_matrix((rest.data[far], (rest.row[far], rest.col[far])),
                          shape=(hi - lo, g.n))
        rest.sort_indices()
        np.testing.assert_array_equal(xcount, np.diff(rest.indptr))
        np.testing.assert_array_equal(cross, rest.indices)
        assert local.symmetric and (sub != sub.T).nnz == 0


def _hand_made_gather():
    """Two ranks' parts (vertices 0-9 and 10-19): giants 2 and 10 linked only through
    root 5's attachment to both (rank 0's links), recorded roots 7 (rank 0) and 15
    (rank 1) tied by the cross edge 8-18, root 5 and rank 1's root 16 by the edge 6-11;
    root 3 attached to giant 10 and root 12 to giant 2 (the gmin words)."""
    big = 2**31 - 1
    # giant root, links (P), gmin (P), records by ghost rank (P), records
    # (root, vertex, ghost, mask)
    r0 = np.array([2, 0, 0b01, big, 3, 0, 2, 7, 8, 18, 0, 5, 6, 11, 0b11], np.int32)
    r1 = np.array([10, 0, 0, 12, big, 2, 0, 15, 18, 8, 0, 16, 11, 6, 0], np.int32)
    return r0, r1


def test_gathered_solve_joins_giants_records_and_attached_roots(pairs):
    """The device's solve of a hand-made gather (:func:`_hand_made_gather`) from either
    rank: the giants' labels, and each recorded root's label (bit 31 set) in the rank's
    mask, no other entry written; root 3 and root 12 do not lower the giants' label 2;
    without root 5's second giant the giants part and giant 10's label is root 3's."""
    from finepar import api
    from finepar.apps.ccranks import SOURCES, GatheredSolve
    from finepar.device import filled
    from finepar.io.graph500 import kronecker
    from finepar.partition import single_device
    wl = api.Workload("cc", kronecker(6))
    eng = wl.engine(pairs["shared"], single_device(wl.matrix.row_lengths(), "gpu"))
    side = eng.pair.side("gpu")
    solver = GatheredSolve(eng, "gpu", eng.pair.program(side, SOURCES, {"OFFSET_T": "int"}),
                           20, 2)
    flag = 1 << 31

    def solve(parts, lo):
        mask, glabel = filled(side, 10, np.uint32), filled(side, 2, np.int32)
        assert solver.enqueue(parts, lo, lo + 10, mask, glabel) == 4
        out_mask, out_g = np.empty(10, np.uint32), np.empty(2, np.int32)
        eng.read_buffer("gpu", out_mask, mask)
        eng.read_buffer("gpu", out_g, glabel)
        return list(out_g), {i + lo: int(m) - flag for i, m in enumerate(out_mask) if m}

    r0, r1 = _hand_made_gather()
    assert solve([r0, r1], 0) == ([2, 2], {5: 2, 7: 7})
    assert solve([r0, r1], 10) == ([2, 2], {15: 7, 16: 2})
    r0[2], r0[-1] = 0, 0b01
    assert solve([r0, r1], 0) == ([2, 3], {5: 2, 7: 7})


def test_gathered_solve_refuses_records_of_one_side():
    """Rank 0 records two edges to rank 1, rank 1 one to rank 0: an error, before any
    launch."""
    from finepar.apps.ccranks import GatheredSolve
    r0, r1 = _hand_made_gather()
    r1 = np.concatenate((r1[:5], [1, 0], r1[7:11]))
    solver = GatheredSolve.__new__(GatheredSolve)
    solver.P = 2
    with pytest.raises(RuntimeError, match="one side only"):
        solver.heads([r0, r1])


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")
def test_probe_times_each_run_and_checks_the_ranks_answer(tmp_path):
    """benchmarks/probe_ccranks.py on a small Graph500 graph over 2 ranks: every timed
    run kept (one process and ranks), the ranks' answer equal to the one process's, the
    one-process runs' Afforest kernels by kind (a small input's: its one launch), and the
    ranks' counts (the bits' path, a wait each for the bits and the hooking: Afforest's
    giant is found on the device)."""
    import os
    import subprocess
    import sys
    from test_mpi import mpiexec
    root = HERE.parent
    out = tmp_path / "probe.json"
    env = dict(os.environ, FINEPAR_CACHE=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "probe_ccranks.py"),
                           "graph500:10", "--ranks", "2", "--runs", "3", "--mpiexec",
                           mpiexec(), "--json", str(out)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=root / "benchmarks")
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    one, ranks = doc["one_process"], doc["ranks"]
    assert len(one["runs"]) == len(ranks["runs"]) == 3
    assert one["min"] <= one["median"] <= one["max"]
    assert ranks["correct"] is True
    # 20,798 entries: the one process runs Afforest in one work-group's launch
    assert all(set(k) == {"afforest-group"} for k in one["kinds"])
    assert ranks["counts"]["bits_path"] == "host" and ranks["counts"]["waits"] == 2
    assert set(ranks["lines"]) == {"ranks", "rank 0", "rank 1"}
    assert doc["ratio"] == pytest.approx(one["median"] / ranks["median"])


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")
def test_probe_runs_bfs_too(tmp_path):
    """``probe_ccranks.py --app bfs``: BFS's timed runs in one process and over 2 ranks,
    the ranks' levels equal to the one process's."""
    import os
    import subprocess
    import sys
    from test_mpi import mpiexec
    root = HERE.parent
    out = tmp_path / "probe.json"
    env = dict(os.environ, FINEPAR_CACHE=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "probe_ccranks.py"),
                           "graph500:10", "--app", "bfs", "--ranks", "2", "--runs", "2",
                           "--mpiexec", mpiexec(), "--json", str(out)], capture_output=True,
                          text=True, timeout=600, env=env, cwd=root / "benchmarks")
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["args"]["app"] == "bfs"
    assert len(doc["one_process"]["runs"]) == len(doc["ranks"]["runs"]) == 2
    assert doc["ranks"]["correct"] is True
    assert not any(doc["ranks"]["counts"].values())  # CC's counts only
