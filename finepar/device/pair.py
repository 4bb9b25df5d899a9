"""The device pair a run uses (:class:`DevicePair`): its contexts and queues in shared or
split memory, the kernels' sources and builds (memoised, built side by side, binaries
cached), and opening a pair while the input loads (:func:`open_pair`)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from functools import lru_cache
from importlib import resources
from typing import Any

from ..errors import BuildError, DeviceError
from .discovery import Selection, _cl_device, select_pair
from .info import LaunchConfig
from .handles import Side, cl
from .transfer import share_stages


@lru_cache(maxsize=None)
def kernel_source(name: str) -> str:
    """Text of ``opencl/NAME`` (``skeleton/rowop.cl``, ``apps/bfs/rowop.cl``), or of the
    file ``NAME`` where it is an absolute path (an app outside the package names its
    fragments so).

    Installed, the kernels are package data of ``finepar.opencl`` (found
    through :mod:`importlib.resources`); in a source tree that was not
    installed, the ``opencl/`` folder beside the package is used.
    """
    if os.path.isabs(name):
        with open(name, encoding="utf-8") as f:
            return f.read()
    try:
        return resources.files("finepar.opencl").joinpath(name).read_text(encoding="utf-8")
    except ModuleNotFoundError:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        path = os.path.join(root, "opencl", name)  # the checkout's opencl/
        with open(path, encoding="utf-8") as f:
            return f.read()


class DevicePair:
    """A cpu and a gpu side, in shared or split memory mode.

    Parameters
    ----------
    selection : Selection
        From :func:`select_pair`.
    mode : {'auto', 'shared', 'split'}
        ``auto`` picks ``shared`` when both roles are on one platform and the
        GPU shares host memory (an APU) or the pair is emulated, else ``split``.
    launch_overrides : dict, optional
        ``{"cpu": {...}, "gpu": {...}}`` fields of :class:`LaunchConfig`.

    Raises
    ------
    DeviceError
        If ``shared`` is asked for devices on two platforms, or a context
        cannot be created.
    """

    def __init__(self, selection: Selection, mode: str = "auto",
                 launch_overrides: dict | None = None):
        mod = cl()
        self.selection = selection
        if mode not in ("auto", "shared", "split"):
            raise DeviceError(f"unknown memory mode '{mode}' (use auto, shared or split)")
        if mode == "auto":
            mode = ("shared" if selection.emulated or
                    (selection.same_platform and selection.gpu.host_unified_memory) else "split")
        if mode == "shared" and not selection.emulated and not selection.same_platform:
            raise DeviceError(
                f"shared memory mode needs both devices on one OpenCL platform; "
                f"'{selection.cpu.name}' and '{selection.gpu.name}' are on different "
                f"platforms (use --memory split)")
        self.mode = mode
        props = mod.command_queue_properties.PROFILING_ENABLE
        cpu_dev = _cl_device(selection.cpu)
        gpu_dev = _cl_device(selection.gpu)
        lo = launch_overrides or {}
        try:
            if mode == "shared":
                devs = [cpu_dev] if selection.emulated else [cpu_dev, gpu_dev]
                ctx = mod.Context(devs)
                cq = mod.CommandQueue(ctx, cpu_dev, properties=props)
                gq = mod.CommandQueue(ctx, gpu_dev, properties=props)
                cctx = gctx = ctx
            else:
                cctx = mod.Context([cpu_dev])
                gctx = mod.Context([gpu_dev])
                cq = mod.CommandQueue(cctx, cpu_dev, properties=props)
                gq = mod.CommandQueue(gctx, gpu_dev, properties=props)
        except mod.Error as exc:
            raise DeviceError(f"could not create OpenCL context/queues for "
                              f"{selection.describe()}: {exc}") from exc
        self.cpu = Side("cpu", selection.cpu, cctx, cq,
                        LaunchConfig.for_role("cpu", selection.cpu, lo.get("cpu")),
                        host_memory=True)
        self.gpu = Side("gpu", selection.gpu, gctx, gq,
                        LaunchConfig.for_role("gpu", selection.gpu, lo.get("gpu")),
                        host_memory=selection.host_memory("gpu"))
        self._programs: dict[tuple, Any] = {}
        self._kernels: dict[tuple, Any] = {}
        import threading
        self._build_lock = threading.Lock()
        self._plain: dict[str, Any] = {}  # plain_side's queues, made where first asked
        self._jobs: list = []
        self._guesses: list = []
        #: Every program this pair built (:meth:`program`), in the order they finished:
        #: ``{"role", "sources", "options", "started", "seconds", "binary"}`` with
        #: ``started`` in seconds of :func:`time.perf_counter` and ``binary`` True where a
        #: binary FinePar kept was loaded instead of compiling the source.
        self.build_log: list[dict] = []

    @property
    def emulated(self) -> bool:
        return self.selection.emulated

    @property
    def shared(self) -> bool:
        return self.mode == "shared"

    def side(self, role: str) -> Side:
        return self.cpu if role == "cpu" else self.gpu

    def sides(self) -> tuple[Side, Side]:
        return self.cpu, self.gpu

    def describe(self) -> str:
        return f"{self.selection.describe()}; memory: {self.mode}"

    def program(self, side: Side, source_names: tuple[str, ...], defines: dict[str, Any]):
        """Build (or fetch from the in-memory memo) a program for one side.

        The source is the concatenation of ``opencl/<name>`` files; ``defines``
        become ``-D NAME=VALUE`` options. pyopencl caches binaries on disk keyed
        by source and options; this memo avoids even that lookup per
        (context, device, sources, options). Threads may ask at once: the first builds,
        the others wait for its program (:meth:`finepar.engine.Engine.prebuild` starts
        builds on the pool that later callers pick up).

        Raises
        ------
        BuildError
            With the compiler's log, if the build fails.
        """
        from concurrent.futures import Future
        opts = build_options(defines)
        key = (id(side.context), side.info.address, source_names, opts)
        with self._build_lock:  # each program is built once, by the first thread to ask
            prg = self._programs.get(key)
            if prg is None:
                prg = self._programs[key] = Future()
                mine = True
            else:
                mine = False
        if not mine:
            return prg.result() if isinstance(prg, Future) else prg
        try:
            built = self._build(side, source_names, opts)
        except BaseException as exc:
            with self._build_lock:
                del self._programs[key]  # the next caller builds again and sees the error
            prg.set_exception(exc)
            raise
        self._programs[key] = built
        prg.set_result(built)
        return built

    def start_build(self, fn, *args) -> None:
        """Run ``fn(*args)`` (builds of programs needed later) on the build threads
        (:func:`finepar.parallel.builds`); :meth:`settle` waits for it. Its error, if any,
        stays in its future: the program is built again, and the error raised, where it
        is used (:meth:`program` forgets a failed build)."""
        from ..parallel import builds
        job = builds().submit(fn, *args)
        with self._build_lock:
            self._jobs = [j for j in self._jobs if not j.done()] + [job]

    def guess_build(self, fn, *args) -> None:
        """Queue ``fn(*args)``, the build of a program the run will most likely need, on
        the one guessing thread (:func:`finepar.parallel.guesses`); :meth:`drop_guesses`
        cancels those not yet begun, :meth:`settle` waits for the one building."""
        from ..parallel import guesses
        job = guesses().submit(fn, *args)
        with self._build_lock:
            self._jobs = [j for j in self._jobs if not j.done()] + [job]
            self._guesses = [j for j in self._guesses if not j.done()] + [job]

    def drop_guesses(self) -> None:
        """Cancel the guessed builds not yet begun (the programs needed are known now)."""
        with self._build_lock:
            guessed, self._guesses = self._guesses, []
        for job in guessed:
            job.cancel()

    def settle(self) -> None:
        """Wait for the builds started ahead of their use (queued or in flight), so none
        competes with a measured or timed step for the host's cores; a failed one is left
        to its first use."""
        from concurrent.futures import Future, wait
        with self._build_lock:
            jobs = list(self._jobs)
        wait(jobs)
        with self._build_lock:
            pending = [p for p in self._programs.values() if isinstance(p, Future)]
        wait(pending)

    def _build(self, side: Side, source_names: tuple[str, ...], opts: tuple):
        import time
        mod = cl()
        t0 = time.perf_counter()
        src = "\n".join(kernel_source(n) for n in source_names)
        dev = _cl_device(side.info)
        prg = _cached_binary(mod, side, dev, src, opts)
        binary = prg is not None
        if prg is None:
            try:
                prg = mod.Program(side.context, src).build(options=list(opts), devices=[dev])
            except mod.RuntimeError as exc:
                raise BuildError(f"building {'+'.join(source_names)} with "
                                 f"{' '.join(opts)} for {side.info.name} failed",
                                 str(exc)) from exc
            _store_binary(mod, side, prg, src, opts)
        self.build_log.append({"role": side.role, "sources": list(source_names),
                               "options": list(opts), "started": t0,
                               "seconds": time.perf_counter() - t0, "binary": binary})
        return prg

    def kernel(self, side: Side, source_names: tuple[str, ...], defines: dict[str, Any],
               name: str):
        """A kernel object of :meth:`program`, memoised per (program, name).

        One object serves every launch: arguments are captured at enqueue time.
        """
        mod = cl()
        prg = self.program(side, source_names, defines)
        key = (id(prg), name)
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = mod.Kernel(prg, name)
        return k

    def finish(self) -> None:
        self.cpu.queue.finish()
        if self.gpu.queue is not self.cpu.queue:
            self.gpu.queue.finish()

    def plain_side(self, role: str) -> Side:
        """``role``'s side with a queue of its own that keeps no profiling times (made once
        a pair): NVIDIA's enqueue on the H200 machine's host took 7.2-7.4 us there against
        11-15 us on a profiling queue (``benchmarks/probe_enqueue.py``, 2026-11-29). Its
        commands are ordered with the profiling queue's only through events or a finish.
        It shares the side's page-locked staging chunks (:mod:`finepar.device.transfer`)."""
        from dataclasses import replace
        side = self.side(role)
        with self._build_lock:
            queue = self._plain.get(role)
            if queue is None:
                queue = self._plain[role] = cl().CommandQueue(side.context, side.queue.device)
        plain = replace(side, queue=queue)  # the side as it is now, on the plain queue
        share_stages(side, plain)
        return plain


