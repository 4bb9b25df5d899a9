"""What a resident FinePar keeps between runs (``finepar serve``, :mod:`finepar.cli.serve`).

A run spends most of its time before the GPU starts: opening the devices, reading the
graph, building the app's matrix, the engine's buffers and uploads. A process that stays
up keeps all of that, each looked up by what makes it the same:

* the device pair, by the devices asked for, the memory mode and the config;
* a graph, by its file's identity (real path, size, inode, modification and change
  times) and the load's options, or by its generator spec;
* an app's workload (its matrix: a transpose, a symmetrised graph), by the graph and app;
* a prepared run (plan, relabelling, engine with its buffers on the devices), by its
  prepared-graph cache key (:meth:`finepar.prepcache.PrepCache.key`: the input's
  content, the platform, the app and every option).

The least recently used of each kind goes when more than ``keep`` are held. Outside a
resident process :func:`current` is None and nothing is kept.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable


class Resident:
    """The objects a resident process keeps, by kind.

    Parameters
    ----------
    keep : int
        Objects of each kind held at most (graphs and engines take host and device
        memory: a scale-24 graph 2 GB of host memory, its engine 2-4 GB on the GPU).

    Attributes
    ----------
    hits : dict
        Reuses so far, by kind.
    """

    KINDS = ("pair", "graph", "workload", "prepared")

    def __init__(self, keep: int = 4):
        if keep < 1:
            raise ValueError(f"keep must be at least 1, not {keep}")
        self.keep = int(keep)
        self._held: dict[str, OrderedDict] = {k: OrderedDict() for k in self.KINDS}
        self.hits = {k: 0 for k in self.KINDS}
        self.start_seconds: float | None = None

    def get(self, kind: str, key: Any) -> Any:
        """The object of ``kind`` kept under ``key``, or None (it becomes the most recent)."""
        held = self._held[kind]
        if key not in held:
            return None
        held.move_to_end(key)
        self.hits[kind] += 1
        return held[key]

    def put(self, kind: str, key: Any, value: Any) -> Any:
        """Keep ``value``; the least recently used of its kind goes past ``keep``."""
        held = self._held[kind]
        held[key] = value
        held.move_to_end(key)
        while len(held) > self.keep:
            held.popitem(last=False)
        return value

    def kept(self, kind: str, key: Any, make: Callable[[], Any]) -> Any:
        """The object under ``key``, made by ``make()`` and kept when there is none."""
        value = self.get(kind, key)
        return value if value is not None else self.put(kind, key, make())

    def sizes(self) -> dict:
        """Objects held, by kind."""
        return {k: len(v) for k, v in self._held.items()}


_CURRENT: Resident | None = None


def current() -> Resident | None:
    """The resident store of this process (None outside ``finepar serve``)."""
    return _CURRENT


def install(store: Resident | None) -> None:
    """Make ``store`` this process's resident store (None: keep nothing)."""
    global _CURRENT
    _CURRENT = store


def kept(kind: str, key: Any, make: Callable[[], Any]) -> Any:
    """``make()``, or in a resident process the object of ``kind`` kept under ``key``."""
    store = _CURRENT
    return make() if store is None or key is None else store.kept(kind, key, make)


def file_key(path: str, *options: Any) -> tuple | None:
    """What makes a graph file the same between runs: its real path, size, inode and
    times, with the load's ``options``; None when ``path`` is not a readable file."""
    import os
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (os.path.realpath(path), st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns,
            *options)
