"""``.npz`` graphs: scipy's sparse layout read and written, large members read fast.

Reading (:func:`load_npz`) takes any :func:`scipy.sparse.save_npz` file (CSR directly,
other formats through scipy) and FinePar's own (:func:`write`), which adds
``finepar_pattern``, ``finepar_symmetric`` and ``finepar_ids`` members.

Large ``.npz`` members read at the speed of the disk (or the page cache), without copies.

``numpy.load`` reads an archive member through :mod:`zipfile`: one thread, a CRC-32
pass over every byte, then a copy into the array. For the uncompressed archives
FinePar writes for large graphs (:func:`finepar.io.save`) that is 2 s of a 2.1 GB
Graph500 scale-24 file on the GPU machine's Xeon. Here a *stored* (uncompressed)
member is located once through the zip directory (:class:`zipfile.ZipFile`, which
also reads ZIP64 records), its ``.npy`` header parsed by :mod:`numpy.lib.format`,
and its bytes read straight into the array's memory by ``os.preadv`` from the
threads of :func:`finepar.parallel.pool` (each a 64 MiB span, GIL released).

The CRC is not checked: a damaged stored member still has to pass the graph's
validation (:func:`finepar.io.validate`: index ranges, sorted rows, ``indptr``),
which is what a wrong value would break. Compressed members, small members and
anything unusual (object arrays, Fortran order) go through ``numpy.load``.
"""

from __future__ import annotations

import math
import os
import struct
import zipfile
import zlib
from typing import IO, Any

import numpy as np

from ..errors import InputError
from ..files import atomic_open
from ..graph import Graph
from ..parallel import chunked
from .construct import from_csr, from_scipy
from .context import LoadContext, clean_message
from .validate import validate

#: Members smaller than this are read by numpy (the fast path's set-up costs more).
FAST_MIN_BYTES = 1 << 24

#: Bytes one thread reads at a time.
READ_SPAN = 1 << 26

_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0}


class StoredMember:
    """Where an uncompressed ``.npy`` member's array lies in the archive file.

    Attributes
    ----------
    offset : int
        File position of the array's first byte (after the ``.npy`` header).
    dtype : numpy.dtype
    shape : tuple of int
    nbytes : int
    """

    def __init__(self, offset: int, dtype: np.dtype, shape: tuple[int, ...]):
        self.offset, self.dtype, self.shape = offset, dtype, shape
        self.nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize


def stored_members(path: str | os.PathLike,
                   min_bytes: int | None = None) -> dict[str, StoredMember]:
    """The archive's members that can be read directly: stored, C-ordered, plain dtypes,
    at least ``min_bytes`` (default :data:`FAST_MIN_BYTES`). Keys are the names
    ``numpy.load`` uses (no ``.npy``).

    Raises
    ------
    zipfile.BadZipFile, OSError, ValueError
        If the archive or a member's header is damaged.
    """
    min_bytes = FAST_MIN_BYTES if min_bytes is None else min_bytes
    out: dict[str, StoredMember] = {}
    with zipfile.ZipFile(path) as zf, open(path, "rb") as f:
        for info in zf.infolist():
            if (info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy")
                    or info.file_size < min_bytes):
                continue
            f.seek(info.header_offset)
            head = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
            if head[0] != b"PK\x03\x04":
                raise zipfile.BadZipFile(f"bad local header of member {info.filename}")
            f.seek(head[9] + head[10], os.SEEK_CUR)  # the name and the extra field
            start = f.tell()
            version = np.lib.format.read_magic(f)
            if version not in _HEADER_READERS:
                continue
            shape, fortran, dtype = _HEADER_READERS[version](f)
            if fortran or dtype.hasobject or len(shape) != 1:
                continue
            member = StoredMember(f.tell(), dtype, tuple(int(s) for s in shape))
            if member.offset - start + member.nbytes != info.file_size:
                raise ValueError(f"member {info.filename}: its .npy header does not match its "
                                 f"size ({info.file_size:,} bytes)")
            out[info.filename[:-4]] = member
    return out


