"""How an engine may use the devices (DESIGN.md §3, "engine"): memory budgets, chunking,
offsets and builds, from the command line, a config file or the API (:class:`EngineOptions`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only
    from ..device import Side


@dataclass
class EngineOptions:
    """How the engine lowers and runs a plan (beyond the plan itself).

    Attributes
    ----------
    offsets : {'auto', 'int64'}
        ``int64`` forces 64-bit segment offsets at any size (for tests).
    gpu_memory, cpu_memory : int or None
        Bytes the engine may use on each device (``--gpu-memory``,
        ``--cpu-memory``, the ``[budget]`` config table); None: the device's
        memory (the GPU's global memory; for the CPU, the host's real limit,
        :func:`finepar.device.host_memory_limit`). A share whose entries do not
        fit is cut into chunks, resident while they fit, streamed beyond (§4.3).
    reserve_bytes : int
        Bytes of each device's budget kept for the app's vectors.
    chunk_bytes : int or None
        The largest chunk, bytes (default: one allocation of the device).
    profile : {'auto', 'batch', 'launch'}
        What a step's kernel time reads from OpenCL's profiling events: ``batch`` the
        first start and the last end of each device's launches in a step, or in a batch
        of steps enqueued without waiting (two reads per device, the batch's span spread
        evenly over its steps); ``launch`` every launch's start and end (the sum of
        kernel durations; two reads per launch). ``auto`` (default) is ``batch`` but for
        a run on the GPU alone with the static executor, whose engine enqueues on the
        GPU's plain queue (:class:`finepar.device.PlainQueues`; NVIDIA's enqueue costs
        7-10 us less a launch there) and keeps no GPU times (the engine's ``profile``
        ``none``): nothing in such a run reads one (the split's tuner and correction,
        split-join throttling and the ranks' halos do; the CPU's walk reads its own, on
        the CPU's profiling queue). The tuner's and training's measuring engines ask for
        ``batch``.
    prebuild : bool
        Start building every row operation's programs when the engine is made (default);
        False builds each where it is first used (a run that may use none: CC's Afforest).
    columns : {'auto', 'hot', 'none'}
        Renumber each device's share's columns hottest first on that device
        (:mod:`finepar.engine.columns`) for an app that reads a vector by column: ``auto``
        (default) where that vector passes a sixteenth of a GPU's cache (a CPU's whole
        cache) and its hottest columns take most reads, ``hot`` wherever the share can
        be, ``none`` never.
    walk : 'auto', 'none' or int
        Small frontiers of BFS on the CPU's walk, one work-item walking a queue
        (:mod:`finepar.engine.walk`): ``auto`` (default) while the frontier's out-edges
        are below the push device's measured cost of a level over the walk's of an edge,
        handed back by the ski-rental rule; an integer fixes that many out-edges (and
        hands back at once); ``none`` never walks. SSSP's walk is Dijkstra from the
        source (:mod:`finepar.engine.heapwalk`), by the same switch point over the heap's
        out-edges, without a hand-back.
    group_loop : {'auto', 'always', 'none'}
        A small input's form of a run on one device (issue 29): PageRank's and RWR's
        iterations in one work-group's launch (:mod:`finepar.apps.powerloop`); BFS's
        levels and SSSP's rounds in one work-group on a GPU alone
        (:mod:`finepar.engine.grouplevels`); CC's every edge linked with no sampling
        (:meth:`finepar.apps.afforest.Afforest.run_unsampled`). ``auto`` (default) on
        inputs of at most :data:`~finepar.apps.powerloop.GROUP_LOOP_NNZ` entries (on a
        GPU, PageRank: :data:`~finepar.apps.powerloop.GPU_LOOP_NNZ`, BFS:
        :data:`~finepar.apps.bfs.GROUP_NNZ` or :data:`~finepar.apps.bfs.GROUP_DEEP_NNZ` on
        a deep graph, SSSP:
        :data:`~finepar.apps.sssp.GROUP_NNZ`, CC: :data:`~finepar.apps.afforest.WIDE_NNZ`),
        ``always`` on any, ``none`` never.
    shuffles : {'auto', 'local', 'none'}
        How a team of work-items reduces its row and a work-group its step's sums
        (``opencl/skeleton/rowop.cl``, ``SG_SHFL``): ``auto`` (default) in registers with
        PTX's warp shuffles where NVIDIA's compiler builds the programs, else a tree in
        local memory; ``local`` the shuffles' code with each exchange through local memory
        on every device (for tests); ``none`` the tree everywhere.
    """

    offsets: str = "auto"
    gpu_memory: int | None = None
    cpu_memory: int | None = None
    reserve_bytes: int = 0
    chunk_bytes: int | None = None
    profile: str = "auto"
    prebuild: bool = True
    columns: str = "auto"
    walk: str | int = "auto"
    group_loop: str = "auto"
    shuffles: str = "auto"

    def timing(self, roles: tuple, plain_ok: bool) -> str:
        """The profile an engine on ``roles`` uses: ``auto`` is ``none`` (the GPU's plain
        queue, no device times) on the GPU alone where ``plain_ok`` (the static executor,
        no rank's halos), else ``batch``.

        Raises
        ------
        UsageError
            If :attr:`profile` is none of ``auto``, ``batch``, ``launch``.
        """
        from ..errors import UsageError
        if self.profile not in ("auto", "batch", "launch"):
            raise UsageError(f"unknown profile '{self.profile}' (use auto, batch or launch)")
        if self.profile != "auto":
            return self.profile
        return "none" if tuple(roles) == ("gpu",) and plain_ok else "batch"

    @classmethod
    def measuring(cls) -> "EngineOptions":
        """Options of an engine whose steps' device times are read (the tuner's and the
        models' training's measuring runs): the profiling queues (``batch``), whichever
        devices its plan runs on."""
        return cls(profile="batch")

    def small_form(self, nnz: int, limit: int) -> bool:
        """Whether :attr:`group_loop` asks for a small input's form of a run on an input
        of ``nnz`` entries: ``always``, or ``auto`` where ``nnz`` is at most ``limit``
        (each form's own size rule)."""
        return self.group_loop == "always" or (self.group_loop != "none"
                                               and int(nnz) <= int(limit))

    def limit(self, role: str, side: Side) -> int:
        """The bytes FinePar may use on ``role``'s device: the budget given, else 90% of
        the device's memory (the host's real limit for a CPU)."""
        return self.limit_of(role, side.info, side.host_memory)

    def limit_of(self, role: str, info, host_memory: bool) -> int:
        """:meth:`limit` from the device's :class:`~finepar.device.DeviceInfo` and
        whether its buffers live in host memory (no context needed)."""
        from ..device import host_memory_limit
        given = self.gpu_memory if role == "gpu" else self.cpu_memory
        if given is None:
            given = (info.global_mem_bytes if not host_memory or role == "gpu"
                     else host_memory_limit()[0])
            given = int(0.9 * given)
        return int(given)

    def budget(self, role: str, side: Side) -> int:
        """The bytes a share's arrays may take on ``role``'s device (the limit less the
        app's vectors)."""
        return max(self.limit(role, side) - int(self.reserve_bytes), 0)
