"""Independent references for every app, on the host, in float64 (scipy).

``finepar compare`` checks each method's answer against these before it shows
a time, and the tests check the engine against them (and these against
networkx on small graphs). Nothing here touches OpenCL.

BFS results are checked by the Graph500 validation rules (:func:`validate_bfs`).

They are also meant for large graphs (Graph500 scale 24 and beyond): they read
the graph's own index arrays without copying them where scipy allows, cut the
work into row blocks or frontier slices run on a thread pool (scipy's sparse
products and numpy's large-array loops release the GIL), and reuse their
vectors between iterations.
"""

from __future__ import annotations

import concurrent.futures
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from .parallel import n_workers
from .graph import Graph, row_positions

# Work per task handed to a thread: stored entries (and rows, for a row block of
# PageRank) of a row block or of a slice of a BFS frontier.
_BLOCK_NNZ = 1 << 22


def _structure(graph: Graph) -> sp.csr_array:
    """The graph's pattern for scipy.sparse.csgraph, which reads the structure only.

    Shares ``indices`` and ``indptr`` where scipy allows (one index dtype: an
    int64 ``indptr`` makes it copy ``indices``); the values are one broadcast
    float64 1.0, so no array of ``nnz`` values is built.
    """
    ones = np.broadcast_to(np.float64(1.0), (graph.nnz,))
    return sp.csr_array((ones, graph.indices, graph.indptr), shape=graph.shape, copy=False)


