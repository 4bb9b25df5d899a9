"""OpenCL runtime: device discovery, roles, contexts, queues and the program cache.

This is the bottom layer of ``DESIGN.md`` §2 ("runtime"). It is the only module
that imports :mod:`pyopencl`, and it does so lazily through :func:`cl`, after
:func:`prepare_icd` has had the chance to make an unregistered NVIDIA OpenCL
driver visible to the ICD loader.

Roles
-----
Every pair has a ``cpu`` role and a ``gpu`` role. With a GPU present the roles
are two different devices (one platform on an APU, two platforms on a discrete
machine). With PoCL alone the ``gpu`` role is played by the same CPU device
through a second context (split memory) or a second queue (shared memory), and
the pair is reported as *emulated*.

Memory modes
------------
``shared``: one context holding both devices (or the one emulating device),
zero-copy buffers, nothing crosses a bus (FinePar TKDE §2.1, the APU case).
``split``: one context per device; each device holds its share of the matrix,
and per iteration only the halo of vector entries the other side reads moves.
"""

from __future__ import annotations

import ctypes.util
import glob
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, asdict
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from .errors import BuildError, DeviceError

#: Where to look for NVIDIA's OpenCL driver when the ICD loader was not told about it.
NVIDIA_LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib",
    "/usr/local/cuda/lib64",
    "/usr/local/cuda/compat",
    "/run/opengl-driver/lib",
)
NVIDIA_LIBRARY = "libnvidia-opencl.so.1"
SYSTEM_VENDORS_DIR = "/etc/OpenCL/vendors"

#: Known last-level (L2) cache sizes in bytes for GPUs whose driver reports a wrong
#: ``CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`` (NVIDIA reports a few MiB for tens of MB).
#: Matched by substring of the device name; a config file's ``cache_bytes`` wins.
KNOWN_L2_BYTES = {
    "H200": 60 * 1024 * 1024,
    "H100": 50 * 1024 * 1024,
    "A100": 40 * 1024 * 1024,
    "L40": 96 * 1024 * 1024,
    "RTX 4090": 72 * 1024 * 1024,
    "V100": 6 * 1024 * 1024,
}


# --------------------------------------------------------------------------------------
# ICD preparation (before pyopencl is imported)
# --------------------------------------------------------------------------------------


@dataclass
class IcdReport:
    """What :func:`prepare_icd` found and did.

    Attributes
    ----------
    nvidia_library : str or None
        Absolute path of ``libnvidia-opencl.so.1`` if found on disk.
    registered : bool
        True if a system ICD file already names the NVIDIA driver.
    vendors_dir : str or None
        The ``OCL_ICD_VENDORS`` directory FinePar created for this process, if any.
    notes : list of str
        Human-readable lines for ``finepar devices``.
    """

    nvidia_library: str | None = None
    registered: bool = False
    vendors_dir: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def fix_command(self) -> str | None:
        """The shell command that registers the NVIDIA driver system-wide, or None."""
        if self.nvidia_library and not self.registered:
            return (f"mkdir -p {SYSTEM_VENDORS_DIR} && "
                    f"echo {self.nvidia_library} > {SYSTEM_VENDORS_DIR}/nvidia.icd")
        return None


def _icd_libraries(vendors: str) -> dict[str, str]:
    """Map ``*.icd`` file name -> library line, for a vendors directory or single file."""
    out: dict[str, str] = {}
    paths: list[str] = []
    if os.path.isdir(vendors):
        paths = sorted(glob.glob(os.path.join(vendors, "*.icd")))
    elif os.path.isfile(vendors):
        paths = [vendors]
    for p in paths:
        try:
            with open(p, encoding="utf-8", errors="replace") as f:
                line = f.read().strip()
        except OSError:
            continue
        if line:
            out[os.path.basename(p)] = line
    return out


