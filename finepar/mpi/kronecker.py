"""Graph500 Kronecker graphs generated rank by rank (DESIGN.md §3, "mpi").

The edges of :func:`finepar.io.graph500.kronecker` come in fixed chunks of ``2**20``, chunk
``k`` drawn from its own seed, and the vertex labels from one seeded permutation
(:mod:`finepar.io.graph500`). Rank ``r`` draws chunks ``r, r + P, r + 2P, ...`` on its
threads while one more thread shuffles the labels (numpy's shuffle: a minute at scale 29),
then labels them; it counts the degrees of a sample of its entries (both directions,
self-loops dropped; every entry at small scales), and the ranks sum the counts to draw
contiguous vertex ranges of about equal entries. Then, in rounds of one chunk a thread,
every rank sends each entry to the rank owning its row (``MPI_Alltoallv``), and each rank
builds the CSR rows of its range, duplicates removed (:class:`finepar.io.edges.RowBuckets`).
The result is exactly the rows of the graph one process generates; no rank holds more
than its share of the edges.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

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
#: Chunks a rank counts for the partition, at least (more where n is larger).
_COUNT_BATCH = 16


def _parse(spec: str) -> tuple[int, int]:
    """:func:`finepar.io.graph500.parse_spec`, its errors naming the spec."""
    try:
        return parse_spec(spec)
    except ValueError as exc:
        raise InputError(spec, str(exc)) from None


def graph500_rows(spec: str, comm: Communicator, check_size=None, on_stage=None) -> RankRows:
    """This rank's rows of the Graph500 graph ``spec`` (collective).

    Parameters
    ----------
    spec : str
        ``graph500:SCALE[:SEED]`` (edgefactor 16, A=0.57, B=C=0.19, D=0.05, undirected).
    comm : Communicator
    check_size : callable, optional
        ``check_size(n, nnz)`` with this rank's entries (before its CSR is built).
    on_stage : callable, optional
        ``on_stage(name, seconds)`` as each stage of :data:`STAGES` ends, and for the
        route's parts (``route: group``, ``route: move``, ``route: bucket``): progress for
        a generation that takes minutes (:func:`generation_progress`).

    Returns
    -------
    RankRows
        Rows equal to those of ``kronecker(SCALE, seed=SEED)``; ``nnz`` partition.
    """
    scale, seed = checked(comm, _parse, spec)
    stages, t0 = {}, time.perf_counter()

    def done(stage: str) -> float:
        stages[stage] = time.perf_counter() - t0
        if on_stage is not None:
            on_stage(stage, stages[stage])
        return time.perf_counter()
    a, b, c, d = DEFAULT_ABCD
    n = 1 << scale
    m = n * EDGEFACTOR
    n_chunks = -(-m // _CHUNK)
    mine = list(range(comm.rank, n_chunks, comm.size))
    workers = max(1, n_workers(None) // comm.local_size)
    edges = _drawn(scale, seed, mine, workers)
    t0 = done("draw")
    loops = int(comm.total(np.array([sum(e[2] for e in edges)], dtype=np.int64))[0])
    degrees = comm.total(_degrees(edges, n))
    t0 = done("count")
    bounds = by_nnz(np.concatenate(([0], np.cumsum(degrees, dtype=np.int64))), comm.size)
    del degrees
    part = RowPartition(bounds, n, 1, "nnz")
    lo, hi = int(bounds[comm.rank]), int(bounds[comm.rank + 1])
    name = _name(scale, EDGEFACTOR, a, b, c, d, seed, True, True)
    indptr, indices = _route_and_build(comm, part, edges, -(-n_chunks // comm.size),
                                       workers, name, check_size, on_stage)
    del edges
    t0 = done("route")
    local = indptr[lo:hi + 1].astype(np.int64) - int(indptr[lo])
    meta = {"name": name, "source": None, "pattern": True, "symmetric": True, "ids": None,
            "notes": [], "perm": None, "how": "each rank generated its share of the edges"}
    rows = finish_rows(comm, part, local, indices, np.ones(indices.size, np.float32), meta)
    done("finish")
    rows.stages = stages
    rows.notes = [f"Graph500 Kronecker generator: scale {scale}, edgefactor {EDGEFACTOR}, "
                  f"A={a:g} B={b:g} C={c:g} D={d:g}, seed {seed}: {m:,} edges",
                  "relabelled vertices with a seeded random permutation",
                  f"removed {loops:,} self-loops", "symmetrized: added the reverse of every edge",
                  f"removed {2 * (m - loops) - rows.nnz:,} duplicate entries"]
    return rows


#: The generation's stages as :func:`graph500_rows` reports them, in order, with their
#: shares of the time (four H200s at scale 29: draw 131 s, count 25, route 128, finish 7).
STAGES = {"draw": 45, "count": 9, "route": 44, "finish": 2}


@contextmanager
def generation_progress(spec: str, comm: Communicator, enabled: bool):
    """An ``on_stage`` for :func:`graph500_rows` that shows its progress on rank 0
    (:class:`finepar.progress.Progress`: a bar on a terminal, a line a stage otherwise)."""
    from ..progress import Progress
    bar = Progress(sum(STAGES.values()), f"generating {spec} on {comm.size} rank(s)",
                   enabled=enabled and comm.rank == 0)
    order = list(STAGES)
    bar.step(order[0], STAGES[order[0]])

    def on_stage(name: str, seconds: float) -> None:
        if name not in STAGES:
            bar.detail(f"{name}: {seconds:.1f} s")
        elif order.index(name) + 1 < len(order):
            nxt = order[order.index(name) + 1]
            bar.step(f"{nxt} (after {name}: {seconds:.1f} s)", STAGES[nxt])
    try:
        yield on_stage
    finally:
        bar.close()


def _drawn(scale: int, seed: int, mine: list, workers: int) -> list:
    """Chunks ``mine`` of the edges, labelled, self-loops dropped: ``[(src, dst, loops)]``.

    The threads draw the chunks unlabelled (a self-loop is one whatever the labels) while
    one more thread shuffles the labels (numpy's shuffle runs on one thread: it bounds
    this stage at scale 29), then label them."""
    a, b, c, d = DEFAULT_ABCD
    n = 1 << scale
    m = n * EDGEFACTOR
    perm_seed, chunk_seeds = _seeds(seed, -(-m // _CHUNK))

    def draw(k: int):
        lo, hi = k * _CHUNK, min(m, (k + 1) * _CHUNK)
        src, dst = _chunk_edges(chunk_seeds[k], hi - lo, scale, a, b, c, d, None)
        keep = src != dst
        return src[keep], dst[keep], int(keep.size - np.count_nonzero(keep))

    with ThreadPoolExecutor(1) as one:
        shuffled = one.submit(_permutation, perm_seed, n)
        edges = thread_map(draw, mine, workers)
        labels = shuffled.result()

    def relabel(k: int) -> None:
        src, dst, loops = edges[k]
        edges[k] = (np.take(labels, src), np.take(labels, dst), loops)
    thread_map(relabel, range(len(edges)), workers)
    return edges


def _degrees(edges: list, n: int) -> np.ndarray:
    """Entries of each row among a sample of ``edges`` (both ends of each edge), int32 of
    shape (n,): what the ``nnz`` partition's bounds are drawn from.

    The rank's first chunks of at least ``n`` entries are counted, in one pass (all of them
    where it holds fewer: exact counts). Every chunk is drawn alike, so the sample's
    running sums cut the vertices as the whole's would, within a sample's error (at
    scale 29 a rank counts 256 of its 2,048 chunks: 1/8 of the edges, and a rank's range
    holds some 134 M vertices); the rows each rank then holds are the graph's whatever
    the bounds."""
    batch = max(_COUNT_BATCH, -(-n // (2 * _CHUNK)))
    if not edges:
        return np.zeros(n, dtype=np.int32)
    ends = np.concatenate([x for e in edges[:batch] for x in e[:2]])
    return np.bincount(ends, minlength=n).astype(np.int32)


def _route_and_build(comm: Communicator, part: RowPartition, edges: list, rounds: int,
                     workers: int, name: str, check_size, on_stage=None):
    """Send every entry (both directions of each edge) to its row's owner and build this
    rank's CSR rows: (indptr over all n rows, indices).

    ``rounds`` is the most chunks a rank holds. A round moves ``workers`` chunks: the
    threads order each chunk's entries by owner, copy them into one send buffer by rank,
    and, after one ``MPI_Alltoallv`` a array, bucket what came in, a piece each.
    ``on_stage(name, seconds)`` is told the rounds' seconds in each part."""
    buckets = None
    per = max(1, workers)
    spent = {"group": 0.0, "move": 0.0, "bucket": 0.0}
    with ThreadPoolExecutor(per) as pool:
        for j in range(-(-rounds // per)):
            t0 = time.perf_counter()
            parts = list(pool.map(lambda k: _by_owner(comm, part, edges, k),
                                  range(j * per, (j + 1) * per)))
            counts, *send = _merged(parts, comm.size, pool)
            del parts
            t1 = time.perf_counter()
            got = comm.route_grouped(counts, *send)
            del send
            t2 = time.perf_counter()
            spent["group"] += t1 - t0
            spent["move"] += t2 - t1
            if buckets is None:
                expect = got[0].size * -(-rounds // per)
                if check_size is not None:
                    checked(comm, check_size, part.n, expect)
                buckets = RowBuckets(part.n, max(expect, 1), workers)
            cut = -(-got[0].size // per) or 1
            list(pool.map(lambda lo: buckets.add(got[0][lo:lo + cut], got[1][lo:lo + cut]),
                          range(0, got[0].size, cut)))
            got = None  # released before the next round's buffers
            spent["bucket"] += time.perf_counter() - t2
    if on_stage is not None:
        for k, v in spent.items():
            on_stage(f"route: {k}", v)
    try:
        return buckets.to_csr(workers, name=name)
    except InputError:  # no entry in this rank's rows
        return np.zeros(part.n + 1, np.int64), np.zeros(0, np.int32)


def _by_owner(comm: Communicator, part: RowPartition, edges: list, k: int) -> tuple:
    """Chunk ``k`` of this rank as entries (both directions), grouped by the rank owning
    their rows: ``(counts, rows, cols)``; empty past the rank's last chunk."""
    if k < len(edges):
        src, dst, _ = edges[k]
        edges[k] = None  # released as it goes
        rows, cols = np.concatenate((src, dst)), np.concatenate((dst, src))
    else:
        rows = cols = np.zeros(0, np.int32)
    return comm.group_by_rank(part.owner(rows), rows, cols)


def _merged(parts: list, size: int, pool) -> tuple:
    """Grouped chunks ``(counts, rows, cols)`` as one send buffer a array, ordered by rank
    then chunk, copied by the pool's threads: ``(counts, rows, cols)``."""
    counts = np.sum([p[0] for p in parts], axis=0).astype(np.int64)
    starts = [np.concatenate(([0], np.cumsum(p[0]))) for p in parts]
    out = [np.empty(int(counts.sum()), np.int32) for _ in range(2)]
    at, copies = 0, []
    for r in range(size):
        for p, st in zip(parts, starts):
            lo, hi = int(st[r]), int(st[r + 1])
            if hi > lo:
                copies += [(out[a], at, p[1 + a][lo:hi]) for a in range(2)]
                at += hi - lo

    def copy(c):
        dst, at, src = c
        dst[at:at + src.size] = src
    list(pool.map(copy, copies))
    return (counts, *out)
