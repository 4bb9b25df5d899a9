"""Device discovery and selection (DESIGN.md §3, "device"): every OpenCL device with its
role, peak figures and caches (:class:`DeviceInfo`), and the pair a run uses
(:func:`select_pair`: flags, environment, config, else the first CPU and GPU)."""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from typing import Any

from ..errors import DeviceError
from .handles import cl
from .icd import prepare_icd
from .info import DeviceInfo


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
