"""Tests of finepar.io.graph500: the Kronecker generator, type-1 copies and random quadruplets."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import finepar.graph
from finepar.io import edges
from finepar.io import graph500 as g5
from finepar.graph import Graph
from finepar.io import from_edges, validate
from finepar.io.graph500 import DEFAULT_ABCD, diagonal_copy, kronecker, kronecker_edges, random_quadruplet


def assert_same_graph(x: Graph, y: Graph) -> None:
    np.testing.assert_array_equal(x.indptr, y.indptr)
    np.testing.assert_array_equal(x.indices, y.indices)
    np.testing.assert_array_equal(x.data, y.data)


def test_edges_shape_dtype_and_range():
    src, dst = kronecker_edges(10, edgefactor=8, seed=1)
    assert src.shape == dst.shape == (2 ** 10 * 8,)
    assert src.dtype == dst.dtype == np.int32
    for v in (src, dst):
        assert v.min() >= 0 and v.max() < 2 ** 10


def test_same_seed_same_edges_other_seed_differs():
    a = kronecker_edges(12, seed=7)
    b = kronecker_edges(12, seed=7)
    c = kronecker_edges(12, seed=8)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    g3, g4 = kronecker(11, seed=3), kronecker(11, seed=3)
    assert_same_graph(g3, g4)
    other = kronecker(11, seed=4)
    assert not (other.nnz == g3.nnz and np.array_equal(other.indices, g3.indices))


def plain_edges(scale, edgefactor, abcd, seed, chunk):
    """The Graph500 reference loop on float32 draws, seeded as documented: chunk ``k``
    of `chunk` edges draws from child ``k`` of the second child of ``SeedSequence(seed)``,
    the label permutation from the first child."""
    a, b, c, d = abcd
    n, m = 1 << scale, (1 << scale) * edgefactor
    permutation_seed, edge_seed = np.random.SeedSequence(seed).spawn(2)
    src, dst = [], []
    for k, child in enumerate(edge_seed.spawn(-(-m // chunk))):
        rng = np.random.Generator(np.random.PCG64(child))
        size = min(chunk, m - k * chunk)
        s, t = np.zeros(size, np.int64), np.zeros(size, np.int64)
        for _ in range(scale):
            ii = rng.random(size, dtype=np.float32) > np.float32(a + b)
            jj = rng.random(size, dtype=np.float32) > np.where(ii, np.float32(c / (c + d)),
                                                                np.float32(a / (a + b)))
            s, t = 2 * s + ii, 2 * t + jj
        src.append(s)
        dst.append(t)
    labels = np.arange(n, dtype=np.int32)
    np.random.Generator(np.random.PCG64(permutation_seed)).shuffle(labels)
    return np.concatenate(src), np.concatenate(dst), labels


@pytest.mark.parametrize("abcd", [DEFAULT_ABCD, (0.25, 0.25, 0.25, 0.25), (0.45, 0.15, 0.25, 0.15),
                                  (1 - 3e-7, 1e-7, 1e-7, 1e-7), (0.5, 0.25, 0.25 - 1e-9, 1e-9)])
def test_edges_are_the_reference_loop_on_float32_draws(abcd, monkeypatch):
    """Bit decisions taken on the draws' random bits equal the float32 comparisons,
    thresholds rounding to 1.0 included (the last two quadruplets)."""
    monkeypatch.setattr(g5, "_CHUNK", 1 << 12)
    src, dst, labels = plain_edges(10, 16, abcd, 4, 1 << 12)
    raw = kronecker_edges(10, 16, *abcd, seed=4, relabel=False, workers=2)
    np.testing.assert_array_equal(raw[0], src)
    np.testing.assert_array_equal(raw[1], dst)
    relabelled = kronecker_edges(10, 16, *abcd, seed=4, workers=2)
    np.testing.assert_array_equal(relabelled[0], labels[src])
    np.testing.assert_array_equal(relabelled[1], labels[dst])


def test_edges_at_the_shipped_chunk_size_are_the_reference_loop():
    """Two chunks of 2**20 edges: the graphs the shipped models were trained on."""
    src, dst, labels = plain_edges(15, 64, DEFAULT_ABCD, 7, 1 << 20)
    got = kronecker_edges(15, 64, seed=7)
    np.testing.assert_array_equal(got[0], labels[src])
    np.testing.assert_array_equal(got[1], labels[dst])


def test_result_does_not_depend_on_workers(monkeypatch):
    monkeypatch.setattr(g5, "_CHUNK", 1 << 12)  # many chunks even at a small scale
    e1 = kronecker_edges(12, seed=5, workers=1)
    e4 = kronecker_edges(12, seed=5, workers=4)
    np.testing.assert_array_equal(e1[0], e4[0])
    np.testing.assert_array_equal(e1[1], e4[1])
    for symmetric in (True, False):
        one = kronecker(12, seed=5, workers=1, symmetric=symmetric)
        assert one.data.dtype == np.float32 and np.all(one.data == 1)
        assert_same_graph(one, kronecker(12, seed=5, workers=4, symmetric=symmetric))


@pytest.mark.parametrize("target", [1 << 6, 1 << 12])
def test_result_does_not_depend_on_row_buckets(target, monkeypatch):
    """Dozens of row ranges (8-bit ids) or thousands (16-bit ids), built on threads."""
    monkeypatch.setattr(g5, "_CHUNK", 1 << 12)  # the chunk size is part of the seeding
    expect = {sym: kronecker(12, seed=5, symmetric=sym, workers=1) for sym in (True, False)}
    monkeypatch.setattr(edges, "_BUCKET_TARGET", target)
    monkeypatch.setattr(edges, "_BUCKET_MIN", 16)
    for symmetric, graph in expect.items():
        assert_same_graph(kronecker(12, seed=5, symmetric=symmetric, workers=3), graph)


def test_symmetric_graph_is_graph500_undirected_graph():
    g = kronecker(12, seed=2)
    validate(g)
    assert g.pattern and g.n == 2 ** 12 and g.name == "graph500-s12-ef16-seed2"
    assert g.symmetric and g.transpose() is g
    a = g.to_scipy()
    assert (a != a.T).nnz == 0, "symmetric"
    assert a.diagonal().sum() == 0, "no self-loops"
    # Same structure as E + E^T without the diagonal, built independently with scipy.
    src, dst = kronecker_edges(12, seed=2)
    e = sp.coo_array((np.ones(src.size), (src, dst)), shape=g.shape).tocsr()
    ref = (e + e.T).tocsr()
    ref.setdiag(0)
    ref.eliminate_zeros()
    ref.sort_indices()
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    loops = int((src == dst).sum())
    assert f"removed {loops:,} self-loops" in g.notes
    assert f"removed {2 * (src.size - loops) - g.nnz:,} duplicate entries" in g.notes


def test_directed_graph_keeps_edges_once():
    g = kronecker(11, edgefactor=4, seed=9, symmetric=False, relabel=False)
    validate(g)
    assert not g.symmetric
    assert g.name == "graph500-s11-ef4-seed9-directed-unlabelled"
    src, dst = kronecker_edges(11, edgefactor=4, seed=9, relabel=False)
    ref = from_edges(src, dst, 2 ** 11)
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    assert f"removed {src.size - g.nnz:,} duplicate edges" in g.notes


def test_int64_indptr_exactly_past_the_int32_limit(monkeypatch):
    """finepar.graph.indptr_dtype reads INT32_MAX when called: lowering it to a small
    graph's size makes that graph cross the limit."""
    g = kronecker(10, seed=3)
    assert g.indptr.dtype == np.int32
    monkeypatch.setattr(finepar.graph, "INT32_MAX", g.nnz)
    assert kronecker(10, seed=3).indptr.dtype == np.int32  # at the limit
    monkeypatch.setattr(finepar.graph, "INT32_MAX", g.nnz - 1)
    wide = kronecker(10, seed=3, workers=2)
    assert wide.indptr.dtype == np.int64 and wide.indices.dtype == np.int32
    np.testing.assert_array_equal(wide.indptr, g.indptr)
    np.testing.assert_array_equal(wide.indices, g.indices)


