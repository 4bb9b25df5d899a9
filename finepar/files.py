"""Atomic file writes.

Every writer here writes to a temporary file in the destination's directory,
flushes and fsyncs it, then moves it over the destination with
:func:`os.replace`, which is atomic on POSIX and Windows when both names are on
the same file system. A reader therefore sees either the old file or the
complete new one, never a partial write. If anything fails before the rename
(serialisation, a full disk, an interrupt), the temporary file is removed and
the destination is left as it was: absent if it did not exist.

Parent directories are created as needed. The new file gets the permissions a
plain ``open(path, "w")`` would give it (``0o666`` less the umask), or keeps the
permissions of the file it replaces.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

__all__ = [
    "check_output",
    "atomic_open",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_write_json",
    "atomic_save_npy",
    "atomic_save_npz",
]


def check_output(path: str | os.PathLike, option: str, *, force: bool = False,
                 suffixes: tuple[str, ...] = ()) -> str:
    """Check, before any work, that an output file can be written.

    Parameters
    ----------
    path : str or os.PathLike
        The file an option names.
    option : str
        The option, for the message (``--output``, ``--json``).
    force : bool
        Allow replacing an existing read-only file.
    suffixes : tuple of str
        Accepted endings (case-insensitive); empty: any.

    Returns
    -------
    str
        The absolute path.

    Raises
    ------
    finepar.errors.UsageError
        One line naming the option and the path: a wrong ending, a directory,
        a missing or unwritable parent directory, or an existing read-only file
        (without `force`).
    """
    from .errors import UsageError
    text = os.fspath(path)
    if suffixes and not text.lower().endswith(tuple(s.lower() for s in suffixes)):
        raise UsageError(f"{option} {text}: must end in {' or '.join(suffixes)}")
    target = os.path.abspath(text)
    parent = os.path.dirname(target)
    if os.path.isdir(target):
        raise UsageError(f"{option} {text}: is a directory")
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {text}: directory {parent} does not exist")
    try:  # a real probe: permission bits say nothing for root or read-only mounts
        with tempfile.NamedTemporaryFile(dir=parent, prefix=".finepar-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{option} {text}: cannot write in {parent} "
                         f"({exc.strerror or exc})") from None
    if os.path.exists(target) and not force:
        mode = os.stat(target).st_mode
        if not (mode & 0o222) or not os.access(target, os.W_OK):
            raise UsageError(f"{option} {text}: file exists and is read-only "
                             f"(use --force to replace it)")
    return target


def _umask() -> int:
    """Return the process umask without changing it where the OS allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _target_mode(path: str) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _fsync_directory(directory: str) -> None:
    """Make a rename durable; best effort (not every platform allows it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb", *, encoding: str | None = None) -> Iterator[IO]:
    """Open a temporary file that replaces `path` when the ``with`` block succeeds.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file. Its parent directories are created if missing.
    mode : {"wb", "w"}
        Binary (default) or text mode.
    encoding : str, optional
        Text encoding for ``mode="w"`` (default ``"utf-8"``).

    Yields
    ------
    file object
        The open temporary file, in the destination's directory. Write to it;
        do not close it.

    Raises
    ------
    ValueError
        If `mode` is not ``"wb"`` or ``"w"``.
    OSError
        If the directory cannot be created or the file cannot be written.
        Any exception raised inside the ``with`` block propagates unchanged.
        In every failure case the temporary file is removed and `path` is
        untouched.

    Examples
    --------
    >>> with atomic_open("out/result.bin") as f:   # doctest: +SKIP
    ...     f.write(b"...")
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"mode must be 'wb' or 'w', not {mode!r}")
    target = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(target)
    os.makedirs(directory, exist_ok=True)
    file_mode = _target_mode(target)
    kwargs: dict[str, Any] = {}
    if mode == "w":
        kwargs = {"encoding": encoding or "utf-8", "newline": ""}
    try:
        tmp = tempfile.NamedTemporaryFile(
            mode=mode, dir=directory, prefix="." + os.path.basename(target) + ".", suffix=".tmp",
            delete=False, **kwargs)
    except OSError as exc:  # name the destination, not the hidden temporary file
        raise type(exc)(exc.errno, exc.strerror, target) from None
    try:
        yield tmp
        tmp.flush()
        os.fsync(tmp.fileno())
        tmp.close()
        os.chmod(tmp.name, file_mode)
        os.replace(tmp.name, target)
    except BaseException:
        tmp.close()
        with contextlib.suppress(OSError):
            os.unlink(tmp.name)
        raise
    _fsync_directory(directory)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file; parent directories are created.
    data : bytes-like
        The complete new contents.

    Raises
    ------
    OSError
        If the file cannot be written; `path` is then left as it was.
    """
    with atomic_open(path, "wb") as f:
        f.write(data)


def atomic_write_text(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> None:
    """Write `text` to `path` atomically, with no newline translation.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file; parent directories are created.
    text : str
        The complete new contents.
    encoding : str, default "utf-8"

    Raises
    ------
    UnicodeEncodeError
        If `text` cannot be encoded; nothing is written.
    OSError
        If the file cannot be written; `path` is then left as it was.
    """
    atomic_write_bytes(path, text.encode(encoding))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write `obj` as JSON to `path` atomically.

    The output uses ``indent=2``, sorted keys and ends with a newline, so
    that files written twice from equal objects are byte-identical.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file; parent directories are created.
    obj : object
        Anything :func:`json.dumps` accepts.

    Raises
    ------
    TypeError, ValueError
        If `obj` cannot be serialised (e.g. it holds a set, or a NaN is
        rejected); nothing is written.
    OSError
        If the file cannot be written; `path` is then left as it was.
    """
    text = json.dumps(obj, indent=2, sort_keys=True) + "\n"
    atomic_write_text(path, text)


def atomic_save_npy(path: str | os.PathLike, array: np.ndarray) -> None:
    """Save one array in ``.npy`` format to `path` atomically.

    The name is used as given: unlike :func:`numpy.save`, no ``.npy`` suffix is
    appended.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file; parent directories are created.
    array : array_like
        Array to save. Object arrays are refused (no pickles).

    Raises
    ------
    ValueError
        If `array` has an object dtype; nothing is left at `path`.
    OSError
        If the file cannot be written; `path` is then left as it was.
    """
    with atomic_open(path, "wb") as f:
        np.save(f, np.asanyarray(array), allow_pickle=False)


def atomic_save_npz(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    """Save arrays to a compressed ``.npz`` archive at `path` atomically.

    Equivalent to :func:`numpy.savez_compressed` (readable with
    :func:`numpy.load`), except that the name is used as given and object
    arrays are refused.

    Parameters
    ----------
    path : str or os.PathLike
        Destination file; parent directories are created.
    **arrays : array_like
        Arrays to store, under their keyword names.

    Raises
    ------
    ValueError
        If an array has an object dtype; nothing is left at `path`.
    OSError
        If the file cannot be written; `path` is then left as it was.
    """
    with atomic_open(path, "wb") as f:
        np.savez_compressed(f, allow_pickle=False, **arrays)


def jsonable(obj: Any) -> Any:
    """``obj`` with numpy scalars and arrays turned into Python values and non-finite
    floats into the strings ``"inf"``, ``"-inf"`` and ``"nan"`` (JSON has no such numbers)."""
    import math
    from collections.abc import Sequence
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, Sequence) and not isinstance(obj, (str, bytes)):  # a lazy sequence
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj
