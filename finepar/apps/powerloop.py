"""PageRank's and RWR's power iteration in one work-group's launch, for small inputs
(issue 29: never slower than the best single device).

On a small graph a step of the power iteration is a few microseconds of work, while a
launch costs the host 20-75 us on the H100 machine's driver and each length group of
the plan is a launch of its own: PageRank on USPowerGrid (13,188 entries) ran 59
iterations as 177 launches, 6-10 ms on any plan, where scipy's loop took 2.4 ms. Here
one work-group runs every iteration itself (``pagerank_group_loop`` in
``opencl/apps/pagerank/grouploop.cl``): its work-items share the rows, sum the L1
change and the dangling mass in local memory, and test the stop condition, so a run is
one launch and one read whatever its iterations. On a GPU the work-group is as wide as
the device allows (at most :data:`GPU_GROUP`) and a long row is cut into segments that
several work-items sum (:func:`segments`); on a CPU it is one work-item, a plain loop
(PoCL's barriers cost microseconds each).

It runs where the plan leaves one device and the input has at most :data:`GROUP_LOOP_NNZ`
entries (:data:`GPU_LOOP_NNZ` on a GPU; ``EngineOptions.group_loop='auto'``), or on any
one-device plan (``'always'``); a default run on such an input plans for the GPU alone
(:meth:`~finepar.apps.pagerank.PageRank.one_device`), nothing tuned or measured. The matrix is uploaded once more, as segments
(at most a few hundred kilobytes), and the vectors stay in the input's numbering. A
row that is one segment is finished by the work-item that sums it; only where some row
is longer does an iteration pay a second phase (a barrier, then those rows adding their
segments' sums).
"""

from __future__ import annotations

import numpy as np

from ..device import cl
from ..engine.grouplevels import whole_on_one_device

#: Inputs of at most this many entries run the power iteration in one work-group
#: (``group_loop='auto'``): one SM of a GPU, or one CPU core, sums a few tens of
#: thousands of terms in about the time the host spends enqueueing one launch.
GROUP_LOOP_NNZ = 1 << 16
#: The same on a GPU. On one H200 (benchmarks/RESULTS.md, 2026-11-28) the loop ran
#: wiki-Vote (103,689 entries, 16 iterations) in 1.63 ms and memplus (126,150, 35) in 1.98
#: against the split's 2.27 and 2.70, and luxembourg (239,332) in 8.68 against 5.41.
GPU_LOOP_NNZ = 1 << 17
#: The widest work-group used on a GPU.
GPU_GROUP = 1024
#: Most entries of a row one GPU work-item sums in an iteration: a longer row is cut into
#: segments of this many, summed by as many work-items, then added up by its own (rajat01's
#: longest rows, over a thousand entries, took 117 us an iteration on one work-item).
SEGMENT = 32
PROGRAM = ("apps/pagerank/grouploop.cl",)


def applies(engine, graph, renumbered: bool) -> bool:
    """Whether ``engine`` runs the power iteration of ``graph`` in one work-group: one
    device, one process, the contributions in the input's numbering (not
    ``renumbered``), the matrix held in one piece (a budget that cuts it into chunks is
    kept), and the input small enough (or ``group_loop='always'``: :func:`wanted`)."""
    if renumbered or not whole_on_one_device(engine):  # a budget's chunks: the loop
        return False  # would hold a whole copy past it
    side = engine.pair.side(engine.roles[0])
    return wanted(graph.nnz, engine.options,
                  GPU_LOOP_NNZ if side.info.kind == "gpu" else GROUP_LOOP_NNZ)


def wanted(nnz: int, options, limit: int | None = None) -> bool:
    """Whether ``options.group_loop`` asks for the small input's form of a run on an
    input of ``nnz`` entries: ``always``, or ``auto`` up to ``limit`` entries (default
    :data:`GROUP_LOOP_NNZ`; PageRank's loop, and CC's unsampled Afforest with its own limit
    on a GPU)."""
    from ..engine import EngineOptions
    return (options or EngineOptions()).small_form(
        nnz, GROUP_LOOP_NNZ if limit is None else limit)


def small(nnz: int, options) -> bool:
    """Whether an input of ``nnz`` entries is small enough for the GPU's loop (at most
    :data:`GPU_LOOP_NNZ`, as it is at the call) and ``options.group_loop`` allows it (not
    ``none``)."""
    return getattr(options, "group_loop", "auto") != "none" and int(nnz) <= GPU_LOOP_NNZ


def group_size(side, role: str) -> int:
    """The work-group's size on ``side``: one work-item on a CPU, else the largest power
    of two the device allows, at most :data:`GPU_GROUP`."""
    if role == "cpu":
        return 1
    return 1 << (min(GPU_GROUP, int(side.info.max_work_group_size)).bit_length() - 1)


