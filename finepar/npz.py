"""Large ``.npz`` members read at the speed of the disk (or the page cache), without copies.

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

import os
import struct
import zipfile

import numpy as np

from .parallel import chunked

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
