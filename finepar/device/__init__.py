"""The devices (DESIGN.md §2, "device"): discovery and the pair a run uses, the only
place :mod:`pyopencl` is imported (lazily, through :func:`cl`, after
:func:`prepare_icd` has had the chance to make an unregistered NVIDIA OpenCL driver
visible), contexts, queues, buffers, transfers and the program cache.

* :mod:`~finepar.device.icd`: NVIDIA's driver where the ICD loader does not know it;
* :mod:`~finepar.device.handles`: :func:`cl` and a role's :class:`Side` (device, context,
  queue), which every module below but ``info`` imports;
* :mod:`~finepar.device.info`: what FinePar knows of a device (:class:`DeviceInfo`) and
  its kernels' work-group geometry (:class:`LaunchConfig`);
* :mod:`~finepar.device.discovery`: every device with its role and figures, and
  :func:`select_pair`;
* :mod:`~finepar.device.pair`: :class:`DevicePair` (shared or split memory, builds and
  their cache) and :func:`make_pair` / :func:`open_pair`;
* :mod:`~finepar.device.transfer`: page-locked host memory, staged reads and writes of a
  discrete device, buffers (:func:`alloc`, :func:`filled`);
* :mod:`~finepar.device.resident`: what ``finepar serve`` keeps between runs.

Roles
-----
Every pair has a ``cpu`` role and a ``gpu`` role. With a GPU present the roles are two
different devices (one platform on an APU, two platforms on a discrete machine). With
PoCL alone the ``gpu`` role is played by the same CPU device through a second context
(split memory) or a second queue (shared memory), and the pair is reported as *emulated*.

Memory modes
------------
``shared``: one context holding both devices (or the one emulating device), zero-copy
buffers, nothing crosses a bus (FinePar TKDE §2.1, the APU case). ``split``: one context
per device; each device holds its share of the matrix, and per iteration only the halo of
vector entries the other side reads moves.
"""

from .discovery import KNOWN_L2_BYTES, Selection, list_devices, match_device, select_pair
from .handles import Side, cl, host_memory_limit
from .icd import IcdReport, find_nvidia_opencl, prepare_icd
from .info import DeviceInfo, LaunchConfig
from .pair import (DevicePair, OpeningPair, PlainQueues, build_options,
                   driver_caches_builds, kernel_source, make_pair, open_pair)
from .transfer import (PinnedHost, alloc, filled, read_staged, staged, write_async,
                       write_staged)

__all__ = ["KNOWN_L2_BYTES", "DeviceInfo", "LaunchConfig", "Selection", "list_devices",
           "match_device", "select_pair", "Side", "cl", "host_memory_limit", "IcdReport",
           "find_nvidia_opencl", "prepare_icd", "DevicePair", "OpeningPair", "PlainQueues",
           "build_options", "driver_caches_builds", "kernel_source", "make_pair", "open_pair",
           "PinnedHost", "alloc", "filled", "read_staged", "staged", "write_async", "write_staged"]
