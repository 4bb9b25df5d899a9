"""The formats by file name: :func:`load` picks a reader, :func:`save` a writer."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import Any


from ..errors import InputError
from ..graph import Graph
from . import mtx, npz
from .context import LoadContext
from .edgelist import load_konect, load_networkx, load_snap
from .matlab import load_mat
from .metis import load_metis
from .mtx import load_mtx
from .npz import load_npz


_MM_SUFFIXES = (".mtx", ".mtx.gz")
_EDGE_SUFFIXES = tuple(s + z for s in (".txt", ".tsv", ".edges", ".el") for z in ("", ".gz"))
_NX_SUFFIXES = (".edgelist", ".edgelist.gz")
_METIS_SUFFIXES = (".graph", ".graph.gz")
_MAT_SUFFIXES = (".mat",)
_NPZ_SUFFIXES = (".npz",)
SUPPORTED_SUFFIXES = (_MM_SUFFIXES + _EDGE_SUFFIXES + _NX_SUFFIXES + _METIS_SUFFIXES + _MAT_SUFFIXES
                      + _NPZ_SUFFIXES)
"""File name endings :func:`load` understands (besides KONECT's ``out.NAME``)."""
_KIND_OF_SUFFIX = {suffix: kind for kind, suffixes in (
    ("mtx", _MM_SUFFIXES), ("edges", _EDGE_SUFFIXES), ("edgelist", _NX_SUFFIXES), ("metis", _METIS_SUFFIXES),
    ("mat", _MAT_SUFFIXES), ("npz", _NPZ_SUFFIXES)) for suffix in suffixes}
_KONECT_PREFIX = "out."
_SAVE_SUFFIXES = (".npz", ".mtx", ".mtx.gz")


def _format_of(path: str) -> tuple[str, str, bool] | None:
    """(loader kind, graph name, gzipped) for a file name, or None."""
    base = os.path.basename(path)
    lower = base.lower()
    for suffix in sorted(_KIND_OF_SUFFIX, key=len, reverse=True):
        if lower.endswith(suffix) and len(lower) > len(suffix):
            return _KIND_OF_SUFFIX[suffix], base[: len(base) - len(suffix)], suffix.endswith(".gz")
    if lower.startswith(_KONECT_PREFIX) and len(lower) > len(_KONECT_PREFIX):
        gz = lower.endswith(".gz") and len(lower) > len(_KONECT_PREFIX) + 3
        name = base[len(_KONECT_PREFIX): len(base) - 3 if gz else len(base)]
        return "konect", name, gz
    return None


def _check_readable(path: str) -> None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except OSError as e:
        raise InputError(path, f"cannot access file: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(path, "is a directory, not a graph file")
    if not os.access(path, os.R_OK):
        raise InputError(path, "cannot read file: permission denied")


def load(path: str | os.PathLike, *, drop_zeros: bool = False,
         check_size: Callable[[int, int], Any] | None = None, memory_limit: int | None = None,
         facts=None) -> Graph:
    """Read a graph or sparse matrix file.

    Parameters
    ----------
    path : str or os.PathLike
        A Matrix Market (``.mtx``, ``.mtx.gz``), edge-list (``.txt``,
        ``.tsv``, ``.edges``, ``.el``, each optionally ``.gz``), KONECT
        (``out.NAME``, ``out.NAME.gz``), networkx (``.edgelist``,
        ``.edgelist.gz``), METIS (``.graph``, ``.graph.gz``), MATLAB (``.mat``)
        or scipy sparse / FinePar (``.npz``) file; the format is chosen by the
        name (see the module docstring).
    drop_zeros : bool, default False
        Drop explicitly stored zeros. By default they are kept as stored
        entries (they are edges of the graph); a note gives their count either
        way.
    check_size : callable, optional
        ``check_size(n, nnz)``, called once with the vertex count and an upper
        bound on the stored entries (the declared entries, doubled where
        symmetric storage will be expanded) as soon as the file reveals them
        (Matrix Market size line, METIS header, ``.npz`` array headers;
        ``.mat`` files once read; edge lists once parsed) and before any CSR
        array is built. Whatever it raises propagates unchanged.
    memory_limit : int, optional
        Bytes of host memory the load may use; default
        :func:`available_memory`.
    facts : finepar.prepcache.FileFacts, optional
        What earlier loads learnt about this unchanged file. A ``.npz`` CSR whose rows an
        earlier load found sorted and duplicate-free (``sorted_rows``) is not scanned for
        that again; one found so now is remembered. Every other check still runs.

    Returns
    -------
    Graph
        Canonical CSR, named after the file without its extensions (KONECT:
        without ``out.``); `source` is `path`; `notes` lists what the loader did.

    Raises
    ------
    InputError
        For every problem listed in the module's *Checks* section, including a
        load whose estimated memory (:func:`load_memory`) exceeds
        `memory_limit`; the message is one line and names `path`.
    """
    path = os.fspath(path)
    _check_readable(path)
    found = _format_of(path)
    if found is None:
        raise InputError(path, "unknown file type; supported: " + ", ".join(SUPPORTED_SUFFIXES)
                         + " and KONECT out.NAME")
    kind, name, gz = found
    ctx = LoadContext(path, name, kind, gz, drop_zeros, check_size, memory_limit, facts)
    return _LOADERS[kind](ctx)


_LOADERS: dict[str, Callable[[LoadContext], Graph]] = {
    "mtx": load_mtx, "npz": load_npz, "edges": load_snap, "konect": load_konect, "edgelist": load_networkx,
    "metis": load_metis, "mat": load_mat,
}


def save(graph: Graph, path: str | os.PathLike, *, compressed: bool | None = None) -> None:
    """Write `graph` to `path` atomically, in the format its extension names.

    Parameters
    ----------
    graph : Graph
    path : str or os.PathLike
        ``.npz``: the CSR layout of :func:`scipy.sparse.save_npz` (``indptr``,
        ``indices``, ``data``, ``shape``, ``format``) with the graph's own
        dtypes: int32 ``indices`` and an ``indptr`` that is int64 only past
        the int32 limit (scipy itself would widen both to int64), so every
        file is readable by :func:`scipy.sparse.load_npz`. A pattern graph's
        ``data`` is boolean ones, always deflated (a few bytes per million
        entries), and :func:`load` never reads it. ``finepar_pattern``,
        ``finepar_symmetric`` and, when present, ``finepar_ids`` entries let
        :func:`load` restore those attributes.
        ``.mtx`` / ``.mtx.gz``: Matrix Market coordinate, ``general``; the
        ``pattern`` field when ``graph.pattern``, else ``real``.
    compressed : bool, optional
        Deflate the ``.npz`` members. Default (None): compress graphs of fewer
        than 1e8 stored entries; larger ones are stored uncompressed, which
        :func:`load` reads at disk speed.

    Raises
    ------
    InputError
        If the extension is not one of ``.npz``, ``.mtx``, ``.mtx.gz``.
    OSError
        If the file cannot be written.

    Notes
    -----
    The file is written to a temporary name in the same directory and renamed
    over `path` only when complete (:func:`finepar.files.atomic_open`); on any
    failure nothing is left at `path`.
    """
    path = os.fspath(path)
    lower = os.path.basename(path).lower()
    suffix = next((s for s in sorted(_SAVE_SUFFIXES, key=len, reverse=True) if lower.endswith(s)), None)
    if suffix is None:
        raise InputError(path, "cannot save to this file type; supported: " + ", ".join(_SAVE_SUFFIXES))
    if suffix == ".npz":
        npz.write(graph, path, compressed)
    else:
        mtx.write(graph, path, gz=suffix == ".mtx.gz")
