"""The handles every device module shares: :func:`cl` (the one import of
:mod:`pyopencl`, after :func:`~finepar.device.icd.prepare_icd`), a role's device, context and
queue (:class:`Side`) and the host's memory limit."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .icd import prepare_icd

if TYPE_CHECKING:  # annotations only
    from .info import DeviceInfo, LaunchConfig


def cl():
    """Return the :mod:`pyopencl` module, importing it after :func:`prepare_icd`."""
    if "pyopencl" not in sys.modules:
        prepare_icd()
    import pyopencl  # noqa: PLC0415  (deliberately late)
    _memoise_invokers()
    return pyopencl


def _memoise_invokers() -> None:
    """Keep pyopencl's generated kernel invokers in memory for the process.

    Every ``pyopencl.Kernel`` gets its argument-setting and enqueue functions from
    ``pyopencl.invoker.generate_enqueue_and_set_args``, whose cache keeps only their
    source on disk and compiles it again for each kernel object: about 3 ms each, a
    second of a run's set-up for the few hundred kernel objects FinePar's launches hold
    (measured on the H100 machine, 2026-11-25). The functions depend only on the key
    (kernel name, argument counts and types), so one compiled pair serves every kernel
    with that key."""
    import pyopencl.invoker as inv  # noqa: PLC0415
    if getattr(inv.generate_enqueue_and_set_args, "_finepar_memo", False):
        return
    plain, memo = inv.generate_enqueue_and_set_args, {}

    def generate(function_name, num_passed_args, num_cl_args, arg_types,
                 work_around_arg_count_bug, warn_about_arg_count_bug, devs):
        key = (function_name, num_passed_args, num_cl_args,
               None if arg_types is None else tuple(arg_types),
               work_around_arg_count_bug, warn_about_arg_count_bug)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = plain(function_name, num_passed_args, num_cl_args, arg_types,
                                    work_around_arg_count_bug, warn_about_arg_count_bug, devs)
        return hit
    generate._finepar_memo = True
    inv.generate_enqueue_and_set_args = generate


@dataclass
class Side:
    """One role's device, context and queue.

    Attributes
    ----------
    role : {'cpu', 'gpu'}
    info : DeviceInfo
    context : pyopencl.Context
    queue : pyopencl.CommandQueue
        In-order, with profiling enabled.
    launch : LaunchConfig
    host_memory : bool
        True if buffers of this side live in host memory (zero-copy possible).
    """

    role: str
    info: DeviceInfo
    context: Any
    queue: Any
    launch: LaunchConfig
    host_memory: bool


def host_memory_limit() -> tuple[int, str]:
    """The host memory a process may use, and where that figure came from.

    The cgroup's ``memory.max`` where one is set (containers), else the larger of
    MemTotal and what ``FINEPAR_HOST_MEMORY`` says (bytes). On machines whose
    MemTotal starts small and grows as memory is used (the lent GPU machines),
    PoCL reports only a few GiB of global memory: FinePar's CPU side sizes its
    chunks from this figure instead, and ``--cpu-memory`` overrides it.

    Returns
    -------
    (int, str)
        Bytes, and ``cgroup``, ``MemTotal`` or ``FINEPAR_HOST_MEMORY``.
    """
    env = os.environ.get("FINEPAR_HOST_MEMORY")
    if env and env.isdigit():
        return int(env), "FINEPAR_HOST_MEMORY"
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return int(text), "cgroup"
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        pages = 0
    return int(pages), "MemTotal"
