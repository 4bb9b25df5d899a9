"""Tests of the input formats beside Matrix Market (weighted SNAP, KONECT, networkx edge lists,
METIS, MATLAB .mat), the declared-size and memory checks, the 64-bit ``indptr`` path and the
``.npz`` layout.

Each format is written from a shared graph with an independent writer (networkx,
scipy.io.savemat, or a few numpy lines here), read back with :func:`finepar.io.load` and
compared with the Matrix Market / SNAP load of the same graph.
"""

from __future__ import annotations

import gzip
import os
import random
import tracemalloc
import zipfile

import networkx as nx
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from conftest import data_file, shared_graph
from finepar import graph as graph_module
from finepar import io
from finepar.errors import InputError
from finepar.graph import Graph
from finepar.io import from_csr, from_edges, from_scipy, load, save, validate


def same_arrays(g: Graph, ref: Graph, *, ids=None, data=True) -> None:
    """`g` holds the CSR of `ref` (and the given ids); dtypes are the canonical ones."""
    assert g.indices.dtype == np.int32 and g.data.dtype == np.float32
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    if data:
        np.testing.assert_array_equal(g.data, ref.data)
    if ids is None:
        assert g.ids is None
    else:
        np.testing.assert_array_equal(g.ids, ids)
    validate(g)