def find_nvidia_opencl(extra_dirs: tuple[str, ...] = ()) -> str | None:
    """Find NVIDIA's OpenCL driver library on disk.

    Looks in ``extra_dirs``, ``LD_LIBRARY_PATH``, the dynamic linker cache
    (``ldconfig -p``) and the usual driver folders (:data:`NVIDIA_LIBRARY_DIRS`).

    Returns
    -------
    str or None
        Absolute path of ``libnvidia-opencl.so.1`` (or a versioned sibling), or None.
    """
    def in_dirs(dirs):
        for d in dirs:
            exact = os.path.join(d, NVIDIA_LIBRARY)
            if os.path.exists(exact):
                return exact
            found = sorted(glob.glob(os.path.join(d, "libnvidia-opencl.so.*")))
            if found:
                return found[0]
        return None

    # the dynamic loader's own order: LD_LIBRARY_PATH, then its cache, then default folders
    hit = in_dirs(list(extra_dirs) + [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":")
                                      if d])
    if hit:
        return hit
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                             timeout=5).stdout
        for line in out.splitlines():
            if "libnvidia-opencl.so" in line and "=>" in line:
                path = line.split("=>", 1)[1].strip()
                if os.path.exists(path):
                    return path
    except (OSError, subprocess.SubprocessError):
        pass
    hit = in_dirs(NVIDIA_LIBRARY_DIRS)
    if hit:
        return hit
    name = ctypes.util.find_library("nvidia-opencl")
    if name and os.path.isabs(name) and os.path.exists(name):
        return name
    return None


_ICD_REPORT: IcdReport | None = None


def prepare_icd() -> IcdReport:
    """Make an unregistered NVIDIA OpenCL driver visible to the ICD loader.

    Containers often ship ``libnvidia-opencl.so.1`` without
    ``/etc/OpenCL/vendors/nvidia.icd``; the ICD loader then shows no NVIDIA
    platform. When that is the case, and ``pyopencl`` is not imported yet, this
    writes a private vendors folder holding the system's ``.icd`` files plus one
    for the NVIDIA driver, and points ``OCL_ICD_VENDORS`` at it for this process
    (and its children). Set ``FINEPAR_NO_ICD_FIX=1`` to disable.

    Returns
    -------
    IcdReport
        What was found and done; cached for the life of the process.
    """
    global _ICD_REPORT
    if _ICD_REPORT is not None:
        return _ICD_REPORT
    rep = IcdReport()
    vendors = os.environ.get("OCL_ICD_VENDORS") or SYSTEM_VENDORS_DIR
    libs = _icd_libraries(vendors)
    rep.registered = any("nvidia" in lib.lower() for lib in libs.values())
    rep.nvidia_library = find_nvidia_opencl()
    if rep.registered:
        rep.notes.append(f"NVIDIA OpenCL driver registered in {vendors}")
    elif rep.nvidia_library is None:
        pass
    elif os.environ.get("FINEPAR_NO_ICD_FIX"):
        rep.notes.append(f"NVIDIA OpenCL driver {rep.nvidia_library} is not registered "
                         f"(FINEPAR_NO_ICD_FIX set); to fix: {rep.fix_command}")
    elif "pyopencl" in sys.modules:
        rep.notes.append(f"NVIDIA OpenCL driver {rep.nvidia_library} is not registered and "
                         f"pyopencl was imported before FinePar could register it; "
                         f"to fix: {rep.fix_command}")
    else:
        entries = dict(libs)
        entries["finepar-nvidia.icd"] = rep.nvidia_library
        digest = hashlib.sha1(repr(sorted(entries.items())).encode()).hexdigest()[:12]
        folder = os.path.join(tempfile.gettempdir(), f"finepar-icd-{os.getuid()}-{digest}")
        try:
            os.makedirs(folder, exist_ok=True)
            for name, lib in entries.items():
                path = os.path.join(folder, name)
                tmp = path + f".{os.getpid()}.tmp"
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(lib + "\n")
                os.replace(tmp, path)
            os.environ["OCL_ICD_VENDORS"] = folder
            rep.vendors_dir = folder
            rep.notes.append(f"NVIDIA OpenCL driver {rep.nvidia_library} was not registered as "
                             f"an ICD; registered it for this process (OCL_ICD_VENDORS={folder}). "
                             f"System-wide fix: {rep.fix_command}")
        except OSError as exc:
            rep.notes.append(f"NVIDIA OpenCL driver {rep.nvidia_library} is not registered and "
                             f"FinePar could not register it ({exc}); to fix: {rep.fix_command}")
    _ICD_REPORT = rep
    return rep


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