def test_progress_reports_each_stage_and_reaches_one(monkeypatch):
    monkeypatch.setattr(g5, "_CHUNK", 1 << 12)
    calls = []
    kronecker(12, progress=lambda fraction, what: calls.append((fraction, what)))
    fractions = [f for f, _ in calls]
    stages = [w for _, w in calls]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    assert stages[0] == "generating edges" and stages[-1] == "building CSR"
    first_csr = stages.index("building CSR")
    assert set(stages[first_csr:]) == {"building CSR"}
    assert 0.2 < fractions[first_csr] < 0.8  # both stages weigh


def test_progress_is_reported_at_most_every_quarter_second(monkeypatch):
    """With a clock that never moves, only stage starts and the end are reported;
    with one that jumps a second per reading, every finished chunk and bucket is."""
    monkeypatch.setattr(g5, "_CHUNK", 1 << 12)  # 16 chunks
    clock = [0.0]
    monkeypatch.setattr(g5.time, "monotonic", lambda: clock[0])
    calls = []
    kronecker(12, progress=lambda fraction, what: calls.append(what), workers=2)
    assert calls == ["generating edges", "building CSR", "building CSR"]

    def ticking():
        clock[0] += 1.0
        return clock[0]

    monkeypatch.setattr(g5.time, "monotonic", ticking)
    calls.clear()
    kronecker(12, progress=lambda fraction, what: calls.append(what), workers=2)
    assert calls.count("generating edges") == 17  # the start and each of 16 chunks


