"""Throttling a plan's GPU share: options, the decision, and what the engine receives.

:func:`throttle_share` cuts the GPU share of a plan into cache-fit partitions
(DBWP, :func:`~finepar.throttle.dbwp.dbwp`) with the capacity of the GPU's L2
(throttling-atc18 §2; DESIGN.md §6: the driver reports 4 MiB where the H100
has 50 MB, so the known sizes or a config's ``cache_bytes`` are used), and
returns a :class:`ThrottleSpec` the engine lowers (one launch per partition,
per merged node, or a queue). ``schedule='auto'`` throttles only where the
share's x and y entries exceed the cache and the predicted saving over the run's
steps exceeds the partitioning's cost (this machine's last measured seconds per
nonzero, :data:`PARTITION_SECONDS_PER_NNZ` until it has one: 1.6 s for Graph500
scale 24's 5.2e8 entries on the H100, paid back by a 1000-step SpMV but not by 50
steps), and then as split-join: the first iterations time every level of the SJ-tree
(its root is the share unthrottled, in one launch) and Algorithm 3 keeps whatever was
fastest, so throttling stays only where it measured a gain.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import UsageError
from ..graph import Graph, RowEntries
from ..parallel import ascending, chunked
from .dbwp import BISECTIONS, Partitioning, capacity_from_cache, dbwp, grid_partitioning

#: Schedules a run may ask for: none, the paper's four, or auto.
SCHEDULE_CHOICES = ("none", "cf", "cf-q", "sj", "sj-q", "auto")
#: Vertex relabellings: none, Algorithm 5 (DBWP's partitions packed), descending degree.
REMAP_CHOICES = ("none", "dbwp", "degree")
#: Seconds per nonzero of partitioning a share, until this machine has measured its own
#: (:func:`measured_rate`): the grid K-D tiling of Graph500 scale 24's GPU share with its
#: counts on the H100 took 1.57 s for 5.2e8 entries (2026-11-25, benchmarks/throttle.py).
PARTITION_SECONDS_PER_NNZ = 3e-9
#: The largest share of a step throttling is predicted to save, where x and y outgrow the
#: cache (throttling-atc18 Fig. 9); H100, Graph500 scale 24, 2026-11-22: SJ over K-D
#: partitions ran a product in 5.13 ms against 6.88 unthrottled (25%) with x and y 2.7
#: times the L2's capacity.
GAIN_MAX = 0.4
#: Unthrottled nonzeros per second assumed for a GPU step when no model predicted one
#: (H100, Graph500 scale 24: 5.2e8 nnz in 6.9 ms).
STEP_NNZ_PER_S = 7.5e10


@dataclass(frozen=True)
class ThrottleOptions:
    """How to throttle the GPU share (``finepar run --schedule --bisect --remap
    --cache-bytes``, the ``[throttle]`` config table, the API's keywords).

    Attributes
    ----------
    schedule : {'none', 'cf', 'cf-q', 'sj', 'sj-q', 'auto'}
    bisect : {'kd', 'spac'}
        K-D tiling or coarsened SPAC (pymetis) bisection.
    remap : {'none', 'dbwp', 'degree'}
    cache_bytes : int or None
        The cache the partitions must fit; None: the GPU's L2.
    fraction : float
        Share of the cache for x and y entries, in (0, 1].
    max_partition_seconds : float
        ``auto`` partitions no share whose partitioning is estimated to take
        longer (seconds; :func:`measured_rate` per nonzero), whatever it would save.
    """

    schedule: str = "auto"
    bisect: str = "kd"
    remap: str = "none"
    cache_bytes: int | None = None
    fraction: float = 0.5
    max_partition_seconds: float = 30.0

    def check(self) -> "ThrottleOptions":
        """Raise a one-line UsageError naming a bad option (before any work)."""
        for name, value, choices in (("schedule", self.schedule, SCHEDULE_CHOICES),
                                     ("bisect", self.bisect, BISECTIONS),
                                     ("remap", self.remap, REMAP_CHOICES)):
            if value not in choices:
                raise UsageError(f"--{name} must be one of {', '.join(choices)}, not {value!r}")
        if self.cache_bytes is not None and (isinstance(self.cache_bytes, bool)
                                             or int(self.cache_bytes) != self.cache_bytes
                                             or self.cache_bytes <= 0):
            raise UsageError(f"--cache-bytes must be a positive size, not {self.cache_bytes!r}")
        if not 0 < float(self.fraction) <= 1:
            raise UsageError(f"the cache fraction must be in (0, 1], not {self.fraction!r}")
        return self


@dataclass
class ThrottleSpec:
    """A throttled GPU share, as the engine lowers it.

    Attributes
    ----------
    schedule : {'cf', 'cf-q', 'sj', 'sj-q'}
    partitioning : Partitioning
        Of the share's rows in ascending order.
    cache_bytes : int
    capacity : int
        ``T``, in x plus y entries.
    seconds : float
        Partitioning time (the share's compaction and DBWP).
    remap : str
        The relabelling the graph had before partitioning (reported).
    remap_seconds : float
    """

    schedule: str
    partitioning: Partitioning
    cache_bytes: int
    capacity: int
    seconds: float = 0.0
    remap: str = "none"
    remap_seconds: float = 0.0
    notes: list = field(default_factory=list)

    def describe(self) -> dict:
        """For reports: the schedule, the capacity, and the partitions' statistics."""
        return {"schedule": self.schedule, "cache_bytes": self.cache_bytes,
                "capacity": self.capacity, "bisect": self.partitioning.method,
                "partition_seconds": self.seconds, "remap": self.remap,
                "remap_seconds": self.remap_seconds,
                "tree_depth": int(self.partitioning.tree.max_depth),
                **self.partitioning.describe()}


def share_csr(matrix: Graph, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The compact CSR (``indptr`` int64, ``indices`` int32) of ``rows`` of ``matrix``."""
    rows = np.asarray(rows, dtype=np.int64)
    lengths = matrix.lengths_of(rows)
    indptr = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    return indptr, RowEntries.of_rows(matrix.indptr, rows).take(matrix.indices)


def predicted_gain(working_set: int, capacity: int) -> float:
    """The share of an unthrottled step throttling is predicted to save: none while the
    share's x and y entries fit the cache, then up to :data:`GAIN_MAX` as they outgrow it
    (``GAIN_MAX * (1 - capacity / working_set)``)."""
    return 0.0 if working_set <= capacity else GAIN_MAX * (1.0 - capacity / working_set)


def measured_rate() -> float:
    """Seconds per nonzero the last partitioning on this machine took (kept in the cache
    folder by :func:`record_rate`), else :data:`PARTITION_SECONDS_PER_NNZ`."""
    import json
    from ..prepcache import cache_root
    try:
        return float(json.loads((cache_root() / "throttle-rate.json").read_text())["rate"])
    except (OSError, ValueError, KeyError, TypeError):
        return PARTITION_SECONDS_PER_NNZ


def record_rate(seconds: float, nnz: int) -> None:
    """Keep a partitioning's measured seconds per nonzero for the next ``auto`` decision."""
    import os
    from ..files import atomic_write_json
    from ..prepcache import cache_root
    if nnz < 1 << 20 or os.environ.get("FINEPAR_NO_CACHE"):
        return  # small shares time their overheads, not their entries
    try:
        atomic_write_json(cache_root() / "throttle-rate.json",
                          {"rate": seconds / nnz, "nnz": nnz, "seconds": seconds})
    except OSError:
        pass


#: The most runs of consecutive rows :func:`columns_seen` reads as slices of the matrix.
SLICED_RUNS = 4096


def columns_seen(matrix: Graph, rows: np.ndarray, share_indices) -> np.ndarray:
    """The columns holding an entry of ``rows`` (bool, (n,)), marked on the pool's threads:
    from slices of the matrix's own ``indices`` where the rows are a few runs of
    consecutive rows (all but a few hubs), else from ``share_indices()`` (the share's
    compacted column indices, built for it)."""
    from ..parallel import CHUNK, pool
    seen = np.zeros(matrix.n, dtype=bool)
    ent = RowEntries.of_rows(matrix.indptr, rows)
    if ent.runs > SLICED_RUNS:
        indices = share_indices()
        chunked(lambda lo, hi: seen.__setitem__(indices[lo:hi], True), int(indices.shape[0]))
        return seen
    spans = [(a, min(a + CHUNK, int(s) + int(n))) for s, n in zip(ent.starts, np.diff(ent.ptr))
             for a in range(int(s), int(s) + int(n), CHUNK)]
    list(pool().map(lambda ab: seen.__setitem__(matrix.indices[ab[0]:ab[1]], True), spans))
    return seen


def auto_decision(matrix: Graph, rows: np.ndarray, nnz: int, share_indices, capacity: int,
                  options: ThrottleOptions, steps: float, step_seconds: float | None,
                  ordered=None) -> dict:
    """Whether ``schedule='auto'`` throttles a share: when the predicted saving over the
    run's ``steps`` (:func:`predicted_gain` of a step of ``step_seconds``) exceeds the
    partitioning's cost (:func:`measured_rate` per nonzero), and that cost stays within
    ``options.max_partition_seconds``. Returns the figures, with ``throttle`` the verdict
    (``working_set`` -1 where even :data:`GAIN_MAX` of every step could not pay, -2 where
    the matrix's columns plus the share's rows fit the cache: the share's x and y entries
    are then not counted, nor ``share_indices()``, the share's column indices, asked for;
    a count is a pass over every entry, on every run that is not cached). ``rows`` may be
    in any order; ``ordered()``, when given, returns them ascending (sorted once)."""
    step = step_seconds if step_seconds else nnz / STEP_NNZ_PER_S
    cost = nnz * measured_rate()
    ws = -1  # not counted: even the largest gain could not pay for the partitioning
    saving = steps * step * GAIN_MAX
    if min(matrix.n, nnz) + rows.size <= capacity:  # x and y fit whatever the share holds
        ws, saving = -2, 0.0
    elif saving > cost and cost <= options.max_partition_seconds:
        seen = columns_seen(matrix, ordered() if ordered else ascending(rows), share_indices)
        ws = int(np.count_nonzero(seen)) + int(np.count_nonzero(matrix.lengths_of(rows)))
        saving = steps * step * predicted_gain(ws, capacity)
    ok = saving > cost and cost <= options.max_partition_seconds
    return {"throttle": bool(ok), "working_set": ws, "capacity": int(capacity),
            "steps": float(steps), "step_seconds": float(step), "cost_seconds": float(cost),
            "saving_seconds": float(saving)}


def throttle_share(matrix: Graph, rows: np.ndarray, options: ThrottleOptions,
                   cache_bytes: int, *, steps: float = 1.0, step_seconds: float | None = None,
                   decision: dict | None = None, counter=None) -> ThrottleSpec | None:
    """Cut a GPU share into cache-fit partitions, or decide not to.

    Parameters
    ----------
    matrix : Graph
        The work matrix.
    rows : ndarray of int
        The GPU share's rows.
    options : ThrottleOptions
    cache_bytes : int
        The GPU's cache (used when ``options.cache_bytes`` is None).
    steps : float
        Row operations the run is expected to make (``App.row_steps``).
    step_seconds : float, optional
        A predicted unthrottled step of the share (the tuner's), seconds.
    decision : dict, optional
        Filled with ``auto``'s figures (:func:`auto_decision`).
    counter : finepar.throttle.kdcount.DeviceCounter, optional
        Where the grid tiling counts (:func:`device_counter`); None: on the host.

    Returns
    -------
    ThrottleSpec or None
        None for ``schedule='none'``, an empty share, or ``auto`` when the
        partitioning would cost more than the run is predicted to save (a share
        whose working set fits the cache saves nothing).
    """
    options.check()
    rows = np.asarray(rows, dtype=np.int64)  # sorted only where partitioned or counted
    if options.schedule == "none" or rows.size == 0:
        return None
    t0 = time.perf_counter()
    cache = int(options.cache_bytes or cache_bytes)
    capacity = capacity_from_cache(cache, options.fraction)
    ordered = functools.cache(lambda: ascending(rows))
    share = functools.cache(lambda: share_csr(matrix, ordered()))  # built once, where needed
    schedule = options.schedule
    if schedule == "auto":
        nnz = int(matrix.lengths_of(rows).sum())
        verdict = auto_decision(matrix, rows, nnz, lambda: share()[1], capacity, options,
                                steps, step_seconds, ordered)
        if decision is not None:
            decision.update(verdict)
        if not verdict["throttle"]:
            return None
        schedule = "sj"  # let the measured split-join decide
    rows = ordered()
    t_part = time.perf_counter()
    part = of_whole(matrix, rows, capacity, counter) if options.bisect == "kd" else None
    if part is None:
        indptr, indices = share()
        part = dbwp(indptr, indices, matrix.n, capacity, bisect=options.bisect, checked=True,
                    symmetric=matrix.symmetric and rows.size == matrix.n, counter=counter)
    seconds = time.perf_counter() - t0
    if options.bisect == "kd":  # the partitioning alone: what the next decision weighs
        record_rate(time.perf_counter() - t_part, int(part.nnz.sum()))
    return ThrottleSpec(schedule=schedule, partitioning=part, cache_bytes=cache,
                        capacity=capacity, seconds=seconds)


def device_counter(pair):
    """The grid tiling's counts on ``pair``'s GPU (:class:`.kdcount.DeviceCounter`), or None
    where the GPU's memory is the host's (an emulated pair, an APU): the host passes read
    the same memory there, without a kernel build."""
    from .kdcount import DeviceCounter
    if pair is None or pair.gpu.host_memory:
        return None
    return DeviceCounter(pair)


#: A share of a symmetric matrix holding at least this fraction of its nonzeros is cut
#: with the whole matrix's partitions (:func:`of_whole`).
WHOLE_SHARE = 0.9


def of_whole(matrix: Graph, rows: np.ndarray, capacity: int, counter=None):
    """K-D partitions of most rows of a symmetric matrix, from the whole matrix's.

    The default split leaves the GPU every row but a few hubs. Its share is no longer
    symmetric, so the grid tiling would count its columns entry by entry (scale 24 on the
    H100's 16 cores: 5.8 s against 4.3 s for the whole matrix); instead the whole matrix
    is tiled (its column counts are its row counts) and the segments of the other rows
    dropped (:func:`~finepar.throttle.dbwp.grid_partitioning`): a subset of a cache-fit
    partition's entries fits too, and the share's compacted column indices are never
    built.

    Returns
    -------
    Partitioning or None
        None where this does not apply: an asymmetric matrix, every row (the caller tiles
        it as it is), a share under :data:`WHOLE_SHARE` of the nonzeros or under
        :data:`~finepar.throttle.kdgrid.GRID_MIN_NNZ`, or a partition left empty.
    """
    from .kdgrid import GRID_MIN_NNZ
    lengths = matrix.lengths_of(rows)
    nnz = int(lengths.sum())
    if (not matrix.symmetric or rows.size == matrix.n or nnz < GRID_MIN_NNZ
            or nnz < WHOLE_SHARE * matrix.nnz):
        return None
    drop = np.ones(matrix.n, dtype=bool)
    drop[rows] = False
    return grid_partitioning(matrix.indptr, matrix.indices, matrix.n, capacity,
                             symmetric=True, drop=drop, counter=counter)


def remap_permutation(matrix: Graph, gpu_rows: np.ndarray, options: ThrottleOptions,
                      cache_bytes: int) -> tuple[np.ndarray | None, float]:
    """The vertex relabelling ``options.remap`` asks for (throttling-atc18 §4.2).

    ``degree``: descending degree (row length plus column count), the cheap
    option; ``dbwp``: Algorithm 5 over the GPU share's cache-fit partitions (each
    partition's private vertices packed together, boundary vertices after).

    Returns
    -------
    (ndarray of int64 or None, float)
        ``perm`` (vertex ``v`` becomes ``perm[v]``; None for ``none``) and the
        seconds it took.
    """
    from .remap import dbwp_remap, degree_remap
    t0 = time.perf_counter()
    if options.remap == "none":
        return None, 0.0
    if options.remap == "degree":
        degrees = np.diff(matrix.indptr).astype(np.int64)
        degrees += np.bincount(matrix.indices, minlength=matrix.n)
        return degree_remap(degrees), time.perf_counter() - t0
    rows = np.sort(np.asarray(gpu_rows, dtype=np.int64))
    forced = ThrottleOptions(schedule="cf", bisect=options.bisect,
                             cache_bytes=options.cache_bytes, fraction=options.fraction)
    spec = throttle_share(matrix, rows, forced, cache_bytes)
    _, indices = share_csr(matrix, rows)
    perm = dbwp_remap(spec.partitioning, rows, indices, matrix.n)
    return perm, time.perf_counter() - t0
