"""Coarsened SPAC bisection (SPAC TOPC §3.2; throttling ATC'18 §4.1, Algorithm 4).

SPAC turns the edge partition of the tuple list into a vertex partition: the
*split-and-connect* transformation Ψ (SPAC Definition 3.2) splits every data
element (a row ``y_i`` or a column ``x_j``) into one copy per incident tuple,
joins the two copies of each tuple by a *dominant* edge (weight 1000, never
cut in practice) and links the copies of one element in a path of weight-1
*auxiliary* edges (here in the order of the other coordinate: a row's copies
by column, a column's copies by row). A balanced vertex bisection of Ψ(D)
that cuts no dominant edge is a balanced edge bisection of D whose cut
auxiliary edges count the replicated elements (Definition 3.3).

Coarsened bisection (Algorithm 4) runs the multilevel scheme's coarsening in
numpy and skips its refinement at those levels:

1. The first heavy-edge level matches every dominant edge (weight 1000 beats
   1), which gives the *entity graph*: one vertex per tuple (weight 2), an edge
   between tuples that are neighbours on a row's or a column's path. It is
   built directly (:func:`entity_graph`; "the input graph is already
   coarsened", §4.1); :func:`split_and_connect` builds Ψ(D) itself.
2. ``levels`` more rounds of heavy-edge matching (:func:`heavy_edge_matching`)
   and contraction (:func:`contract`) shrink it, each about by half.
3. METIS (through pymetis) bisects the coarse graph, balancing vertex weight
   (= tuples), with its own coarsening and refinement.
4. The bisection is projected back through the numpy levels without
   refinement.

All nodes of a DBWP tree level are coarsened together (their graphs are
disjoint), then METIS runs once per node. A node METIS cannot split into two
parts of at least ``min_nnz`` tuples each falls back to the K-D median split.

Matching is the parallel ("handshake") form of heavy-edge matching: every
free vertex points to its heaviest free neighbour, ties broken by a seeded
priority that favours low-degree neighbours (Algorithm 4 visits entities by
degree); mutual pointers match; a few rounds. It is vectorised, and
deterministic for a seed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only: scipy.sparse is imported where it is used
    import scipy.sparse as sp

from ..errors import UsageError
from .kdtile import kd_split, segment_ranges
from .validate import check_share

__all__ = ["METIS_MISSING", "DOMINANT_WEIGHT", "require_pymetis", "split_and_connect", "entity_graph",
           "heavy_edge_matching", "contract", "spac_split"]

METIS_MISSING = "SPAC bisection needs pymetis: pip install 'finepar[metis]'"
"""The one-line error when bisect="spac" is asked for without pymetis."""

DOMINANT_WEIGHT = 1000
"""Weight of a dominant edge of Ψ(D) (SPAC §3.2: "in practice we set it to 1,000")."""

_MATCH_ROUNDS = 4      # handshake rounds per coarsening level
_MIN_SHRINK = 0.95     # stop coarsening when a level keeps more than this share of vertices
_DEGREE_CAP = 2**16 - 1  # degrees above rank as this one in the matching priority


def require_pymetis():
    """Import pymetis, or raise the one-line UsageError :data:`METIS_MISSING`."""
    try:
        import pymetis
    except ImportError:
        raise UsageError(METIS_MISSING) from None
    return pymetis


def _path_pairs(values: np.ndarray, group: np.ndarray | None) -> np.ndarray:
    """Indices ``i`` where elements ``i`` and ``i + 1`` of a sequence are neighbours
    on one element's path: equal `values` and (if given) the same `group`."""
    same = values[1:] == values[:-1]
    if group is not None:
        same &= group[1:] == group[:-1]
    return np.flatnonzero(same)


def _symmetric(a: np.ndarray, b: np.ndarray, w: np.ndarray, count: int) -> sp.csr_matrix:
    """Undirected weighted graph of edges ``(a, b, w)`` as a symmetric CSR (int64 weights)."""
    import scipy.sparse as sp
    src = np.concatenate([a, b]).astype(np.int64)
    dst = np.concatenate([b, a]).astype(np.int64)
    g = sp.coo_matrix((np.concatenate([w, w]).astype(np.int64), (src, dst)), shape=(count, count))
    return g.tocsr()


