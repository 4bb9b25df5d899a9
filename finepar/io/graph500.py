"""Synthetic graphs: the Graph500 Kronecker generator and FinePar's type-1 copies.

:func:`kronecker_edges` and :func:`kronecker` follow the Graph500 reference
generator (``kronecker_generator.m`` in the Graph500 specification, section
"Graph Generation"): every edge picks, for each of the ``scale`` bit levels,
one quadrant of the adjacency matrix with probabilities ``A, B, C, D``::

    ii_bit = rand > A + B
    jj_bit = rand > (C / (C + D) if ii_bit else A / (A + B))

and the vertex labels are then shuffled by a random permutation. The
undirected graph Graph500 kernels run on is the structure of ``E + E^T`` with
self-loops and duplicate edges removed.

Randomness is seeded and reproducible: edges are generated in fixed chunks of
``2**20``, chunk ``k`` drawing from its own generator seeded by child ``k`` of
``numpy.random.SeedSequence(seed)``; the label permutation has its own child.
The same seed therefore gives the same graph whatever the number of
``workers`` (threads: numpy releases the GIL while it draws, compares and
sorts large arrays). The random numbers are float32 draws, as the bit
decisions need no more; they are compared as the 32 random bits numpy makes
each of them from, which decides identically without the conversion.

:func:`diagonal_copy` and :func:`random_quadruplet` serve the training-set
construction of FinePar (TKDE, section 3.3): "type 1" copies of a matrix keep
its row lengths but place each row's nonzeros in a contiguous band around the
diagonal, and random ``(A, B, C, D)`` quadruplets vary the Kronecker skew.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable

import numpy as np

from .edges import RowBuckets
from ..parallel import n_workers, thread_map
from ..graph import Graph, pattern_values

__all__ = ["kronecker_edges", "kronecker", "diagonal_copy", "random_quadruplet", "parse_spec",
           "DEFAULT_ABCD"]

DEFAULT_ABCD = (0.57, 0.19, 0.19, 0.05)
"""Graph500 initiator probabilities ``(A, B, C, D)``."""

_CHUNK = 1 << 20  # edges per chunk: fixed (and even), so results do not depend on the worker count
_MAX_SCALE = 30
_TOLERANCE = 1e-6
# Cost of drawing one edge's bits at one level, of gathering one entry by row
# range and of building one entry's CSR row (nanoseconds on one core, measured
# at scales 20 and 22): they weigh the stages in the fraction reported to `progress`.
_COST_EDGE_LEVEL = 5.0
_COST_ENTRY_GATHER = 22.0
_COST_ENTRY_CSR = 46.0
_PROGRESS_INTERVAL = 0.25  # seconds between progress reports within a stage


def _check_parameters(scale, edgefactor, a, b, c, d, seed, workers) -> tuple[int, int, int]:
    if isinstance(scale, bool) or not isinstance(scale, numbers.Integral):
        raise ValueError(f"scale must be an integer from 1 to {_MAX_SCALE}, got {scale!r}")
    if not 1 <= scale <= _MAX_SCALE:
        raise ValueError(f"scale must be from 1 to {_MAX_SCALE}, got {scale}")
    if isinstance(edgefactor, bool) or not isinstance(edgefactor, numbers.Integral) or edgefactor < 1:
        raise ValueError(f"edgefactor must be a positive integer, got {edgefactor!r}")
    _check_probabilities(a, b, c, d)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, numbers.Integral)
                                or workers < 1):
        raise ValueError(f"workers must be a positive integer or None, got {workers!r}")
    return int(scale), int(edgefactor), int(seed)


def _check_probabilities(a, b, c, d) -> None:
    values = {"a": a, "b": b, "c": c, "d": d}
    for key, v in values.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"probability {key} must be a positive number, got {v!r}")
    total = float(a) + float(b) + float(c) + float(d)
    if abs(total - 1.0) > _TOLERANCE:
        raise ValueError(f"probabilities a, b, c, d must sum to 1 (within {_TOLERANCE:g}), "
                         f"got {a:g} + {b:g} + {c:g} + {d:g} = {total:.9g}")


def _seeds(seed: int, n_chunks: int) -> tuple[np.random.SeedSequence, list[np.random.SeedSequence]]:
    """Seed of the label permutation and one seed per edge chunk."""
    permutation_seed, edge_seed = np.random.SeedSequence(seed).spawn(2)
    return permutation_seed, edge_seed.spawn(n_chunks)


def _permutation(seed: np.random.SeedSequence, n: int) -> np.ndarray:
    labels = np.arange(n, dtype=np.int32)
    np.random.Generator(np.random.PCG64(seed)).shuffle(labels)
    return labels


def _above(p: float) -> np.uint32:
    """The 32-bit threshold ``t`` with: a float32 draw exceeds ``float32(p)`` iff its bits exceed ``t``.

    numpy makes a float32 draw from 32 random bits ``u`` as ``(u >> 8) * 2**-24``
    (exact). For a float32 ``p`` in (0, 1], ``p * 2**24`` is exact, so the draw
    exceeds ``p`` iff ``u >> 8 > floor(p * 2**24) = k``, iff ``u > 256 (k + 1) - 1``
    (never, when that passes ``2**32 - 1``).
    """
    k = math.floor(float(np.float32(p)) * 2 ** 24)
    return np.uint32(min(256 * (k + 1) - 1, 2 ** 32 - 1))


def _chunk_edges(seed: np.random.SeedSequence, m: int, scale: int, a: float, b: float, c: float, d: float,
                 labels: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Generate `m` (even) Kronecker edges from one chunk seed (Graph500 reference loop).

    Per level, the decisions are those of two calls
    ``Generator(PCG64(seed)).random(m, dtype=float32)``: numpy takes a float32
    draw's 32 bits from the low, then the high half of one 64-bit output, so
    ``m / 2`` raw outputs viewed as uint32 are exactly the bits of ``m``
    draws, compared through :func:`_above`.

    Returns
    -------
    src, dst : numpy.ndarray of int32, shape (m,)
    """
    if m % 2:
        raise ValueError(f"a chunk needs an even number of edges, got {m}")
    bits = np.random.PCG64(seed)
    t_ab, t_a, t_c = _above(a + b), _above(a / (a + b)), _above(c / (c + d))
    src = np.zeros(m, dtype=np.int32)
    dst = np.zeros(m, dtype=np.int32)
    ii = np.empty(m, dtype=bool)
    jj = np.empty(m, dtype=bool)
    above_c = np.empty(m, dtype=bool)
    for _ in range(scale):
        np.greater(bits.random_raw(m // 2).view(np.uint32), t_ab, out=ii)
        u = bits.random_raw(m // 2).view(np.uint32)
        # jj = u > (t_c if ii else t_a), as jj = above_a ^ (ii & (above_a ^ above_c)).
        np.greater(u, t_a, out=jj)
        np.greater(u, t_c, out=above_c)
        del u
        above_c ^= jj
        above_c &= ii
        jj ^= above_c
        src <<= 1
        src |= ii
        dst <<= 1
        dst |= jj
    if labels is not None:
        src = np.take(labels, src)
        dst = np.take(labels, dst)
    return src, dst


def kronecker_edges(scale: int, edgefactor: int = 16, a: float = 0.57, b: float = 0.19, c: float = 0.19,
                    d: float = 0.05, *, seed: int = 0, relabel: bool = True,
                    workers: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Generate the Graph500 Kronecker edge list.

    Follows the Graph500 reference generator (specification, "Graph
    Generation", ``kronecker_generator.m``): for each edge and each of the
    `scale` bit levels, ``ii_bit = rand > A+B`` and ``jj_bit = rand >
    (C/(C+D) if ii_bit else A/(A+B))`` set one bit of the source and the
    destination; then, when `relabel`, vertex labels are replaced through a
    seeded random permutation. The reference also shuffles the edge order;
    that is omitted here (it does not change the graph). Bits are filled from
    the most significant down, which has the same distribution as the
    reference's least-significant-first loop.

    Parameters
    ----------
    scale : int
        ``log2`` of the number of vertices, 1 to 30.
    edgefactor : int, default 16
        Edges per vertex: ``2**scale * edgefactor`` edges are generated.
    a, b, c, d : float
        Initiator probabilities (default 0.57, 0.19, 0.19, 0.05): positive,
        summing to 1 within 1e-6.
    seed : int, default 0
        Non-negative seed; the same seed gives the same edges.
    relabel : bool, default True
        Apply the random vertex permutation (off: vertex ``0`` is the
        densest, as in the raw Kronecker product).
    workers : int, optional
        Threads (default: all available CPUs). Does not change the result.

    Returns
    -------
    src, dst : numpy.ndarray of int32, shape (2**scale * edgefactor,)
        Edge ``k`` is ``src[k] -> dst[k]``, both in ``[0, 2**scale)``.
        Self-loops and duplicate edges occur, as in the reference.

    Raises
    ------
    ValueError
        For a scale outside 1..30, a non-positive edgefactor, probabilities
        that are not positive or do not sum to 1, a negative seed, or a
        non-positive worker count.
    """
    scale, edgefactor, seed = _check_parameters(scale, edgefactor, a, b, c, d, seed, workers)
    n = 1 << scale
    m = n * edgefactor
    n_chunks = -(-m // _CHUNK)
    permutation_seed, chunk_seeds = _seeds(seed, n_chunks)
    labels = _permutation(permutation_seed, n) if relabel else None
    src = np.empty(m, dtype=np.int32)
    dst = np.empty(m, dtype=np.int32)

    def work(k: int) -> None:
        lo, hi = k * _CHUNK, min(m, (k + 1) * _CHUNK)
        src[lo:hi], dst[lo:hi] = _chunk_edges(chunk_seeds[k], hi - lo, scale, a, b, c, d, labels)

    thread_map(work, range(n_chunks), n_workers(workers))
    return src, dst


def _name(scale, edgefactor, a, b, c, d, seed, symmetric, relabel) -> str:
    name = f"graph500-s{scale}-ef{edgefactor}-seed{seed}"
    if not np.allclose((a, b, c, d), DEFAULT_ABCD, rtol=0, atol=1e-12):
        name += f"-abcd{a:.3g}-{b:.3g}-{c:.3g}-{d:.3g}"
    if not symmetric:
        name += "-directed"
    if not relabel:
        name += "-unlabelled"
    return name


class _Progress:
    """Reports of the whole job's done fraction to ``callback(fraction, stage)``.

    A report is made when a stage starts, at most every
    ``_PROGRESS_INTERVAL`` seconds within a stage, and once with 1.0 at the end.
    ``weights`` maps each stage, in order, to its share of the work.
    """

    def __init__(self, callback: Callable[[float, str], None] | None, weights: dict[str, float]):
        self._callback = callback
        total = sum(weights.values())
        self._span: dict[str, tuple[float, float]] = {}
        done = 0.0
        for stage, w in weights.items():
            self._span[stage] = (done / total, w / total)
            done += w
        self._stage: str | None = None
        self._last = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self._callback is None:
            return
        start, share = self._span[stage]
        fraction = min(1.0, start + share * done / max(total, 1))
        now = time.monotonic()
        if stage != self._stage or now - self._last >= _PROGRESS_INTERVAL:
            self._stage, self._last = stage, now
            self._callback(fraction, stage)

    def finish(self) -> None:
        if self._callback is not None:
            self._callback(1.0, self._stage or "done")


def parse_spec(spec: str) -> tuple[int, int]:
    """``graph500:SCALE[:SEED]`` as ``(scale, seed)`` (edgefactor 16, the default initiator).

    Raises
    ------
    ValueError
        With a one-line message: a spec of another shape, or a scale or seed that
        :func:`kronecker` refuses.
    """
    parts = spec.split(":")[1:]
    try:
        scale = int(parts[0])
        seed = int(parts[1]) if len(parts) > 1 else 0
        if len(parts) > 2:
            raise ValueError
    except (ValueError, IndexError):
        raise ValueError("generator spec must be graph500:SCALE[:SEED], "
                         "e.g. graph500:16 or graph500:20:1") from None
    _check_parameters(scale, 16, *DEFAULT_ABCD, seed, None)
    return scale, seed


def kronecker(scale: int, edgefactor: int = 16, a: float = 0.57, b: float = 0.19, c: float = 0.19,
              d: float = 0.05, *, seed: int = 0, symmetric: bool = True, relabel: bool = True,
              workers: int | None = None,
              progress: Callable[[float, str], None] | None = None) -> Graph:
    """Generate a Graph500 Kronecker graph as a :class:`~finepar.graph.Graph`.

    The edges are those of :func:`kronecker_edges` with the same arguments.
    With `symmetric` (the Graph500 graph), the result is the structure of
    ``E + E^T`` with self-loops and duplicates removed: an undirected graph
    stored with both directions of every edge, flagged ``symmetric``.
    Otherwise it is the directed graph of the edges, duplicates removed,
    self-loops kept.

    Chunks of edges are generated on a thread pool and their entries gathered
    by row range as they come (:class:`finepar.edges.RowBuckets`); each row
    range then becomes its CSR rows on its own (scipy's COO to CSR
    conversion), its storage released as it goes. No array of all edges is
    sorted. The peak resident memory is about 8 bytes per generated entry
    (two entries per edge when symmetric: 4.3 GB at scale 24, 17 GB at scale
    26) plus about 50 MB per thread, then the result's 8 bytes per stored
    entry plus ``indptr`` once that storage is released: about 1.2 times the
    result from scale 22 up (measured: 1.19 at scale 22, one thread).

    Parameters
    ----------
    scale, edgefactor, a, b, c, d, seed, relabel, workers
        As in :func:`kronecker_edges`.
    symmetric : bool, default True
        Build the undirected Graph500 graph (see above).
    progress : callable, optional
        ``progress(done_fraction, what)``: the fraction of the whole job done
        (0 to 1, estimated from the work of each stage) and the stage
        (``"generating edges"``, ``"building CSR"``). Called in the calling
        thread when a stage starts, at most every 0.25 s within a stage, and
        with 1.0 at the end.

    Returns
    -------
    Graph
        ``n = 2**scale`` vertices (some isolated), ``pattern=True``, int32
        ``indices``, ``indptr`` int32 (int64 exactly when the stored entries
        exceed the int32 limit: :func:`finepar.graph.as_indptr`), name like
        ``"graph500-s20-ef16-seed0"``; `notes` record the parameters and how
        many self-loops and duplicates were removed.

    Raises
    ------
    ValueError
        For invalid parameters, as :func:`kronecker_edges`, or a `progress`
        that is not callable.
    finepar.errors.InputError
        If no stored entry is left (a tiny symmetric graph whose edges are
        all self-loops).
    """
    scale, edgefactor, seed = _check_parameters(scale, edgefactor, a, b, c, d, seed, workers)
    if progress is not None and not callable(progress):
        raise ValueError(f"progress must be callable or None, got {progress!r}")
    workers = n_workers(workers)
    n = 1 << scale
    m = n * edgefactor
    entries = 2 * m if symmetric else m
    report = _Progress(progress, {
        "generating edges": _COST_EDGE_LEVEL * scale * m + _COST_ENTRY_GATHER * entries,
        "building CSR": _COST_ENTRY_CSR * entries})
    n_chunks = -(-m // _CHUNK)
    permutation_seed, chunk_seeds = _seeds(seed, n_chunks)
    report("generating edges", 0, n_chunks)
    labels = _permutation(permutation_seed, n) if relabel else None
    buckets = RowBuckets(n, entries, workers)

    def work(k: int) -> int:
        lo, hi = k * _CHUNK, min(m, (k + 1) * _CHUNK)
        src, dst = _chunk_edges(chunk_seeds[k], hi - lo, scale, a, b, c, d, labels)
        return buckets.add_edges(src, dst, symmetric=symmetric, drop_self_loops=symmetric)

    loops = sum(thread_map(work, range(n_chunks), workers,
                           on_done=lambda k: report("generating edges", k, n_chunks)))
    del labels
    name = _name(scale, edgefactor, a, b, c, d, seed, symmetric, relabel)
    report("building CSR", 0, buckets.n_buckets)
    indptr, indices = buckets.to_csr(workers, name=name,
                                     on_done=lambda k, total: report("building CSR", k, total))
    del buckets
    nnz = int(indices.shape[0])
    notes = [f"Graph500 Kronecker generator: scale {scale}, edgefactor {edgefactor}, "
             f"A={a:g} B={b:g} C={c:g} D={d:g}, seed {seed}: {m:,} edges"]
    if relabel:
        notes.append("relabelled vertices with a seeded random permutation")
    if symmetric:
        notes.append(f"removed {loops:,} self-loops")
        notes.append("symmetrized: added the reverse of every edge")
        notes.append(f"removed {2 * (m - loops) - nnz:,} duplicate entries")
    else:
        notes.append(f"removed {m - nnz:,} duplicate edges")
    graph = Graph(indptr, indices, pattern_values(nnz), name, None, True, None, notes,
                  symmetric=symmetric)
    report.finish()
    return graph


def diagonal_copy(graph: Graph, *, name: str | None = None) -> Graph:
    """Return the "type 1" copy of `graph`: same row lengths, nonzeros on a diagonal band.

    Following FinePar (TKDE, section 3.3), row ``i`` with ``k`` stored
    entries gets the ``k`` contiguous columns ``start .. start + k - 1`` with
    ``start = clip(i - k // 2, 0, n - k)``, so the copy has exactly the row
    length distribution of the original but near-perfect column locality.

    Parameters
    ----------
    graph : Graph
        Any graph (only its row lengths are used).
    name : str, optional
        Name of the copy (default ``graph.name + "-diag"``).

    Returns
    -------
    Graph
        Pattern graph (``data`` all ones, ``pattern=True``, ``ids=None``) with
        ``row_lengths()`` equal to ``graph.row_lengths()``; int32 indices
        sorted within rows, no duplicates.
    """
    n = graph.n
    lengths = graph.row_lengths()
    rows = np.arange(n, dtype=np.int64)
    start = np.clip(rows - lengths // 2, 0, n - lengths.astype(np.int64)).astype(np.int32)
    del rows
    # Column of entry p in row i = start[i] + (p - indptr[i]).
    offset = start - graph.indptr[:-1]
    indices = np.repeat(offset, lengths)
    indices += np.arange(graph.nnz, dtype=np.int32)
    notes = [f"type-1 copy of {graph.name}: same row lengths, each row's nonzeros contiguous around "
             "the diagonal"]
    return Graph(graph.indptr.copy(), indices, pattern_values(graph.nnz),
                 name if name is not None else f"{graph.name}-diag", None, True, None, notes)


def random_quadruplet(rng=None) -> tuple[float, float, float, float]:
    """Draw random Kronecker initiator probabilities ``(A, B, C, D)``.

    As in FinePar (TKDE, section 3.3): four positive numbers summing to 1,
    the largest of which is ``A``; the other three are assigned to ``B``,
    ``C``, ``D`` in random order. The four numbers are drawn uniformly from
    the probability simplex (a flat Dirichlet distribution).

    Parameters
    ----------
    rng : numpy.random.Generator, int or None
        Generator, or a seed for :func:`numpy.random.default_rng`.

    Returns
    -------
    tuple of four float
        ``(A, B, C, D)``, each positive, ``A >= max(B, C, D)``, summing to 1
        (to rounding), accepted by :func:`kronecker`.
    """
    rng = np.random.default_rng(rng)
    while True:
        x = rng.dirichlet(np.ones(4))
        if x.min() > 0:
            break
    top = int(np.argmax(x))
    rest = np.delete(x, top)
    rng.shuffle(rest)
    a, b, c = float(x[top]), float(rest[0]), float(rest[1])
    d = float(rest[2])
    return a, b, c, d