def _row_ranges(indptr: np.ndarray, target: int) -> list[tuple[int, int]]:
    """Consecutive row ranges ``[lo, hi)`` covering all rows, each about `target` units of
    work, a unit being a stored entry or a row (the per-row vector work)."""
    n = indptr.shape[0] - 1
    cost = indptr + np.arange(n + 1)  # work before each row
    pieces = max(1, min(n, -(-int(cost[-1]) // target)))
    cuts = np.searchsorted(cost, np.linspace(0, int(cost[-1]), pieces + 1)[1:-1])
    bounds = np.unique(np.concatenate(([0], cuts, [n]))).tolist()
    return list(zip(bounds[:-1], bounds[1:]))


def spmv(graph: Graph, x: np.ndarray) -> np.ndarray:
    """``A x`` in float64. Returns ndarray of float64, shape (n,)."""
    a = sp.csr_array((graph.data.astype(np.float64), graph.indices, graph.indptr),
                     shape=graph.shape)
    return a @ np.asarray(x, dtype=np.float64)


def spmv_error_bound(graph: Graph, x: np.ndarray) -> np.ndarray:
    """Per-row bound on the float32 rounding error of ``A x`` for any summation order:
    ``(len + 2) * eps32 * (|A| |x|)_i`` (Higham's gamma bound), float64, shape (n,)."""
    a = sp.csr_array((np.abs(graph.data.astype(np.float64)), graph.indices, graph.indptr),
                     shape=graph.shape)
    mag = a @ np.abs(np.asarray(x, dtype=np.float64))
    lengths = np.diff(graph.indptr).astype(np.float64)
    return (lengths + 2) * np.finfo(np.float32).eps * mag + np.finfo(np.float32).tiny


def _pattern(graph: Graph) -> sp.csr_array:
    """The graph's pattern as a scipy CSR array of float64 ones, shape (n, n)."""
    return sp.csr_array((np.ones(graph.nnz), graph.indices, graph.indptr), shape=graph.shape)


def _pattern_blocks(graph: Graph) -> list[tuple[int, int, sp.csr_array]]:
    """Row blocks ``(lo, hi, B)`` of the graph's pattern with float64 values 1.0:
    ``B @ v`` is rows ``lo .. hi - 1`` of ``A v``. The blocks share ``indices``
    and one array of ones as long as the largest block."""
    ranges = _row_ranges(graph.indptr, _BLOCK_NNZ)
    ptr = graph.indptr
    ones = np.ones(max(int(ptr[hi] - ptr[lo]) for lo, hi in ranges))
    blocks = []
    for lo, hi in ranges:
        s, e = int(ptr[lo]), int(ptr[hi])
        local = (ptr[lo:hi + 1] - s).astype(np.int32 if e - s <= np.iinfo(np.int32).max else np.int64)
        block = sp.csr_array((ones[:e - s], graph.indices[s:e], local), shape=(hi - lo, graph.n),
                             copy=False)
        blocks.append((lo, hi, block))
    return blocks


def pagerank(graph: Graph, damping: float = 0.85, tol: float = 1e-12,
             max_iter: int = 10000, *, workers: int | None = None) -> np.ndarray:
    """PageRank by float64 power iteration to an L1 change below ``tol``.

    Same definition as :class:`finepar.apps.pagerank.PageRank` and networkx:
    dangling mass spread uniformly; the graph's structure, values ignored.
    Each iteration is ``x' = (1 - d) / n + d (A^T (x / outdeg) + sum(x[dangling]) / n)``.
    Rows are cut into blocks of about 4M stored entries and rows; each block's
    product, vector updates and partial sums run as one task on a thread pool, and
    the partial sums are added in block order, so the result does not depend on
    the number of threads (with a single block it is bit for bit the plain
    iteration).

    Parameters
    ----------
    graph : Graph
    damping : float
    tol : float
        Stop when ``sum(|x' - x|)`` falls below it.
    max_iter : int
    workers : int, optional
        Threads (default: all CPUs available).

    Returns
    -------
    ndarray of float64, shape (n,)

    Notes
    -----
    Memory: ``A^T`` (the graph itself when :attr:`~finepar.graph.Graph.symmetric`,
    else a transposed copy), float64 ones for one block, five float64 vectors of
    ``n`` and two of the dangling vertices; an iteration allocates nothing but
    scipy's product vectors.
    """
    n = graph.n
    blocks = _pattern_blocks(graph.transpose())  # rows of A^T list in-edges
    outdeg = np.diff(graph.indptr).astype(np.float64)
    inv = np.divide(1.0, outdeg, out=np.zeros(n), where=outdeg > 0)
    dangling = [np.flatnonzero(outdeg[lo:hi] == 0) for lo, hi, _ in blocks]
    gathered = [np.empty(d.size) for d in dangling]
    del outdeg
    x, y, scaled, change = np.full(n, 1.0 / n), np.empty(n), np.empty(n), np.empty(n)
    mass = 0.0

    def scale(i: int) -> float:
        """``scaled = x / outdeg`` on block i; returns the block's dangling mass."""
        lo, hi, _ = blocks[i]
        np.multiply(x[lo:hi], inv[lo:hi], out=scaled[lo:hi])
        return float(np.take(x[lo:hi], dangling[i], out=gathered[i]).sum())

    def step(i: int) -> float:
        """``y = (1 - d) / n + d (A^T scaled + mass / n)`` on block i; returns its L1 change."""
        lo, hi, b = blocks[i]
        yb = y[lo:hi]
        yb[:] = b @ scaled
        yb += mass / n
        yb *= damping
        yb += (1 - damping) / n
        np.subtract(yb, x[lo:hi], out=change[lo:hi])
        return float(np.abs(change[lo:hi], out=change[lo:hi]).sum())

    order = range(len(blocks))
    with concurrent.futures.ThreadPoolExecutor(n_workers(workers)) as pool:
        for _ in range(max_iter):
            mass = sum(pool.map(scale, order))
            err = sum(pool.map(step, order))
            x, y = y, x
            if err < tol:
                break
    return x


def bfs_levels(graph: Graph, root: int) -> np.ndarray:
    """Hop distance from ``root`` along out-edges (int64, -1 unreached), by scipy."""
    order, pred = csgraph.breadth_first_order(_structure(graph), root, directed=True,
                                              return_predecessors=True)
    level = np.full(graph.n, -1, dtype=np.int64)
    level[root] = 0
    for v in order[1:]:  # BFS order: a predecessor's level is known before its children's
        level[v] = level[pred[v]] + 1
    return level


def _frontier_slices(indptr: np.ndarray, front: np.ndarray) -> list[np.ndarray]:
    """`front` cut into consecutive slices of about ``_BLOCK_NNZ`` stored entries each."""
    lengths = indptr[front + 1] - indptr[front]
    ends = np.cumsum(lengths)
    total = int(ends[-1])
    if total <= _BLOCK_NNZ:
        return [front]
    cuts = np.searchsorted(ends, np.arange(_BLOCK_NNZ, total, _BLOCK_NNZ), side="right")
    bounds = np.unique(np.concatenate(([0], cuts, [front.size]))).tolist()
    return [front[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


def bfs_levels_fast(graph: Graph, root: int, *, workers: int | None = None) -> np.ndarray:
    """Same as :func:`bfs_levels`, level-synchronous with numpy (for large graphs).

    Each level reads the stored entries of the frontier's rows once, on a
    thread pool, keeps the neighbours not yet seen (a boolean mask over the
    vertices) and makes them the next frontier without duplicates (a claim
    array, or one scan of the levels when the new frontier is large), so a
    level costs O(its frontier's stored entries) and no neighbour list is
    sorted.

    Parameters
    ----------
    graph : Graph
    root : int
    workers : int, optional
        Threads (default: all CPUs available). Does not change the result.

    Returns
    -------
    ndarray of int64, shape (n,)
        Level of every vertex, -1 where unreached.
    """
    n = graph.n
    indptr, indices = graph.indptr, graph.indices
    level = np.full(n, -1, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    claim = np.empty(n, dtype=np.int64)
    level[root] = 0
    seen[root] = True
    front = np.array([root], dtype=np.int64)

    def unseen(rows: np.ndarray) -> np.ndarray:
        nb = np.take(indices, row_positions(indptr, rows))
        fresh = np.take(seen, nb)
        return np.compress(np.logical_not(fresh, out=fresh), nb)

    d = 0
    with concurrent.futures.ThreadPoolExecutor(n_workers(workers)) as pool:
        while front.size:
            d += 1
            found = np.concatenate(list(pool.map(unseen, _frontier_slices(indptr, front))))
            seen[found] = True
            level[found] = d
            if 8 * found.size >= n:
                front = np.flatnonzero(level == d)
            else:  # one survivor per vertex: the slot whose write to claim stuck
                slot = np.arange(found.size)
                claim[found] = slot
                front = found[claim[found] == slot].astype(np.int64)
    return level


def validate_bfs(graph: Graph, root: int, level: np.ndarray, parent: np.ndarray, *,
                 reference_levels: np.ndarray | None = None) -> list[str]:
    """Graph500 BFS validation rules, adapted to directed graphs.

    1. the root is its own parent, at level 0;
    2. every reached vertex but the root has a reached parent one level up, and
       (parent, vertex) is an edge of the graph;
    3. along every edge (u, v) with u reached, v is reached and
       ``level[v] <= level[u] + 1`` (levels differ by at most one along graph edges);
    4. unreached vertices have level -1 and parent -1;
    5. the reached set is exactly the set reachable from the root.

    Parameters
    ----------
    reference_levels : ndarray of int, shape (n,), optional
        Levels from an independent BFS (:func:`bfs_levels_fast`). When given,
        ``level`` must equal them, and rules 3 and 5, which then follow from
        the equality, are not checked again (they cost O(nnz) each).

    Returns
    -------
    list of str
        The rules broken (empty if the result is valid).
    """
    errors = []
    n = graph.n
    level = np.asarray(level, dtype=np.int64)
    parent = np.asarray(parent, dtype=np.int64)
    if reference_levels is not None and not np.array_equal(level, reference_levels):
        return ["levels differ from the reference BFS"]
    if level[root] != 0 or parent[root] != root:
        errors.append("root is not its own parent at level 0")
    reached = level >= 0
    others = np.flatnonzero(reached)
    others = others[others != root]
    p = parent[others]
    if np.any((p < 0) | (p >= n)):
        errors.append("a reached vertex has no parent")
        return errors
    if np.any(level[p] != level[others] - 1):
        errors.append("a parent is not exactly one level up")
    if others.size and not np.all(has_edges(graph, p, others)):
        errors.append("a tree edge (parent, vertex) is not an edge of the graph")
    if reference_levels is None:
        rows = np.repeat(np.arange(n), np.diff(graph.indptr))
        src_reached = reached[rows]
        u, v = rows[src_reached], graph.indices[src_reached]
        if np.any(level[v] < 0):
            errors.append("an edge leaves the reached set")
        elif np.any(level[v] > level[u] + 1):
            errors.append("levels differ by more than one along an edge")
    if np.any(level[~reached] != -1) or np.any(parent[~reached] != -1):
        errors.append("an unreached vertex has a level or parent")
    if reference_levels is None:
        ref = bfs_levels_fast(graph, root) >= 0
        if not np.array_equal(ref, reached):
            errors.append("the reached set differs from the vertices reachable from the root")
    return errors


def has_edges(graph: Graph, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Whether each ``(src[i], dst[i])`` is a stored entry of the graph (bool array).

    A binary search in each source row (a :class:`~finepar.graph.Graph` keeps each
    row's columns sorted), vectorised over all queries: O(k log(longest row)).
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    cols = graph.indices
    indptr = graph.indptr.astype(np.int64, copy=False)
    a, hi = indptr[src], indptr[src + 1]
    b = hi.copy()
    while True:
        active = a < b
        if not active.any():
            break
        mid = (a + b) // 2
        right = active & (cols[np.minimum(mid, max(cols.size - 1, 0))] < dst)
        a = np.where(right, mid + 1, a)
        b = np.where(active & ~right, mid, b)
    found = a < hi
    found[found] = cols[a[found]] == dst[found]
    return found


def components(graph: Graph) -> np.ndarray:
    """Weakly connected components, each labelled by its smallest vertex id.

    scipy.sparse.csgraph on the graph's structure (no values are copied). A
    :attr:`~finepar.graph.Graph.symmetric` graph's strong components are its
    components, found without the transposed copy scipy builds for weak ones.

    Returns
    -------
    ndarray of int64, shape (n,)
    """
    connection = "strong" if graph.symmetric else "weak"
    _, lab = csgraph.connected_components(_structure(graph), directed=True, connection=connection)
    first = np.full(lab.max() + 1, graph.n, dtype=np.int64)
    np.minimum.at(first, lab, np.arange(graph.n))
    return first[lab]


# ------------------------------------------------------ RWR, HITS, SSSP, graph colouring
# References of the apps in finepar/apps/rwr.py, hits.py, sssp.py and coloring.py.

#: Unit roundoff of float32 (round to nearest): fl(a + b) = (a + b)(1 + d), |d| <= U32.
U32 = 2.0 ** -24


def rwr(graph: Graph, restart: np.ndarray, restart_prob: float = 0.15, tol: float = 1e-12,
        max_iter: int = 10000) -> np.ndarray:
    """Random walk with restart (personalised PageRank) by float64 power iteration.

    ``x' = c p + (1 - c) (A^T (x / outdeg) + (sum of x over dangling vertices) p)``
    from ``x = p`` until the L1 change is below ``tol``: the walk restarts at ``p``
    with probability ``c = restart_prob`` and the mass of dangling vertices goes to
    ``p`` (networkx's ``pagerank(personalization=p)`` convention). The graph's
    structure, values ignored.

    Parameters
    ----------
    restart : ndarray, shape (n,)
        The restart distribution p (non-negative; normalised here to sum 1).

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    p = np.asarray(restart, dtype=np.float64)
    p = p / p.sum()
    d = 1.0 - restart_prob
    at = _pattern(graph).T.tocsr()
    outdeg = np.diff(graph.indptr).astype(np.float64)
    inv = np.divide(1.0, outdeg, out=np.zeros(graph.n), where=outdeg > 0)
    dangling = outdeg == 0
    x = p.copy()
    for _ in range(max_iter):
        xn = (1 - d) * p + d * (at @ (x * inv) + x[dangling].sum() * p)
        err = np.abs(xn - x).sum()
        x = xn
        if err < tol:
            break
    return x


#: Eigenvalues of ``A A^T`` within this relative distance of the largest count as one repeated
#: top eigenvalue (:func:`hits`): the power iteration cannot tell them apart.
HITS_REPEATED = 1e-9


class HitsReference(NamedTuple):
    """:func:`hits`'s answer.

    Attributes
    ----------
    hubs, authorities : ndarray of float64, shape (n,)
        Each summing to 1.
    products : int
        Products with ``A A^T`` it took (0: a dense eigendecomposition).
    converged : bool
        ``error_bound`` is at most the ``tol`` asked.
    error_bound : float
        A bound on the L1 distance of ``hubs`` from the limit, from the residual of the
        top eigenvectors and the gap below them (Davis-Kahan); inf where the gap is not
        known.
    """

    hubs: np.ndarray
    authorities: np.ndarray
    products: int
    converged: bool
    error_bound: float


def hits(graph: Graph, tol: float = 1e-8, max_iter: int | None = None) -> HitsReference:
    """HITS hubs and authorities (Kleinberg, JACM 1999): the limit of the power iteration
    from uniform hubs, by a float64 eigendecomposition of ``M = A A^T``.

    The power iteration (``a = A^T h``, ``h = A a``, each normalised to sum 1, from
    ``h = 1/n``; networkx's order) converges to the projection of the uniform vector on
    the top eigenspace of ``M``: the top eigenvector where it is simple, and a definite
    vector of the eigenspace where the largest eigenvalue is repeated (an undirected
    bipartite graph, identical components). That projection is computed here directly,
    from ARPACK's top eigenpairs (``scipy.sparse.linalg.eigsh``, Lanczos, to machine
    precision; a dense ``eigh`` below 1,500 vertices), so the answer does not depend on
    how slowly the power iteration would get there: on meshes and road networks
    ``(sigma_2 / sigma_1)^2`` is 0.996 to 0.99999 and the power iteration's L1 change
    falls below a tolerance far from the limit. Eigenvalues within :data:`HITS_REPEATED`
    (relative) of the largest count as repeated. The graph's structure, values ignored.

    Parameters
    ----------
    graph : Graph
        At least one stored entry.
    tol : float
        ``converged`` says whether :attr:`HitsReference.error_bound` is at most this.
    max_iter : int, optional
        ARPACK's restarts (None: scipy's default).

    Returns
    -------
    HitsReference
        ``(hubs, authorities, products, converged, error_bound)``.

    Raises
    ------
    ValueError
        If the graph has no stored entry (the power iteration's first authorities are 0).
    """
    from scipy.sparse.linalg import LinearOperator, eigsh
    if graph.nnz == 0:
        raise ValueError("HITS of a graph without edges is undefined (A^T h = 0)")
    n = graph.n
    a_mat = _pattern(graph)
    at = a_mat.T.tocsr()
    count = [0]

    def product(x):
        count[0] += 1
        return a_mat @ (at @ x)

    if n < 1500:
        lam, vec = np.linalg.eigh((a_mat @ at).toarray())
    else:
        op = LinearOperator((n, n), matvec=product, dtype=np.float64)
        k = 4
        while True:
            lam, vec = eigsh(op, k=k, which="LA", v0=np.ones(n), tol=0,
                             ncv=min(n, max(2 * k + 1, 20)), maxiter=max_iter)
            top = lam >= lam.max() * (1 - HITS_REPEATED)
            if not top.all() or 2 * k > min(64, n - 2):
                break
            k *= 2  # every eigenvalue found is the largest: more of them
    order = np.argsort(lam)[::-1]
    lam, vec = lam[order], vec[:, order]
    top = lam >= lam[0] * (1 - HITS_REPEATED)
    basis = vec[:, top]
    x = basis @ (basis.T @ np.ones(n))  # the uniform vector's projection
    total = float(x.sum())
    hubs = x / total
    auths = at @ hubs
    auths /= auths.sum()
    bound = np.inf
    if not top.all():
        residual = np.linalg.norm(np.column_stack([product(basis[:, j]) - lam[j] * basis[:, j]
                                                   for j in range(basis.shape[1])]))
        gap = float(lam[top][-1] - lam[~top][0])
        # sin of the angle between the eigenspaces (Davis-Kahan), times sqrt(n) for the
        # projection of the all-ones vector, sqrt(n) from 2-norm to L1, 2 for the scaling
        bound = 2.0 * n * residual / gap / total if gap > 0 else np.inf
    return HitsReference(hubs, auths, count[0], bool(bound <= tol), float(bound))


def hits_power(graph: Graph, tol: float = 1e-6, max_iter: int = 100):
    """HITS by float64 power iteration, stopped by networkx's power-iteration rule.

    From uniform hubs ``h = 1/n``, each iteration computes ``a = A^T h`` and then
    ``h = A a``, each normalised to sum 1 (networkx's ``_hits_python`` order, with sum
    instead of max normalisation), and stops once the L1 change of ``h`` is below ``tol``
    or after ``max_iter`` iterations. That is not the limit (:func:`hits`) where the
    iteration converges slowly: it stops ``tol * r / (1 - r)`` from it, ``r = (sigma_2 /
    sigma_1)^2``. The graph's structure, values ignored.

    Returns
    -------
    (hubs, authorities, iterations, converged)
        Two ndarrays of float64, shape (n,), each summing to 1; int; bool.
    """
    a_mat = _pattern(graph)
    at = a_mat.T.tocsr()
    h = np.full(graph.n, 1.0 / graph.n)
    a = h
    for it in range(1, max_iter + 1):
        a = at @ h
        a /= a.sum()
        hn = a_mat @ a
        hn /= hn.sum()
        err = np.abs(hn - h).sum()
        h = hn
        if err < tol:
            return h, a, it, True
    return h, a, max_iter, False


def sssp_weights(graph: Graph, weights: str = "values") -> np.ndarray:
    """Edge lengths of SSSP: the stored values (``values``) or their magnitudes (``abs``),
    float32 as the graph stores them, shape (nnz,)."""
    return np.abs(graph.data) if weights == "abs" else graph.data


def sssp(graph: Graph, root: int, weights: str = "values"):
    """Shortest-path lengths from ``root`` along out-edges, by scipy's Dijkstra in float64.

    Parameters
    ----------
    weights : {'values', 'abs'}
        Edge lengths (:func:`sssp_weights`; non-negative).

    Returns
    -------
    (dist, hops)
        ``dist``: float64, shape (n,), ``inf`` where unreached; ``hops``: int64,
        shape (n,), edges on the path Dijkstra found (-1 unreached).
    """
    w = sssp_weights(graph, weights).astype(np.float64)
    a = sp.csr_array((w, graph.indices, graph.indptr), shape=graph.shape)
    dist, pred = csgraph.dijkstra(a, directed=True, indices=root, return_predecessors=True)
    return dist, _tree_depth(pred, root)


def _tree_depth(pred: np.ndarray, root: int) -> np.ndarray:
    """Depth of every vertex in a predecessor tree (-1 off the tree), by pointer jumping:
    O(n log depth). ``pred``: scipy's predecessors (negative for the root and unreached)."""
    up = np.where(pred >= 0, pred, -1).astype(np.int64)
    depth = (up >= 0).astype(np.int64)  # invariant: depth[v] = edges from v up to up[v]
    active = np.flatnonzero(up >= 0)
    while active.size:
        anc = up[active]
        depth[active] += depth[anc]  # right-hand sides are read before any assignment
        up[active] = up[anc]
        active = active[up[active] >= 0]
    depth[(pred < 0) & (np.arange(pred.size) != root)] = -1
    return depth


def validate_sssp(graph: Graph, root: int, dist: np.ndarray, weights: str,
                  ref_dist: np.ndarray, ref_hops: np.ndarray) -> list[str]:
    """Check float32 shortest-path lengths exactly, then against float64 Dijkstra.

    float32 addition is monotone and never decreases a non-negative sum, so the
    float32 Bellman-Ford fixed point is unique: ``dist32[v]`` = the least float32
    left-to-right sum over the paths to ``v``. The rules:

    1. ``dist[root] == 0``; unreached (``inf``) exactly where Dijkstra's is;
    2. no edge ``u -> v`` improves ``v``: ``dist[v] <= fl32(dist[u] + w)``;
    3. every reached vertex is reached from the root along tight edges
       (``fl32(dist[u] + w) == dist[v]``); ``h32[v]`` is the fewest such edges.

    Rules 2 and 3 prove ``dist`` is that fixed point. Then, with ``u = 2**-24``,
    ``h = max(h32[v], hops[v])`` (Dijkstra's path) and ``g = h u / (1 - h u)``:
    ``|dist[v] - ref_dist[v]| <= g ref_dist[v]``, since a float32 sum of h
    non-negative terms is within a factor ``(1 +- u)^h`` of the exact sum
    (rule 2 along Dijkstra's path bounds ``dist`` above; the tight path of rule 3,
    exactly summed, is no shorter than ``ref_dist``, which bounds it below). The
    lengths are the graph's float32 values, exact in float64; Dijkstra's own float64
    rounding (``2**-53`` per edge) is added to ``g``.

    Returns
    -------
    list of str
        The rules broken (empty if the result is right).
    """
    errors = []
    dist = np.asarray(dist, dtype=np.float32)
    reached = np.isfinite(dist)
    if dist[root] != 0:
        errors.append(f"dist[root] is {dist[root]}, not 0")
    if not np.array_equal(reached, np.isfinite(ref_dist)):
        bad = np.flatnonzero(reached != np.isfinite(ref_dist))
        return errors + [f"the reached set differs from Dijkstra's at {bad.size} vertices "
                         f"(first {bad[0]})"]
    rows = np.repeat(np.arange(graph.n), np.diff(graph.indptr))
    w = sssp_weights(graph, weights)
    via = dist[rows] + w  # float32 sums, rounded to nearest as the devices round them
    if np.any(dist[graph.indices] > via):
        k = int(np.flatnonzero(dist[graph.indices] > via)[0])
        errors.append(f"edge {rows[k]} -> {graph.indices[k]} still shortens the path")
    tight = reached[rows] & (via == dist[graph.indices])
    t = sp.csr_array((np.ones(int(tight.sum())), (rows[tight], graph.indices[tight])),
                     shape=graph.shape)
    h32 = csgraph.dijkstra(t, directed=True, indices=root, unweighted=True)
    if np.any(np.isinf(h32[reached])):
        errors.append("a reached vertex's distance is the length of no path from the root")
        return errors
    h = np.maximum(h32, ref_hops)[reached]
    g = h * U32 / (1 - h * U32) + h * 2.0 ** -53
    off = np.abs(dist[reached].astype(np.float64) - ref_dist[reached]) > g * ref_dist[reached]
    if off.any():
        v = int(np.flatnonzero(reached)[np.flatnonzero(off)[0]])
        errors.append(f"{int(off.sum())} distances off Dijkstra's by more than float32 "
                      f"rounding (first vertex {v}: {dist[v]!r} vs {ref_dist[v]!r})")
    return errors


def undirected_simple(graph: Graph) -> sp.csr_array:
    """The pattern of ``A + A^T`` without self-loops (float64 ones, canonical CSR)."""
    a = _pattern(graph)
    s = (a + a.T).tocsr()
    s.setdiag(0)
    s.eliminate_zeros()
    s.sort_indices()
    s.data[:] = 1.0
    return s


def greedy_coloring(graph: Graph) -> np.ndarray:
    """Greedy colouring in largest-first order, as networkx's ``greedy_color(G,
    'largest_first')`` on the symmetrised graph without self-loops: vertices by
    descending degree (ties by id), each taking the smallest colour its coloured
    neighbours do not use.

    Returns
    -------
    ndarray of int64, shape (n,)
        0-based colours.
    """
    s = undirected_simple(graph)
    deg = np.diff(s.indptr)
    color = np.full(graph.n, -1, dtype=np.int64)
    mark = np.full(int(deg.max(initial=0)) + 2, -1, dtype=np.int64)
    ip, idx = s.indptr.tolist(), s.indices
    for u in np.argsort(-deg, kind="stable").tolist():
        nb = color[idx[ip[u]:ip[u + 1]]]
        mark[nb[nb >= 0]] = u  # mark the colours u's neighbours use, then take the first free
        color[u] = int(np.argmax(mark[:nb.size + 1] != u))
    return color


def validate_coloring(graph: Graph, colors: np.ndarray) -> list[str]:
    """A colouring's faults: uncoloured vertices, and edges (self-loops aside) joining
    two vertices of one colour. Returns the problems found (empty if valid)."""
    errors = []
    colors = np.asarray(colors)
    if np.any(colors < 0):
        errors.append(f"{int(np.sum(colors < 0))} vertices are not coloured "
                      f"(first {int(np.flatnonzero(colors < 0)[0])})")
    rows = np.repeat(np.arange(graph.n), np.diff(graph.indptr))
    clash = ((rows != graph.indices) & (colors[rows] >= 0)
             & (colors[rows] == colors[graph.indices]))
    if clash.any():
        k = int(np.flatnonzero(clash)[0])
        errors.append(f"{int(clash.sum())} edges join two vertices of one colour "
                      f"(first {rows[k]} -> {graph.indices[k]}, colour {colors[rows[k]]})")
    return errors
