"""Answers checked by range: each rank checks the answer against its own rows only
(DESIGN.md §3, "mpi").

A graph no single machine's memory holds (Graph500 scale 29: 17 G entries) has no host
reference computed in one piece; these checks need nothing but a rank's rows and the
answer every rank already holds, and cost one pass over the rows:

* BFS: Graph500's validation rules (:func:`finepar.apps.bfs.validate_bfs`), which together
  prove the levels are the exact hop distances from the root and the parents a BFS tree:
  the root at level 0 is its own parent; every reached vertex but the root has a parent
  one level up and (parent, vertex) is an edge; along every edge from a reached vertex
  the head is reached at most one level further; unreached vertices have level and parent
  -1. (The parent chains bound each level from below by the distance, the edge rule
  from above.) A tree edge lives in its parent's row, which another rank may own: each
  rank marks the vertices whose tree edge it saw, and the marks of the ranks are summed.
* PageRank: the residual ``r = ||G(x) - x||_1`` of the answer ``x`` under one float64
  step ``G`` of the iteration (:func:`finepar.apps.pagerank.reference_pagerank`'s step).
  ``G`` contracts the L1 distance by the damping ``d``, so the answer is within
  ``r / (1 - d)`` of the exact PageRank: a bound, not an estimate.

Each rank works on its rows in blocks of :data:`BLOCK` entries on a thread pool.
"""

from __future__ import annotations

import numpy as np

from ..parallel import n_workers, thread_map
from .comm import Communicator
from .rows import RankRows

#: Entries of one block of rows (a thread's temporaries are a few arrays of this size).
BLOCK = 1 << 22
#: The apps whose answers :func:`check_answer` checks.
CHECKED = ("bfs", "pagerank")
#: PageRank passes where its L1 error bound (residual / (1 - d)) is below this: the
#: tolerance of the app's own check against a float64 reference.
PAGERANK_BOUND = 1e-4


def check_answer(comm: Communicator, app: str, rows: RankRows, result) -> dict:
    """The answer of a distributed run of ``app`` checked by range (collective).

    Parameters
    ----------
    comm : Communicator
    app : {'bfs', 'pagerank'}
    rows : RankRows
        This rank's rows of the graph the app ran on.
    result : AppResult
        The whole answer, in the input's vertex ids (as the run returns it).

    Returns
    -------
    dict
        ``by`` (what was checked), ``passed`` (bool), ``detail`` (the rules broken, or
        PageRank's residual and bound), ``seconds``; the same on every rank.

    Raises
    ------
    ValueError
        For an app not in :data:`CHECKED`.
    """
    import time
    t0 = time.perf_counter()
    if app == "bfs":
        level = in_run_order(rows, result.values)
        parent = in_run_order(rows, result.extra["parent"], vertices=True)
        root = int(result.extra["root"])
        root = root if rows.perm is None else int(rows.perm[root])
        broken = check_bfs(comm, rows, level, parent, root)
        out = {"by": "Graph500's BFS rules, each rank over its rows", "passed": not broken,
               "detail": "; ".join(broken) or "every rule holds"}
    elif app == "pagerank":
        d = float(result.extra["damping"])
        r = pagerank_residual(comm, rows, in_run_order(rows, result.values), d)
        out = {"by": "the residual under one float64 step, each rank over its rows",
               "passed": r / (1 - d) < PAGERANK_BOUND, "residual": r, "bound": r / (1 - d),
               "detail": f"residual {r:.2e}: L1 error at most {r / (1 - d):.2e} "
                         f"({'below' if r / (1 - d) < PAGERANK_BOUND else 'not below'} "
                         f"{PAGERANK_BOUND:g})"}
    else:
        raise ValueError(f"no check by range for {app!r} (checked: {', '.join(CHECKED)})")
    out["seconds"] = comm.maximum(time.perf_counter() - t0)
    return out


def row_blocks(indptr: np.ndarray, block: int = BLOCK) -> list[tuple[int, int]]:
    """Local row ranges ``(a, b)`` of about ``block`` entries each (a long row whole).

    Parameters
    ----------
    indptr : ndarray of int64, shape (rows + 1,)
        Row pointers from 0.
    block : int
        Entries a range aims at.

    Returns
    -------
    list of (int, int)
        Consecutive ranges covering every row; none when there are no rows.
    """
    rows = indptr.size - 1
    if rows <= 0:
        return []
    marks = np.arange(block, int(indptr[-1]), block, dtype=np.int64)
    cuts = np.unique(np.concatenate(([0], np.searchsorted(indptr, marks), [rows])))
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]