def edges_of(g: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, columns and values of every stored entry, in CSR order."""
    a = g.to_scipy().tocoo()
    return a.row.astype(np.int64), a.col.astype(np.int64), a.data


def input_ids(g: Graph) -> np.ndarray:
    return np.arange(g.n, dtype=np.int64) if g.ids is None else g.ids


def expect_error(path, phrase: str, **kwargs) -> str:
    """load(path) raises a one-line InputError naming the file and containing `phrase`."""
    with pytest.raises(InputError) as info:
        load(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    assert phrase.lower() in message.lower(), message
    return message


# --------------------------------------------------------------------------
# SNAP weighted edge lists
# --------------------------------------------------------------------------


def write_snap(path, g: Graph, *, weights: bool, extra: int = 0) -> None:
    rows, cols, vals = edges_of(g)
    ids = input_ids(g)
    columns = [ids[rows], ids[cols]]
    fmt = ["%d", "%d"]
    if weights:
        columns.append(vals.astype(np.float64))
        fmt.append("%.9g")
    for k in range(extra):
        columns.append(np.arange(rows.size) * 7 + k)
        fmt.append("%d")
    body = np.column_stack(columns)
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt") as f:
        f.write("# written by test_formats\n")
        np.savetxt(f, body, fmt=fmt, delimiter="\t")


@pytest.mark.parametrize("file", ["memplus.mtx", "adder_dcop_05.mtx"])
@pytest.mark.parametrize("suffix, extra", [(".txt", 0), (".tsv.gz", 2)])
def test_weighted_snap_matches_matrix_market(tmp_path, file, suffix, extra):
    ref = shared_graph(file)
    path = tmp_path / f"w{suffix}"
    write_snap(path, ref, weights=True, extra=extra)
    g = load(path)
    same_arrays(g, ref)
    assert not g.pattern
    assert "third column read as edge weights" in g.notes
    assert any("explicit zeros" in note for note in g.notes)
    assert any("ignored 2 extra columns" in note for note in g.notes) == (extra == 2)
    dropped = load(path, drop_zeros=True)
    assert dropped.nnz == ref.nnz - int((ref.data == 0).sum()) and (dropped.data != 0).all()


def test_snap_keeps_sparse_ids_and_sums_duplicate_weights(tmp_path):
    ref = shared_graph("wiki-Vote.txt")
    path = tmp_path / "wv.txt"
    write_snap(path, ref, weights=False)
    same_arrays(load(path), ref, ids=ref.ids)
    dup = tmp_path / "dup.edges"
    dup.write_text("10 20 1.5\n20 30 2\n10 20 0.25\n30 10 -1\n")
    g = load(dup)
    np.testing.assert_array_equal(g.ids, [10, 20, 30])
    np.testing.assert_array_equal(g.to_scipy().toarray(), [[0, 1.75, 0], [0, 0, 2], [-1, 0, 0]])
    assert "summed the weights of 1 duplicate edges" in g.notes


# --------------------------------------------------------------------------
# KONECT
# --------------------------------------------------------------------------


def write_konect(path, g: Graph, *, kind: str, weight: str, timestamps: bool = False) -> None:
    rows, cols, vals = edges_of(g)
    if kind == "sym":  # each undirected edge once
        keep = rows >= cols
        rows, cols, vals = rows[keep], cols[keep], vals[keep]
    columns = [rows + 1, cols + 1]
    fmt = ["%d", "%d"]
    if weight != "unweighted":
        columns.append(vals.astype(np.float64))
        fmt.append("%.9g")
    elif timestamps:
        columns.append(np.ones(rows.size))
        fmt.append("%d")
    if timestamps:
        columns.append(1_000_000 + np.arange(rows.size))
        fmt.append("%d")
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt") as f:
        f.write(f"% {kind} {weight}\n% {rows.size} {g.n} {g.n}\n")
        np.savetxt(f, np.column_stack(columns), fmt=fmt, delimiter=" ")


@pytest.mark.parametrize("file, kind, weight, name", [
    ("ca-GrQc.mtx", "sym", "unweighted", "out.ca-GrQc"),
    ("luxembourg.mtx", "sym", "unweighted", "out.lux.gz"),
    ("wiki-Vote.txt", "asym", "unweighted", "out.wiki"),
    ("memplus.mtx", "asym", "weighted", "out.memplus"),
    ("USPowerGrid.mtx", "sym", "posweighted", "out.power.gz"),
])
@pytest.mark.parametrize("timestamps", [False, True])
def test_konect_matches_matrix_market(tmp_path, file, kind, weight, name, timestamps):
    ref = shared_graph(file)
    if ref.ids is not None:  # KONECT numbers vertices 1..n: compare with the compacted graph
        ref = from_csr(ref.indptr, ref.indices, ref.data, ref.n, name="ref", pattern=ref.pattern)
    path = tmp_path / name
    write_konect(path, ref, kind=kind, weight=weight, timestamps=timestamps)
    g = load(path)
    same_arrays(g, ref)
    assert g.pattern == (weight == "unweighted")
    assert g.symmetric == (kind == "sym")
    assert g.name == name[4:].removesuffix(".gz")
    assert any("both directions" in note for note in g.notes) == (kind == "sym")
    assert any("ignored" in note for note in g.notes) == timestamps


# --------------------------------------------------------------------------
# networkx edge lists
# --------------------------------------------------------------------------


def nx_digraph(g: Graph, *, weights: bool) -> nx.DiGraph:
    rows, cols, vals = edges_of(g)
    ids = input_ids(g)
    d = nx.DiGraph()
    if weights:
        d.add_weighted_edges_from(zip(ids[rows].tolist(), ids[cols].tolist(), vals.astype(float).tolist()))
    else:
        d.add_edges_from(zip(ids[rows].tolist(), ids[cols].tolist()))
    return d


@pytest.mark.parametrize("file, writer", [
    ("memplus.mtx", "dict"), ("memplus.mtx", "weighted"), ("memplus.mtx", "no-data"),
    ("adder_dcop_05.mtx", "dict.gz"), ("adder_dcop_05.mtx", "weighted"),
    ("wiki-Vote.txt", "dict"), ("wiki-Vote.txt", "no-data"), ("rajat01.mtx", "dict.gz"),
])
def test_networkx_edgelist_matches_reference(tmp_path, file, writer):
    ref = shared_graph(file)
    weighted = not ref.pattern and writer != "no-data"
    d = nx_digraph(ref, weights=weighted)
    path = tmp_path / ("g.edgelist.gz" if writer.endswith(".gz") else "g.edgelist")
    if writer == "weighted":
        nx.write_weighted_edgelist(d, path)
    else:
        nx.write_edgelist(d, path, data=writer != "no-data")
    g = load(path)
    assert g.pattern == (not weighted)
    # networkx writes edges in its own order and labels; ids come back ascending
    ids = input_ids(ref)
    same_arrays(g, ref, ids=None if np.array_equal(ids, np.arange(ref.n)) else ids, data=weighted)


def test_networkx_attributes_other_keys_and_missing_weights(tmp_path):
    d = nx.DiGraph()
    d.add_edge(-5, 3, weight=2.5, color="red")
    d.add_edge(3, 7, label="x, y: {z}")
    d.add_edge(7, -5, weight=np.float64(4.0))
    path = tmp_path / "attrs.edgelist"
    nx.write_edgelist(d, path)
    g = load(path)
    np.testing.assert_array_equal(g.ids, [-5, 3, 7])
    ref = nx.to_scipy_sparse_array(d, nodelist=[-5, 3, 7], weight="weight").toarray()
    np.testing.assert_array_equal(g.to_scipy().toarray(), ref)
    assert "ignored edge attributes other than 'weight': color, label" in g.notes
    assert "1 edges have no 'weight' attribute: weight 1" in g.notes


def test_networkx_edgelist_of_many_lines(tmp_path):
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 50_000, (2, 400_000))
    w = rng.integers(1, 1000, 400_000) / 8
    path = tmp_path / "big.edgelist"
    with open(path, "w") as f:
        f.writelines(f"{a} {b} {{'weight': {c!r}}}\n" for a, b, c in zip(src.tolist(), dst.tolist(), w.tolist()))
    g = load(path)
    ids = np.unique(np.concatenate((src, dst)))
    remap = np.searchsorted(ids, np.arange(50_000))
    ref = sp.csr_array((w, (remap[src], remap[dst])), shape=(ids.size, ids.size))
    ref.sum_duplicates()
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    np.testing.assert_array_equal(g.data, ref.data.astype(np.float32))


# --------------------------------------------------------------------------
# METIS
# --------------------------------------------------------------------------


def write_metis(path, g: Graph, *, fmt: str = "", ncon: int = 1) -> None:
    """METIS file of a symmetric graph; edge weights are its data, vertex sizes/weights made up."""
    sizes, vweights, eweights = (digit == "1" for digit in fmt.zfill(3))
    header = f"{g.n} {g.nnz // 2}" + (f" {fmt}" if fmt else "") + (f" {ncon}" if vweights and ncon > 1 else "")
    lines = ["% written by test_formats", header]
    for v in range(g.n):
        lo, hi = g.indptr[v], g.indptr[v + 1]
        words = [str(v % 5 + 1)] if sizes else []
        words += [str(v % 3 + k) for k in range(ncon)] if vweights else []
        for u, w in zip(g.indices[lo:hi].tolist(), g.data[lo:hi].tolist()):
            words.append(str(u + 1))
            if eweights:
                words.append(str(int(w)))
        lines.append(" ".join(words))
        if v == g.n // 2:
            lines.append("% a comment between vertex lines")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def integer_weighted(g: Graph) -> Graph:
    """`g` with symmetric integer weights (i + j) % 9 + 1."""
    rows, cols, _ = edges_of(g)
    return from_csr(g.indptr, g.indices, ((rows + cols) % 9 + 1).astype(np.float32), g.n, name=g.name)


@pytest.mark.parametrize("file", ["luxembourg.mtx", "USPowerGrid.mtx"])
@pytest.mark.parametrize("fmt, ncon", [("", 1), ("0", 1), ("1", 1), ("11", 1), ("111", 3), ("100", 1)])
def test_metis_matches_matrix_market(tmp_path, file, fmt, ncon):
    ref = shared_graph(file)
    weighted = fmt.endswith("1")
    if weighted:
        ref = integer_weighted(ref)
        mtx = tmp_path / "ref.mtx"
        scipy.io.mmwrite(mtx, ref.to_scipy().astype(np.float64), symmetry="symmetric")
        ref = load(mtx)
    path = tmp_path / "g.graph"
    write_metis(path, ref, fmt=fmt, ncon=ncon)
    g = load(path)
    same_arrays(g, ref, data=weighted)
    assert g.symmetric and g.pattern == (not weighted)
    assert any("vertex weights" in note for note in g.notes) == (fmt.zfill(3)[1] == "1")
    assert any("vertex sizes" in note for note in g.notes) == (fmt.zfill(3)[0] == "1")


# --------------------------------------------------------------------------
# MATLAB .mat
# --------------------------------------------------------------------------


def test_mat_suitesparse_problem_with_zeros_matches_matrix_market(tmp_path):
    ref = shared_graph("memplus.mtx")
    a = ref.to_scipy().astype(np.float64)
    coo = a.tocoo()
    explicit = coo.data == 0
    zeros = sp.csc_array((np.ones(int(explicit.sum())), (coo.row[explicit], coo.col[explicit])), shape=a.shape)
    stored = a.copy()
    stored.eliminate_zeros()
    path = tmp_path / "memplus.mat"
    scipy.io.savemat(path, {"Problem": {"A": stored, "Zeros": zeros, "name": "Hamm/memplus", "id": 1}})
    g = load(path)
    same_arrays(g, ref)
    assert "read Problem.A (SuiteSparse)" in g.notes
    assert "added 27,003 explicit zeros from Problem.Zeros" in g.notes
    assert load(path, drop_zeros=True).nnz == ref.nnz - 27_003


@pytest.mark.parametrize("file", ["ca-GrQc.mtx", "rajat01.mtx"])
def test_mat_logical_and_single_variable(tmp_path, file):
    ref = shared_graph(file)
    path = tmp_path / "p.mat"
    scipy.io.savemat(path, {"Problem": {"A": ref.to_scipy().astype(bool), "title": "t"}}, do_compression=True)
    g = load(path)
    same_arrays(g, ref)
    assert g.pattern
    single = tmp_path / "single.mat"
    scipy.io.savemat(single, {"M": ref.to_scipy().astype(np.float64), "x": np.arange(3.0)}, format="4")
    g = load(single)
    same_arrays(g, ref)
    assert "read sparse variable 'M'" in g.notes


def test_mat_bad_files(tmp_path):
    a = sp.csr_array(np.array([[0, 1.0], [2.0, 0]]))
    two = tmp_path / "two.mat"
    scipy.io.savemat(two, {"A": a, "B": a})
    expect_error(two, "several sparse matrices (A, B) and no Problem struct")
    none = tmp_path / "none.mat"
    scipy.io.savemat(none, {"x": np.ones((3, 2)), "s": "hello"})
    expect_error(none, "no sparse matrix in the file (it holds x (3x2 float64)")
    no_a = tmp_path / "noA.mat"
    scipy.io.savemat(no_a, {"Problem": {"B": a}})
    expect_error(no_a, "the Problem struct has no A field (fields: B)")
    dense = tmp_path / "dense.mat"
    scipy.io.savemat(dense, {"Problem": {"A": np.eye(2)}})
    expect_error(dense, "Problem.A is a dense float64 array")
    rect = tmp_path / "rect.mat"
    scipy.io.savemat(rect, {"A": sp.csr_array(np.ones((2, 3)))})
    expect_error(rect, "not square (2 x 3)")
    v73 = tmp_path / "v73.mat"  # the 128-byte header MATLAB writes before an HDF5 body
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan  1 00:00:00 2024 HDF5 schema 1.00 ."
    v73.write_bytes(header.ljust(116) + bytes(8) + b"\x00\x02IM" + b"\x89HDF\r\n\x1a\n" + bytes(64))
    expect_error(v73, "MATLAB v7.3 (HDF5) .mat files are not supported")
    garbage = tmp_path / "garbage.mat"
    garbage.write_bytes(b"not a mat file at all")
    expect_error(garbage, "not a MATLAB .mat file")
    full = tmp_path / "full.mat"
    scipy.io.savemat(full, {"Problem": {"A": a}})
    truncated = tmp_path / "trunc.mat"
    truncated.write_bytes(full.read_bytes()[:200])
    expect_error(truncated, "corrupt .mat file")


def reader_crashes(path) -> bool:
    """Whether scipy.io.loadmat kills the process reading `path` (tried in a forked child)."""
    pid = os.fork()
    if pid == 0:
        import faulthandler
        faulthandler.disable()  # pytest's handler writes to its own copy of stderr
        os.close(2)
        try:
            scipy.io.loadmat(path, squeeze_me=True, struct_as_record=False)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.WIFSIGNALED(status)


def test_mat_reader_crash_is_contained(tmp_path):
    """Ten bytes inserted into a sparse matrix's index arrays make scipy's MATLAB reader crash
    (SIGSEGV, scipy 1.17); load reads .mat files in a child process and raises instead."""
    a = sp.csr_array(np.array([[0, 1.5, 0, 2], [0, 0, 3, 0], [4, 0, 0, 0], [0, 5, 6, 0]]))
    path = tmp_path / "damaged.mat"
    scipy.io.savemat(path, {"Problem": {"A": a, "Zeros": sp.csr_array(np.eye(4))}})
    blob = path.read_bytes()
    path.write_bytes(blob[:274] + b"'weight': " + blob[274:])
    crashes = reader_crashes(path)
    message = expect_error(path, "corrupt .mat file")
    assert ("reader crashed on it (signal" in message) == crashes


def test_a_crashing_mat_reader_prints_nothing(tmp_path):
    """The contained crash leaves no 'Fatal Python error' dump on stderr, even with
    Python's fault handler on."""
    import subprocess
    import sys
    a = sp.csr_array(np.array([[0, 1.5, 0, 2], [0, 0, 3, 0], [4, 0, 0, 0], [0, 5, 6, 0]]))
    path = tmp_path / "damaged.mat"
    scipy.io.savemat(path, {"Problem": {"A": a, "Zeros": sp.csr_array(np.eye(4))}})
    blob = path.read_bytes()
    path.write_bytes(blob[:274] + b"'weight': " + blob[274:])
    if not reader_crashes(path):
        pytest.skip("this scipy's MATLAB reader does not crash on the damaged file")
    code = ("import sys; from finepar.io import load\n"
            "try:\n    load(sys.argv[1])\nexcept Exception as e:\n    print(e)")
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code, str(path)],
                          capture_output=True, text=True, timeout=120)
    assert "reader crashed on it" in done.stdout
    assert "Fatal Python error" not in done.stderr and done.stderr == ""