def _share_orders(indptr, indices, n):
    import scipy.sparse as sp
    indptr, indices = check_share(indptr, indices, n)
    k, nnz = indptr.shape[0] - 1, indices.shape[0]
    rows = np.repeat(np.arange(k, dtype=np.int64), np.diff(indptr))
    by_col = sp.csr_matrix((np.arange(nnz, dtype=np.int64), indices, indptr), shape=(k, n)).tocsc().data
    return rows, indices.astype(np.int64), by_col.astype(np.int64)


def split_and_connect(indptr, indices, n, dominant_weight: int = DOMINANT_WEIGHT) -> sp.csr_matrix:
    """The split-and-connect graph Ψ(D) of a CSR share's tuple list (SPAC Definition 3.2).

    Parameters
    ----------
    indptr : array_like of int, shape (k + 1,)
    indices : array_like of int, shape (nnz,)
        The share, as for :func:`~finepar.throttle.dbwp.dbwp`.
    n : int
        Number of columns.
    dominant_weight : int
        Weight of the dominant edges.

    Returns
    -------
    scipy.sparse.csr_matrix of int64, shape (2 nnz, 2 nnz)
        Symmetric weighted adjacency: vertex ``2 p`` is tuple ``p``'s copy of its
        row ``y_i``, ``2 p + 1`` its copy of its column ``x_j``; edge
        ``(2 p, 2 p + 1)`` is dominant; a row's copies form a path by column, a
        column's copies a path by row (weight 1).

    Raises
    ------
    finepar.errors.UsageError
        If the share is malformed.
    """
    rows, cols, by_col = _share_orders(indptr, indices, n)
    nnz = cols.shape[0]
    p = np.arange(nnz, dtype=np.int64)
    r = _path_pairs(rows, None)                 # row-major neighbours p, p + 1
    c = _path_pairs(cols[by_col], None)         # column-major neighbours by_col[i], by_col[i + 1]
    a = np.concatenate([2 * p, 2 * r, 2 * by_col[c] + 1])
    b = np.concatenate([2 * p + 1, 2 * r + 2, 2 * by_col[c + 1] + 1])
    w = np.concatenate([np.full(nnz, dominant_weight), np.ones(r.size + c.size)])
    return _symmetric(a, b, w, 2 * nnz)


def entity_graph(indptr, indices, n) -> sp.csr_matrix:
    """Ψ(D) with every dominant edge contracted: one vertex per tuple (SPAC §3.2, Algorithm 4).

    Tuples ``p`` and ``q`` are joined (weight 1) when they are neighbours on
    their row's path (consecutive in the row) or their column's path.

    Parameters
    ----------
    indptr, indices, n
        The share, as for :func:`split_and_connect`.

    Returns
    -------
    scipy.sparse.csr_matrix of int64, shape (nnz, nnz)

    Raises
    ------
    finepar.errors.UsageError
        If the share is malformed.
    """
    rows, cols, by_col = _share_orders(indptr, indices, n)
    nnz = cols.shape[0]
    a, b = _entity_edges(rows, cols[by_col], by_col, np.arange(nnz), None)
    return _symmetric(a, b, np.ones(a.shape[0], np.int64), nnz)


def _entity_edges(row_values, col_values, col_local, row_local, group):
    """Entity-graph edges in local ids: row neighbours (consecutive in the
    row-major sequence, whose local ids are `row_local`) and column neighbours
    (consecutive in the column-major sequence, local ids `col_local`)."""
    r = _path_pairs(row_values, group)
    c = _path_pairs(col_values, group)
    return (np.concatenate([row_local[r], col_local[c]]),
            np.concatenate([row_local[r + 1], col_local[c + 1]]))


