"""One rank's rows of the input graph (DESIGN.md §3, "mpi"): what every way of loading
them (:mod:`finepar.mpi.load`, :mod:`finepar.mpi.kronecker`) returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .comm import Communicator
from .partition import RowPartition


@dataclass
class RankRows:
    """One rank's rows of the input graph ``A`` (the rows of the vertices it owns).

    Attributes
    ----------
    n, nnz : int
        Vertices and stored entries of the whole graph.
    partition : RowPartition
        The vertex ranges of every rank.
    rank : int
        This rank: it holds rows ``lo .. hi`` (:attr:`lo`, :attr:`hi`).
    indptr : ndarray of int64, shape (hi - lo + 1,)
        Row pointers of the owned rows (from 0).
    indices : ndarray of int32
        Their global column ids, sorted within rows, no duplicates.
    data : ndarray of float32
    degrees : ndarray of int32, shape (n,)
        Out-degree of every vertex (every rank holds all of them).
    perm : ndarray of int64 or None
        Vertex ``v`` of the input is ``perm[v]`` here (METIS); None: the input's ids.
    how : str
        How the rows were read (shown in the report).
    seconds : float
        Wall time of the load.
    stages : dict
        Seconds of the load's stages, where the loader times them (the generator's
        ``draw``, ``count``, ``route`` and ``finish``).
    """

    n: int
    nnz: int
    partition: RowPartition
    rank: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    degrees: np.ndarray
    name: str
    source: str | None = None
    pattern: bool = False
    symmetric: bool = False
    ids: np.ndarray | None = None
    notes: list = field(default_factory=list)
    perm: np.ndarray | None = None
    how: str = ""
    seconds: float = 0.0
    stages: dict = field(default_factory=dict)

    @property
    def lo(self) -> int:
        return int(self.partition.bounds[self.rank])

    @property
    def hi(self) -> int:
        return int(self.partition.bounds[self.rank + 1])

    def entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows as (row, column, value) triples, global ids (rows int64)."""
        rows = np.repeat(np.arange(self.lo, self.hi, dtype=np.int64), np.diff(self.indptr))
        return rows, self.indices, self.data


def finish_rows(comm: Communicator, part: RowPartition, indptr: np.ndarray,
                indices: np.ndarray, data: np.ndarray, meta: dict) -> RankRows:
    """A RankRows from this rank's own rows (row pointers from 0), the out-degrees and
    the entry count gathered from every rank."""
    indptr = np.asarray(indptr, dtype=np.int64)
    degrees = comm.allgatherv(np.diff(indptr).astype(np.int32), counts=np.diff(part.bounds))
    nnz = int(comm.total(np.array([indices.size], dtype=np.int64))[0])
    return RankRows(n=part.n, nnz=nnz, partition=part, rank=comm.rank, indptr=indptr,
                    indices=np.ascontiguousarray(indices, dtype=np.int32),
                    data=np.ascontiguousarray(data, dtype=np.float32), degrees=degrees, **meta)