# --------------------------------------------------------------------------
# malformed inputs of the new formats
# --------------------------------------------------------------------------

BAD = {
    "snap-mixed": ("s.txt", "1 2 0.5\n2 3\n", "line 2: 2 columns, but line 1 has 3"),
    "snap-one": ("s.txt", "1 2 3\n4\n", "line 2: expected 2 integer vertex ids and an optional weight, found 1"),
    "snap-weight-word": ("s.txt", "1 2 0.5\n2 3 heavy\n", "line 2: weight 'heavy' is not a number"),
    "snap-weight-nan": ("s.txt", "1 2 0.5\n\n2 3 nan\n", "line 3: weight is NaN"),
    "snap-weight-inf": ("s.txt", "1 2 -inf\n", "line 1: weight is -Inf"),
    "snap-weight-huge": ("s.txt", "1 2 1e300\n", "line 1: weight 1e+300 is too large for float32"),
    "snap-id-float": ("s.txt", "1 2 1\n2.5 3 1\n", "line 2: '2.5' is not an integer vertex id"),
    "konect-no-header": ("out.x", "1 2\n", "line 1: expected a KONECT header"),
    "konect-bip": ("out.x", "% bip unweighted\n1 2\n", "bipartite KONECT networks"),
    "konect-zero": ("out.x", "% asym unweighted\n1 2\n0 1\n", "line 3: vertex id 0 (KONECT ids start at 1)"),
    "konect-count": ("out.x", "% sym unweighted\n% 3 3 3\n1 2\n2 3\n", "declares 3 edges but the file lists 2"),
    "konect-n": ("out.x", "% asym unweighted\n% 2 3 3\n1 2\n2 4\n", "line 4: vertex id 4 exceeds the header's 3"),
    "konect-mixed": ("out.x", "% asym weighted\n1 2 3\n2 3\n", "line 3: 2 columns, but line 2 has 3"),
    "nx-label": ("e.edgelist", "1 2 {}\na 3 {}\n", "line 2: 'a' is not an integer node label"),
    "nx-unclosed": ("e.edgelist", "1 2 {'weight': 1}\n2 3 {'weight': 2\n", "line 2: unbalanced attribute dict"),
    "nx-mixed": ("e.edgelist", "1 2 {'weight': 1}\n2 3\n", "line 2: no attribute dict"),
    "nx-weight-word": ("e.edgelist", "1 2 {'weight': 'x'}\n", "line 1: weight ''x'' is not a number"),
    "nx-two-weights": ("e.edgelist", "1 2 {'weight': 1, 'weight': 2}\n", "line 1: two 'weight' attributes"),
    "nx-columns": ("e.edgelist", "1 2 3 4\n", "line 1: expected 'u v', 'u v weight' or 'u v {attributes}'"),
    "nx-junk": ("e.edgelist", "1 2 {} x\n", "line 1: expected 'u v {attributes}', found 3 fields"),
    "nx-overflow": ("e.edgelist", "1 -99999999999999999999\n", "line 1: node label is too large"),
    "metis-header": ("m.graph", "% c\n3\n2\n1\n\n", "line 2: METIS header must be 'n m [fmt [ncon]]'"),
    "metis-header-word": ("m.graph", "3 x\n", "line 1: METIS header: n, m and ncon must be integers"),
    "metis-fmt": ("m.graph", "2 1 2\n2\n1\n", "fmt '2' must be up to three digits"),
    "metis-ncon": ("m.graph", "2 1 1 2\n2 1\n1 1\n", "ncon is given but fmt 001 has no vertex weights"),
    "metis-negative": ("m.graph", "2 -1\n2\n1\n", "negative m"),
    "metis-only-comments": ("m.graph", "% nothing\n", "no METIS header line"),
    "metis-m": ("m.graph", "3 3\n2\n1 3\n2\n", "declares 3 edges but the vertex lines list 4 neighbours"),
    "metis-few-lines": ("m.graph", "3 1\n2\n1\n", "declares 3 vertices but the file has 2 vertex lines"),
    "metis-many-lines": ("m.graph", "2 1\n2\n1\n1\n", "line 4: more vertex lines than the header's 2"),
    "metis-range": ("m.graph", "2 1\n3\n1\n", "line 2: vertex 1 has neighbour 3, outside 1..2"),
    "metis-zero": ("m.graph", "2 1\n0\n1\n", "line 2: vertex 1 has neighbour 0, outside 1..2"),
    "metis-loop": ("m.graph", "2 1\n1\n2\n", "line 2: vertex 1 lists itself"),
    "metis-twice": ("m.graph", "3 2\n2 2\n1 1\n\n", "line 2: vertex 1 lists neighbour 2 twice"),
    "metis-asym": ("m.graph", "3 2\n2 3\n1\n2\n", "line 2: vertex 1 lists 3, but vertex 3 (line 4) does not list 1"),
    "metis-weights": ("m.graph", "2 1 1\n2 5\n1 6\n", "vertex 1 gives edge 1-2 weight 5, but vertex 2 (line 3) gives 6"),
    "metis-odd": ("m.graph", "2 1 1\n2 5 7\n1 5\n", "line 2: vertex 1 has 3 numbers"),
    "metis-word": ("m.graph", "2 1\n2\nx\n", "line 3: 'x' is not an integer METIS number"),
    "metis-empty": ("m.graph", "3 0\n\n\n\n", "empty graph: 3 vertices but 0 stored entries"),
    "metis-huge-m": ("m.graph", "3 99999999999\n", "declares 199,999,999,998 entries but the file has only"),
    "metis-int32-n": ("m.graph", "3000000000 1\n", "exceed the int32 limit"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_inputs_of_new_formats(tmp_path, case):
    name, text, phrase = BAD[case]
    path = tmp_path / name
    path.write_text(text)
    expect_error(path, phrase)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_fuzzed_files_give_one_line_errors(tmp_path):
    """Random damage (bytes inserted, changed, deleted; files cut) to a valid file of every
    format: every load either succeeds or raises a one-line InputError."""
    a = sp.csr_array(np.array([[0, 1.5, 0, 2], [0, 0, 3, 0], [4, 0, 0, 0], [0, 5, 6, 0]]))
    g = from_scipy(a, "a")
    save(g, tmp_path / "base.npz")
    scipy.io.savemat(tmp_path / "base.mat", {"Problem": {"A": a, "Zeros": sp.eye_array(4)}})
    bases = {
        "f.mtx": b"%%MatrixMarket matrix coordinate real general\n4 4 4\n1 1 1.5\n2 3 -2\n4 4 3e2\n3 1 7\n",
        "f.txt": b"# c\n1 2 0.5\n2 3 1e3\n3 1 -2\n",
        "out.f": b"% sym unweighted\n% 3 3 3\n1 2\n2 3\n3 1\n",
        "f.edgelist": b"1 2 {'weight': 2.0}\n2 3 {'weight': 3, 'color': 'red'}\n3 1 {}\n",
        "f.graph": b"% comment\n4 4 1\n2 1 3 2\n1 1 3 3\n1 2 2 3 4 1\n3 1\n",
        "f.npz": (tmp_path / "base.npz").read_bytes(),
        "f.mat": (tmp_path / "base.mat").read_bytes(),
    }
    pieces = [b"99999999999999999999", b"-1", b"0", b"1e999", b"nan", b"{", b"}", b"%", b"\n", b"\x00", b"\xff"]
    rnd = random.Random(2026)
    outcomes = {"loaded": 0, "refused": 0}
    for trial in range(350):
        name, base = list(bases.items())[trial % len(bases)]
        blob = bytearray(base)
        for _ in range(rnd.randint(1, 3)):
            pos = rnd.randrange(len(blob) + 1)
            op = rnd.random()
            if op < 0.35:
                blob[pos:pos] = rnd.choice(pieces)
            elif op < 0.6 and pos < len(blob):
                blob[pos] = rnd.randrange(256)
            elif op < 0.8 and pos < len(blob):
                del blob[pos]
            else:
                del blob[pos:]
        path = tmp_path / "fuzz" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(bytes(blob))
        try:
            validate(load(path, memory_limit=1 << 30))
            outcomes["loaded"] += 1
        except InputError as e:
            assert "\n" not in str(e) and str(path) in str(e)
            outcomes["refused"] += 1
    assert outcomes["loaded"] > 10 and outcomes["refused"] > 100


# --------------------------------------------------------------------------
# Matrix Market robustness
# --------------------------------------------------------------------------

MM = "%%MatrixMarket matrix coordinate real general\n"


@pytest.mark.parametrize("body, phrase", [
    ("3 3 1\n99999999999999999999 1 1\n", "malformed Matrix Market: Line 3: Integer out of range"),
    ("3 3 1\n1 4294967297 1\n", "malformed Matrix Market: Line 3: Integer out of range"),
    ("99999999999999999999 99999999999999999999 1\n1 1 1\n", "malformed Matrix Market: bad size line"),
    ("-3 -3 1\n1 1 1\n", "can't be negative"),
    ("3 3 -1\n", "can't be negative"),
    ("2147483647 2147483647 1\n1 1 1\n", "loading needs about 48.0 GiB of memory (2,147,483,647 vertices"),
])
def test_matrix_market_overflows(tmp_path, body, phrase):
    path = tmp_path / "m.mtx"
    path.write_text(MM + body)
    expect_error(path, phrase, memory_limit=16 << 30)


@pytest.mark.parametrize("gz", [False, True])
def test_matrix_market_nul_bytes_and_unterminated_last_line(tmp_path, gz):
    """fast_matrix_market crashes on these; the loader checks or guards the stream first."""
    def write(name, blob):
        path = tmp_path / (name + (".mtx.gz" if gz else ".mtx"))
        path.write_bytes(gzip.compress(blob) if gz else blob)
        return path

    expect_error(write("nul", (MM + "3 3 2\n1 1 1\n2 2 1").encode() + b"\x00\n"), "line 4: NUL byte")
    expect_error(write("nul2", (MM + "3 3 1\n1 1 1 \x00 \n").encode()), "line 3: NUL byte")
    g = load(write("open", (MM + "3 3 2\n1 1 1\n3 2 7.5").encode()))  # no final newline
    np.testing.assert_array_equal(g.to_scipy().toarray(), [[1, 0, 0], [0, 0, 0], [0, 7.5, 0]])


def test_gzip_matrix_market_declaring_more_than_it_can_hold(tmp_path):
    path = tmp_path / "many.mtx.gz"
    path.write_bytes(gzip.compress((MM + "10 10 1000000000\n1 1 1\n").encode()))
    expect_error(path, "size line declares 1,000,000,000 entries but the gzip file has only")


# --------------------------------------------------------------------------
# declared sizes and memory
# --------------------------------------------------------------------------


def test_check_size_sees_a_huge_declared_graph_first(tmp_path):
    path = tmp_path / "sparse200m.mtx"
    path.write_text("%%MatrixMarket matrix coordinate pattern general\n"
                    "200000000 200000000 3\n1 2\n200000000 1\n5 5\n")
    calls = []

    def refuse(n, nnz):
        calls.append((n, nnz))
        raise OverflowError("budget")

    with pytest.raises(OverflowError, match="budget"):
        load(path, check_size=refuse)
    assert calls == [(200_000_000, 3)]
    need = io.load_memory("mtx", 200_000_000, 3)
    available = io.available_memory()
    if available is not None and need > available:  # a small machine refuses, naming both sizes
        expect_error(path, "loading needs about")
        return
    g = load(path, check_size=lambda n, nnz: calls.append((n, nnz)))
    assert calls[-1] == (200_000_000, 3)
    assert (g.n, g.nnz) == (200_000_000, 3)
    np.testing.assert_array_equal(g.indices, [1, 4, 0])
    assert g.row_lengths()[[0, 4, 199_999_999]].tolist() == [1, 1, 1]


def test_check_size_arguments_per_format(tmp_path):
    seen = {}

    def record(path):
        return lambda n, nnz: seen.setdefault(path.name, (n, nnz))

    files = {
        "sym.mtx": "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 3\n2 1\n3 1\n4 4\n",
        "e.txt": "10 20\n20 30\n10 20\n",
        "out.k": "% sym unweighted\n% 2 5 5\n1 2\n2 5\n",
        "n.edgelist": "1 2 {}\n2 3 {}\n",
        "m.graph": "3 2\n2\n1 3\n2\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    save(shared_graph("ca-GrQc.mtx"), tmp_path / "g.npz")
    sp.save_npz(tmp_path / "s.npz", sp.coo_array(np.eye(6)))
    scipy.io.savemat(tmp_path / "p.mat", {"Problem": {"A": sp.csr_array(np.eye(7))}})
    for path in sorted(tmp_path.iterdir()):
        load(path, check_size=record(path))
    assert seen == {"sym.mtx": (4, 6), "e.txt": (3, 3), "out.k": (5, 4), "n.edgelist": (3, 2),
                    "m.graph": (3, 4), "g.npz": (5_242, 28_980), "s.npz": (6, 6), "p.mat": (7, 7)}


def test_memory_limit_refuses_before_work(tmp_path):
    ref = shared_graph("memplus.mtx")
    need = io.load_memory("mtx", ref.n, ref.nnz)
    msg = expect_error(data_file("memplus.mtx"), "loading needs about", memory_limit=need - 1)
    assert "17,758 vertices, 126,150 stored entries" in msg and "is available" in msg
    assert load(data_file("memplus.mtx"), memory_limit=need).nnz == ref.nnz
    text = tmp_path / "w.txt"
    write_snap(text, ref, weights=True)
    expect_error(text, "bytes of text) but", memory_limit=text.stat().st_size)
    meminfo = dict(line.split(":", 1) for line in open("/proc/meminfo"))
    available = io.available_memory()
    assert 0 < available <= int(meminfo["MemTotal"].split()[0]) * 1024


# --------------------------------------------------------------------------
# .npz layout
# --------------------------------------------------------------------------


def npz_members(path) -> dict[str, tuple[str, int]]:
    with zipfile.ZipFile(path) as z, np.load(path) as arrays:
        return {k: (str(arrays[k].dtype), z.getinfo(k + ".npy").compress_type) for k in arrays.files}


def test_npz_layout_pattern_symmetric_ids(tmp_path):
    ref = shared_graph("wiki-Vote.txt")
    path = tmp_path / "w.npz"
    save(ref, path)
    members = npz_members(path)
    assert members["data"] == ("bool", zipfile.ZIP_DEFLATED)  # ones, for scipy's reader
    assert members["indices"] == ("int32", zipfile.ZIP_DEFLATED) and members["indptr"][0] == "int32"
    back = load(path)
    same_arrays(back, ref, ids=ref.ids)
    assert back.pattern and not back.symmetric
    sym = shared_graph("luxembourg.mtx")
    save(sym, tmp_path / "s.npz")
    assert load(tmp_path / "s.npz").symmetric


def test_npz_compression_default(tmp_path, monkeypatch):
    ref = shared_graph("memplus.mtx")
    save(ref, tmp_path / "small.npz")
    assert npz_members(tmp_path / "small.npz")["data"] == ("float32", zipfile.ZIP_DEFLATED)
    monkeypatch.setattr(io.npz, "COMPRESS_BELOW", 1000)
    save(ref, tmp_path / "big.npz")
    assert npz_members(tmp_path / "big.npz")["indices"] == ("int32", zipfile.ZIP_STORED)
    save(ref, tmp_path / "forced.npz", compressed=True)
    assert npz_members(tmp_path / "forced.npz")["indices"][1] == zipfile.ZIP_DEFLATED
    same_arrays(load(tmp_path / "big.npz"), ref)
    assert (sp.load_npz(tmp_path / "big.npz") != ref.to_scipy()).nnz == 0  # valued: scipy reads it


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "bsr", "dia-free", "bool", "int64"])
def test_scipy_written_npz_still_load(tmp_path, fmt):
    ref = shared_graph("adder_dcop_05.mtx")
    a = ref.to_scipy().astype(np.float64)
    if fmt == "bool":
        a, ref = a.astype(bool), load(data_file("adder_dcop_05.mtx"))
    elif fmt == "int64":
        a = sp.csr_array((a.data, a.indices.astype(np.int64), a.indptr.astype(np.int64)), shape=a.shape)
    elif fmt == "dia-free":
        a = sp.csr_matrix(a)
    else:
        a = a.asformat(fmt)
    path = tmp_path / "s.npz"
    sp.save_npz(path, a, compressed=fmt != "csr")
    g = load(path)
    if fmt == "bool":
        assert g.pattern
        same_arrays(g, ref, data=False)
    else:
        same_arrays(g, ref)


def test_npz_stored_members_read_in_parallel_spans(tmp_path, monkeypatch):
    """Uncompressed members go through finepar.io.npz's threaded reader (no CRC pass): the
    same arrays as numpy's reader, also read in many small spans, valued and pattern."""
    from finepar.io import npz
    monkeypatch.setattr(npz, "FAST_MIN_BYTES", 1)
    monkeypatch.setattr(npz, "READ_SPAN", 4096 + 7)  # spans that split elements
    for name in ("memplus.mtx", "wiki-Vote.txt"):
        ref = shared_graph(name)
        path = tmp_path / "u.npz"
        save(ref, path, compressed=False)
        members = npz.stored_members(path)
        assert {"indptr", "indices"} <= set(members) and ("data" in members) != ref.pattern
        same_arrays(load(path), ref, ids=ref.ids)
        assert load(path).pattern == ref.pattern


def test_npz_damaged_stored_member_is_one_line(tmp_path, monkeypatch):
    """The fast reader skips the CRC: a damaged index still fails the graph's checks."""
    from finepar.io import npz
    monkeypatch.setattr(npz, "FAST_MIN_BYTES", 1)
    ref = shared_graph("memplus.mtx")
    path = tmp_path / "u.npz"
    save(ref, path, compressed=False)
    start = npz.stored_members(path)["indices"].offset
    bad = bytearray(path.read_bytes())
    bad[start:start + 8] = np.array([-5, 3], dtype=np.int32).tobytes()  # a damaged member
    (tmp_path / "bad.npz").write_bytes(bytes(bad))
    with pytest.raises(InputError, match="bad.npz.*out of range"):
        load(tmp_path / "bad.npz")


def test_npz_load_stays_within_twice_the_arrays(tmp_path):
    ref = shared_graph("cnr-2000.mtx.gz")
    path = tmp_path / "cnr.npz"
    save(ref, path, compressed=False)
    arrays = ref.indptr.nbytes + ref.indices.nbytes + ref.data.nbytes
    tracemalloc.start()
    g = load(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    same_arrays(g, ref)
    assert peak < 2 * arrays, (peak, arrays)


# --------------------------------------------------------------------------
# 64-bit indptr
# --------------------------------------------------------------------------


@pytest.fixture
def small_int32_limit(monkeypatch):
    """Make every graph of more than 16 stored entries take the int64-indptr path."""
    for file in ("memplus.mtx", "luxembourg.mtx", "wiki-Vote.txt", "USPowerGrid.mtx"):
        shared_graph(file)  # cached with the real limit, before the patch
    monkeypatch.setattr(graph_module, "INT32_MAX", 16)
    return 16


def check_wide(g: Graph, ref: Graph) -> None:
    assert g.nnz > 16 and g.indptr.dtype == np.int64 and g.indices.dtype == np.int32
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    np.testing.assert_array_equal(g.data, ref.data)
    validate(g)


def test_int64_indptr_through_every_builder(tmp_path, small_int32_limit):
    memplus = load(data_file("memplus.mtx"))
    check_wide(memplus, shared_graph("memplus.mtx"))
    check_wide(load(data_file("luxembourg.mtx")), shared_graph("luxembourg.mtx"))  # pattern, symmetric
    check_wide(load(data_file("wiki-Vote.txt")), shared_graph("wiki-Vote.txt"))
    ref = shared_graph("USPowerGrid.mtx")
    check_wide(from_scipy(ref.to_scipy(), "s"), ref)
    check_wide(from_csr(ref.indptr, ref.indices, ref.data, ref.n, name="c"), ref)
    rows, cols, _ = edges_of(ref)
    reverse = np.lexsort((-cols, rows))  # every row's columns in decreasing order
    shuffled = from_csr(ref.indptr, ref.indices[reverse], ref.data[reverse], ref.n, name="u")
    check_wide(shuffled, ref)
    assert "sorted column indices within rows" in shuffled.notes
    check_wide(from_edges(rows, cols, ref.n), load(data_file("USPowerGrid.mtx"), drop_zeros=False))
    check_wide(load(data_file("USPowerGrid.mtx"), drop_zeros=True), ref)
    write_snap(tmp_path / "w.txt", memplus, weights=True)
    check_wide(load(tmp_path / "w.txt"), shared_graph("memplus.mtx"))
    write_konect(tmp_path / "out.k", ref, kind="sym", weight="unweighted")
    check_wide(load(tmp_path / "out.k"), load(data_file("USPowerGrid.mtx")))
    nx.write_edgelist(nx_digraph(ref, weights=True), tmp_path / "n.edgelist")
    check_wide(load(tmp_path / "n.edgelist"), ref)
    write_metis(tmp_path / "m.graph", ref, fmt="1")
    check_wide(load(tmp_path / "m.graph"), ref)
    scipy.io.savemat(tmp_path / "p.mat", {"Problem": {"A": ref.to_scipy().astype(np.float64)}})
    check_wide(load(tmp_path / "p.mat"), ref)
    sp.save_npz(tmp_path / "s.npz", ref.to_scipy())
    check_wide(load(tmp_path / "s.npz"), ref)
    check_wide(memplus.transpose().transpose(), memplus)


def test_int64_indptr_npz_round_trip(tmp_path, monkeypatch, small_int32_limit):
    ref = load(data_file("wiki-Vote.txt"))
    path = tmp_path / "wide.npz"
    save(ref, path, compressed=False)
    members = npz_members(path)
    assert members["indptr"][0] == "int64" and members["indices"][0] == "int32"
    assert members["data"] == ("bool", zipfile.ZIP_DEFLATED)  # ones, deflated even here
    back = load(path)
    check_wide(back, ref)
    np.testing.assert_array_equal(back.ids, ref.ids)
    monkeypatch.setattr(graph_module, "INT32_MAX", np.iinfo(np.int32).max)
    narrow = load(path)  # the true limit: the same file gives an int32 indptr
    assert narrow.indptr.dtype == np.int32
    np.testing.assert_array_equal(narrow.indptr, ref.indptr)


def test_no_limit_on_stored_entries():
    validate(name="x", shape=(5, 5), nnz=3_000_000_000)  # only the vertex count is bounded
    with pytest.raises(InputError, match="exceed the int32 limit"):
        validate(name="x", shape=(3_000_000_000, 3_000_000_000), nnz=1)


def test_sortedness_check_across_chunks(monkeypatch):
    from finepar import parallel
    monkeypatch.setattr(parallel, "CHUNK", 3)
    ref = shared_graph("adder_dcop_05.mtx")
    validate(ref)
    long_rows = np.flatnonzero(ref.row_lengths() >= 2)
    for row in (long_rows[0], long_rows[long_rows.size // 2], long_rows[-1]):
        k = int(ref.indptr[row + 1]) - 1  # the last entry of the row repeats the one before it
        bad = ref.indices.copy()
        bad[k] = bad[k - 1]
        with pytest.raises(InputError, match=f"row {row:,} has a duplicate column index .* at position {k:,}"):
            validate(Graph(ref.indptr, bad, ref.data, "broken"))
        bad[k] = bad[k - 1] - 1
        with pytest.raises(InputError, match=f"row {row:,} has a unsorted column index"):
            validate(Graph(ref.indptr, bad, ref.data, "broken"))