class PlainQueues:
    """A pair as an engine on the GPU alone that needs no device times sees it
    (``EngineOptions.profile`` ``auto``): the GPU side enqueues on its plain queue
    (:meth:`DevicePair.plain_side`); the CPU side (PoCL, whose enqueue costs the same on
    either queue, and whose walk of small frontiers learns its cost an edge from its
    launches' events) and everything else are the pair's, attributes set here included.
    Made after the pair's own queues are finished, so the commands enqueued there before
    (a cached share's uploads) are done."""

    #: The roles whose commands go to a plain queue (the others keep the pair's).
    ROLES = ("gpu",)

    def __init__(self, pair: DevicePair):
        pair.finish()
        object.__setattr__(self, "_pair", pair)
        for role in ("cpu", "gpu"):
            object.__setattr__(self, role, pair.plain_side(role) if role in self.ROLES
                               else pair.side(role))

    def __getattr__(self, name: str):
        if name == "_pair":  # not made yet (a copy): no pair to ask
            raise AttributeError(name)
        return getattr(self._pair, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self._pair, name, value)  # what a run learns stays with the pair

    def side(self, role: str) -> Side:
        return self.cpu if role == "cpu" else self.gpu

    def sides(self) -> tuple[Side, Side]:
        return self.cpu, self.gpu

    def finish(self) -> None:
        self.cpu.queue.finish()
        self.gpu.queue.finish()


