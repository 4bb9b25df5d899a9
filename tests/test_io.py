"""Tests of finepar.io (loading, validation, conversion, saving) and finepar.files."""

from __future__ import annotations

import gzip
import json
import os
import stat
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from finepar import files
from finepar.io import edges
from finepar.errors import InputError
from finepar.graph import Graph
from finepar.io import from_csr, from_edges, from_scipy, load, save, validate

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"real inputs not found at {DATA}")

# README of shared/data: rows, stored entries, nnz/row mean, variance (population), max.
README = {
    "memplus.mtx": (17_758, 126_150, 7.10, 485.6, 574),
    "rajat01.mtx": (6_833, 43_250, 6.33, 745.9, 1_442),
    "adder_dcop_05.mtx": (1_813, 11_097, 6.12, 947.2, 1_310),
    "cnr-2000.mtx.gz": (325_557, 3_216_152, 9.88, 421.8, 2_716),
    "soc-Slashdot0902.txt.gz": (82_168, 948_464, 11.54, 1_362.9, 2_511),
    "wiki-Vote.txt": (7_115, 103_689, 14.57, 1_787.5, 893),
    "luxembourg.mtx": (114_599, 239_332, 2.09, 0.2, 6),
    "ca-GrQc.mtx": (5_242, 28_980, 5.53, 62.7, 81),
    "USPowerGrid.mtx": (4_941, 13_188, 2.67, 3.2, 19),
}
PATTERN = {"rajat01.mtx", "cnr-2000.mtx.gz", "soc-Slashdot0902.txt.gz", "wiki-Vote.txt", "luxembourg.mtx",
           "ca-GrQc.mtx"}

_cache: dict[str, Graph] = {}


def loaded(file: str) -> Graph:
    if file not in _cache:
        _cache[file] = load(DATA / file)
    return _cache[file]


def check_invariants(g: Graph) -> None:
    """The canonical-CSR invariants every Graph must satisfy, checked directly."""
    assert g.indptr.dtype == np.int32 and g.indices.dtype == np.int32 and g.data.dtype == np.float32
    assert g.indptr.shape == (g.n + 1,) and g.indices.shape == (g.nnz,) and g.data.shape == (g.nnz,)
    assert g.indptr[0] == 0 and g.indptr[-1] == g.nnz
    assert (np.diff(g.indptr) >= 0).all()
    if g.nnz:
        assert g.indices.min() >= 0 and g.indices.max() < g.n
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    same_row = rows[1:] == rows[:-1]
    assert (np.diff(g.indices.astype(np.int64))[same_row] > 0).all(), "indices sorted, no duplicates"
    assert np.isfinite(g.data).all()
    if g.pattern:
        assert (g.data == 1).all()
    validate(g)


def reference_csr(coo: sp.coo_array | sp.coo_matrix) -> sp.csr_array:
    ref = sp.csr_array(coo)
    ref.sum_duplicates()
    ref.sort_indices()
    return ref


# --------------------------------------------------------------------------
# real inputs
# --------------------------------------------------------------------------


@needs_data
def test_every_data_file_is_covered():
    assert {p.name for p in DATA.iterdir()} - {"README.md"} == set(README)


@needs_data
@pytest.mark.parametrize("file", sorted(README))
def test_real_input_matches_readme(file):
    g = loaded(file)
    rows, nnz, mean, var, top = README[file]
    lengths = g.row_lengths().astype(np.float64)
    assert (g.n, g.nnz) == (rows, nnz)
    assert round(lengths.mean(), 2) == pytest.approx(mean)
    assert round(lengths.var(), 1) == pytest.approx(var)
    assert lengths.max() == top
    assert g.pattern == (file in PATTERN)
    assert g.source == str(DATA / file)
    assert g.name == file.split(".")[0]
    check_invariants(g)


@needs_data
@pytest.mark.parametrize("file", sorted(f for f in README if ".mtx" in f))
def test_matrix_market_matches_scipy(file):
    g = loaded(file)
    ref = reference_csr(scipy.io.mmread(DATA / file))
    assert g.shape == ref.shape and g.nnz == ref.nnz
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    if g.pattern:
        assert (g.data == 1).all()
    else:
        np.testing.assert_array_equal(g.data, ref.data.astype(np.float32))