# --------------------------------------------------------------------------------------
# Devices
# --------------------------------------------------------------------------------------


@dataclass
class DeviceInfo:
    """One OpenCL device as FinePar sees it.

    Attributes
    ----------
    platform_index, device_index : int
        Position in ``pyopencl.get_platforms()`` and in that platform's devices.
    platform, name, vendor, version, driver : str
    kind : {'cpu', 'gpu', 'accelerator', 'other'}
        The device type OpenCL reports.
    compute_units : int
    clock_mhz : int
    global_mem_bytes, max_alloc_bytes, local_mem_bytes : int
        Device memory, largest single allocation, and local (shared) memory, in bytes.
    cache_bytes : int
        Last-level cache size in bytes used for planning (after overrides).
    cache_bytes_reported : int
        ``CL_DEVICE_GLOBAL_MEM_CACHE_SIZE`` as the driver reports it.
    cache_source : str
        Where ``cache_bytes`` came from: ``driver``, ``known``, or ``config``.
    cacheline_bytes : int
    host_unified_memory : bool
        True if the device shares physical memory with the host (CPU, APU).
    max_work_group_size : int
    fp64 : bool
    int64_atomics : bool
        ``cl_khr_int64_base_atomics``: frontier lists need it (a device without it
        never runs push steps).
    """

    platform_index: int
    device_index: int
    platform: str
    name: str
    vendor: str
    version: str
    driver: str
    kind: str
    compute_units: int
    clock_mhz: int
    global_mem_bytes: int
    max_alloc_bytes: int
    local_mem_bytes: int
    cache_bytes: int
    cache_bytes_reported: int
    cache_source: str
    cacheline_bytes: int
    host_unified_memory: bool
    max_work_group_size: int
    fp64: bool
    int64_atomics: bool = True

    @property
    def key(self) -> str:
        """Stable identifier ``platform|device`` used to match models and configs."""
        return f"{self.platform.strip()}|{self.name.strip()}"

    @property
    def address(self) -> str:
        """``P:D`` index address as accepted by device selectors."""
        return f"{self.platform_index}:{self.device_index}"

    @property
    def is_pocl(self) -> bool:
        return "portable computing language" in self.platform.lower() or "pocl" in self.version.lower()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["key"] = self.key
        d["address"] = self.address
        return d


def _device_kind(cl_mod, dev) -> str:
    t = dev.type
    if t & cl_mod.device_type.GPU:
        return "gpu"
    if t & cl_mod.device_type.CPU:
        return "cpu"
    if t & cl_mod.device_type.ACCELERATOR:
        return "accelerator"
    return "other"


def _describe(cl_mod, pi: int, di: int, plat, dev, cache_override: int | None) -> DeviceInfo:
    reported = int(getattr(dev, "global_mem_cache_size", 0) or 0)
    cache, source = reported, "driver"
    for pattern, size in KNOWN_L2_BYTES.items():
        if pattern.lower() in dev.name.lower() and size > reported:
            cache, source = size, "known"
            break
    if cache_override:
        cache, source = int(cache_override), "config"
    try:
        fp64 = "cl_khr_fp64" in dev.extensions or bool(dev.double_fp_config)
    except Exception:  # noqa: BLE001 - some drivers raise on double_fp_config
        fp64 = "cl_khr_fp64" in dev.extensions
    return DeviceInfo(
        platform_index=pi, device_index=di, platform=plat.name.strip(), name=dev.name.strip(),
        vendor=dev.vendor.strip(), version=dev.version.strip(),
        driver=dev.driver_version.strip(), kind=_device_kind(cl_mod, dev),
        compute_units=int(dev.max_compute_units), clock_mhz=int(dev.max_clock_frequency),
        global_mem_bytes=int(dev.global_mem_size), max_alloc_bytes=int(dev.max_mem_alloc_size),
        local_mem_bytes=int(dev.local_mem_size), cache_bytes=int(cache),
        cache_bytes_reported=reported, cache_source=source,
        cacheline_bytes=int(getattr(dev, "global_mem_cacheline_size", 64) or 64),
        host_unified_memory=bool(dev.host_unified_memory),
        max_work_group_size=int(dev.max_work_group_size), fp64=fp64,
        int64_atomics="cl_khr_int64_base_atomics" in dev.extensions)