def build_options(defines: dict[str, Any]) -> tuple[str, ...]:
    """The compiler options of ``defines``, sorted: ``-DNAME=VALUE``, ``-DNAME`` for True;
    False and None are left out."""
    return tuple(f"-D{k}" if v is True else f"-D{k}={v}"
                 for k, v in sorted(defines.items()) if v is not False and v is not None)


def driver_caches_builds(side: Side) -> bool:
    """Whether the device's driver keeps its own builds across processes, keyed by source
    and options (``pyopencl.characterize.has_src_build_cache``: PoCL and NVIDIA's CUDA
    platform do). FinePar keeps binaries only for the other drivers: asking PoCL for a
    program's binaries compiles every kernel of the program at once (4.4 s of a cold BFS
    run's set-up on the 2-core box), and its own cache already serves the next process."""
    from pyopencl.characterize import has_src_build_cache
    return bool(has_src_build_cache(_cl_device(side.info)))


def _binary_path(side: Side, src: str, opts: tuple):
    """Where the program binary of ``src`` built with ``opts`` for ``side``'s device is kept:
    the prepared-graph cache's ``programs/`` folder, keyed by source, options, device and
    driver (None when ``$FINEPAR_NO_CACHE`` is set or the driver keeps its builds,
    :func:`driver_caches_builds`)."""
    if os.environ.get("FINEPAR_NO_CACHE") or driver_caches_builds(side):
        return None
    from ..prepcache import cache_root
    i = side.info
    ident = "\0".join((src, " ".join(opts), i.platform, i.name, i.vendor, i.version, i.driver))
    return cache_root() / "programs" / (hashlib.sha256(ident.encode()).hexdigest()[:40] + ".bin")