@needs_data
def test_symmetric_files_are_expanded():
    for file in ("luxembourg.mtx", "ca-GrQc.mtx", "USPowerGrid.mtx"):
        g = loaded(file)
        a = g.to_scipy()
        assert (a != a.T).nnz == 0
        assert any("expanded symmetric storage" in note for note in g.notes)


@needs_data
def test_cnr_2000_readme_details():
    g = loaded("cnr-2000.mtx.gz")
    assert int((g.row_lengths() == 0).sum()) == 78_056
    assert int(g.transpose().row_lengths().max()) == 18_235


@needs_data
def test_memplus_explicit_zeros_kept_and_dropped():
    kept = loaded("memplus.mtx")
    zeros = int((kept.data == 0).sum())
    assert zeros == 27_003
    assert f"kept {zeros:,} explicit zeros as stored entries" in kept.notes
    dropped = load(DATA / "memplus.mtx", drop_zeros=True)
    assert dropped.nnz == kept.nnz - zeros and (dropped.data != 0).all()
    assert f"dropped {zeros:,} explicit zeros" in dropped.notes
    check_invariants(dropped)
    ref = reference_csr(scipy.io.mmread(DATA / "memplus.mtx"))
    ref.eliminate_zeros()
    np.testing.assert_array_equal(dropped.indices, ref.indices)
    np.testing.assert_array_equal(dropped.data, ref.data.astype(np.float32))


@needs_data
def test_wiki_vote_matches_networkx_and_compacts_ids():
    g = loaded("wiki-Vote.txt")
    ref = nx.read_edgelist(DATA / "wiki-Vote.txt", nodetype=int, create_using=nx.DiGraph, comments="#")
    assert g.n == ref.number_of_nodes() == 7_115
    assert g.nnz == ref.number_of_edges() == 103_689
    assert g.ids is not None and g.ids.dtype == np.int64
    np.testing.assert_array_equal(g.ids, np.array(sorted(ref.nodes), dtype=np.int64))
    a = g.to_scipy().tocoo()
    ours = set(zip(g.ids[a.row].tolist(), g.ids[a.col].tolist()))
    assert ours == set(ref.edges)
    assert "compacted raw ids (largest 8,297) to 7,115 vertices" in g.notes


@needs_data
def test_slashdot_matches_numpy_read_and_keeps_self_loops():
    g = loaded("soc-Slashdot0902.txt.gz")
    edges = np.loadtxt(DATA / "soc-Slashdot0902.txt.gz", dtype=np.int64, comments="#")
    assert g.ids is None  # ids are already 0 .. n-1
    ref = sp.csr_array((np.ones(len(edges), np.float32), (edges[:, 0], edges[:, 1])), shape=(82_168, 82_168))
    ref.sum_duplicates()
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    assert int(g.to_scipy().diagonal().sum()) == int((edges[:, 0] == edges[:, 1]).sum()) > 0


@needs_data
@pytest.mark.parametrize("file", ["memplus.mtx", "wiki-Vote.txt", "ca-GrQc.mtx"])
@pytest.mark.parametrize("ext", [".npz", ".mtx", ".mtx.gz"])
def test_save_round_trip(tmp_path, file, ext):
    g = loaded(file)
    out = tmp_path / f"copy{ext}"
    save(g, out)
    back = load(out)
    np.testing.assert_array_equal(back.indptr, g.indptr)
    np.testing.assert_array_equal(back.indices, g.indices)
    np.testing.assert_array_equal(back.data, g.data)
    assert back.pattern == g.pattern and back.name == "copy"
    if ext == ".npz":
        if g.ids is None:
            assert back.ids is None
        else:
            np.testing.assert_array_equal(back.ids, g.ids)
        ref = sp.load_npz(out)  # scipy reads every file, a pattern graph's too
        assert isinstance(ref, sp.csr_array)
        if g.pattern:  # its data: boolean ones, which load() never reads
            assert ref.dtype == np.bool_ and ref.data.all()
            assert (ref.astype(g.data.dtype) != g.to_scipy()).nnz == 0
        else:
            assert (ref != g.to_scipy()).nnz == 0
    else:
        opener = gzip.open if ext.endswith(".gz") else open
        with opener(out, "rt") as f:
            banner = f.readline()
        assert banner.split()[3:] == ["pattern" if g.pattern else "real", "general"]
        ref = reference_csr(scipy.io.mmread(out))
        np.testing.assert_array_equal(ref.indices, g.indices)
        np.testing.assert_allclose(ref.data, g.data)
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