def read_member(path: str | os.PathLike, member: StoredMember, start: int = 0,
                stop: int | None = None) -> np.ndarray:
    """The member's array, or its elements ``start .. stop`` (a 1-D member's: one rank's
    rows of a graph), read by the pool's threads straight into a new array.

    Raises
    ------
    OSError
        A read error, or a file shorter than its directory says.
    """
    stop = member.shape[0] if stop is None else stop
    out = np.empty(max(int(stop) - int(start), 0), dtype=member.dtype)  # members are 1-D
    offset = member.offset + int(start) * member.dtype.itemsize
    raw = out.view(np.uint8).reshape(-1)
    fd = os.open(path, os.O_RDONLY)
    try:
        def span(lo: int, hi: int) -> None:
            done = lo
            while done < hi:
                got = os.preadv(fd, [raw[done:hi]], offset + done)
                if got <= 0:
                    raise OSError(f"{path}: the file ends inside an array "
                                  f"({offset + done:,} bytes read)")
                done += got
        chunked(span, raw.size, READ_SPAN)
    finally:
        os.close(fd)
    return out


# Keys of the .npz layout written by scipy.sparse.save_npz for CSR, plus ours.
PATTERN_KEY = "finepar_pattern"
SYMMETRIC_KEY = "finepar_symmetric"
IDS_KEY = "finepar_ids"
# save(compressed=None) deflates graphs with fewer stored entries than this.
COMPRESS_BELOW = 100_000_000


# .npz ------------------------------------------------------------------------


def load_npz(ctx: LoadContext) -> Graph:
    path = ctx.path
    try:
        # Open the file ourselves: np.load leaks its handle when the zip is bad.
        with open(path, "rb") as handle:
            try:
                archive = np.load(handle, allow_pickle=False)
            except (zipfile.BadZipFile, EOFError, zlib.error, ValueError, OSError) as e:
                raise InputError(path, f"not a valid .npz archive: {clean_message(e)}") from None
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise InputError(path, "not a scipy sparse matrix: the file holds a single .npy array, "
                                       "not an .npz archive")
            with archive:
                return _read_npz(ctx, archive, _NpzArrays(path, archive))
    except InputError:
        raise
    except (zipfile.BadZipFile, EOFError, zlib.error, OSError) as e:
        raise InputError(path, f"corrupt .npz archive: {clean_message(e)}") from None
    except NotImplementedError as e:  # zipfile: a compression method it does not know
        raise InputError(path, f"corrupt .npz archive: {clean_message(e)}") from None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
        raise InputError(path, f"not a valid scipy sparse matrix: {clean_message(e)}") from None
    except MemoryError:
        raise InputError(path, "corrupt .npz archive: an array header declares more than memory holds") from None


def _npy_shape(archive, key: str) -> tuple[int, ...]:
    """Shape of an archive member, read from its .npy header (the data stays on disk)."""
    with archive.zip.open(key + ".npy") as f:
        version = np.lib.format.read_magic(f)
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, _ = reader(f)
    return tuple(int(s) for s in shape)


class _NpzArrays:
    """An archive's arrays by name: large stored members read by :mod:`finepar.io.npz`'s
    parallel reader, the rest by ``numpy.load``."""

    def __init__(self, path: str, archive):
        self.path, self.archive = path, archive
        self.stored = stored_members(path)

    def __getitem__(self, key: str) -> np.ndarray:
        member = self.stored.get(key)
        return read_member(self.path, member) if member is not None else self.archive[key]