def _cached_binary(mod, side: Side, dev, src: str, opts: tuple):
    """The program built from a kept binary, or None (none kept, or the driver refused it:
    then the source is built and the binary replaced)."""
    path = _binary_path(side, src, opts)
    if path is None or not path.is_file():
        return None
    try:
        return mod.Program(side.context, [dev], [path.read_bytes()]).build(options=list(opts))
    except (mod.Error, OSError, ValueError):
        return None


def _store_binary(mod, side: Side, prg, src: str, opts: tuple) -> None:
    """Keep a built program's binary for later processes (atomically; a cache that cannot
    be written costs the next process a build, nothing else)."""
    path = _binary_path(side, src, opts)
    if path is None:
        return
    try:
        (binary,) = prg.get_info(mod.program_info.BINARIES)
        if binary:
            from ..files import atomic_write_bytes
            atomic_write_bytes(path, bytes(binary))
    except (mod.Error, OSError, ValueError):
        pass


def make_pair(*, cpu: str | None = None, gpu: str | None = None, memory: str = "auto",
              config: dict | None = None, keep: bool = True) -> DevicePair:
    """Select devices and open the pair (see :func:`select_pair`), or the pair this process
    opened before for the same choice (:func:`open_pair`; ``keep=False``: a new one, not
    kept)."""
    return open_pair(cpu=cpu, gpu=gpu, memory=memory, config=config, keep=keep).result()


class OpeningPair:
    """A device pair whose devices are chosen and whose contexts open on a thread of
    their own (:func:`open_pair`), so the host reads the input meanwhile.

    Attributes
    ----------
    selection : Selection
        The devices chosen (what :func:`memory_check` needs).
    """

    def __init__(self, selection, make=None, pair: DevicePair | None = None):
        import threading
        self.selection, self._pair, self._error = selection, pair, None
        self._thread = None
        if pair is None:
            def opening() -> None:
                try:
                    self._pair = make()
                except BaseException as exc:  # raised by result(), in the caller's thread
                    self._error = exc
            self._thread = threading.Thread(target=opening, name="finepar-open", daemon=True)
            self._thread.start()

    def wait(self) -> None:
        """Wait for the contexts to open (or fail), raising nothing."""
        if self._thread is not None:
            self._thread.join()

    def result(self) -> DevicePair:
        """The open pair (waiting for its contexts).

        Raises
        ------
        DeviceError
            If a context or queue could not be made.
        """
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            raise self._error
        return self._pair