def _platforms():
    mod = cl()
    try:
        return mod, mod.get_platforms()
    except mod.LogicError:  # no platform at all (PLATFORM_NOT_FOUND_KHR)
        return mod, []


def list_devices(cache_overrides: dict[str, int] | None = None) -> list[DeviceInfo]:
    """Every OpenCL device on every platform the ICD loader finds.

    Parameters
    ----------
    cache_overrides : dict, optional
        Maps a device-name substring to a cache size in bytes (from configs).

    Returns
    -------
    list of DeviceInfo
    """
    mod, plats = _platforms()
    out = []
    for pi, plat in enumerate(plats):
        try:
            devs = plat.get_devices()
        except mod.Error:
            continue
        for di, dev in enumerate(devs):
            override = None
            for pattern, size in (cache_overrides or {}).items():
                if pattern.lower() in dev.name.lower():
                    override = size
            out.append(_describe(mod, pi, di, plat, dev, override))
    return out


def _cl_device(info: DeviceInfo):
    mod = cl()
    return mod.get_platforms()[info.platform_index].get_devices()[info.device_index]


def match_device(selector: str, devices: list[DeviceInfo]) -> DeviceInfo:
    """Resolve a device selector.

    Parameters
    ----------
    selector : str
        ``"P:D"`` (platform and device index), ``"P"`` (first device of
        platform P), or a case-insensitive substring of ``"platform|device"``
        (e.g. ``"nvidia"``, ``"pocl"``, ``"H100"``).
    devices : list of DeviceInfo

    Raises
    ------
    DeviceError
        If nothing matches.
    """
    sel = selector.strip()
    m = re.fullmatch(r"(\d+)(?::(\d+))?", sel)
    if m:
        pi, di = int(m.group(1)), int(m.group(2) or 0)
        for d in devices:
            if d.platform_index == pi and d.device_index == di:
                return d
        raise DeviceError(f"no OpenCL device at {pi}:{di} "
                          f"(run 'finepar devices' to list them)")
    for d in devices:
        if sel.lower() in d.key.lower():
            return d
    raise DeviceError(f"no OpenCL device matches '{sel}' (run 'finepar devices' to list them)")


@dataclass
class Selection:
    """The two devices chosen for the cpu and gpu roles.

    Attributes
    ----------
    cpu, gpu : DeviceInfo
        ``gpu`` is the same device as ``cpu`` when the pair is emulated.
    emulated : bool
        True when no GPU was found or chosen and a second PoCL context plays the GPU.
    how : dict
        For each role, where the choice came from (``flag``, ``environment``,
        ``config``, ``auto``).
    """

    cpu: DeviceInfo
    gpu: DeviceInfo
    emulated: bool
    how: dict[str, str]

    @property
    def same_platform(self) -> bool:
        return self.cpu.platform_index == self.gpu.platform_index

    def describe(self) -> str:
        """One line naming the pair, saying plainly when it is emulated."""
        if self.emulated:
            return (f"cpu: {self.cpu.name} [{self.cpu.platform}]; gpu role: EMULATED by a "
                    f"second context on the same CPU device (no GPU in use)")
        return (f"cpu: {self.cpu.name} [{self.cpu.platform}]; "
                f"gpu: {self.gpu.name} [{self.gpu.platform}]")

    def to_dict(self) -> dict[str, Any]:
        return {"cpu": self.cpu.to_dict(), "gpu": self.gpu.to_dict(),
                "emulated": self.emulated, "how": dict(self.how)}

    def host_memory(self, role: str) -> bool:
        """Whether buffers of ``role``'s device live in host memory (the CPU's always; the
        GPU's on an APU or an emulated pair)."""
        return role == "cpu" or self.emulated or self.gpu.host_unified_memory


