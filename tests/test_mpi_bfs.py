"""BFS over the ranks of a distributed run (finepar/apps/bfsranks.py) under ``mpiexec -n P``
on the emulated pair: top-down levels from each rank's own frontier vertices, bottom-up
levels over its rows, Beamer's switch on the merged frontier.

One ``mpiexec`` per rank count (1, 2, 3) runs every case of :data:`CASES` through
``tests/mpi_cases.py``. Levels must equal scipy's BFS, parents must pass the Graph500
rules, the directions taken over several ranks must be those Beamer's rule takes on the
exact level sizes (simulated here from scipy's levels), and every level must have crossed
the ranks once. Each rank's record of each level is checked against counts made from
scipy's levels: the rank's part (its claims or its own found vertices, a list or words),
the bytes sent and received, the host synchronisations, the parents handed over.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mpi4py")

from test_mpi import WORKER, launch  # noqa: E402  (the cases' runner, one mpiexec of it)

RANKS = (1, 2, 3, 4)
#: Graph500 scale 10 (symmetric) and a directed Kronecker graph of scale 10; roots: the
#: default (the largest out-degree), the last vertex (the last rank's), a first-rank one.
CASES = ([{"id": f"{g}-{mem}", "graph": g, "memory": mem, "params": {}}
          for g in ("graph500:10", "directed.npz") for mem in ("shared", "split")]
         + [{"id": f"{g}-last-root", "graph": g, "memory": "split", "params": {"root": 1023}}
            for g in ("graph500:10", "directed.npz")]
         + [{"id": f"directed-{d}", "graph": "directed.npz", "memory": mem,
             "params": {"root": 3, "direction": d}}
            for d, mem in (("top-down", "shared"), ("bottom-up", "split"))]
         # the GPU alone (one role a rank, as on a machine of GPUs): no side to move
         # rows to, so a level's host synchronisations are its reads alone
         + [{"id": f"{g}-gpu", "graph": g, "memory": "split", "params": {"devices": "gpu"}}
            for g in ("graph500:10", "directed.npz")]
         # and its parts GPU to GPU (emulated): a bottom-up part is copied into the send
         # region on the device, never read to the host
         + [{"id": f"{g}-gpu-exchange", "graph": g, "memory": "split", "exchange": "gpu",
             "params": {"devices": "gpu"}} for g in ("graph500:10", "directed.npz")]
         # every level top-down: parents handed from each rank to several owners
         + [{"id": "directed-top-down-gpu-exchange", "graph": "directed.npz",
             "memory": "split", "exchange": "gpu",
             "params": {"devices": "gpu", "root": 3, "direction": "top-down"}}]
         # the GPU path with the CPU alone a rank: a part made outside the GPU's context
         # is not staged, so every rank posts its part and the peers wait at a barrier
         + [{"id": "graph500:10-cpu-gpu-exchange", "graph": "graph500:10",
             "memory": "split", "exchange": "gpu", "params": {"devices": "cpu"}}]
         # and both roles on one context's two queues (shared memory)
         + [{"id": "graph500:10-shared-gpu-exchange", "graph": "graph500:10",
             "memory": "shared", "exchange": "gpu", "params": {}}])


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    from finepar.io import save
    from finepar.io.graph500 import kronecker
    d = tmp_path_factory.mktemp("bfs-ranks")
    directed = kronecker(10, seed=3, symmetric=False)
    save(directed, d / "directed.npz", compressed=False)
    return d, {"graph500:10": kronecker(10), "directed.npz": directed}


_RUNS: dict = {}


def launched(ranks: int, graphs) -> Path:
    """Every case on ``ranks`` ranks, one mpiexec; the folder of answers and reports."""
    if ranks not in _RUNS:
        _RUNS[ranks] = launch(WORKER, graphs[0], ranks, [dict(c, app="bfs") for c in CASES])
    return _RUNS[ranks]


def beamer_directions(graph, root: int, alpha: float = 15.0, beta: float = 18.0) -> list:
    """The direction of each level (True: bottom-up) by Beamer's rule as apps/bfs.py words
    it, on the exact level sizes and out-edges of scipy's BFS from ``root``."""
    from finepar.apps.bfs import bfs_levels
    level = bfs_levels(graph, root)
    outdeg = np.diff(graph.indptr).astype(np.int64)
    n = graph.n
    unexplored = graph.nnz - int(outdeg[root])
    size, edges, last, prev, out, d = 1, int(outdeg[root]), "push", 0, [], 0
    while size > 0:
        if last == "push":
            pull = edges > unexplored / alpha and edges > n / beta
        else:
            pull = not (size < n / beta and size < prev)
        prev, last = size, "pull" if pull else "push"
        out.append(pull)
        d += 1
        found = level == d
        size, edges = int(found.sum()), int(outdeg[found].sum())
        unexplored -= edges
    return out


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")
@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_levels_parents_and_directions(ranks, case, graphs):
    from finepar.apps.bfs import bfs_levels, validate_bfs
    out = launched(ranks, graphs)
    err = out / f"{case['id']}.error"
    assert not err.exists(), err.read_text()
    graph = graphs[1][case["graph"]]
    root = case["params"].get("root", int(np.argmax(np.diff(graph.indptr))))
    got = np.load(out / f"{case['id']}.npz")
    ref = bfs_levels(graph, root)
    np.testing.assert_array_equal(got["values"], ref)
    assert validate_bfs(graph, root, got["values"], got["parent"]) == []
    rep = json.loads((out / f"{case['id']}.json").read_text())
    levels = dict(rep["result"]["summary"])["levels"]
    counts = {"top-down": 0, "bottom-up": 0}
    for item in levels.split(", "):
        direction, count = item.split(": ")
        counts[direction.split(" on ")[0]] += int(count)
    mode = case["params"].get("direction", "auto")
    pulls = beamer_directions(graph, root) if mode == "auto" else \
        [mode == "bottom-up"] * (int(ref.max()) + 1)
    if ranks == 1 and mode == "auto":  # the one-process loop: the CPU's walk may take
        assert sum(counts.values()) == len(pulls)  # levels Beamer's rule would pull
    else:
        assert counts == {"top-down": pulls.count(False), "bottom-up": pulls.count(True)}
    if mode == "auto" and ranks > 1:
        assert counts["top-down"] and counts["bottom-up"], levels  # both kinds ran
    iters = rep["result"]["iterations"]
    assert iters == len(pulls)
    for r in rep["ranks"]:
        f = r["frontier"]
        if ranks == 1:  # one rank: the one-process loop, nothing crosses
            assert f["merges"] == f["claims"] == r["bytes_sent"] == 0
            continue
        # every level crossed the ranks once: bottom-up bits or top-down claims
        assert f["merges"] == counts["bottom-up"] == f["as_list"] + f["as_pairs"] + f["as_words"]
        assert f["claims"] == counts["top-down"] and f["claim_lists"] <= f["claims"]
        assert r["bytes_sent"] >= f["bytes_sent"] > 0 and r["bytes_received"] > 0
        assert 0 <= r["timings"]["mpi"] <= r["timings"]["run"]


