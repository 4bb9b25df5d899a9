"""MATLAB ``.mat`` files (v4 to v7.2) through :func:`scipy.io.loadmat`, read in a forked
child where the OS allows, since scipy's reader crashes on some damaged files."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import InputError
from ..graph import Graph
from .construct import from_scipy
from .context import LoadContext, clean_message
from .validate import check_indptr, check_range, validate


# MATLAB .mat ---------------------------------------------------------------------


def load_mat(ctx: LoadContext) -> Graph:
    from scipy.io import matlab

    path = ctx.path
    try:
        version = matlab.matfile_version(path)
    except Exception as e:  # scipy raises many kinds on a file that is not a MAT-file
        raise InputError(path, f"not a MATLAB .mat file: {clean_message(e)}") from None
    if version[0] == 2:
        raise InputError(path, "MATLAB v7.3 (HDF5) .mat files are not supported: save it with "
                               "save(..., '-v7') or as Matrix Market")
    if not hasattr(os, "fork"):
        return _mat_graph(ctx, lambda n, nnz: ctx.declare(n, nnz))
    return _mat_in_child(ctx)


def _mat_graph(ctx: LoadContext, declare: Callable[[int, int], None]) -> Graph:
    """Read the .mat file with scipy and build its graph; `declare(n, nnz)` comes first."""
    from scipy.io import loadmat

    path = ctx.path
    try:
        contents = loadmat(path, squeeze_me=True, struct_as_record=False)
    except MemoryError:
        raise InputError(path, "corrupt .mat file: it declares more data than memory holds") from None
    except Exception as e:  # a damaged file can fail anywhere inside scipy.io.matlab
        raise InputError(path, f"corrupt .mat file: {clean_message(e)}") from None
    matrix, notes = _mat_matrix(path, contents)
    del contents
    declare(matrix.shape[0], int(matrix.nnz))
    pattern = matrix.dtype.kind in "bu" and matrix.dtype.itemsize == 1  # MATLAB logical: bool or uint8
    graph = from_scipy(matrix, ctx.name, pattern=pattern, source=path, drop_zeros=ctx.drop_zeros)
    graph.notes[:0] = notes
    return graph


def _mat_in_child(ctx: LoadContext) -> Graph:
    """:func:`_mat_graph` in a forked child process, the arrays sent back through a pipe.

    scipy's MATLAB reader (Cython) can crash the interpreter on a damaged file
    (a struct's field names without their NUL bytes, for one); a crash here
    ends only the child and becomes an InputError.
    """
    path = ctx.path
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            import faulthandler
            faulthandler.disable()  # its crash is the parent's one line, not a stack dump
            os.close(r)
            with os.fdopen(w, "wb") as out:
                _mat_child(ctx, out)
        finally:
            os._exit(0)
    os.close(w)
    done = crashed = False
    try:
        with os.fdopen(r, "rb") as inp:
            try:
                meta, _ = _receive(inp)
                if meta["kind"] == "size":
                    ctx.declare(meta["n"], meta["nnz"])
                    meta, arrays = _receive(inp)
                done = True
            except EOFError:
                crashed = True
    finally:
        if not (done or crashed):
            os.kill(pid, signal.SIGKILL)  # declare() refused the size: stop the child
        _, status = os.waitpid(pid, 0)
    if crashed:
        what = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"status {status}"
        raise InputError(path, f"corrupt .mat file: scipy's MATLAB reader crashed on it ({what})")
    if meta["kind"] == "error":
        raise InputError(path, meta["problem"])
    indptr, indices, data = arrays
    return Graph(indptr, indices, data, ctx.name, path, meta["pattern"], None, meta["notes"])


def _mat_child(ctx: LoadContext, out) -> None:
    """In the child: read the file, send its size, then the graph's arrays, or the error."""
    try:
        graph = _mat_graph(ctx, lambda n, nnz: _send(out, {"kind": "size", "n": n, "nnz": nnz}))
        _send(out, {"kind": "graph", "pattern": graph.pattern, "notes": graph.notes},
              (graph.indptr, graph.indices, graph.data))
    except InputError as e:
        _send(out, {"kind": "error", "problem": e.problem})
    except BaseException as e:
        _send(out, {"kind": "error", "problem": f"corrupt .mat file: {clean_message(e)}"})


def _send(out, meta: dict, arrays: Sequence[np.ndarray] = ()) -> None:
    """Write a message: an 8-byte length, a JSON header (with the arrays' dtypes and lengths), raw arrays."""
    head = json.dumps({**meta, "arrays": [[a.dtype.str, int(a.shape[0])] for a in arrays]}).encode()
    out.write(len(head).to_bytes(8, "little") + head)
    for a in arrays:
        out.write(memoryview(np.ascontiguousarray(a)).cast("B"))
    out.flush()


def _receive(inp) -> tuple[dict, list[np.ndarray]]:
    """Read a message :func:`_send` wrote; EOFError if the writer ended before it was complete."""
    size = int.from_bytes(_read_exact(inp, 8), "little")
    meta = json.loads(_read_exact(inp, size))
    arrays = []
    for dtype, length in meta.pop("arrays"):
        a = np.empty(length, dtype=np.dtype(dtype))
        view = memoryview(a).cast("B")
        got = 0
        while got < view.nbytes:
            k = inp.readinto(view[got:])
            if not k:
                raise EOFError
            got += k
        arrays.append(a)
    return meta, arrays


def _read_exact(inp, size: int) -> bytes:
    data = inp.read(size)
    if len(data) != size:
        raise EOFError
    return data


def _describe_mat(contents: dict) -> str:
    """``name (shape type)`` of a .mat file's variables, for messages."""
    shown = [f"{k} ({'x'.join(map(str, np.shape(v))) or 'scalar'} {getattr(v, 'dtype', type(v).__name__)})"
             for k, v in contents.items() if not k.startswith("__")]
    return ", ".join(shown[:8]) + (", ..." if len(shown) > 8 else "") if shown else "no variables"


def _mat_matrix(path: str, contents: dict) -> tuple[Any, list[str]]:
    """The matrix a .mat file holds: ``Problem.A`` (with ``Problem.Zeros``) or its only sparse matrix."""
    import scipy.sparse as sp
    problem = contents.get("Problem")
    if problem is not None:
        fields = getattr(problem, "_fieldnames", None)
        if fields is None or "A" not in fields:
            raise InputError(path, f"the Problem struct has no A field (fields: {', '.join(fields or []) or 'none'})")
        a = problem.A
        if not sp.issparse(a):
            raise InputError(path, f"Problem.A is a dense {getattr(a, 'dtype', type(a).__name__)} array, "
                                   "not a sparse matrix")
        _check_mat_sparse(path, a, "Problem.A")
        notes = ["read Problem.A (SuiteSparse)"]
        zeros = getattr(problem, "Zeros", None)
        if zeros is not None and sp.issparse(zeros) and zeros.nnz:
            _check_mat_sparse(path, zeros, "Problem.Zeros")
            a = _with_explicit_zeros(path, a, zeros)
            notes.append(f"added {zeros.nnz:,} explicit zeros from Problem.Zeros")
        return a, notes
    names = [k for k, v in contents.items() if not k.startswith("__") and sp.issparse(v)]
    if len(names) == 1:
        _check_mat_sparse(path, contents[names[0]], names[0])
        return contents[names[0]], [f"read sparse variable '{names[0]}'"]
    if not names:
        raise InputError(path, f"no sparse matrix in the file (it holds {_describe_mat(contents)})")
    raise InputError(path, f"several sparse matrices ({', '.join(names[:8])}) and no Problem struct: "
                           "cannot tell which is the graph")


def _check_mat_sparse(path: str, a, what: str) -> None:
    """Check the arrays of a sparse matrix scipy.io.loadmat built: it does not, and scipy's
    conversions index memory with them."""
    validate(name=path, shape=a.shape)
    n = a.shape[0]
    try:
        if a.format in ("csc", "csr"):
            check_indptr(np.asarray(a.indptr), n, int(a.indices.shape[0]), path)
            check_range(a.indices, n, "index", path, 0)
        elif a.format == "coo":
            check_range(a.row, n, "row index", path, 0)
            check_range(a.col, n, "column index", path, 0)
    except InputError as e:
        raise InputError(path, f"{what} is damaged: {e.problem}") from None


def _with_explicit_zeros(path: str, a, zeros):
    """`a` plus explicit zero entries wherever `zeros` has one (SuiteSparse keeps them apart)."""
    import scipy.sparse as sp
    if zeros.shape != a.shape:
        raise InputError(path, f"Problem.Zeros has shape {zeros.shape}, Problem.A {a.shape}")
    a, z = a.tocoo(), zeros.tocoo()
    rows = np.concatenate((a.row, z.row))
    cols = np.concatenate((a.col, z.col))
    data = np.concatenate((a.data.astype(np.float64), np.zeros(z.nnz)))
    return sp.coo_array((data, (rows, cols)), shape=a.shape)
