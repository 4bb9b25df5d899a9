"""One :func:`~finepar.io.load` call's context (:class:`LoadContext`): the file, the
caller's options, the size and memory checks every format makes before it builds arrays,
and reading a (gzipped) file."""

from __future__ import annotations

import contextlib
import gzip
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any


from ..errors import InputError
from .validate import validate


# Host memory a load needs, in bytes: per vertex (indptr and the row counts
# built beside it) and, per stored entry, by format (the parsed COO arrays, the
# sort keys and the finished CSR arrays, measured with tracemalloc on the shared
# graphs and rounded up). Text formats also hold the file and a few per-byte
# masks while parsing: _TEXT_BYTES per byte of text.
_VERTEX_BYTES = 24
_ENTRY_BYTES = {"mtx": 32, "edges": 48, "konect": 48, "edgelist": 48, "metis": 72, "mat": 40, "npz": 16}
_TEXT_BYTES = 14
_GIB = float(1 << 30)


def available_memory() -> int | None:
    """Host memory a new allocation can get now, in bytes.

    ``MemAvailable`` of ``/proc/meminfo`` where there is one, else
    ``os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")``.

    Returns
    -------
    int or None
        Bytes; None when neither source answers.

    Notes
    -----
    Some virtual machines (the multi-GPU Firecracker hosts of DESIGN.md §6) start
    with a small ``MemTotal`` that grows as memory is used, so this reads low
    there; pass ``memory_limit`` to :func:`load` on such machines.
    """
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def load_memory(kind: str, n: int, nnz: int, text_bytes: int = 0) -> int:
    """Estimated peak host memory of loading a graph, in bytes.

    Parameters
    ----------
    kind : {"mtx", "edges", "konect", "edgelist", "metis", "mat", "npz"}
        The loader.
    n : int
        Vertices.
    nnz : int
        Stored entries (an upper bound is fine).
    text_bytes : int, default 0
        Bytes of text to parse (text formats).

    Returns
    -------
    int
        ``24 n + c nnz + 14 text_bytes`` with ``c`` the loader's bytes per
        entry: 16 for ``.npz`` (the final arrays and a chunk of
        temporaries), 32 to 72 for the others (parsed COO arrays, sort keys,
        final arrays). Measured peaks (tracemalloc) on the shared graphs: 6 to
        10 bytes per entry for ``.npz``, 20 to 25 for Matrix Market, 27 for
        ``.mat``, 45 to build edge lists, 11 to 12.3 per byte of text.
    """
    return _VERTEX_BYTES * int(n) + _ENTRY_BYTES[kind] * int(nnz) + _TEXT_BYTES * int(text_bytes)


def _gib(b: int) -> str:
    return f"{b / _GIB:,.1f} GiB"


@dataclass
class LoadContext:
    """One call of :func:`load`: the file, the caller's options, the size checks."""

    path: str
    name: str
    kind: str
    gz: bool
    drop_zeros: bool
    check_size: Callable[[int, int], Any] | None
    memory_limit: int | None
    facts: Any = None  # finepar.prepcache.FileFacts of the file, or None

    def declare(self, n: int, nnz: int) -> None:
        """Vertex count and stored-entry bound are known: check them before building arrays."""
        validate(name=self.path, shape=(n, n), nnz=nnz)
        if self.check_size is not None:
            self.check_size(int(n), int(nnz))
        self.need(load_memory(self.kind, n, nnz), f"{int(n):,} vertices, {int(nnz):,} stored entries")

    def need(self, need: int, what: str) -> None:
        limit = available_memory() if self.memory_limit is None else int(self.memory_limit)
        if limit is not None and need > limit:
            raise InputError(self.path, f"loading needs about {_gib(need)} of memory ({what}) but "
                                        f"{_gib(limit)} is available")

    def text(self) -> bytes:
        """The whole file (decompressed), after checking there is memory to parse it."""
        if not self.gz:
            size = os.path.getsize(self.path)
            self.need(load_memory(self.kind, 0, 0, size), f"{size:,} bytes of text")
        raw = _read_bytes(self.path, self.gz)
        if self.gz:
            self.need(load_memory(self.kind, 0, 0, len(raw)), f"{len(raw):,} bytes of text")
        return raw

    def check_declared(self, count: int, min_bytes: int, what: str) -> None:
        """Refuse a header that declares more entries than the file can hold."""
        size = os.path.getsize(self.path)
        room = size * (GZIP_MAX_RATIO if self.gz else 1)
        if count > room // min_bytes + 1:
            kind = "gzip file" if self.gz else "file"
            raise InputError(self.path, f"{what} declares {count:,} entries but the {kind} has only "
                                        f"{size:,} bytes")


@contextlib.contextmanager
def reading(path: str, gz: bool) -> Iterator[IO[bytes]]:
    """Open `path` for binary reading (gunzipped when `gz`); read errors become InputErrors."""
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as f:
            yield f
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise InputError(path, f"corrupt gzip file: {e}") from None
    except OSError as e:
        if gz and not isinstance(e, (PermissionError, FileNotFoundError, IsADirectoryError)):
            raise InputError(path, f"corrupt gzip file: {e}") from None
        raise InputError(path, f"cannot read file: {e.strerror or e}") from None


def _read_bytes(path: str, gz: bool) -> bytes:
    with reading(path, gz) as f:
        return f.read()


def clean_message(e: BaseException) -> str:
    """``e``'s message on one line; numpy's advice to pass ``allow_pickle=True`` (a
    keyword no command-line user has, and a security hole for a file's stored
    objects) becomes what it means."""
    text = " ".join(str(e).split()) or type(e).__name__
    if "allow_pickle" in text:
        return "an array holds Python objects (pickled), which FinePar never loads"
    return text


# Largest expansion of a deflate stream (RFC 1951 allows about 1032:1).
GZIP_MAX_RATIO = 1032
