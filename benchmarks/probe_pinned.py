"""How fast the GPU's OpenCL copies reach each kind of host memory (issue 32: the halo and
frontier exchanges between ranks of one host go device -> host -> host -> device).

For each size (default 4 MB, a scale-26 BFS level's words, and 54 MB, a scale-26 PageRank
halo at two ranks) and each host memory, ``--repeats`` blocking copies each way through the
GPU's queue, timed on the host:

* ``pageable``: a numpy array (the driver stages it);
* ``pinned``: FinePar's ``PinnedHost`` (a mapped ALLOC_HOST_PTR buffer);
* ``shared``: an anonymous shared mapping, as an MPI-3 shared window is;
* ``shared+registered``: the same mapping page-locked through the CUDA driver
  (``cuMemHostRegister`` with ``PORTABLE``), where libcuda is present.

Beside them, the host's own copy of the same bytes between two shared mappings
(``copy_spans``, the pool's threads): what the window's two copies cost today. GB/s, min /
median / max. JSON is written as it goes.

On the H100 (PCIe 5 x16, 2026-11-27, ``runs/h100-2026-11-27za``): 54 MB pinned 52 GB/s
each way, pageable and shared 5.5-10 GB/s, and the registered mapping no faster than the
unregistered one: NVIDIA's OpenCL stages every host pointer it did not allocate, so a
window's bytes reach a GPU fastest through an ``ALLOC_HOST_PTR`` buffer and a host copy
(24 GB/s at 54 MB), as ``finepar.mpi.halo`` moves them.

    python benchmarks/probe_pinned.py --json $OUT/probe_pinned.json
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import time

import numpy as np

from common import (device_line, log, main_of, rate_stats, today, transfer_probe_args,
                    write_json)

#: ``CU_MEMHOSTREGISTER_PORTABLE``: pinned for every CUDA context, not only the current one.
PORTABLE = 0x01
_STATE: dict = {}


def _driver():
    """``(libcuda, None)`` with a context current on this thread, or ``(None, why)``."""
    if "lib" not in _STATE:
        _STATE["lib"], _STATE["why"] = _open_driver()
    lib = _STATE["lib"]
    if lib is not None and lib.cuCtxSetCurrent(_STATE["ctx"]) != 0:
        return None, "cuCtxSetCurrent failed"
    return lib, _STATE["why"]


def _open_driver():
    name = ctypes.util.find_library("cuda") or "libcuda.so.1"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return None, "no CUDA driver library (libcuda)"
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    if lib.cuInit(0) != 0 or lib.cuDeviceGet(ctypes.byref(dev), 0) != 0:
        return None, "the CUDA driver found no device"
    if lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) != 0:
        return None, "the CUDA driver gave no context"
    _STATE["ctx"] = ctx
    lib.cuMemHostRegister_v2.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint)
    lib.cuMemHostUnregister.argtypes = (ctypes.c_void_p,)
    return lib, None


def register_host(array: np.ndarray) -> str | None:
    """Page-lock ``array``'s memory for every CUDA context of the process.

    Parameters
    ----------
    array : ndarray
        Contiguous, its start page-aligned and its length a whole number of pages (a
        memory map's, an MPI window's).

    Returns
    -------
    str or None
        None when registered; else why not (no driver, or its error code), and the memory
        is left as it was.
    """
    lib, why = _driver()
    if lib is None:
        return why
    rc = lib.cuMemHostRegister_v2(ctypes.c_void_p(array.ctypes.data), array.nbytes, PORTABLE)
    return None if rc == 0 else f"cuMemHostRegister returned {rc}"


def parse_args(argv=None):
    return transfer_probe_args(__doc__, "probe_pinned", 10, argv)


def shared_array(nbytes: int) -> np.ndarray:
    """An anonymous shared mapping of at least ``nbytes`` (page-aligned), as uint8."""
    size = -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE
    m = mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    a = np.frombuffer(m, dtype=np.uint8)
    a[:] = 1  # touch every page
    return a


def time_copies(cl, queue, buf, host: np.ndarray, repeats: int) -> dict:
    out = {}
    for way in ("d2h", "h2d"):
        secs = []
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            if way == "d2h":
                cl.enqueue_copy(queue, host, buf, is_blocking=True)
            else:
                cl.enqueue_copy(queue, buf, host, is_blocking=True)
            secs.append(time.perf_counter() - t0)
        out[way] = rate_stats(secs[1:], host.nbytes)
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    from finepar.api import make_pair
    pair = make_pair()
    report = {"script": "benchmarks/probe_pinned.py", "date": today(),
              "device": device_line(pair), "args": vars(args)}
    log(report["device"])
    from finepar.device import PinnedHost, cl
    from finepar.parallel import copy_spans
    mod, side = cl(), pair.side("gpu")
    report["cases"] = []
    for mb in args.sizes:
        nbytes = int(mb * 1e6) // 4 * 4
        buf = mod.Buffer(side.context, mod.mem_flags.READ_WRITE, size=nbytes)
        mod.enqueue_fill_buffer(side.queue, buf, np.uint32(7), 0, nbytes).wait()
        hosts = {"pageable": np.ones(nbytes, np.uint8),
                 "pinned": PinnedHost(side, np.zeros(nbytes, np.uint8)).host[:nbytes],
                 "shared": shared_array(nbytes)[:nbytes]}
        reg = shared_array(nbytes)
        t0 = time.perf_counter()
        why = register_host(reg)
        hosts["shared+registered"] = reg[:nbytes] if why is None else None
        for name, host in hosts.items():
            case = {"mb": mb, "memory": name}
            if host is None:
                case["skipped"] = why
            else:
                case.update(time_copies(mod, side.queue, buf, host, args.repeats))
                if name == "shared+registered":
                    case["register_ms"] = (time.perf_counter() - t0) * 1e3
                log(f"{mb:g} MB {name}: d2h {case['d2h']['gbps_median']:.1f} GB/s, "
                    f"h2d {case['h2d']['gbps_median']:.1f} GB/s")
            report["cases"].append(case)
            write_json(args.json, report)
        a, b = shared_array(nbytes), shared_array(nbytes)
        secs = []
        for _ in range(args.repeats + 1):
            t0 = time.perf_counter()
            copy_spans([(b, a)])
            secs.append(time.perf_counter() - t0)
        report["cases"].append({"mb": mb, "memory": "host copy (copy_spans)",
                                "copy": rate_stats(secs[1:], nbytes)})
        log(f"{mb:g} MB host copy: {report['cases'][-1]['copy']['gbps_median']:.1f} GB/s")
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