def check_bfs(comm: Communicator, rows: RankRows, level: np.ndarray, parent: np.ndarray,
              root: int, workers: int | None = None) -> list[str]:
    """Graph500's BFS rules, each rank over its own rows (collective).

    Parameters
    ----------
    comm : Communicator
    rows : RankRows
        This rank's rows of the graph the BFS ran on, in the run's vertex order.
    level, parent : ndarray of int, shape (n,)
        The whole answer (every rank holds it), in the same order: -1 where unreached.
    root : int
    workers : int, optional
        Threads (default: this rank's share of the host's cores).

    Returns
    -------
    list of str
        The rules broken, the same on every rank (empty: the answer is an exact BFS).
    """
    n, lo, hi = rows.n, rows.lo, rows.hi
    level = np.asarray(level, dtype=np.int32)
    parent = np.asarray(parent, dtype=np.int32)
    errors = []
    if not (0 <= root < n) or level[root] != 0 or parent[root] != root:
        errors.append("the root is not its own parent at level 0")
    marked = np.zeros(n, dtype=bool)

    def block(span):
        a, b = span
        s, e = int(rows.indptr[a]), int(rows.indptr[b])
        lens = np.diff(rows.indptr[a:b + 1])
        cols = rows.indices[s:e]
        lu = np.repeat(level[lo + a:lo + b], lens)
        lv = level[cols]
        from_reached = lu >= 0
        found = []
        if np.any(from_reached & (lv < 0)):
            found.append("an edge leaves the reached set")
        elif np.any(from_reached & (lv > lu + 1)):
            found.append("levels differ by more than one along an edge")
        tree = (parent[cols] == np.repeat(np.arange(lo + a, lo + b, dtype=np.int32), lens))
        tree &= from_reached
        marked[cols[tree]] = True  # a byte store: threads write only True
        return found

    workers = workers or max(1, n_workers(None) // comm.local_size)
    for found in thread_map(block, row_blocks(rows.indptr), workers):
        errors += found
    marks = comm.total(np.packbits(marked))  # bits from different ranks never overlap
    errors += _owned_rules(np.unpackbits(marks, count=n)[lo:hi].astype(bool), level, parent,
                           root, lo, hi)
    every = comm.allgather(sorted(set(errors)))
    return sorted(set(e for part in every for e in part))


def _owned_rules(marked: np.ndarray, level: np.ndarray, parent: np.ndarray, root: int,
                 lo: int, hi: int) -> list[str]:
    """The rules on vertices ``lo .. hi``: parents one level up along a marked tree edge,
    unreached vertices at level and parent -1."""
    errors = []
    lv, pv = level[lo:hi], parent[lo:hi]
    own = np.arange(lo, hi)
    reached = (lv >= 0) & (own != root)
    if np.any(reached & ((pv < 0) | (pv >= level.size))):
        return ["a reached vertex has no parent"]
    if np.any(reached & (level[np.where(reached, pv, 0)] != lv - 1)):
        errors.append("a parent is not exactly one level up")
    if np.any(reached & ~marked):
        errors.append("a tree edge (parent, vertex) is not an edge of the graph")
    if np.any((lv < 0) & ((lv != -1) | (pv != -1))):
        errors.append("an unreached vertex has a level or parent")
    return errors


def pagerank_residual(comm: Communicator, rows: RankRows, scores: np.ndarray,
                      damping: float = 0.85, workers: int | None = None) -> float:
    """``||G(x) - x||_1`` of the scores ``x`` under one float64 PageRank step (collective).

    ``G(x) = (1 - d) / n + d (A^T (x / outdeg) + sum(x[dangling]) / n)``, the graph's
    structure only, as :func:`finepar.apps.pagerank.reference_pagerank`. On a symmetric
    graph each rank's rows are its rows of ``A^T`` (pulled, no n-long sum); otherwise
    each rank pushes its rows' shares into a whole vector and the ranks sum them.

    Parameters
    ----------
    comm : Communicator
    rows : RankRows
        This rank's rows, in the run's vertex order.
    scores : ndarray, shape (n,)
        The whole answer, in the same order.
    damping : float
    workers : int, optional

    Returns
    -------
    float
        The residual, the same on every rank. The scores are within ``residual /
        (1 - damping)`` of the exact PageRank in L1.
    """
    n, lo, hi = rows.n, rows.lo, rows.hi
    x = np.asarray(scores, dtype=np.float64)
    outdeg = rows.degrees.astype(np.float64)
    share = np.divide(x, outdeg, out=np.zeros(n), where=outdeg > 0)
    mass = float(x[outdeg == 0].sum())
    workers = workers or max(1, n_workers(None) // comm.local_size)
    spans = row_blocks(rows.indptr)
    if rows.symmetric:
        def pull(span):
            a, b = span
            s, e = int(rows.indptr[a]), int(rows.indptr[b])
            sums = np.zeros(b - a)
            starts = rows.indptr[a:b] - s
            full = starts < np.append(starts[1:], e - s)  # reduceat needs non-empty rows
            if e > s:
                sums[full] = np.add.reduceat(share[rows.indices[s:e]], starts[full])
            return sums
        mine = np.concatenate(thread_map(pull, spans, workers) or [np.zeros(0)])
    else:
        pushed = np.zeros(n)
        for a, b in spans:
            s, e = int(rows.indptr[a]), int(rows.indptr[b])
            weights = np.repeat(share[lo + a:lo + b], np.diff(rows.indptr[a:b + 1]))
            pushed += np.bincount(rows.indices[s:e], weights=weights, minlength=n)
        mine = comm.total(pushed)[lo:hi]
    step = damping * (mine + mass / n) + (1 - damping) / n
    local = float(np.abs(step - x[lo:hi]).sum())
    return float(comm.total(np.array([local]))[0])


def in_run_order(rows: RankRows, values: np.ndarray, *, vertices: bool = False) -> np.ndarray:
    """A whole answer moved from the input's vertex ids (as a run returns it) to the
    rows' order (METIS's; the same array where the rows keep the input's ids).

    Parameters
    ----------
    rows : RankRows
    values : ndarray, shape (n,)
    vertices : bool
        The values are vertex ids themselves (BFS's parents): renumbered too, -1 kept.

    Returns
    -------
    ndarray, shape (n,)
    """
    if rows.perm is None:
        return values
    out = np.empty_like(values)
    out[rows.perm] = values
    if vertices:
        out = np.where(out >= 0, rows.perm[np.maximum(out, 0)], out).astype(values.dtype)
    return out