def claimed(graph, level: np.ndarray, lo: int, hi: int, d: int) -> np.ndarray:
    """The vertices a top-down level ``d`` on the rank owning ``lo .. hi - 1`` claims: the
    unvisited out-neighbours (level ``d + 1``) of its own frontier vertices, each once."""
    rows = np.arange(lo, hi)[level[lo:hi] == d]
    if not rows.size:
        return np.zeros(0, np.int64)
    nb = np.concatenate([graph.indices[graph.indptr[u]:graph.indptr[u + 1]] for u in rows])
    return np.unique(nb[level[nb] == d + 1])


def expected_syncs(rec: dict, gpu_path: bool = False) -> int:
    """A level's host synchronisations with one role a rank: a bottom-up level reads its
    part's header with the part's first words (:data:`~finepar.apps.bfsranks.PEEK`), and
    a part past them (or its words) once more where the parts cross the host (on the GPU
    path, ``gpu_path``, the part goes on the device); a top-down level reads the advance's
    tally, then its claims' out-degrees where it has any (with its part where it
    crosses the host; on the GPU path it is staged on the device), and the merged
    frontier's count where the sizes cannot give it; the parents' hand-over reads its
    counts, then any pairs (not on the GPU path)."""
    from finepar.apps.bfsranks import PEEK
    if rec["direction"] == "bottom-up":
        return 1 if gpu_path or (rec["form"] == "list" and rec["part"] <= PEEK) else 2
    if rec["direction"] == "top-down":
        return 1 + (rec["own_found"] > 0) + (rec["counted"] == "device")
    # the pairs' counts, then any pairs (on the GPU path they stay on the devices)
    return 1 + (rec["own_found"] > 0 and not gpu_path)


