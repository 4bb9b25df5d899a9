"""``pagerank`` and ``hits`` on FinePar's PageRank, RWR and HITS apps (float32 vectors).

PageRank follows ``networkx.pagerank`` (its scipy power iteration): the stopping rule is
NetworkX's, an L1 change below ``N * tol``, floored at :data:`PAGERANK_FLOOR` (float32
vectors with Kahan sums settle near 1e-8); ``max_iter`` is honoured and
``PowerIterationFailedConvergence`` raised where FinePar does not meet the rule in time.
``personalization`` runs RWR with that restart vector (dangling mass to it, NetworkX's
default); a ``dangling`` distribution unlike ``personalization`` is two RWR runs,
combined exactly (:func:`_combine_dangling`). ``nstart`` only moves NetworkX's first
iterate: the engine starts from the uniform vector (RWR from ``p``), reaching the same
fixed point within the same rule. Weights: FinePar's walk is unweighted, so it serves
graphs whose ``weight`` values are all equal (or absent); others go to NetworkX.

HITS: NetworkX asks ARPACK for the top singular vectors; FinePar's power iteration
reaches the same vectors (hubs' L1 change below ``max(tol, HITS_FLOOR)``). Its
``max_iter`` counts ARPACK restarts, so below the default (100) the call goes to
NetworkX, and a power iteration that has not settled after :data:`HITS_BUDGET`
iterations hands the call back too.
"""

from __future__ import annotations

import numpy as np

from .device import run
from .dispatch import implements, networkx_call

#: The smallest L1 change PageRank's float32 iteration is asked to reach.
PAGERANK_FLOOR = 1e-7
#: The smallest change of the hubs (sum 1) HITS is asked to reach (float32 noise ~2e-7).
HITS_FLOOR = 1e-6
#: Power iterations HITS may take before the call goes back to NetworkX's ARPACK.
HITS_BUDGET = 2000


def _pagerank_args(a: dict):
    if not 0 < a["alpha"] < 1:
        return "alpha outside (0, 1)"
    if callable(a["weight"]):
        return "weight is a function"
    for key in ("personalization", "dangling", "nstart"):
        if a[key] is not None and not hasattr(a[key], "get"):
            return f"{key} is not a dict"
    return True


def _vector(fg, d: dict) -> np.ndarray | None:
    """A node -> value dict as a float64 vector in row order (missing nodes 0); None when
    a value is not a finite non-negative number."""
    try:
        v = np.array([float(d.get(u, 0)) for u in fg.nodes])
    except (TypeError, ValueError):
        return None
    return v if np.all(np.isfinite(v)) and np.all(v >= 0) else None


def _uniform_weights(fg, weight) -> bool:
    return weight is None or weight not in fg.values or fg.values[weight].uniform("total")


@implements("pagerank", can_run=_pagerank_args,
            docs=('Unweighted walk (equal or absent weights; others run in NetworkX); float32 '
                  "vectors, NetworkX's stopping rule floored at an L1 change of 1e-7; "
                  'personalization and dangling as random walks with restart.'))
def pagerank(G, alpha=0.85, personalization=None, max_iter=100, tol=1.0e-6, nstart=None,
             weight="weight", dangling=None):
    import networkx as nx
    args = (alpha, personalization, max_iter, tol, nstart, weight, dangling)
    n = G.n
    if n == 0:
        return {}
    p = None if personalization is None else _vector(G, personalization)
    dw = None if dangling is None else _vector(G, dangling)
    if (G.nnz == 0 or not _uniform_weights(G, weight)
            or (personalization is not None and (p is None or p.sum() == 0 and p.size))
            or (dangling is not None and (dw is None or not dw.sum() > 0))):
        return networkx_call("pagerank", G, *args)  # NetworkX's answer (or its error)
    if max_iter <= 0:
        raise nx.PowerIterationFailedConvergence(max_iter)
    tol32 = max(n * tol, PAGERANK_FLOOR)
    structure = G.structure()
    if dw is not None and not _proportional(dw, p):
        x = _combine_dangling(G, structure, alpha, p, dw, tol32, max_iter)
    elif p is None:
        x = _converged(run(G, "pagerank", structure, damping=alpha, tol=tol32,
                           max_iter=max_iter), max_iter)
    else:
        x = _converged(run(G, "rwr", structure, restart=p, restart_prob=1 - alpha, tol=tol32,
                           max_iter=max_iter), max_iter)
    x = x.astype(np.float64)
    x /= x.sum()
    return dict(zip(G.nodes, x.tolist()))


