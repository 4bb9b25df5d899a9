"""Matrix Market (``.mtx``, ``.mtx.gz``): read with ``fast_matrix_market`` behind a guard
that refuses NUL bytes, symmetric storage mirrored; written as ``general`` coordinates."""

from __future__ import annotations

import gzip
import mmap
import os
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import InputError
from ..files import atomic_open
from ..graph import Graph, pattern_values
from .construct import finish_values, valued_csr
from .context import LoadContext
from .edges import pattern_csr
from .validate import validate


# Matrix Market ---------------------------------------------------------------


class _GuardedText:
    """A buffered binary stream for fast_matrix_market that refuses NUL bytes and ends in a newline.

    fast_matrix_market 1.7 crashes the interpreter (SIGSEGV) on a NUL byte after
    an entry and on a last line that ends in junk with no newline after it;
    every stream it reads from a file that is not known to be clean goes
    through this wrapper. It reads the underlying stream in 4 MiB chunks
    (checked once each) and serves fast_matrix_market's small reads from them.
    """

    _CHUNK = 1 << 22

    def __init__(self, raw, path: str):
        self._raw = raw
        self._path = path
        self._buf = b""
        self._pos = 0
        self._line = 1  # line number at the start of the next chunk
        self._last = b"\n"

    def _more(self) -> bool:
        """Append the next checked chunk to the buffer; False at the end of the stream."""
        chunk = self._raw.read(self._CHUNK)
        if not chunk:
            if self._last == b"\n":
                return False
            chunk = b"\n"
        nul = chunk.find(b"\0")
        if nul >= 0:
            line = self._line + chunk.count(b"\n", 0, nul)
            raise InputError(self._path, f"line {line:,}: NUL byte: not a text file")
        self._line += chunk.count(b"\n")
        self._last = chunk[-1:]
        self._buf = self._buf[self._pos:] + chunk
        self._pos = 0
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = None if size is None or size < 0 else size
        while (want is None or len(self._buf) - self._pos < want) and self._more():
            pass
        end = len(self._buf) if want is None else min(len(self._buf), self._pos + want)
        out = self._buf[self._pos:end]
        self._pos = end
        return out

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._raw.close()


