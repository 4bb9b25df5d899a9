"""What a run loads, and the checks made before it is loaded (DESIGN.md §3, "api"):
:func:`load_graph` reads a file or generates ``graph500:SCALE``; :func:`memory_check`
refuses, as soon as the sizes are known, a graph the devices cannot hold or a size line
of mostly isolated vertices."""

from __future__ import annotations

import os

from . import apps
from .engine import EngineOptions
from .errors import InputError, UsageError
from .graph import Graph
from .report import human_bytes


#: A declared size refused unless asked for (``--allow-isolated``): more vertices than
#: this, and more than ISOLATED_RATIO vertices for each stored entry (nearly all of them
#: isolated; most likely a mistyped size line).
ISOLATED_MIN_VERTICES = 10_000_000


ISOLATED_RATIO = 1000


def memory_check(app_name: str, pair, options: EngineOptions | None = None,
                 allow_isolated: bool = False):
    """A ``check_size(n, nnz)`` for :func:`load_graph`: refuse, before the graph is built,
    a graph whose per-vertex state alone does not fit the devices' memory, and (unless
    ``allow_isolated``) one that declares more than :data:`ISOLATED_MIN_VERTICES`
    vertices and more than :data:`ISOLATED_RATIO` of them per stored entry: a 93-byte
    Matrix Market file declaring 200,000,000 vertices and 3 entries would otherwise run
    PageRank over 200 M isolated vertices and write an 800 MB answer.

    ``pair`` is a :class:`~finepar.device.DevicePair`, an :class:`OpeningPair` or a
    :class:`~finepar.device.Selection`: only the chosen devices are needed, not their
    contexts.

    Every device that runs a share keeps the app's full-length vectors
    (:meth:`finepar.apps.base.App.state_bytes`); the rows themselves can be cut
    into chunks and streamed, the vectors cannot.

    Raises
    ------
    UsageError
        One line naming the need, the limit and the option that sets it.
    """
    app = apps.get(app_name)
    options = options or EngineOptions()
    sel = getattr(pair, "selection", pair)

    def check(n: int, nnz: int) -> None:
        if not allow_isolated and n > ISOLATED_MIN_VERTICES and n > ISOLATED_RATIO * nnz:
            raise UsageError(
                f"the input declares {n:,} vertices for {nnz:,} stored entries (more than "
                f"{ISOLATED_RATIO:,} vertices an entry: nearly all isolated); "
                f"--allow-isolated runs it anyway")
        need = app.state_bytes(n)
        for role in ("gpu", "cpu"):
            info = getattr(sel, role)
            limit = options.limit_of(role, info, sel.host_memory(role))
            if need > limit:
                raise UsageError(
                    f"{app.name} on {n:,} vertices needs {human_bytes(need)} of vectors on "
                    f"the {role} ({info.name}) but it may use {human_bytes(limit)} "
                    f"(--{role}-memory)")
    return check


def load_graph(spec: str, *, drop_zeros: bool = False, check_size=None,
               memory_limit: int | None = None, cache=None) -> Graph:
    """A graph from a file path or a generator spec.

    Parameters
    ----------
    spec : str
        A path (Matrix Market ``.mtx``/``.mtx.gz``; SNAP / KONECT edge lists
        ``.txt``, ``.tsv``, ``.edges``, ``.el``, ``out.NAME``, optionally
        ``.gz``, with weights in a third column; networkx ``.edgelist``; METIS
        ``.graph``; SuiteSparse ``.mat``; scipy ``.npz``), or
        ``graph500:SCALE[:SEED]`` for a Graph500 Kronecker graph (edgefactor
        16, A=0.57, B=C=0.19, D=0.05, undirected).
    check_size : callable, optional
        ``check_size(n, nnz)``, called as soon as the sizes are known and before
        any large array is built (see :func:`memory_check`).
    memory_limit : int, optional
        Host bytes the load may use (default: what the OS says is available).
    cache : PrepCache or False, optional
        Where what earlier loads learnt of an unchanged file is kept
        (:class:`~finepar.prepcache.FileFacts` under its root): a ``.npz`` whose rows were
        found sorted is not scanned again. A generated Graph500 graph of at most an
        eighth of the cache's cap is kept there too and read back by the next run
        (:meth:`~finepar.prepcache.PrepCache.generated`). None or False: nothing is
        remembered.

    In a resident process (:mod:`finepar.device.resident`) the graph read before from the
    unchanged file (or generated from the same spec) is returned.

    Raises
    ------
    InputError
        Bad file or spec.
    """
    from .device import resident
    if resident.current() is not None:  # the graph read before, while its file is unchanged
        generated = spec.startswith("graph500:")
        key = ("spec", spec) if generated else resident.file_key(spec, drop_zeros, memory_limit)
        path = spec if generated else os.path.abspath(spec)  # the source a later client,
        try:  # in another folder, reads right
            g = resident.kept("graph", key, lambda: _load_graph(
                path, drop_zeros=drop_zeros, check_size=check_size,
                memory_limit=memory_limit, cache=cache))
        except InputError as exc:  # named as the user typed it, as without a server
            if exc.path != path:
                raise
            raise InputError(spec, exc.problem) from None
        if check_size is not None:
            check_size(g.n, g.nnz)
        return g
    return _load_graph(spec, drop_zeros=drop_zeros, check_size=check_size,
                       memory_limit=memory_limit, cache=cache)


def _load_graph(spec: str, *, drop_zeros: bool, check_size, memory_limit, cache) -> Graph:
    from .errors import InputError
    from .io import load
    if spec.startswith("graph500:"):
        from .io.graph500 import kronecker, parse_spec
        try:
            scale, seed = parse_spec(spec)
            if check_size is not None:
                check_size(1 << scale, 32 << scale)  # the edges before duplicates go
            if not cache:
                return kronecker(scale, seed=seed)
            return cache.generated(f"graph500-s{scale}-ef16-seed{seed}",
                                   lambda: kronecker(scale, seed=seed))
        except ValueError as exc:
            raise InputError(spec, str(exc)) from None
    facts = None
    if cache and os.path.isfile(spec):
        from .prepcache import FileFacts
        facts = FileFacts(spec, cache.root)
    return load(spec, drop_zeros=drop_zeros, check_size=check_size, memory_limit=memory_limit,
                facts=facts)
