"""Host-side data parallelism: numpy work cut into chunks and run on a thread pool.

numpy releases the GIL inside its array loops (comparisons, reductions, copies,
``take``), and ``os.preadv`` releases it while it reads, so threads over disjoint
chunks of one large array use every core the process may run on. Used where a
single pass over ``nnz`` entries would otherwise run on one core: reading an
``.npz`` (:mod:`finepar.io.npz`), validating CSR arrays (:mod:`finepar.io`), gathering
a share's entries (:mod:`finepar.engine.launches`), hashing a graph
(:mod:`finepar.prepcache`), and the Graph500 generator.
"""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Callable, Sequence

import numpy as np

#: Entries per chunk of a chunked pass: large enough that the per-chunk overhead
#: (a task, a few numpy calls) stays far below the work, small enough to balance.
CHUNK = 1 << 22


def n_workers(workers: int | None) -> int:
    """Threads to use: `workers`, or every CPU this process may run on when None.

    Raises
    ------
    ValueError
        If `workers` is below 1.
    """
    if workers is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except (AttributeError, OSError):
            return max(1, os.cpu_count() or 1)
    workers = int(workers)
    if workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers}")
    return workers


_POOL: concurrent.futures.ThreadPoolExecutor | None = None


def pool() -> concurrent.futures.ThreadPoolExecutor:
    """The process's shared pool of :func:`n_workers` threads (made on first use)."""
    global _POOL
    if _POOL is None:
        _POOL = concurrent.futures.ThreadPoolExecutor(max_workers=n_workers(None),
                                                      thread_name_prefix="finepar")
    return _POOL


_BUILDS: concurrent.futures.ThreadPoolExecutor | None = None


def builds() -> concurrent.futures.ThreadPoolExecutor:
    """The process's threads for kernel builds started ahead of their use (made on first
    use): apart from :func:`pool`, so the host's passes never queue behind a compiler."""
    global _BUILDS
    if _BUILDS is None:
        _BUILDS = concurrent.futures.ThreadPoolExecutor(max_workers=max(n_workers(None), 2),
                                                        thread_name_prefix="finepar-build")
    return _BUILDS


_GUESSES: concurrent.futures.ThreadPoolExecutor | None = None


def guesses() -> concurrent.futures.ThreadPoolExecutor:
    """The process's one thread for builds of programs a run will most likely need (made on
    first use): one at a time, so a driver whose compiler serialises its builds (NVIDIA's)
    keeps a needed build waiting behind at most one guess."""
    global _GUESSES
    if _GUESSES is None:
        _GUESSES = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                         thread_name_prefix="finepar-guess")
    return _GUESSES


def drop_queued_builds() -> None:
    """Cancel the builds of :func:`builds` and :func:`guesses` that have not begun (a
    process about to end needs none of them)."""
    for ex in (_BUILDS, _GUESSES):
        if ex is not None:
            ex.shutdown(wait=False, cancel_futures=True)


def thread_map(fn: Callable, items: Sequence, workers: int,
               on_done: Callable[[int], None] | None = None) -> list:
    """``[fn(x) for x in items]``, on a thread pool of `workers` when that can help.

    `on_done(k)` is called in the calling thread once the first ``k`` results
    are in (in item order), for progress reports.
    """
    results: list = []
    if workers <= 1 or len(items) <= 1:
        mapped = map(fn, items)
        ex = None
    else:
        ex = concurrent.futures.ThreadPoolExecutor(max_workers=min(workers, len(items)))
        mapped = ex.map(fn, items)
    try:
        for r in mapped:
            results.append(r)
            if on_done is not None:
                on_done(len(results))
    finally:
        if ex is not None:
            ex.shutdown(wait=True, cancel_futures=True)
    return results


def spans(size: int, chunk: int | None = None) -> list[tuple[int, int]]:
    """``[(lo, hi), ...]`` cutting ``range(size)`` into pieces of at most ``chunk``
    (default :data:`CHUNK`)."""
    chunk = max(int(chunk or CHUNK), 1)
    return [(lo, min(size, lo + chunk)) for lo in range(0, int(size), chunk)]