def heavy_edge_matching(graph: sp.csr_matrix, rng: np.random.Generator) -> np.ndarray:
    """Handshake heavy-edge matching of a symmetric weighted graph.

    Parameters
    ----------
    graph : scipy.sparse.csr_matrix, shape (m, m)
        Symmetric adjacency with positive integer weights and no self-loops.
    rng : numpy.random.Generator
        Source of the tie-breaking priorities.

    Returns
    -------
    numpy.ndarray of int64, shape (m,)
        Mate of each vertex, -1 if unmatched (``mate[mate[v]] == v``).
    """
    m = graph.shape[0]
    itype = np.int32 if m < 2**31 else np.int64
    degree = np.diff(graph.indptr)
    src = np.repeat(np.arange(m, dtype=itype), degree)
    # Priority: lower degree higher, a random order among equal degrees (a radix sort).
    shuffled = rng.permutation(m)
    fewer = (_DEGREE_CAP - np.minimum(degree, _DEGREE_CAP)).astype(np.uint16)
    by_priority = shuffled[np.argsort(fewer[shuffled], kind="stable")]
    prio = np.empty(m, np.int64)
    prio[by_priority] = np.arange(m)
    key = graph.data.astype(np.int64) * m + prio[graph.indices]  # heavier first, then priority
    dst = graph.indices.astype(itype, copy=False)
    mate = np.full(m, -1, np.int64)
    target = np.full(m, -1, np.int64)
    free_vertex = np.ones(m, dtype=bool)
    for _ in range(_MATCH_ROUNDS):
        if src.size == 0:
            break
        runs = np.flatnonzero(np.r_[True, src[1:] != src[:-1]])  # CSR order: one run per source
        v = src[runs]
        target[v] = by_priority[np.maximum.reduceat(key, runs) % m]
        mutual = v[target[target[v]] == v]
        mate[mutual] = target[mutual]
        free_vertex[mutual] = False
        target[v] = -1
        free = free_vertex[src] & free_vertex[dst]  # edges between still unmatched vertices
        src, dst, key = src[free], dst[free], key[free]
    return mate


def contract(graph: sp.csr_matrix, vweight: np.ndarray, mate: np.ndarray):
    """Merge matched pairs: the coarse graph, its vertex weights and the fine-to-coarse map.

    A coarse vertex is numbered by the rank of its smaller fine vertex, so the
    map preserves order (vertices of a contiguous range that match only inside
    it stay a contiguous range). Parallel edges add up; edges inside a pair vanish.

    Returns
    -------
    coarse : scipy.sparse.csr_matrix of int64
    cweight : numpy.ndarray of int64
    cmap : numpy.ndarray of int64, shape (m,)
    """
    import scipy.sparse as sp
    m = graph.shape[0]
    own = np.arange(m, dtype=np.int64)
    leader = np.where(mate < 0, own, np.minimum(own, mate))
    cid = np.cumsum(leader == own) - 1
    cmap = cid[leader]
    count = int(cid[-1]) + 1 if m else 0
    coo = graph.tocoo()
    a, b = cmap[coo.row], cmap[coo.col]
    keep = a != b
    coarse = sp.coo_matrix((coo.data[keep].astype(np.int64), (a[keep], b[keep])),
                           shape=(count, count)).tocsr()
    cweight = np.bincount(cmap, weights=vweight, minlength=count).astype(np.int64)
    return coarse, cweight, cmap