def select_pair(cpu: str | None = None, gpu: str | None = None, *,
                config: dict | None = None, devices: list[DeviceInfo] | None = None) -> Selection:
    """Choose the devices for the cpu and gpu roles.

    Precedence for each role: the explicit argument (CLI flag), then the
    environment (``FINEPAR_CPU_DEVICE``, ``FINEPAR_GPU_DEVICE``), then the
    config's ``[devices]`` table, then automatic choice: the first CPU device
    (PoCL preferred) and the first GPU device (the one with most compute units).
    ``gpu = "emulate"`` forces the emulated pair.

    Raises
    ------
    DeviceError
        If no OpenCL device exists, or a selector matches nothing, or no CPU
        device can be found for the cpu role.
    """
    config = config or {}
    devices = list_devices(config.get("cache_overrides")) if devices is None else devices
    if not devices:
        rep = prepare_icd()
        hint = (" Install PoCL ('pip install pocl-binary-distribution' or 'pip install "
                "finepar[pocl]')")
        if rep.fix_command:
            hint += f", or register the NVIDIA driver: {rep.fix_command}"
        raise DeviceError("no OpenCL platform found." + hint + ".")
    how: dict[str, str] = {}

    def pick(role: str, explicit: str | None) -> DeviceInfo | None:
        for source, value in (("flag", explicit),
                              ("environment", os.environ.get(f"FINEPAR_{role.upper()}_DEVICE")),
                              ("config", (config.get("devices") or {}).get(role))):
            if value:
                how[role] = source
                if role == "gpu" and str(value).lower() == "emulate":
                    return None
                return match_device(str(value), devices)
        how[role] = "auto"
        if role == "cpu":
            cpus = [d for d in devices if d.kind == "cpu"]
            cpus.sort(key=lambda d: (not d.is_pocl, d.platform_index))
            return cpus[0] if cpus else None
        gpus = [d for d in devices if d.kind == "gpu"]
        gpus.sort(key=lambda d: (-d.compute_units, d.platform_index))
        return gpus[0] if gpus else None

    cpu_dev = pick("cpu", cpu)
    if cpu_dev is None:
        raise DeviceError("no CPU OpenCL device found for the cpu role; install PoCL "
                          "('pip install pocl-binary-distribution') or name one with --cpu")
    gpu_dev = pick("gpu", gpu)
    emulated = gpu_dev is None or gpu_dev.key == cpu_dev.key and gpu_dev.address == cpu_dev.address
    if gpu_dev is None:
        gpu_dev = cpu_dev
        if how.get("gpu") == "auto":
            how["gpu"] = "auto (no GPU found: emulated)"
    return Selection(cpu=cpu_dev, gpu=gpu_dev, emulated=emulated, how=how)


# --------------------------------------------------------------------------------------
# Launch geometry per role
# --------------------------------------------------------------------------------------