# --------------------------------------------------------------------------
# Graph methods and in-memory constructors
# --------------------------------------------------------------------------


def small_graph() -> Graph:
    dense = np.array([[0, 2, 0, 1], [0, 0, 3, 0], [4, 0, 0, 0], [0, 5, 6, 0]], dtype=np.float64)
    return from_scipy(sp.csr_array(dense), "small")


def test_graph_properties_and_scipy_view():
    g = small_graph()
    assert (g.n, g.nnz, g.shape) == (4, 6, (4, 4))
    np.testing.assert_array_equal(g.row_lengths(), [2, 1, 1, 2])
    assert g.row_lengths().dtype == np.int32 and g.out_degrees().dtype == np.int32
    a = g.to_scipy()
    assert isinstance(a, sp.csr_array) and a.dtype == np.float32
    assert np.shares_memory(a.indices, g.indices) and np.shares_memory(a.data, g.data)
    assert "n=4" in repr(g)
    check_invariants(g)


def test_transpose_and_symmetrized():
    g = small_graph()
    t = g.transpose()
    check_invariants(t)
    assert t.name == g.name and not t.pattern
    assert (t.to_scipy() != g.to_scipy().T).nnz == 0
    s = g.symmetrized()
    check_invariants(s)
    assert s.pattern
    ref = (abs(g.to_scipy()) + abs(g.to_scipy().T)).tocsr()
    ref.sort_indices()
    np.testing.assert_array_equal(s.indptr, ref.indptr)
    np.testing.assert_array_equal(s.indices, ref.indices)


def test_transpose_keeps_ids_and_pattern():
    g = from_edges([0, 1, 2], [1, 2, 0], ids=[10, 20, 30], name="tri")
    t = g.transpose()
    assert t.pattern and t.ids is g.ids
    np.testing.assert_array_equal(t.indices, [2, 0, 1])


def test_from_csr_canonicalises_without_touching_inputs():
    indptr = np.array([0, 3, 3, 5], dtype=np.int64)
    indices = np.array([2, 0, 2, 1, 0], dtype=np.int64)
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    before = (indptr.copy(), indices.copy(), data.copy())
    g = from_csr(indptr, indices, data, 3, name="m")
    check_invariants(g)
    np.testing.assert_array_equal(g.indptr, [0, 2, 2, 4])
    np.testing.assert_array_equal(g.indices, [0, 2, 0, 1])
    np.testing.assert_array_equal(g.data, [2.0, 4.0, 5.0, 4.0])
    assert "summed 1 duplicate entries" in g.notes
    for a, b in zip((indptr, indices, data), before):
        np.testing.assert_array_equal(a, b)
    p = from_csr(indptr, indices, None, 3, name="m", pattern=True)
    assert p.pattern and (p.data == 1).all() and "removed 1 duplicate entries" in p.notes


def test_from_csr_shares_canonical_arrays():
    indptr = np.array([0, 1, 2], dtype=np.int32)
    indices = np.array([1, 0], dtype=np.int32)
    data = np.array([1.5, 2.5], dtype=np.float32)
    g = from_csr(indptr, indices, data, 2, name="m")
    assert np.shares_memory(g.indices, indices) and np.shares_memory(g.data, data) and g.notes == []


def test_from_csr_zeros_and_unsorted_note():
    g = from_csr([0, 2, 3], [1, 0, 0], [0.0, 1.0, 2.0], 2, name="z")
    assert "sorted column indices within rows" in g.notes
    assert "kept 1 explicit zeros as stored entries" in g.notes
    d = from_csr([0, 2, 3], [1, 0, 0], [0.0, 1.0, 2.0], 2, name="z", drop_zeros=True)
    assert d.nnz == 2 and "dropped 1 explicit zeros" in d.notes