def _read_npz(ctx: LoadContext, archive, arrays) -> Graph:
    path = ctx.path
    keys = list(archive.files)
    if "format" not in keys:
        shown = ", ".join(keys[:6]) + (", ..." if len(keys) > 6 else "")
        raise InputError(path, f"not a scipy sparse matrix: the archive holds arrays "
                               f"({shown or 'none'}) but no 'format' entry")
    fmt = archive["format"].item()
    fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else str(fmt)
    shape = tuple(int(s) for s in np.atleast_1d(archive["shape"]))
    validate(name=path, shape=shape)
    counted = "data" if "data" in keys else "indices" if "indices" in keys else "row" if "row" in keys else None
    if counted is None:
        raise InputError(path, f"not a valid scipy sparse matrix: '{fmt}' archive has no data or index array")
    nnz = math.prod(_npy_shape(archive, counted))
    n = shape[0]
    ctx.declare(n, nnz)
    pattern = bool(archive[PATTERN_KEY]) if PATTERN_KEY in keys else False
    symmetric = bool(archive[SYMMETRIC_KEY]) if SYMMETRIC_KEY in keys else False
    ids = archive[IDS_KEY] if IDS_KEY in keys else None
    if fmt == "csr":
        if not pattern and "data" not in keys:
            raise InputError(path, "not a valid scipy sparse matrix: no 'data' entry and not marked as a "
                                   "pattern graph")
        data = None if pattern else arrays["data"]
        indices = arrays["indices"]
        known = ctx.facts is not None and ctx.facts.get("sorted_rows") is True
        graph = from_csr(arrays["indptr"], indices, data, n, name=ctx.name, source=path,
                         pattern=pattern or data.dtype == np.bool_, drop_zeros=ctx.drop_zeros,
                         sorted_rows=known)
        if ctx.facts is not None and not known and graph.indices is indices:
            ctx.facts.set(sorted_rows=True)  # taken as stored: sorted, no duplicates
    else:
        import scipy.sparse as sp
        graph = from_scipy(sp.load_npz(path), ctx.name, pattern=pattern or None, source=path,
                           drop_zeros=ctx.drop_zeros)
    if ids is not None:
        if ids.dtype.kind not in "iu" or ids.shape != (graph.n,):
            raise InputError(path, f"'{IDS_KEY}' entry has shape {ids.shape} and dtype {ids.dtype}, "
                                   f"expected ({graph.n:,},) integers")
        graph.ids = ids.astype(np.int64, copy=False)
    graph.symmetric = symmetric
    return graph


def _write_members(f: IO[bytes], arrays: dict, compressed: bool, ones: int | None) -> None:
    """The members of ``arrays`` as ``numpy.savez`` lays them out (``NAME.npy``, zip64),
    deflated when ``compressed``; with ``ones``, a ``data`` member of that many boolean
    ones as well, written in chunks and deflated at level 1 whatever ``compressed`` says
    (0.15 s and 0.4 MB per 10^8 entries)."""
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(f, "w", compression=method, allowZip64=True) as zf:
        for key, value in arrays.items():
            with zf.open(key + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(value), allow_pickle=False)
        if ones is None:
            return
        info = zipfile.ZipInfo("data.npy", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type, info._compresslevel = zipfile.ZIP_DEFLATED, 1
        with zf.open(info, "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(
                member, {"descr": "|b1", "fortran_order": False, "shape": (ones,)})
            chunk = np.ones(min(ones, 1 << 24), np.bool_).tobytes()
            for start in range(0, ones, len(chunk)):
                member.write(chunk[:ones - start])


def write(graph: Graph, path: str, compressed: bool | None) -> None:
    """``graph`` as the ``.npz`` of :func:`finepar.io.save` (read there for the layout),
    written atomically; ``compressed`` None: deflated below :data:`COMPRESS_BELOW`
    entries."""
    arrays: dict[str, Any] = {
        "indices": graph.indices,
        "indptr": graph.indptr,
        "format": np.array(b"csr"),
        "shape": np.array(graph.shape, dtype=np.int64),
        PATTERN_KEY: np.array(bool(graph.pattern)),
        SYMMETRIC_KEY: np.array(bool(graph.symmetric)),
    }
    if not graph.pattern:
        arrays["data"] = graph.data
    arrays["_is_array"] = np.array(True)
    if graph.ids is not None:
        arrays[IDS_KEY] = graph.ids
    if compressed is None:
        compressed = graph.nnz < COMPRESS_BELOW
    with atomic_open(path) as f:
        _write_members(f, arrays, compressed, ones=graph.nnz if graph.pattern else None)