def spac_split(by_row, by_col, rows, cols, starts, lengths, depth, mask, *, levels: int, seed: int,
               min_nnz: int, metis):
    """SPAC bisection of every node of one DBWP tree level (same contract as
    :func:`~finepar.throttle.kdtile.kd_split`).

    Parameters
    ----------
    by_row, by_col : numpy.ndarray of int, shape (nnz,)
        Positions, row-major and column-major within each node's range.
    rows, cols : numpy.ndarray of int, shape (nnz,)
        Local row and column of each position.
    starts, lengths : numpy.ndarray of int64, shape (m,)
        The nodes' ranges (lengths >= 2 * min_nnz).
    depth : int
        Their tree depth (for the K-D fallback's dimension).
    mask : numpy.ndarray of bool, shape (nnz,)
        Written: True at the positions that go left.
    levels : int
        Numpy heavy-edge coarsening levels after the entity graph.
    seed : int
        Seeds the matching priorities and METIS.
    min_nnz : int
        Smallest child allowed.
    metis : module
        pymetis (from :func:`require_pymetis`).

    Returns
    -------
    nleft : numpy.ndarray of int64, shape (m,)
    done : None
        Neither order is left partitioned.
    """
    graph, vweight, comp, node, row_pos = _level_graph(by_row, by_col, rows, cols, starts, lengths,
                                                       mask.shape[0])
    rng = np.random.default_rng([seed, depth])
    for _ in range(levels):
        mate = heavy_edge_matching(graph, rng)
        if graph.shape[0] - np.count_nonzero(mate >= 0) // 2 > _MIN_SHRINK * graph.shape[0]:
            break
        graph, vweight, cmap = contract(graph, vweight, mate)
        comp = cmap[comp]
    first = np.cumsum(lengths) - lengths  # each node's first local id
    cbounds = np.append(comp[first], graph.shape[0])  # each node's coarse vertices, contiguous
    cpart = np.zeros(graph.shape[0], np.int64)
    failed = [j for j in range(starts.shape[0])
              if not _metis_bisect(graph, vweight, cbounds[j], cbounds[j + 1], cpart, seed, metis)]
    goes_left = cpart[comp] == 0
    mask[row_pos] = goes_left
    nleft = np.bincount(node, weights=goes_left, minlength=starts.shape[0]).astype(np.int64)
    bad = (nleft < min_nnz) | (lengths - nleft < min_nnz)
    bad[failed] = True
    if bad.any():
        mask[by_row[segment_ranges(starts[bad], lengths[bad])]] = False
        nleft[bad] = kd_split(by_row, by_col, starts[bad], lengths[bad], depth, mask)[0]
    return nleft, None


def _level_graph(by_row, by_col, rows, cols, starts, lengths, nnz):
    """The entity graphs of all nodes of a level as one graph in local ids (the
    rank in the concatenated row-major ranges): graph, vertex weights (2 per
    tuple), identity map, node of each local id, position of each local id."""
    idx = segment_ranges(starts, lengths)
    total = idx.shape[0]
    node = np.repeat(np.arange(starts.shape[0], dtype=np.int64), lengths)
    row_pos, col_pos = by_row[idx], by_col[idx]
    local = np.empty(nnz, np.int64)
    local[row_pos] = np.arange(total)
    a, b = _entity_edges(rows[row_pos], cols[col_pos], local[col_pos], np.arange(total), node)
    graph = _symmetric(a, b, np.ones(a.shape[0], np.int64), total)
    return graph, np.full(total, 2, np.int64), np.arange(total, dtype=np.int64), node, row_pos


def _metis_bisect(graph, vweight, c0, c1, cpart, seed, metis) -> bool:
    """METIS 2-way partition of coarse vertices ``c0:c1`` (a node's graph, no
    edge leaving it) into ``cpart``; False if it cannot give two non-empty parts."""
    if c1 - c0 < 2:
        return False
    ptr = graph.indptr[c0:c1 + 1]
    lo, hi = int(ptr[0]), int(ptr[-1])
    xadj = (ptr - lo).astype(np.int64)
    adjncy = (graph.indices[lo:hi] - c0).astype(np.int64)
    kwargs = {"vweights": vweight[c0:c1], "eweights": graph.data[lo:hi].astype(np.int64),
              "options": metis.Options(seed=seed)}
    if hasattr(metis, "CSRAdjacency"):  # pymetis >= 2025.2
        result = metis.part_graph(2, adjacency=metis.CSRAdjacency(xadj, adjncy), **kwargs)
    else:
        result = metis.part_graph(2, xadj=xadj, adjncy=adjncy, **kwargs)
    parts = np.asarray(result[1], dtype=np.int64)
    if parts.min() == parts.max():
        return False
    cpart[c0:c1] = parts
    return True