@dataclass
class LaunchConfig:
    """Work-group geometry of one side's kernels.

    Attributes
    ----------
    wg_item : int
        Work-group size of the work-item-per-row mapping.
    wg_team, lanes : int
        Work-group size and work-items per row (a sub-group-sized team) of the
        team mapping; ``lanes`` divides ``wg_team`` and is a power of two.
    wg_group : int
        Work-group size of the work-group-per-row mapping (power of two).
    wg_stream : int
        Work-group size of the CSR-adaptive (stream) mapping (power of two).
    block_nnz : int
        Entries a stream work-group stages in local memory (its row blocks' size).
    resident_groups : int
        Work-groups per compute unit of a persistent (queue) launch.
    """

    wg_item: int = 128
    wg_team: int = 128
    lanes: int = 32
    wg_group: int = 256
    wg_stream: int = 256
    block_nnz: int = 1024
    resident_groups: int = 8

    @classmethod
    def for_role(cls, role: str, info: DeviceInfo, overrides: dict | None = None) -> "LaunchConfig":
        """Defaults: GPU-shaped geometry for the gpu role (also when emulated, so the
        same code paths run everywhere), CPU-shaped for the cpu role."""
        if role == "gpu":
            cfg = cls(wg_item=128, wg_team=128, lanes=32, wg_group=256, wg_stream=256,
                      block_nnz=1024, resident_groups=8)
        else:
            cfg = cls(wg_item=64, wg_team=64, lanes=8, wg_group=64, wg_stream=64,
                      block_nnz=512, resident_groups=2)
        limit = max(1, info.max_work_group_size)
        for k, v in (overrides or {}).items():
            if hasattr(cfg, k):
                setattr(cfg, k, int(v))
        cfg.wg_item = min(cfg.wg_item, limit)
        cfg.wg_team = min(cfg.wg_team, limit)
        cfg.wg_group = min(cfg.wg_group, limit)
        cfg.wg_stream = min(cfg.wg_stream, limit)
        cfg.lanes = min(cfg.lanes, cfg.wg_team)
        # local memory: the staged block plus the group's reduction scratch, 4 bytes each
        room = max(info.local_mem_bytes // 4 - 3 * cfg.wg_stream, 2 * cfg.wg_stream)
        cfg.block_nnz = max(2, min(cfg.block_nnz, room))
        for name in ("wg_team", "lanes", "wg_group", "wg_stream"):
            v = getattr(cfg, name)
            if v & (v - 1):
                raise DeviceError(f"{name}={v} must be a power of two")
        return cfg


# --------------------------------------------------------------------------------------
# Contexts, queues, programs
# --------------------------------------------------------------------------------------


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
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "opencl", name)
        with open(path, encoding="utf-8") as f:
            return f.read()


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
        from .parallel import builds
        job = builds().submit(fn, *args)
        with self._build_lock:
            self._jobs = [j for j in self._jobs if not j.done()] + [job]

    def guess_build(self, fn, *args) -> None:
        """Queue ``fn(*args)``, the build of a program the run will most likely need, on
        the one guessing thread (:func:`finepar.parallel.guesses`); :meth:`drop_guesses`
        cancels those not yet begun, :meth:`settle` waits for the one building."""
        from .parallel import guesses
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
    from .prepcache import cache_root
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
            from .files import atomic_write_bytes
            atomic_write_bytes(path, bytes(binary))
    except (mod.Error, OSError, ValueError):
        pass


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
            text = open(path, encoding="ascii").read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2**60:
            return int(text), "cgroup"
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        pages = 0
    return int(pages), "MemTotal"


def filled(side: Side, size: int, dtype, value=0):
    """A device buffer on ``side`` of ``size`` entries of ``dtype``, every one ``value``:
    filled by the device (enqueued on the side's queue), so nothing crosses the bus."""
    dtype = np.dtype(dtype)
    buf = alloc(side, nbytes=max(int(size), 1) * dtype.itemsize)
    cl().enqueue_fill_buffer(side.queue, buf, np.array([value], dtype), 0, buf.size)
    return buf


def alloc(side: Side, array: np.ndarray | None = None, *, nbytes: int | None = None,
          read_only: bool = False):
    """A device buffer on ``side``, initialised from ``array`` if given.

    On host-memory sides (CPU, APU, emulated GPU) buffers are allocated with
    ``ALLOC_HOST_PTR`` so kernels and the host touch the same pages (zero-copy);
    elsewhere a plain device allocation is made and filled by a copy, large ones through
    page-locked staging (:func:`finepar.transfer.write_staged`).
    """
    mod = cl()
    mf = mod.mem_flags
    flags = mf.READ_ONLY if read_only else mf.READ_WRITE
    if array is not None:
        array = np.ascontiguousarray(array)
        size = max(array.nbytes, 1)
        if side.host_memory:
            flags |= mf.ALLOC_HOST_PTR
        buf = mod.Buffer(side.context, flags, size=size)
        if array.nbytes:
            from .transfer import write_staged
            write_staged(side, buf, array)
        return buf
    size = max(int(nbytes or 0), 1)
    if side.host_memory:
        flags |= mf.ALLOC_HOST_PTR
    return mod.Buffer(side.context, flags, size=size)