def test_progress_must_be_callable():
    with pytest.raises(ValueError, match="progress must be callable"):
        kronecker(4, progress="yes")


def test_peak_allocation_is_bounded(monkeypatch):
    """Entries are stored once (8 bytes each, blocks sized 15% above an even share)
    and the result written as that storage is released: under 16 bytes allocated per
    generated entry, where the sorted-runs build this replaced needed 24. Small chunks
    keep the per-thread work small; one thread keeps the count deterministic."""
    monkeypatch.setattr(g5, "_CHUNK", 1 << 14)
    kronecker(16, workers=1)
    tracemalloc.start()
    try:
        g = kronecker(16, workers=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    generated = 2 * g.n * 16  # symmetric: both directions of every edge
    assert peak < 16 * generated


def test_relabel_is_a_vertex_permutation():
    raw = kronecker(11, seed=4, relabel=False)
    relabelled = kronecker(11, seed=4)
    assert raw.nnz == relabelled.nnz
    np.testing.assert_array_equal(np.sort(raw.row_lengths()), np.sort(relabelled.row_lengths()))
    # Unrelabelled Kronecker graphs put the hubs at low ids; the permutation spreads them.
    assert raw.row_lengths()[0] == raw.row_lengths().max()


def test_degree_distribution_is_skewed():
    g = kronecker(14, seed=0)
    degrees = g.row_lengths()
    assert degrees.max() > 20 * degrees.mean()
    assert (degrees == 0).sum() > 0.05 * g.n  # Kronecker graphs leave many vertices isolated


@pytest.mark.parametrize("abcd", [(0.57, 0.19, 0.19, 0.05), (0.45, 0.15, 0.25, 0.15)])
def test_quadrant_frequencies_match_initiator(abcd):
    scale = 14
    src, dst = kronecker_edges(scale, 16, *abcd, seed=11, relabel=False)
    m = src.size
    for bit in (0, scale // 2, scale - 1):
        quadrant = ((src >> bit) & 1) * 2 + ((dst >> bit) & 1)  # 0=A, 1=B, 2=C, 3=D
        freq = np.bincount(quadrant, minlength=4) / m
        # m = 262,144 edges: one standard deviation is below 0.001; the seed is fixed.
        np.testing.assert_allclose(freq, abcd, atol=0.01)


def test_diagonal_copy_formula_and_locality():
    g = kronecker(13, seed=1)
    copy = diagonal_copy(g)
    validate(copy)
    assert copy.pattern and copy.ids is None and copy.name == g.name + "-diag"
    np.testing.assert_array_equal(copy.row_lengths(), g.row_lengths())
    rows = np.repeat(np.arange(g.n), copy.row_lengths())
    near = np.abs(copy.indices.astype(np.int64) - rows) <= g.n / 8
    assert near.mean() > 0.8
    original = np.abs(g.indices.astype(np.int64) - rows) <= g.n / 8
    assert near.mean() > original.mean()
    # Every row is the contiguous run start .. start + k - 1, start = clip(i - k // 2, 0, n - k).
    k = copy.row_lengths().astype(np.int64)
    start = np.clip(np.arange(g.n) - k // 2, 0, g.n - k)
    expected = np.concatenate([np.arange(s, s + n) for s, n in zip(start, k)])
    np.testing.assert_array_equal(copy.indices, expected)


def test_diagonal_copy_small_by_hand():
    g = from_edges([0, 0, 0, 1, 3, 3], [1, 2, 3, 0, 0, 2], 4, name="t")
    copy = diagonal_copy(g, name="copy")
    assert copy.name == "copy"
    np.testing.assert_array_equal(copy.to_scipy().toarray(),
                                  [[1, 1, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 1]])


def test_random_quadruplet_properties():
    rng = np.random.default_rng(123)
    draws = [random_quadruplet(rng) for _ in range(300)]
    second = []
    for q in draws:
        assert len(q) == 4 and all(isinstance(x, float) and x > 0 for x in q)
        assert sum(q) == pytest.approx(1.0, abs=1e-12)
        assert q[0] == max(q)
        second.append(int(np.argmax(q[1:])))
    # The three smaller numbers are assigned to B, C, D in random order.
    assert set(second) == {0, 1, 2}
    assert min(np.bincount(second)) > 50
    assert random_quadruplet(7) == random_quadruplet(7)
    g = kronecker(8, 16, *random_quadruplet(5), seed=0)
    validate(g)
    assert "-abcd" in g.name


@pytest.mark.parametrize("kwargs, message", [
    ({"scale": 0}, "scale must be from 1 to 30"),
    ({"scale": 31}, "scale must be from 1 to 30"),
    ({"scale": 2.5}, "scale must be an integer"),
    ({"scale": True}, "scale must be an integer"),
    ({"scale": 4, "edgefactor": 0}, "edgefactor must be a positive integer"),
    ({"scale": 4, "a": 0.6}, "must sum to 1"),
    ({"scale": 4, "a": 0.62, "d": 0.0}, "probability d must be a positive number"),
    ({"scale": 4, "a": -0.1, "b": 0.5, "c": 0.5, "d": 0.1}, "probability a must be a positive number"),
    ({"scale": 4, "b": float("nan")}, "probability b must be a positive number"),
    ({"scale": 4, "seed": -1}, "seed must be a non-negative integer"),
    ({"scale": 4, "workers": 0}, "workers must be a positive integer"),
])
def test_parameter_validation(kwargs, message):
    for fn in (kronecker_edges, kronecker):
        with pytest.raises(ValueError, match=message):
            fn(**kwargs)


def test_probabilities_within_tolerance_are_accepted():
    kronecker_edges(4, 2, 0.57 + 5e-7, 0.19, 0.19, 0.05)
    with pytest.raises(ValueError, match="sum to 1"):
        kronecker_edges(4, 2, 0.57 + 5e-6, 0.19, 0.19, 0.05)


def test_generate_command_reports_stages_time_and_memory(capsys, tmp_path, monkeypatch):
    """`finepar generate`: a progress line per stage on stderr (not a terminal here),
    the notes, then time and peak memory in the last line; small graphs compressed."""
    import finepar.io
    from finepar.cli import main
    saved = []
    save = finepar.io.save
    monkeypatch.setattr(finepar.io, "save", lambda g, path, compressed=True: (
        saved.append(compressed), save(g, path, compressed=compressed)))
    out = tmp_path / "g.npz"
    assert main(["generate", "--scale", "9", "--seed", "4", "--workers", "2", "-o", str(out)]) == 0
    text, err = capsys.readouterr()
    lines = err.splitlines()
    assert [line.split("% ", 1)[1] for line in lines] == ["generating edges", "building CSR",
                                                           f"writing {out}"]
    assert lines[0].startswith("generate:   0%") and lines[-1].startswith("generate: 100%")
    assert saved == [True]
    stdout = text.splitlines()
    assert stdout[0].startswith(f"wrote {out}: 512 vertices")
    assert "removed" in text and stdout[-1].startswith("took ")
    assert stdout[-1].endswith(" GiB") and "peak memory" in stdout[-1]
    np.testing.assert_array_equal(finepar.io.load(out).indices, kronecker(9, seed=4).indices)


def test_graph_with_only_self_loops_is_refused_by_name():
    from finepar.errors import InputError
    src, dst = kronecker_edges(1, 1, seed=1)
    assert np.all(src == dst)  # two edges, both self-loops
    with pytest.raises(InputError, match="graph500-s1-ef1-seed1: empty graph"):
        kronecker(1, 1, seed=1)
