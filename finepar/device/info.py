"""What FinePar knows of a device (DESIGN.md §3, "device"): its figures as OpenCL reports
them (:class:`DeviceInfo`) and the work-group geometry of its kernels (:class:`LaunchConfig`).
Records only: :mod:`~finepar.device.discovery` fills them from the platforms, and every
module that opens or plans for a device reads them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..errors import DeviceError


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
