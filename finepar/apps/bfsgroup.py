"""BFS on a small input in one work-group's launch on the GPU (issue 29: never slower than
the best single device).

On a graph of a few thousand vertices a BFS level is microseconds of work, while each
launch and host round trip costs tens of microseconds: on one H200 the GPU's usual
path (top-down batches, bottom-up steps, 12-68 launches and 3-8 host waits on the real
graphs under 130,000 entries) took 2.1-3.2 ms, and the CPU's walk (one PoCL launch, but six
commands) 0.77-1.94 ms, where scipy's ``breadth_first_order`` took 0.17-0.66 ms. Here one
work-group runs every level itself (``bfs_group`` in ``opencl/apps/bfs/group.cl``: top-down
only, each level's edges shared over the work-items by a scan of the list's out-degrees),
so a run is one launch and one read of its per-level counts. A bottom-up level is never
needed for the answer, and on inputs this small the top-down levels touch each edge once.
On the same H200 a run took 0.17-0.36 ms on the six real graphs under 130,000 entries
(3.5 us a level on luxembourg's 952, where the CPU's walk is as fast; benchmarks/RESULTS.md).

It runs where the plan leaves the GPU alone, in one process, on an input of at most
:data:`GROUP_NNZ` entries (``EngineOptions.group_loop='auto'``,
:func:`finepar.apps.powerloop.wanted`), with the app's default direction and no iteration
cap; ``'always'`` takes it on any one-device plan and input, the CPU's too (one work-item
there: the emulated pair's tests). A CPU device is otherwise left to the walk
(:mod:`finepar.engine.walk`), which is the same loop in one work-item. Whether the GPU's
launch beats the CPU's walk on a given input is the whole-run choice's to measure
(:mod:`finepar.split.answer`).
"""

from __future__ import annotations

import time

import numpy as np

from ..device import cl
from ..engine.trace import FrontierTrace
from . import powerloop

#: Entries up to which a GPU alone runs BFS in one work-group (``group_loop='auto'``). On
#: one H200 (benchmarks/RESULTS.md) it took 0.65 ms at Graph500 scale 14 (426,320 entries)
#: and 1.66 ms on soc-Slashdot0902 (948,464) against the usual path's 1.21 and 2.14 ms,
#: and 2.44 ms at scale 16 (1.8 M) against 1.35: one SM's edges, about 1.3-1.7 ns each.
GROUP_NNZ = 1 << 20
#: The kernel's program.
PROGRAM = ("apps/bfs/group.cl",)
#: The widest work-group used on a GPU.
GPU_GROUP = 1024
#: Levels whose counts the kernel records for the trace in the first read; a deeper run
#: reads the rest in a second.
FIRST_LEVELS = 512


def applies(engine, graph, params: dict) -> bool:
    """Whether ``engine`` runs this BFS in one work-group: one device, one process, the
    default direction, no ``max_iter``, int32 offsets, and the GPU's role on a small input
    (or ``group_loop='always'`` on either role)."""
    if (len(engine.roles) != 1 or getattr(engine, "comm", None) is not None
            or params.get("direction", "auto") != "auto" or params.get("max_iter") is not None
            or graph.nnz >= 2**31 or graph.indptr.dtype != np.int32):
        return False
    if getattr(engine.options, "group_loop", "auto") == "always":
        return True
    role = engine.roles[0]
    return (role == "gpu" and engine.pair.side(role).info.kind == "gpu"
            and powerloop.wanted(graph.nnz, engine.options, GROUP_NNZ))


def group_size(side) -> int:
    """The work-group's size on ``side``: one work-item on a CPU device (the emulated GPU
    role too), else the largest power of two it allows, at most :data:`GPU_GROUP`."""
    if side.info.kind == "cpu":
        return 1
    return 1 << (min(GPU_GROUP, int(side.info.max_work_group_size)).bit_length() - 1)


def prepare(engine, graph) -> dict:
    """The kernel, the out-edge CSR on the engine's device (shared with the push side's
    list where it holds it), two n-long lists and the counts' buffer (built once an
    engine)."""
    role = engine.roles[0]
    side = engine.pair.side(role)
    indptr, indices, _ = engine.global_csr(role, graph)
    n = max(graph.n, 1)
    return {"role": role, "wg": group_size(side), "indptr": indptr, "indices": indices,
            "kernel": engine.pair.kernel(side, PROGRAM, {}, "bfs_group"),
            "lists": [engine.scratch(role, np.zeros(n, np.int32)) for _ in range(2)],
            "out": engine.scratch(role, np.zeros(2 + 2 * graph.n + 2, np.int32)),
            "host": np.zeros(2 + 2 * graph.n + 2, np.int32)}


def run(engine, loop: dict, graph, root: int) -> tuple[int, FrontierTrace, str]:
    """Every level in one launch, then one read of the counts (two past
    :data:`FIRST_LEVELS` levels).

    Returns
    -------
    (int, FrontierTrace, str)
        Levels run (the last found nothing), their trace (one launch, ``top-down on
        ROLE (work-group)``), and ``'group'``: the levels and parents are on the role.
    """
    role, wg, mod, h = loop["role"], loop["wg"], cl(), loop["host"]
    engine._plain("level", "parent")
    t0 = time.perf_counter()
    engine.launch(role, loop["kernel"], wg, (
        np.int32(graph.n), np.int32(root), np.int32(graph.n + 1), loop["indptr"],
        loop["indices"], engine.buffer("level", role), engine.buffer("parent", role),
        *loop["lists"], loop["out"], mod.LocalMemory(4 * wg), mod.LocalMemory(4 * wg)),
        kind="group", wg=wg, wait=False)
    engine.read_buffer(role, h, loop["out"], min(2 + 2 * FIRST_LEVELS, h.size))
    depth = int(h[0])
    if depth > FIRST_LEVELS:
        engine.read_buffer(role, h, loop["out"], 2 + 2 * depth)
    found = h[2:2 + 2 * depth:2].tolist()
    found_edges = h[3:3 + 2 * depth:2].tolist()
    root_edges = int(graph.indptr[root + 1] - graph.indptr[root])
    levels = list(zip([1] + found[:-1], [root_edges] + found_edges[:-1], found, found_edges))
    trace = FrontierTrace()
    trace.add("group", levels, 1, time.perf_counter() - t0, "empty", direction="top-down",
              where=f"{role} (work-group)")
    return depth, trace, "group"