def _converged(result, max_iter: int) -> np.ndarray:
    import networkx as nx
    if not result.converged:
        raise nx.PowerIterationFailedConvergence(max_iter)
    return result.values


def _proportional(dw: np.ndarray, p: np.ndarray | None) -> bool:
    """The dangling distribution equals the teleport one (``p``, uniform when None)."""
    target = np.full(dw.size, 1.0 / dw.size) if p is None else p / p.sum()
    return bool(np.allclose(dw / dw.sum(), target, rtol=0, atol=1e-12))


def _combine_dangling(G, structure, alpha, p, dw, tol, max_iter) -> np.ndarray:
    """PageRank whose dangling mass goes to ``dw`` and teleport to ``p``, from two RWR runs.

    RWR with restart ``v`` solves ``x = a (P^T x + D(x) v) + (1 - a) v``, so
    ``x_v = (a D(x_v) + 1 - a) u_v`` with ``u_v = (I - a P^T)^-1 v``. The wanted vector
    is ``x = a D u_d + (1 - a) u_p`` with ``D = D(x)``: summing over the dangling set,
    ``D = (1 - a) s_p / (1 - a s_d)`` with ``s_v = D(u_v)`` (linear algebra, no
    approximation beyond the two runs' own)."""
    dangling = np.diff(structure.indptr) == 0
    p = np.full(G.n, 1.0 / G.n) if p is None else p / p.sum()
    u = []
    for v in (p, dw / dw.sum()):
        x = _converged(run(G, "rwr", structure, restart=v, restart_prob=1 - alpha, tol=tol,
                           max_iter=max_iter), max_iter).astype(np.float64)
        u.append(x / (alpha * x[dangling].sum() + 1 - alpha))
    s_p, s_d = u[0][dangling].sum(), u[1][dangling].sum()
    mass = (1 - alpha) * s_p / (1 - alpha * s_d)
    return alpha * mass * u[1] + (1 - alpha) * u[0]


def _hits_args(a: dict):
    if not a["normalized"]:
        return "normalized=False returns ARPACK's unnormalised vectors"
    if 0 < a["max_iter"] < 100:
        return "max_iter below 100 counts ARPACK restarts, not power iterations"
    return True


@implements("hits", can_run=_hits_args,
            docs=("Power iteration on FinePar (float32) to ARPACK's vectors; equal or absent "
                  'weights; normalized=True and max_iter >= 100 only.'))
def hits(G, max_iter=100, tol=1.0e-8, nstart=None, normalized=True):
    import networkx as nx
    if G.n == 0:
        return {}, {}
    if max_iter <= 0:
        raise nx.PowerIterationFailedConvergence(max_iter)
    if G.nnz == 0 or not _uniform_weights(G, "weight"):
        return networkx_call("hits", G, max_iter, tol, nstart, normalized)
    res = run(G, "hits", G.structure(), tol=max(tol, HITS_FLOOR), max_iter=HITS_BUDGET)
    if not res.converged:
        return networkx_call("hits", G, max_iter, tol, nstart, normalized)
    out = []
    for v in (res.values, res.extra["authorities"]):
        v = v.astype(np.float64)
        out.append(dict(zip(G.nodes, (v / v.sum()).tolist())))
    return tuple(out)