def test_from_scipy_formats_and_pattern():
    dense = np.array([[0, 1, 0], [1, 0, 1], [0, 0, 1]], dtype=np.float64)
    for make in (sp.csr_matrix, sp.csc_array, sp.coo_array, sp.lil_matrix, sp.dok_array, sp.bsr_array):
        g = from_scipy(make(dense), "m")
        check_invariants(g)
        np.testing.assert_array_equal(g.to_scipy().toarray(), dense)
        assert not g.pattern
    b = from_scipy(sp.csr_array(dense.astype(bool)), "b")
    assert b.pattern
    coo = sp.coo_array((np.array([1.0, 2.0, 3.0]), (np.array([0, 0, 1]), np.array([1, 1, 0]))), shape=(2, 2))
    g = from_scipy(coo, "dup")
    np.testing.assert_array_equal(g.data, [3.0, 3.0])
    assert "summed 1 duplicate entries" in g.notes


def test_from_edges_symmetric_and_self_loops():
    g = from_edges([0, 0, 1, 2, 2], [1, 1, 2, 2, 0], 4, name="e", symmetric=True, drop_self_loops=True)
    check_invariants(g)
    np.testing.assert_array_equal(g.to_scipy().toarray(),
                                  [[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]])
    assert "removed 1 self-loops" in g.notes and "removed 2 duplicate entries" in g.notes
    d = from_edges([0, 0, 1], [1, 1, 1], name="d")
    assert d.n == 2 and d.nnz == 2 and "removed 1 duplicate edges" in d.notes


def test_from_edges_many_chunks_on_threads(monkeypatch):
    monkeypatch.setattr(edges, "_EDGE_CHUNK", 1 << 10)
    rng = np.random.default_rng(5)
    src = rng.integers(0, 3000, 50_000)
    dst = rng.integers(0, 3000, 50_000)
    ref = sp.csr_array((np.ones(src.size), (src, dst)), shape=(3000, 3000))
    ref.sum_duplicates()
    for workers in (1, 3):
        g = from_edges(src, dst, 3000, workers=workers)
        check_invariants(g)
        np.testing.assert_array_equal(g.indptr, ref.indptr)
        np.testing.assert_array_equal(g.indices, ref.indices)


def test_validate_reports_broken_graphs():
    g = small_graph()
    bad = Graph(g.indptr, g.indices[::-1].copy(), g.data, "bad")
    with pytest.raises(InputError, match="unsorted column index"):
        validate(bad)
    dup = Graph(np.array([0, 2, 2], np.int32), np.array([1, 1], np.int32), np.ones(2, np.float32), "dup")
    with pytest.raises(InputError, match="duplicate column index 1"):
        validate(dup)
    wrong = Graph(g.indptr.astype(np.int64), g.indices, g.data, "wrong")
    with pytest.raises(InputError, match="indptr must be a 1-D int32 array"):
        validate(wrong)


# --------------------------------------------------------------------------
# edge-list details
# --------------------------------------------------------------------------


def test_edge_list_comments_blanks_crlf_tabs(tmp_path):
    p = tmp_path / "g.edges"
    p.write_bytes(b"% header\r\n# more\r\n\r\n5\t7\r\n  7 5 # inline comment\r\n\n9 5\r\n5 7\r\n%tail")
    g = load(p)
    check_invariants(g)
    np.testing.assert_array_equal(g.ids, [5, 7, 9])
    np.testing.assert_array_equal(g.to_scipy().toarray(), [[0, 1, 0], [1, 0, 0], [1, 0, 0]])
    assert "removed 1 duplicate edges" in g.notes
    assert g.name == "g" and g.pattern


def test_edge_list_gz_and_el(tmp_path):
    p = tmp_path / "h.el.gz"
    p.write_bytes(gzip.compress(b"0 1\n1 2\n2 0\n"))
    g = load(p)
    assert (g.n, g.nnz, g.ids, g.name) == (3, 3, None, "h")


def test_matrix_market_variants(tmp_path):
    skew = tmp_path / "skew.mtx"
    skew.write_text("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.5\n3 2 -2\n")
    g = load(skew)
    np.testing.assert_array_equal(g.to_scipy().toarray(), scipy.io.mmread(skew).toarray())
    integer = tmp_path / "int.mtx"
    integer.write_text("%%MatrixMarket matrix coordinate integer general\n2 2 3\n1 2 4\n2 1 -3\n1 2 1\n")
    g = load(integer)
    np.testing.assert_array_equal(g.to_scipy().toarray(), [[0, 5], [-3, 0]])
    assert "summed 1 duplicate entries" in g.notes
    pattern = tmp_path / "pat.mtx.gz"
    pattern.write_bytes(gzip.compress(b"%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n2 1\n2 1\n3 3\n"))
    g = load(pattern)
    assert g.pattern
    np.testing.assert_array_equal(g.to_scipy().toarray(), [[0, 1, 0], [1, 0, 0], [0, 0, 1]])
    assert "removed 2 duplicate entries" in g.notes