def segments(indptr: np.ndarray, length: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Each row's entries cut into segments of at most ``length`` (None: one a row); an
    empty row has one empty segment.

    Parameters
    ----------
    indptr : ndarray of int, shape (n + 1,)
    length : int or None

    Returns
    -------
    (seg_ptr, row_seg) : ndarrays of int32
        Segment ``g`` holds entries ``seg_ptr[g] .. seg_ptr[g + 1] - 1``; row ``r``'s
        segments are ``row_seg[r] .. row_seg[r + 1] - 1`` (at least one).
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    lengths = np.diff(indptr)
    per_row = (np.ones_like(lengths) if length is None
               else np.maximum(-(-lengths // length), 1))
    row_seg = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(per_row, out=row_seg[1:])
    seg_row = np.repeat(np.arange(lengths.size), per_row)
    step = 0 if length is None else length
    starts = indptr[seg_row] + (np.arange(seg_row.size) - row_seg[seg_row]) * step
    seg_ptr = np.concatenate((starts, indptr[-1:]))
    return seg_ptr.astype(np.int32), row_seg.astype(np.int32)


def layout(indptr: np.ndarray, length: int | None) -> dict:
    """The kernel's view of :func:`segments`: ``seg_ptr``; ``seg_row`` (int32, one a
    segment: its row where that is the row's only segment, else -1); ``long_rows`` (the
    rows of several segments) and ``long_seg`` (int32, their first and past-the-last
    segments, in pairs)."""
    seg_ptr, row_seg = segments(indptr, length)
    per_row = np.diff(row_seg)
    seg_row = np.full(seg_ptr.size - 1, -1, np.int32)
    single = per_row == 1
    seg_row[row_seg[:-1][single]] = np.flatnonzero(single)
    long_rows = np.flatnonzero(~single).astype(np.int32)
    long_seg = np.stack((row_seg[:-1][~single], row_seg[1:][~single]), axis=1)
    return {"seg_ptr": seg_ptr, "seg_row": seg_row, "long_rows": long_rows,
            "long_seg": np.ascontiguousarray(long_seg, dtype=np.int32).reshape(-1)}


def prepare(engine, max_iter: int = 1) -> dict:
    """The engine's matrix (A^T) on its one device as segments (:func:`layout`: at most
    :data:`SEGMENT` entries on a GPU, one a row on a CPU) over the engine's whole CSR
    (:meth:`~finepar.engine.Engine.global_csr`: its column indices, shared with any store
    that holds them whole), a scratch vector of the long rows' segments' sums, and an
    output buffer for ``max_iter`` iterations' changes (grown by :func:`run` when
    needed)."""
    role = engine.roles[0]
    lay = layout(engine.matrix.indptr, None if role == "cpu" else SEGMENT)
    out = {"role": role, "n_seg": int(lay["seg_ptr"].size) - 1,
           "n_long": int(lay["long_rows"].size), "slots": max(int(max_iter), 1),
           "indices": engine.global_csr(role)[1]}
    for name, arr in (*lay.items(), ("part", np.zeros(out["n_seg"], np.float32)),
                      ("out", np.zeros(2 + out["slots"], np.uint32))):
        out[name] = engine.scratch(role, arr)
    return out


def defines(personalized: bool, plain: bool) -> dict:
    """The loop program's defines: RWR's restart vector, plain sums."""
    return {**({"PERSONALIZED": True} if personalized else {}),
            **({"PLAIN_SUMS": True} if plain else {})}


def run(engine, loop: dict, max_iter: int, *, personalized: bool, plain: bool):
    """Every iteration in one launch, then one read of its counts and changes.

    Parameters
    ----------
    engine : Engine
        One device; ``pr`` and ``contrib`` (float32, one a vertex) hold the start and
        ``fscal`` the first iteration's scalars, as for the row-operation iterations.
    loop : dict
        :func:`prepare`'s buffers.
    max_iter : int
    personalized : bool
        The restart vector is ``restart`` (RWR), not uniform.
    plain : bool
        Plain float32 sums of a row's terms (else Kahan-compensated).

    Returns
    -------
    (int, list of float, bool)
        Iterations run, each one's L1 change, whether the last was below ``tol``; the
        scores are left in ``pr`` (the buffers' names swapped where the iterations were odd).
    """
    role = loop["role"]
    side = engine.pair.side(role)
    if loop["slots"] < max_iter:
        loop["out"] = engine.scratch(role, np.zeros(2 + max_iter, np.uint32))
        loop["slots"] = max_iter
    kernel = engine.pair.kernel(side, PROGRAM, defines(personalized, plain),
                                "pagerank_group_loop")
    wg = group_size(side, role)
    buf = engine.buffer
    engine.launch(role, kernel, wg, (
        np.int32(loop["n_seg"]), np.int32(max_iter), np.int32(loop["n_long"]),
        loop["seg_ptr"], loop["seg_row"], loop["long_rows"], loop["long_seg"],
        loop["indices"], loop["part"],
        buf("inv_outdeg", role), buf("restart", role) if personalized else engine.dummy(role),
        buf("pr", role), buf("pr_next", role), buf("contrib", role), buf("contrib_next", role),
        engine.fscal[role], loop["out"], cl().LocalMemory(8 * wg)),
        kind="group loop", wg=wg, wait=False)
    host = np.empty(2 + max_iter, np.uint32)
    engine.read_buffer(role, host, loop["out"])
    it, converged = int(host[0]), bool(host[1])
    trace = [float(v) for v in host[2:2 + it].view(np.float32)]
    if it % 2:
        engine.swap("pr", "pr_next")
        engine.swap("contrib", "contrib_next")
    return it, trace, converged
