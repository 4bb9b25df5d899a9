"""An app bound to a graph (:class:`Workload`): the app's matrix, built once, its row
statistics and the engines of its plans. What decides and runs a plan is above it
(:mod:`finepar.split`, :mod:`finepar.api`)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from . import apps
from .engine import Engine, EngineOptions
from .graph import Graph
from .io import from_scipy
from .partition import Plan
from .device import DevicePair


def as_graph(graph: Any, name: str = "matrix") -> Graph:
    """A :class:`Graph` from a Graph or a scipy.sparse matrix (validated)."""
    if isinstance(graph, Graph):
        return graph
    return from_scipy(graph, name=name)


class Workload:
    """An app bound to a graph: the app's matrix, built once, and its row statistics.

    Reuse one Workload for several runs (plans, thresholds, devices) so the
    matrix (a transpose for PageRank and BFS, the symmetrised graph for CC) is
    built once.

    Parameters
    ----------
    app : str
        An app's name (:func:`finepar.apps.names`).
    graph : Graph or scipy.sparse matrix

    Attributes
    ----------
    app : App
    graph : Graph
    matrix : Graph
        The matrix whose rows are the work.
    preprocess_seconds : float
        Time to build ``matrix``.
    """


    def __init__(self, app: str, graph: Any):
        self.app = apps.get(app)
        self.name = self.app.name
        self.graph = as_graph(graph)
        t0 = time.perf_counter()
        self.matrix = self.app.matrix(self.graph)
        self.preprocess_seconds = time.perf_counter() - t0
        self._stats = None
        #: The input's content digest where it was taken before the run (a kept workload,
        #: :func:`finepar.prepare.kept_workload`), else None.
        self.content_digest: str | None = None

    @property
    def row_stats(self):
        """:class:`~finepar.features.RowStats` of :attr:`matrix` (built on first use)."""
        if self._stats is None:
            from .features import RowStats
            self._stats = RowStats(self.matrix.row_lengths())
        return self._stats

    def engine(self, pair: DevicePair, plan: Plan, options: EngineOptions | None = None,
               lowerings: dict | None = None) -> Engine:
        """An engine for ``plan`` with the app's state prepared (not timed); ``lowerings``
        as :class:`~finepar.engine.Engine` takes them."""
        eng = Engine(pair, self.matrix, plan, self.app.ops, options=options,
                     lowerings=lowerings,
                     built_ahead=self.app.built_ahead(tuple(plan.active_roles())),
                     column_vectors=self.app.column_vectors)
        t0 = time.perf_counter()
        self.app.prepared(eng, self.graph)
        eng.setup_seconds += time.perf_counter() - t0
        return eng

    def remapped(self, perm: np.ndarray, seconds: float = 0.0) -> "Workload":
        """This workload on the graph relabelled by ``perm`` (vertex ``v`` becomes
        ``perm[v]``): the app's matrix is permuted, not rebuilt."""
        wl = object.__new__(type(self))
        wl.app, wl.name = self.app, self.name
        t0 = time.perf_counter()
        note = "vertices relabelled for locality"
        wl.graph = self.graph.permuted(perm, note=note)
        if self.matrix is self.graph:
            wl.matrix = wl.graph
        elif self.matrix.n == self.graph.n:
            wl.matrix = self.matrix.permuted(perm, note=note)
        else:  # a stacked matrix (HITS): every block of n rows relabelled alike
            k = self.matrix.n // self.graph.n
            blocks = np.concatenate([perm + i * self.graph.n for i in range(k)])
            wl.matrix = self.matrix.permuted(blocks, note=note)
        wl.preprocess_seconds = self.preprocess_seconds + seconds + time.perf_counter() - t0
        wl._stats, wl.content_digest = None, None  # another graph's content
        return wl