# --------------------------------------------------------------------------
# bad inputs
# --------------------------------------------------------------------------

MM = "%%MatrixMarket matrix coordinate real general\n"


def expect_input_error(path: Path, phrase: str, **kwargs) -> str:
    """load(path) then save() must fail with a one-line InputError naming the file; nothing written."""
    directory = path.parent
    before = sorted(p.name for p in directory.iterdir())
    out = directory / "out.npz"
    with pytest.raises(InputError) as info:
        save(load(path, **kwargs), out)
    message = str(info.value)
    assert "\n" not in message
    assert path.name in message
    assert phrase.lower() in message.lower(), message
    assert not out.exists()
    assert sorted(p.name for p in directory.iterdir()) == before
    return message


BAD_FILES = {
    "banner": ("m.mtx", "%%MatrixMarkt matrix coordinate real general\n2 2 1\n1 1 1\n",
               "malformed Matrix Market: Line 1: Not a Matrix Market file"),
    "banner-field": ("m.mtx", "%%MatrixMarket matrix coordinate real weird\n2 2 1\n1 1 1\n",
                     "malformed Matrix Market: Line 1: Invalid MatrixMarket header element"),
    "size-line": ("m.mtx", MM + "2 x 1\n1 1 1\n", "malformed Matrix Market: bad size line"),
    "size-line-short": ("m.mtx", MM + "2 2\n1 1 1\n", "malformed Matrix Market: bad size line"),
    "too-few": ("m.mtx", MM + "3 3 3\n1 1 1\n2 2 1\n", "malformed Matrix Market: Truncated file"),
    "too-many": ("m.mtx", MM + "3 3 1\n1 1 1\n2 2 1\n", "malformed Matrix Market: Line 4: Too many lines"),
    "declared-huge": ("m.mtx", MM + "3 3 1000\n1 1 1\n", "declares 1,000 entries"),
    "non-numeric-value": ("m.mtx", MM + "2 2 2\n1 1 abc\n2 2 1\n", "malformed Matrix Market: Line 3"),
    "non-numeric-index": ("m.mtx", MM + "2 2 2\n1 x 1\n2 2 1\n", "malformed Matrix Market: Line 3"),
    "missing-value": ("m.mtx", MM + "2 2 2\n1 2\n2 2 1\n", "malformed Matrix Market: Line 3"),
    "index-too-large": ("m.mtx", MM + "2 2 2\n1 3 1\n2 2 1\n", "Line 3: Column index out of bounds"),
    "index-zero": ("m.mtx", MM + "2 2 2\n0 1 1\n2 2 1\n", "Line 3: Row index out of bounds"),
    "complex": ("m.mtx", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1 2\n",
                "complex-valued Matrix Market matrices are not supported"),
    "hermitian": ("m.mtx", "%%MatrixMarket matrix coordinate complex hermitian\n2 2 1\n2 1 1 2\n",
                  "complex-valued"),
    "dense": ("m.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
              "dense 'array' Matrix Market files are not supported"),
    "not-square": ("m.mtx", MM + "3 4 1\n1 1 1\n", "matrix is not square (3 x 4)"),
    "nan": ("m.mtx", MM + "3 3 2\n1 1 1\n2 3 nan\n", "value at row 2, column 3 is NaN"),
    "inf": ("m.mtx", MM + "3 3 2\n1 1 -inf\n2 3 1\n", "value at row 1, column 1 is -Inf"),
    "float32-overflow": ("m.mtx", MM + "2 2 1\n1 2 1e300\n", "is too large for float32"),
    "huge-nnz": ("m.mtx", MM + "10 10 3000000000\n1 1 1\n",
                 "size line declares 3,000,000,000 entries but the file has only 69 bytes"),
    "int32-n": ("m.mtx", MM + "3000000000 3000000000 1\n1 1 1\n", "exceed the int32 limit"),
    "zero-vertices": ("m.mtx", MM + "0 0 0\n", "0 vertices"),
    "zero-entries": ("m.mtx", MM + "5 5 0\n", "0 stored entries"),
    "skew-diagonal": ("m.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 3\n",
                      "nonzero diagonal entry at row 1"),
    "vector": ("m.mtx", "%%MatrixMarket vector coordinate real general\n3 1\n1 1\n", "Matrix Market"),
    "empty-file": ("m.mtx", "", "malformed Matrix Market"),
    "snap-three-fields": ("s.txt", "# c\n1 2\n3 4 5\n", "line 3: 3 columns, but line 2 has 2"),
    "snap-one-field": ("s.txt", "1 2\n\n7\n", "line 3: expected 2 integer vertex ids and an optional weight, "
                                                 "found 1 field"),
    "snap-word": ("s.txt", "1 2\n2 3\n4 abc\n", "line 3: 'abc' is not an integer vertex id"),
    "snap-float": ("s.tsv", "1\t2\n2\t3.5\n", "line 2: '3.5' is not an integer"),
    "snap-bad-sign": ("s.txt", "1 2\n3 4-5\n", "line 2: '4-5' is not an integer"),
    "snap-negative": ("s.txt", "# c\n1 2\n-3 4\n", "line 3: negative vertex id -3"),
    "snap-overflow": ("s.txt", "1 99999999999999999999999\n", "line 1: vertex id is too large"),
    "snap-no-edges": ("s.txt", "# only comments\n\n% and blanks\n", "no edges"),
    "snap-empty": ("s.edges", "", "empty"),
    "unknown-extension": ("g.xyz", "1 2\n", "unknown file type; supported: .mtx, .mtx.gz"),
    "no-suffix": ("graph", "1 2\n", "unknown file type"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_input_files(tmp_path, case):
    name, text, phrase = BAD_FILES[case]
    path = tmp_path / name
    path.write_text(text)
    expect_input_error(path, phrase)


def test_missing_file_and_directory(tmp_path):
    expect_input_error(tmp_path / "nope.mtx", "file not found")
    (tmp_path / "dir.mtx").mkdir()
    expect_input_error(tmp_path / "dir.mtx", "is a directory")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file(tmp_path):
    path = tmp_path / "locked.mtx"
    path.write_text(MM + "1 1 1\n1 1 1\n")
    path.chmod(0)
    expect_input_error(path, "permission denied")


@pytest.mark.parametrize("name", ["c.mtx.gz", "c.txt.gz"])
@pytest.mark.parametrize("damage", ["not-gzip", "truncated", "bad-crc"])
def test_corrupt_gzip(tmp_path, name, damage):
    body = (MM + "3 3 2\n1 1 1\n2 2 1\n") if ".mtx" in name else "0 1\n1 2\n" * 50
    blob = gzip.compress(body.encode())
    if damage == "not-gzip":
        blob = body.encode()
    elif damage == "truncated":
        blob = blob[: len(blob) // 2]
    else:
        blob = blob[:-8] + b"\0\0\0\0" + blob[-4:]
    path = tmp_path / name
    path.write_bytes(blob)
    expect_input_error(path, "corrupt gzip file")


def test_drop_zeros_leaving_nothing(tmp_path):
    path = tmp_path / "zeros.mtx"
    path.write_text(MM + "2 2 2\n1 1 0\n2 1 0\n")
    assert load(path).nnz == 2
    expect_input_error(path, "0 stored entries", drop_zeros=True)


def test_npz_that_is_not_a_sparse_matrix(tmp_path):
    arrays = tmp_path / "arrays.npz"
    with open(arrays, "wb") as f:
        np.savez(f, a=np.arange(3), b=np.ones(2))
    expect_input_error(arrays, "not a scipy sparse matrix: the archive holds arrays (a, b)")
    single = tmp_path / "single.npz"
    with open(single, "wb") as f:
        np.save(f, np.arange(3))
    expect_input_error(single, "not a scipy sparse matrix")
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"this is not a zip archive at all")
    expect_input_error(garbage, "not a valid .npz archive")
    truncated = tmp_path / "trunc.npz"
    sp.save_npz(tmp_path / "full.npz", sp.csr_array(np.eye(3)))
    truncated.write_bytes((tmp_path / "full.npz").read_bytes()[:100])
    (tmp_path / "full.npz").unlink()
    expect_input_error(truncated, ".npz")


def test_npz_with_bad_contents(tmp_path):
    rect = tmp_path / "rect.npz"
    sp.save_npz(rect, sp.csr_array(np.ones((2, 3))))
    expect_input_error(rect, "matrix is not square (2 x 3)")
    nan = tmp_path / "nan.npz"
    sp.save_npz(nan, sp.csr_array(np.array([[0.0, np.nan], [1.0, 0.0]])))
    expect_input_error(nan, "value at row 0, column 1 is NaN")
    cplx = tmp_path / "cplx.npz"
    sp.save_npz(cplx, sp.csr_array(np.array([[0, 1j], [1, 0]])))
    expect_input_error(cplx, "complex values are not supported")
    empty = tmp_path / "empty.npz"
    sp.save_npz(empty, sp.csr_array((4, 4)))
    expect_input_error(empty, "0 stored entries")
    broken = tmp_path / "broken.npz"
    with open(broken, "wb") as f:
        np.savez(f, format=np.array(b"csr"), shape=np.array([2, 2]), data=np.ones(2),
                 indices=np.array([0, 5]), indptr=np.array([0, 1, 2]))
    expect_input_error(broken, "broken.npz")
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, format=np.array("csr"), shape=np.array([3, 3]),
             data=np.array([1, "a"], dtype=object), indices=np.array([0, 1]),
             indptr=np.array([0, 1, 2, 2]))
    message = expect_input_error(pickled, "holds Python objects")
    assert "allow_pickle" not in message  # numpy's advice: no such option here


def one_line(err: pytest.ExceptionInfo, *phrases: str) -> None:
    message = str(err.value)
    assert "\n" not in message
    for phrase in phrases:
        assert phrase in message, message


def test_from_csr_bad_indices():
    with pytest.raises(InputError) as e:
        from_csr([0, 2, 3, 3], [0, -1, 1], [1, 1, 1], 3, name="neg")
    one_line(e, "neg:", "indices[1] = -1 is out of range for 3 vertices (row 0)")
    with pytest.raises(InputError) as e:
        from_csr([0, 1, 3, 3], [0, 1, 3], [1, 1, 1], 3, name="big")
    one_line(e, "big:", "indices[2] = 3 is out of range for 3 vertices (row 1)")


@pytest.mark.parametrize("indptr, phrase", [
    ([0, 1, 3], "indptr has shape (3,), expected (4,) for 3 rows"),
    ([1, 1, 2, 3], "indptr[0] is 1, expected 0"),
    ([0, 2, 1, 3], "indptr decreases at position 2 (2 > 1)"),
    ([0, 1, 2, 2], "indptr[-1] is 2 but there are 3 indices"),
    ([[0, 1], [2, 3]], "indptr has shape (2, 2)"),
    ([0.0, 1.0, 2.0, 3.0], "indptr must be integers"),
])
def test_from_csr_bad_indptr(indptr, phrase):
    with pytest.raises(InputError) as e:
        from_csr(np.array(indptr), [0, 1, 2], [1, 1, 1], 3, name="p")
    one_line(e, "p:", phrase)


def test_from_csr_bad_values_and_sizes():
    with pytest.raises(InputError) as e:
        from_csr([0, 1, 2], [1, 0], [1.0, np.inf], 2, name="v")
    one_line(e, "value at row 1, column 0 is Inf")
    with pytest.raises(InputError) as e:
        from_csr([0, 1, 2], [1, 0], [1.0], 2, name="v")
    one_line(e, "data has 1 values but there are 2 indices")
    with pytest.raises(InputError) as e:
        from_csr([0, 1, 2], [1, 0], [1j, 2j], 2, name="v")
    one_line(e, "complex values are not supported")
    with pytest.raises(InputError) as e:
        from_csr([0, 1, 2], [1, 0], None, 2, name="v")
    one_line(e, "data is missing")
    with pytest.raises(InputError) as e:
        from_csr([0, 0, 0], [], [], 2, name="v")
    one_line(e, "empty graph: 2 vertices but 0 stored entries")
    with pytest.raises(InputError) as e:
        from_csr([0], [], [], 0, name="v")
    one_line(e, "empty graph: 0 vertices")
    with pytest.raises(InputError) as e:
        from_csr([0, 1, 2], [1, 0], [1, 1], 2, name="v", ids=[1, 2, 3])
    one_line(e, "ids has shape (3,), expected (2,)")


def test_from_scipy_bad_inputs():
    with pytest.raises(InputError) as e:
        from_scipy(np.eye(3), "dense")
    one_line(e, "dense: not a scipy sparse matrix (got ndarray)")
    with pytest.raises(InputError) as e:
        from_scipy(sp.csr_array(np.ones((2, 5))), "rect")
    one_line(e, "matrix is not square (2 x 5)")
    with pytest.raises(InputError) as e:
        from_scipy(sp.csr_array(np.array([[0, 1j], [0, 0]])), "c")
    one_line(e, "complex values are not supported")


def test_from_edges_bad_inputs():
    with pytest.raises(InputError) as e:
        from_edges([0, 1], [1, 5], 3, name="e")
    one_line(e, "entry 1 has column index 5, outside 0..2")
    with pytest.raises(InputError) as e:
        from_edges([0, -1], [1, 1], name="e")
    one_line(e, "entry 1 has row index -1")
    with pytest.raises(InputError) as e:
        from_edges([], [], name="e")
    one_line(e, "no edges")
    with pytest.raises(InputError) as e:
        from_edges([1, 1], [1, 1], name="e", drop_self_loops=True)
    one_line(e, "0 stored entries")


def test_save_refuses_unknown_extension_and_cleans_up(tmp_path, monkeypatch):
    g = small_graph()
    with pytest.raises(InputError) as e:
        save(g, tmp_path / "g.csv")
    one_line(e, "g.csv", "supported: .npz, .mtx, .mtx.gz")

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", boom)  # the first member's write
    with pytest.raises(OSError, match="disk full"):
        save(g, tmp_path / "sub" / "g.npz")
    assert list((tmp_path / "sub").iterdir()) == []


# --------------------------------------------------------------------------
# finepar.files
# --------------------------------------------------------------------------


def test_atomic_json_format_and_parents(tmp_path):
    path = tmp_path / "a" / "b" / "x.json"
    files.atomic_write_json(path, {"b": [1, 2], "a": {"z": 1, "y": None}})
    text = path.read_text()
    assert text == json.dumps({"a": {"y": None, "z": 1}, "b": [1, 2]}, indent=2, sort_keys=True) + "\n"
    assert text.endswith("}\n") and text.index('"a"') < text.index('"b"')
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_atomic_failures_leave_nothing(tmp_path):
    path = tmp_path / "x.json"
    with pytest.raises(TypeError):
        files.atomic_write_json(path, {"a": {1, 2}})
    with pytest.raises(ValueError):
        files.atomic_save_npy(tmp_path / "x.npy", np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError):
        files.atomic_save_npz(tmp_path / "x.npz", ok=np.arange(3), bad=np.array([None], dtype=object))
    with pytest.raises(UnicodeEncodeError):
        files.atomic_write_text(tmp_path / "x.txt", "caf\u00e9", encoding="ascii")
    assert list(tmp_path.iterdir()) == []


def test_atomic_failure_keeps_old_contents(tmp_path):
    path = tmp_path / "keep.bin"
    files.atomic_write_bytes(path, b"old")
    with pytest.raises(RuntimeError):
        with files.atomic_open(path) as f:
            f.write(b"new, half written")
            raise RuntimeError("interrupted")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.bin"]
    path.chmod(0o600)
    files.atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"new" and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_atomic_round_trips(tmp_path):
    files.atomic_write_text(tmp_path / "t.txt", "line\r\nnext\n")
    assert (tmp_path / "t.txt").read_bytes() == b"line\r\nnext\n"
    files.atomic_write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    files.atomic_save_npy(tmp_path / "a.dat", np.arange(5, dtype=np.int32))
    np.testing.assert_array_equal(np.load(tmp_path / "a.dat"), np.arange(5))
    files.atomic_save_npz(tmp_path / "z.npz", x=np.arange(4), y=np.eye(2))
    with np.load(tmp_path / "z.npz") as z:
        np.testing.assert_array_equal(z["x"], np.arange(4))
        np.testing.assert_array_equal(z["y"], np.eye(2))
    with files.atomic_open(tmp_path / "w.txt", "w") as f:
        f.write("text")
    assert (tmp_path / "w.txt").read_text() == "text"
    with pytest.raises(ValueError):
        with files.atomic_open(tmp_path / "r.txt", "r"):
            pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.dat", "b.bin", "t.txt", "w.txt", "z.npz"]
