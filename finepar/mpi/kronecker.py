"""Graph500 Kronecker graphs generated rank by rank (DESIGN.md §3, "mpi").

The edges of :func:`finepar.io.graph500.kronecker` come in fixed chunks of ``2**20``, chunk
``k`` drawn from its own seed, and the vertex labels from one seeded permutation
(:mod:`finepar.io.graph500`). Rank ``r`` draws chunks ``r, r + P, r + 2P, ...``, counts the
degrees of its entries (both directions, self-loops dropped), and the ranks sum the
counts to draw contiguous vertex ranges of about equal entries. Then, one round per
chunk, every rank sends each entry to the rank owning its row (``MPI_Alltoallv``), and
each rank builds the CSR rows of its range, duplicates removed
(:class:`finepar.io.edges.RowBuckets`). The result is exactly the rows of the graph one
process generates; no rank holds more than its share of the edges.
"""

from __future__ import annotations

import numpy as np

from ..io.edges import RowBuckets
from ..parallel import n_workers, thread_map
from ..errors import InputError
from ..io.graph500 import (_CHUNK, DEFAULT_ABCD, _chunk_edges, _name, _permutation, _seeds,
                        parse_spec)
from .comm import Communicator, checked
from .rows import RankRows, finish_rows
from .partition import RowPartition, by_nnz

EDGEFACTOR = 16
#: Chunks whose entries are counted in one pass (bounds the temporary copy).
_COUNT_BATCH = 16


def _parse(spec: str) -> tuple[int, int]:
    """:func:`finepar.io.graph500.parse_spec`, its errors naming the spec."""
    try:
        return parse_spec(spec)
    except ValueError as exc:
        raise InputError(spec, str(exc)) from None


def graph500_rows(spec: str, comm: Communicator, check_size=None) -> RankRows:
    """This rank's rows of the Graph500 graph ``spec`` (collective).

    Parameters
    ----------
    spec : str
        ``graph500:SCALE[:SEED]`` (edgefactor 16, A=0.57, B=C=0.19, D=0.05, undirected).
    comm : Communicator
    check_size : callable, optional
        ``check_size(n, nnz)`` with this rank's entries (before its CSR is built).

    Returns
    -------
    RankRows
        Rows equal to those of ``kronecker(SCALE, seed=SEED)``; ``nnz`` partition.
    """
    scale, seed = checked(comm, _parse, spec)
    a, b, c, d = DEFAULT_ABCD
    n = 1 << scale
    m = n * EDGEFACTOR
    n_chunks = -(-m // _CHUNK)
    perm_seed, chunk_seeds = _seeds(seed, n_chunks)
    labels = _permutation(perm_seed, n)
    mine = list(range(comm.rank, n_chunks, comm.size))
    workers = max(1, n_workers(None) // comm.local_size)

    def draw(k: int):
        lo, hi = k * _CHUNK, min(m, (k + 1) * _CHUNK)
        src, dst = _chunk_edges(chunk_seeds[k], hi - lo, scale, a, b, c, d, labels)
        keep = src != dst
        return src[keep], dst[keep], int(keep.size - np.count_nonzero(keep))

    edges = thread_map(draw, mine, workers)
    del labels
    loops = int(comm.total(np.array([sum(e[2] for e in edges)], dtype=np.int64))[0])
    degrees = np.zeros(n, dtype=np.int32)
    for i in range(0, len(edges), _COUNT_BATCH):
        ends = [x for e in edges[i:i + _COUNT_BATCH] for x in e[:2]]
        degrees += np.bincount(np.concatenate(ends), minlength=n).astype(np.int32)
    degrees = comm.total(degrees)
    bounds = by_nnz(np.concatenate(([0], np.cumsum(degrees, dtype=np.int64))), comm.size)
    del degrees
    part = RowPartition(bounds, n, 1, "nnz")
    lo, hi = int(bounds[comm.rank]), int(bounds[comm.rank + 1])
    name = _name(scale, EDGEFACTOR, a, b, c, d, seed, True, True)
    indptr, indices = _route_and_build(comm, part, edges, -(-n_chunks // comm.size),
                                       workers, name, check_size)
    del edges
    local = indptr[lo:hi + 1].astype(np.int64) - int(indptr[lo])
    meta = {"name": name, "source": None, "pattern": True, "symmetric": True, "ids": None,
            "notes": [], "perm": None, "how": "each rank generated its share of the edges"}
    rows = finish_rows(comm, part, local, indices, np.ones(indices.size, np.float32), meta)
    rows.notes = [f"Graph500 Kronecker generator: scale {scale}, edgefactor {EDGEFACTOR}, "
                  f"A={a:g} B={b:g} C={c:g} D={d:g}, seed {seed}: {m:,} edges",
                  "relabelled vertices with a seeded random permutation",
                  f"removed {loops:,} self-loops", "symmetrized: added the reverse of every edge",
                  f"removed {2 * (m - loops) - rows.nnz:,} duplicate entries"]
    return rows


def _route_and_build(comm: Communicator, part: RowPartition, edges: list, rounds: int,
                     workers: int, name: str, check_size):
    """Send every entry (both directions of each edge) to its row's owner, one round per
    chunk, and build this rank's CSR rows: (indptr over all n rows, indices)."""
    buckets = None
    for j in range(rounds):
        if j < len(edges):
            src, dst, _ = edges[j]
            edges[j] = None  # released as it goes
            rows, cols = np.concatenate((src, dst)), np.concatenate((dst, src))
        else:
            rows = cols = np.zeros(0, np.int32)
        got_rows, got_cols = comm.route(part.owner(rows), rows, cols)
        if buckets is None:
            expect = got_rows.size * rounds
            if check_size is not None:
                checked(comm, check_size, part.n, expect)
            buckets = RowBuckets(part.n, max(expect, 1), workers)
        buckets.add(got_rows, got_cols)
    try:
        return buckets.to_csr(workers, name=name)
    except InputError:  # no entry in this rank's rows
        return np.zeros(part.n + 1, np.int64), np.zeros(0, np.int32)
