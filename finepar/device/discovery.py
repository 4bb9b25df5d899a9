"""Device discovery and selection (DESIGN.md §3, "device"): every OpenCL device with its
role, peak figures and caches (:class:`DeviceInfo`), and the pair a run uses
(:func:`select_pair`: flags, environment, config, else the first CPU and GPU)."""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, asdict
from typing import Any

from ..errors import DeviceError
from .handles import cl
from .icd import prepare_icd


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


@dataclass(frozen=True)
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
        """Every field, with ``key`` and ``address`` (a copy: flat, so callers may change it)."""
        memo = self.__dict__.get("_as_dict")
        if memo is None:  # asdict walks every field: a run asked for it a few times
            memo = asdict(self)
            memo.update(key=self.key, address=self.address)
            self.__dict__["_as_dict"] = memo
        return dict(memo)


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
        Found once a process for each ``cache_overrides`` (the infos are frozen): asking
        the drivers for every device's facts took 0.75 ms of each 2.8-ms repeated call on
        one H200's host.
    """
    import json
    key = json.dumps(cache_overrides or {}, sort_keys=True)
    held = _LISTED.get(key)
    if held is None:
        held = _list_devices(cache_overrides)
        if held:  # none found: asked again (FinePar may register a driver meanwhile)
            _LISTED[key] = held
    return list(held)


#: :func:`list_devices`' answers, by its cache overrides.
_LISTED: dict[str, list] = {}


def _list_devices(cache_overrides: dict[str, int] | None) -> list[DeviceInfo]:
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
            how["gpu"] = "auto (no GPU found: emulated)" + _unregistered_gpu()
    return Selection(cpu=cpu_dev, gpu=gpu_dev, emulated=emulated, how=how)


def _unregistered_gpu() -> str:
    """Where no GPU was found but NVIDIA's OpenCL driver is installed and was left
    unregistered (pyopencl imported before FinePar, ``FINEPAR_NO_ICD_FIX``, or the
    private registration failed): the reason, for the selection's ``how``, and a
    warning, since the run then goes on with the GPU role emulated on the CPU. Else
    ``""``."""
    rep = prepare_icd()
    if rep.nvidia_library is None or rep.registered or rep.vendors_dir is not None:
        return ""
    why = rep.notes[-1] if rep.notes else f"to fix: {rep.fix_command}"
    warnings.warn(f"the GPU role is emulated on the CPU: {why}", RuntimeWarning, stacklevel=3)
    return f"; {why}"


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
    wg_stream_small, stream_small_nnz : int
        The stream's work-group size for a share of at most ``stream_small_nnz`` entries
        (:meth:`stream_wg`): on one H200 (``benchmarks/runs/h200-2026-11-29h``, ``i``)
        1,024-entry blocks by 128 work-items took cnr-2000's product from 30.8 to 23.2 us
        and soc-Slashdot0902's from 20.1 to 15.6, equal at Graph500 scales 18 and 20
        (7.6 M and 31 M entries), and 13% and 5% slower at scales 22 and 24 (128 M and
        521 M): fewer, fuller work-items where the blocks are few.
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
    wg_stream_small: int = 256
    stream_small_nnz: int = 0
    block_nnz: int = 1024
    resident_groups: int = 8

    def stream_wg(self, nnz: int) -> int:
        """The stream mapping's work-group size for a share of ``nnz`` entries."""
        return self.wg_stream_small if int(nnz) <= self.stream_small_nnz else self.wg_stream

    @classmethod
    def for_role(cls, role: str, info: DeviceInfo, overrides: dict | None = None) -> "LaunchConfig":
        """Defaults: GPU-shaped geometry for the gpu role (also when emulated, so the
        same code paths run everywhere), CPU-shaped for the cpu role."""
        if role == "gpu":
            cfg = cls(wg_item=128, wg_team=128, lanes=32, wg_group=256, wg_stream=256,
                      wg_stream_small=128, stream_small_nnz=1 << 26, block_nnz=1024,
                      resident_groups=8)
        else:
            cfg = cls(wg_item=64, wg_team=64, lanes=8, wg_group=64, wg_stream=64,
                      wg_stream_small=64, block_nnz=512, resident_groups=2)
        limit = max(1, info.max_work_group_size)
        for k, v in (overrides or {}).items():
            if hasattr(cfg, k):
                setattr(cfg, k, int(v))
        cfg.wg_item = min(cfg.wg_item, limit)
        cfg.wg_team = min(cfg.wg_team, limit)
        cfg.wg_group = min(cfg.wg_group, limit)
        cfg.wg_stream = min(cfg.wg_stream, limit)
        cfg.wg_stream_small = min(cfg.wg_stream_small, limit)
        cfg.lanes = min(cfg.lanes, cfg.wg_team)
        # local memory: the staged block plus the group's reduction scratch, 4 bytes each
        widest = max(cfg.wg_stream, cfg.wg_stream_small)
        room = max(info.local_mem_bytes // 4 - 3 * widest, 2 * widest)
        cfg.block_nnz = max(2, min(cfg.block_nnz, room))
        for name in ("wg_team", "lanes", "wg_group", "wg_stream", "wg_stream_small"):
            v = getattr(cfg, name)
            if v & (v - 1):
                raise DeviceError(f"{name}={v} must be a power of two")
        return cfg