@pytest.mark.slow
@pytest.mark.xdist_group("mpiexec")
@pytest.mark.parametrize("ranks", (2, 3))
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_level_records(ranks, case, graphs):
    """Each rank's record of each level against scipy's levels: the merged frontier's
    sizes, the rank's part (its claims or its own found vertices, as a list or words,
    whichever is smaller; a top-down level's claims' out-degrees go with the sizes),
    the bytes each rank sent and received (the others' parts), where the merged claims
    were counted (from the sizes where one rank claimed, from short lists where the parts
    crossed the host, else on the device), the host synchronisations (exactly, with one role a rank), and the
    parents handed to their owners (each rank's claims of other ranks' vertices past the
    root's children, counted from scipy's levels)."""
    from finepar.apps.bfs import bfs_levels
    from finepar.apps.bfsranks import HOST_UNION
    out = launched(ranks, graphs)
    graph = graphs[1][case["graph"]]
    root = case["params"].get("root", int(np.argmax(np.diff(graph.indptr))))
    level = bfs_levels(graph, root)
    outdeg = np.diff(graph.indptr)
    rep = json.loads((out / f"{case['id']}.json").read_text())
    bounds = rep["partition"]["bounds"]
    nw = (graph.n + 31) // 32
    recs = [r["levels"] for r in rep["ranks"]]
    depth = rep["result"]["iterations"]
    one_role = case["params"].get("devices") == "gpu"
    handed = np.zeros((ranks, ranks), np.int64)  # [claimer, owner]: pairs handed over
    syncs = {}
    for d in range(depth):
        wire, claims = [], []
        for r in range(ranks):
            rec, (lo, hi) = recs[r][d], (bounds[r], bounds[r + 1])
            assert rec["level"] == d and rec["frontier"] == int((level == d).sum())
            assert rec["found"] == int((level == d + 1).sum())
            assert rec["found_edges"] == int(outdeg[level == d + 1].sum())
            top = rec["direction"] == "top-down"
            if top:  # its claims, or the bitmap's words
                mine = claimed(graph, level, lo, hi, d)
                words, as_list = nw, mine.size <= nw
                owner = np.searchsorted(bounds, mine, side="right") - 1
                if d > 0:  # the root's children: their owners set the root, none handed
                    handed[r] += np.bincount(owner, minlength=ranks)
                handed[r, r] = 0
            else:  # its own vertices found, or its own words
                mine = np.flatnonzero(level[lo:hi] == d + 1)
                words = -(-hi // 32) - lo // 32
                as_list = mine.size < words
            assert rec["own_found"] == mine.size
            assert rec["form"] == ("list" if as_list else "words")
            assert rec["part"] == (mine.size if as_list else words)
            assert rec["bytes_sent"] == 4 * rec["part"] and rec["part"] <= nw
            # staged on the device where every rank's part lies on its GPU's queue (the
            # GPU alone; not the CPU alone; both roles: where the push role is the GPU)
            gpu_exchange = case.get("exchange") == "gpu"
            if not gpu_exchange or case["params"].get("devices") == "cpu":
                assert not rec["staged"], (d, r)
            elif one_role:
                assert rec["staged"], (d, r)
            if one_role:
                gpu_path = case.get("exchange") == "gpu" and ranks > 1
                assert rec["host_syncs"] == expected_syncs(rec, gpu_path), (d, r, rec)
            syncs[case["memory"]] = max(syncs.get(case["memory"], 0), rec["host_syncs"])
            wire.append(rec["bytes_sent"])
            claims.append((mine.size, as_list))
        for r in range(ranks):
            assert recs[r][d]["bytes_received"] == sum(wire) - wire[r]
            if recs[r][d]["direction"] == "top-down":
                through_host = case.get("exchange") != "gpu"
                by_parts = (sum(c > 0 for c, _ in claims) <= 1
                            or (through_host and all(a for _, a in claims)
                                and sum(c for c, _ in claims) <= HOST_UNION))
                assert recs[r][d]["counted"] == ("parts" if by_parts else "device")
    for r in range(ranks):
        last = recs[r][depth]
        assert last["direction"] == "parents" and len(recs[r]) == depth + 1
        if one_role:
            gpu_path = case.get("exchange") == "gpu" and ranks > 1
            assert last["host_syncs"] == expected_syncs(last, gpu_path)
            assert last["path"] == ("gpu" if gpu_path else "host")
        assert last["own_found"] == handed[r].sum()
        assert last["bytes_sent"] == 8 * handed[r].sum()
        assert last["bytes_received"] == 8 * handed[:, r].sum()
        assert rep["ranks"][r]["frontier"]["routed"] == handed[r].sum()
        assert rep["ranks"][r]["frontier"]["bytes_sent"] == sum(x["bytes_sent"] for x in recs[r])
    # one copy of each vector: a few reads and collectives a level (a shared pair's two
    # queues wait for each other after a fill, a merge, and a bottom-up row operation
    # before its part is counted; a split pair's two sides also move rows and merge their
    # bits through the host)
    assert syncs[case["memory"]] <= {"shared": 5, "split": 12}[case["memory"]]


@pytest.mark.parametrize("kernel", ("mark_sparse", "mark_dense"))
@pytest.mark.parametrize("density", (0.002, 0.5))
def test_marks_both_layouts(kernel, density):
    """``mark_sparse`` (a work-item a word) and ``mark_dense`` (a work-item a vertex) set
    ``level[v] = value`` for exactly the unvisited vertices set in the bitmap, count them
    and their out-degrees when asked, and leave the levels alone otherwise; n not a
    multiple of 32 or of the work-group."""
    from finepar.api import make_pair
    from finepar.apps.bfsranks import SOURCES
    from finepar.device import alloc, cl
    rng = np.random.default_rng(7)
    n = 70_001
    pair = make_pair()
    side = pair.side("gpu")
    k = pair.kernel(side, SOURCES, {}, kernel)
    set_ = rng.random(n) < density
    bits = np.packbits(set_.astype(np.uint8), bitorder="little")
    words = np.zeros((n + 31) // 32 * 4, np.uint8)
    words[:bits.size] = bits
    level = np.where(rng.random(n) < 0.3, 2, -1).astype(np.int32)
    outdeg = rng.integers(0, 50, n).astype(np.int32)
    mf = cl().mem_flags
    dw = cl().Buffer(side.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=words)
    dl = cl().Buffer(side.context, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=level)
    do = cl().Buffer(side.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=outdeg)
    counts = alloc(side, nbytes=16)
    cl().enqueue_fill_buffer(side.queue, counts, np.zeros(1, np.uint64), 0, 16)
    size = n if kernel == "mark_dense" else (n + 31) // 32
    k(side.queue, (-(-size // 256) * 256,), (256,), np.int32(n), dw, dl, do, np.int32(5),
      np.int32(1), counts)
    got, tally = np.empty_like(level), np.zeros(2, np.uint64)
    cl().enqueue_copy(side.queue, got, dl)
    cl().enqueue_copy(side.queue, tally, counts)
    want = np.where(set_ & (level < 0), 5, level)
    assert (got == want).all()
    assert tally.tolist() == [int(set_.sum()), int(outdeg[set_].sum())]


def test_hand_over_never_replaces_the_levels_buffer():
    """The parents' hand-over grows a staging buffer of its own: the levels' buffer (which
    the level kernels hold bound for the engine's life) is the same object after the
    hand-over asked for more words than it holds. A replaced buffer would be freed at the
    next run's first binding, and NVIDIA's driver waits for the device to free one."""
    from types import SimpleNamespace
    from finepar.api import make_pair
    from finepar.apps.bfsranks import LevelParts
    pair = make_pair()
    parts = SimpleNamespace(dev={}, engine=SimpleNamespace(pair=pair))
    words = LevelParts.device_words
    levels = words(parts, "gpu", 64)
    pairs = words(parts, "gpu", 4096, "pairs")
    assert words(parts, "gpu", 64) is levels and pairs is not levels
    assert pairs.size >= 4 * 4096
    assert words(parts, "gpu", 128, "pairs") is pairs  # it fits: not grown again
    assert words(parts, "gpu", 8192, "pairs") is not pairs  # grown, the levels' kept
    assert words(parts, "gpu", 32) is levels