def _mm_needs_guard(ctx: LoadContext) -> bool:
    """Whether fast_matrix_market must read the file through :class:`_GuardedText`.

    Always for gzip streams; for a plain file only when it does not end in a
    newline (a NUL byte anywhere is refused here, with its line).
    """
    if ctx.gz:
        return True
    if os.path.getsize(ctx.path) == 0:
        return False
    with open(ctx.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        nul = m.find(b"\0")
        if nul >= 0:
            line = m[:nul].count(b"\n") + 1
            raise InputError(ctx.path, f"line {line:,}: NUL byte: not a text file")
        return m[-1:] != b"\n"


def _mm_call(ctx: LoadContext, fn: Callable[[Any], Any], *, guard: bool, header: bool) -> Any:
    """Run a fast_matrix_market reader on the file (through the guard), translating its exceptions."""
    path = ctx.path
    stream = None
    try:
        if guard:
            stream = _GuardedText(gzip.open(path, "rb") if ctx.gz else open(path, "rb"), path)
        return fn(path if stream is None else stream)
    except InputError:
        raise
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise InputError(path, f"corrupt gzip file: {e}") from None
    except OSError as e:
        if ctx.gz:
            raise InputError(path, f"corrupt gzip file: {e}") from None
        raise InputError(path, f"cannot read file: {e.strerror or e}") from None
    except (ValueError, RuntimeError, OverflowError, UnicodeError) as e:
        msg = " ".join(str(e).split()) or type(e).__name__
        if header and not msg.startswith("Line"):
            msg = f"bad size line: {msg}"
        raise InputError(path, f"malformed Matrix Market: {msg}") from None
    except MemoryError:
        raise InputError(path, "malformed Matrix Market: not enough memory for the declared size") from None
    finally:
        if stream is not None:
            stream.close()


def load_mtx(ctx: LoadContext) -> Graph:
    import fast_matrix_market as fmm  # imported here: only Matrix Market files need it

    path = ctx.path
    guard = _mm_needs_guard(ctx)
    header = _mm_call(ctx, fmm.read_header, guard=guard, header=True)
    if header.object != "matrix":
        raise InputError(path, f"malformed Matrix Market: object is '{header.object}', expected 'matrix'")
    if header.format != "coordinate":
        raise InputError(path, f"dense '{header.format}' Matrix Market files are not supported "
                               "(expected 'coordinate')")
    if header.field == "complex" or header.symmetry == "hermitian":
        raise InputError(path, "complex-valued Matrix Market matrices are not supported")
    declared = int(header.nnz)
    validate(name=path, shape=header.shape, nnz=declared)
    ctx.check_declared(declared, 4, "size line")  # every entry line holds at least "i j\n"
    symmetry = header.symmetry
    n = int(header.shape[0])
    ctx.declare(n, declared if symmetry == "general" else 2 * declared)
    pattern = header.field == "pattern"

    def body(source):
        return fmm.read_coo(source, generalize_symmetry=False)

    (data, (rows, cols)), shape = _mm_call(ctx, body, guard=guard, header=False)
    notes: list[str] = []
    if pattern:
        data = None
    validate(name=path, shape=shape, rows=rows, indices=cols, data=data, index_base=1)
    if symmetry != "general":
        rows, cols, data = _mirror(path, rows, cols, data, symmetry, notes)
    if pattern:
        total = rows.size
        indptr, indices, _ = pattern_csr(rows, cols, n, name=path)
        del rows, cols
        if total - indices.size:
            notes.append(f"removed {total - indices.size:,} duplicate entries")
        return Graph(indptr, indices, pattern_values(indices.size), ctx.name, path, True, None, notes,
                     symmetric=symmetry == "symmetric")
    csr, merged = valued_csr(rows, cols, data, n)
    del rows, cols, data
    if merged:
        notes.append(f"summed {merged:,} duplicate entries")
    indptr, indices, values = finish_values(csr.indptr, csr.indices, csr.data, path, drop_zeros=ctx.drop_zeros,
                                             notes=notes, index_base=1)
    return Graph(indptr, indices, values, ctx.name, path, False, None, notes, symmetric=symmetry == "symmetric")


def _mirror(path: str, rows: np.ndarray, cols: np.ndarray, data: np.ndarray | None, symmetry: str,
            notes: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Expand symmetric / skew-symmetric storage: add the mirror of every off-diagonal entry."""
    off = rows != cols
    if symmetry == "skew-symmetric" and data is not None:
        diag = np.flatnonzero(~off & (data != 0))
        if diag.size:
            i = int(rows[diag[0]]) + 1
            raise InputError(path, f"skew-symmetric matrix has a nonzero diagonal entry at row {i:,}, "
                                   f"column {i:,}")
    stored = rows.size
    mirror_rows, mirror_cols = cols[off], rows[off]
    rows = np.concatenate((rows, mirror_rows))
    cols = np.concatenate((cols, mirror_cols))
    del mirror_rows, mirror_cols
    if data is not None:
        mirror = data[off]
        if symmetry == "skew-symmetric":
            np.negative(mirror, out=mirror)
        data = np.concatenate((data, mirror))
    notes.append(f"expanded {symmetry} storage ({stored:,} -> {rows.size:,} stored entries)")
    return rows, cols, data


def write(graph: Graph, path: str, gz: bool) -> None:
    """``graph`` as a Matrix Market coordinate file (``general``; ``pattern`` when
    ``graph.pattern``, else ``real``), gzipped when ``gz``, written atomically."""
    import fast_matrix_market as fmm

    comment = f" {graph.name}: {graph.n:,} vertices, {graph.nnz:,} stored entries (written by FinePar)"
    matrix = graph.to_scipy()
    field_ = "pattern" if graph.pattern else None
    with atomic_open(path) as f:
        if gz:
            with gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as out:
                fmm.mmwrite(out, matrix, comment=comment, field=field_, symmetry="general")
        else:
            fmm.mmwrite(f, matrix, comment=comment, field=field_, symmetry="general")