def open_pair(*, cpu: str | None = None, gpu: str | None = None, memory: str = "auto",
              config: dict | None = None, keep: bool = True) -> OpeningPair:
    """Choose the devices now and open their contexts on a thread (:class:`OpeningPair`);
    the pair opened before for the same arguments in a resident process, or for the same
    devices, memory mode and launch overrides in any other (its programs already built;
    :func:`forget_pairs` drops them). ``keep=False`` opens a new pair and keeps it nowhere
    (an MPI rank's run: what a pair learns on one rank's rows, such as its walks' measured
    costs, must not steer that rank's next run apart from the others').

    Raises
    ------
    DeviceError
        No OpenCL device, or a selector that matches nothing (at once); a context that
        cannot be made (from :meth:`OpeningPair.result`).
    """
    import json
    from . import resident
    config = config or {}
    key = json.dumps([cpu, gpu, memory, config], sort_keys=True, default=str)
    store = resident.current() if keep else None
    held = store.get("pair", key) if store is not None else None
    if held is not None:  # a resident process opens them once
        return OpeningPair(held.selection, pair=held)
    sel = select_pair(cpu, gpu, config=config)
    mode = memory if memory != "auto" else config.get("memory", "auto")
    if not keep:
        return OpeningPair(sel, lambda: DevicePair(sel, mode,
                                                   launch_overrides=config.get("launch")))
    opened_key = _opened_key(sel, mode, config.get("launch")) if store is None else None
    if store is None:
        with _OPENED_LOCK:
            held = _OPENED.get(opened_key)
            if held is not None:
                _OPENED.move_to_end(opened_key)
                return OpeningPair(sel, pair=held)

    def make() -> DevicePair:
        made = DevicePair(sel, mode, launch_overrides=config.get("launch"))
        return _keep_opened(opened_key, made) if store is None else store.put("pair", key, made)
    return OpeningPair(sel, make)


#: The pairs this process opened (outside a resident process), by devices, memory mode and
#: launch overrides, the most recent last: a library's second call reuses the contexts and
#: the programs built for the first, as a NetworkX backend's calls do.
_OPENED: "OrderedDict[str, DevicePair]" = OrderedDict()
_OPENED_LOCK = threading.Lock()
#: Pairs kept at most; the least recently used is dropped past it (its contexts close when
#: no engine holds them).
KEEP_PAIRS = 4


def _opened_key(sel: Selection, mode: str, launch: dict | None) -> str:
    import json
    chosen = sel.to_dict()  # every fact of both devices (a config may override the caches)
    chosen.pop("how")
    return json.dumps([chosen, mode, launch or {}], sort_keys=True, default=str)


def _keep_opened(key: str, pair: DevicePair) -> DevicePair:
    """Keep ``pair`` for the process's later calls; a pair another thread opened first for
    the same key wins, so both callers share one."""
    with _OPENED_LOCK:
        pair = _OPENED.setdefault(key, pair)
        _OPENED.move_to_end(key)
        while len(_OPENED) > KEEP_PAIRS:
            _OPENED.popitem(last=False)
    return pair


def forget_pairs() -> int:
    """Drop the pairs this process kept (:func:`open_pair`), so the next call opens its
    devices afresh (their contexts close once no engine holds them). Returns how many."""
    with _OPENED_LOCK:
        count = len(_OPENED)
        _OPENED.clear()
    return count