def chunked(fn: Callable[[int, int], object], size: int, chunk: int | None = None) -> list:
    """``[fn(lo, hi) for (lo, hi) in spans(size, chunk)]`` on the shared pool (in the
    calling thread when there is one span or one core)."""
    parts = spans(size, chunk)
    if len(parts) <= 1 or n_workers(None) <= 1 or _in_pool():
        return [fn(lo, hi) for lo, hi in parts]
    return list(pool().map(lambda s: fn(*s), parts))


def equal(a: np.ndarray, b: np.ndarray, chunk: int = 1 << 20) -> bool:
    """Whether ``a`` and ``b`` (1-D) hold the same entries (NaN equal to nothing, as
    ``np.array_equal``), compared in pieces of ``chunk`` entries on the shared pool
    (:func:`first_true`): a 16.8 M-entry vector in a few milliseconds rather than one
    thread's ten."""
    return a.shape == b.shape and first_true(lambda lo, hi: a[lo:hi] != b[lo:hi],
                                             a.size, chunk) is None


#: Bytes one thread copies at a time in :func:`copy_spans`.
COPY_BYTES = 8 << 20


def copy_spans(pairs: Sequence[tuple[np.ndarray, np.ndarray]],
               piece_bytes: int | None = None) -> None:
    """``dst[:] = src`` for every ``(dst, src)`` pair of equal-length 1-D arrays, cut into
    pieces of about ``piece_bytes`` (default :data:`COPY_BYTES`) copied on the shared pool:
    fresh destination pages are faulted in by many threads, not one."""
    step_bytes = piece_bytes or COPY_BYTES
    pieces = []
    for d, s in pairs:
        step = max(step_bytes // max(s.itemsize, 1), 1)
        pieces += [(d, s, lo, min(lo + step, s.size)) for lo in range(0, s.size, step)]

    def run(a: int, b: int) -> None:
        for d, s, lo, hi in pieces[a:b]:
            np.copyto(d[lo:hi], s[lo:hi])
    chunked(run, len(pieces), 1)


def _in_pool() -> bool:
    """Whether the calling thread is one of the pool's (a task that waits on tasks queued
    behind it could wait forever: nested passes run in the calling thread)."""
    import threading
    return threading.current_thread().name.startswith("finepar")


def first_true(test: Callable[[int, int], np.ndarray], size: int,
               chunk: int | None = None) -> int | None:
    """The smallest position where ``test(lo, hi)`` (a boolean array for positions
    ``lo .. hi``) is True, or None; chunks are tested in parallel."""
    def one(lo: int, hi: int):
        bad = test(lo, hi)
        return lo + int(np.argmax(bad)) if bad.any() else None
    hits = [h for h in chunked(one, size, chunk) if h is not None]
    return min(hits) if hits else None


def cumsum_into(values: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``np.cumsum(values, out=out)`` (1-D, equal lengths) on the pool's threads: each
    chunk's own prefix sums, then each chunk raised by the totals of those before it."""
    n = int(values.shape[0])
    chunked(lambda lo, hi: np.cumsum(values[lo:hi], out=out[lo:hi]), n)
    cuts = spans(n)
    before = np.cumsum([0] + [out[hi - 1] for _, hi in cuts[:-1]], dtype=out.dtype)
    raise_by = dict(zip((lo for lo, _ in cuts), before))
    chunked(lambda lo, hi: np.add(out[lo:hi], raise_by[lo], out=out[lo:hi]) if raise_by[lo]
            else None, n)
    return out


def ascending(values: np.ndarray) -> np.ndarray:
    """``values`` (1-D) sorted: as they are when already in order (checked on the pool's
    threads), else ``np.sort(values)``."""
    if first_true(lambda lo, hi: values[lo + 1:hi + 1] < values[lo:hi],
                  max(values.shape[0] - 1, 0)) is None:
        return values
    return np.sort(values)


def take(array: np.ndarray, positions: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``array[positions]`` with the gather spread over the pool's threads.

    Parameters
    ----------
    array : ndarray, shape (m,)
    positions : ndarray of int, shape (k,)
    out : ndarray, shape (k,), optional
        Where to write (same dtype as ``array``).

    Returns
    -------
    ndarray, shape (k,)
    """
    if out is None:
        out = np.empty(positions.shape[0], dtype=array.dtype)
    chunked(lambda lo, hi: np.take(array, positions[lo:hi], out=out[lo:hi]),
            positions.shape[0])
    return out
