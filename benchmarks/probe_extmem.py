"""Whether two ranks' GPUs can copy OpenCL buffers to each other directly (issue 32: every
exchange between ranks crosses host memory twice today, because NVIDIA's OpenCL has no
peer copy and reaches its pinned rate only from its own buffers; DESIGN.md).

The route probed: device memory allocated by CUDA's driver API (``cuMemCreate``, exportable
as a POSIX file descriptor), imported into NVIDIA's OpenCL by ``cl_khr_external_memory_opaque_fd``
(``clCreateBufferWithProperties``), its descriptor sent to the other rank's process
(``SCM_RIGHTS``), mapped there for that rank's GPU (``cuMemImportFromShareableHandle``,
``cuMemMap``, ``cuMemSetAccess``), and copied by ``cuMemcpyDtoD`` over NVLink.

Two processes (a fork, one GPU each). For each size and ``--repeats`` times: rank 0's OpenCL
kernel rewrites its buffer and finishes; rank 1 copies it into its own imported buffer by
CUDA, then reads the first and last words back through OpenCL (the whole chain checked).
GB/s of the copy alone and of the round (kernel, finish, message, copy, read). Each step's
outcome, an error included, is in the JSON, written as it goes; one GPU runs both ranks on it.

    python benchmarks/probe_extmem.py --json $OUT/probe_extmem.json
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import time
import traceback

import numpy as np

from common import log, main_of, rate_stats, today, transfer_probe_args, write_json

KERNEL = """
__kernel void touch(__global uint *a, const uint v) {
    const size_t i = get_global_id(0);
    a[i] = v + (uint)i;
}
"""
OPAQUE_FD = 0x2060          # CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR
DEVICE_LIST = 0x2051        # CL_MEM_DEVICE_HANDLE_LIST_KHR
DEVICE_LIST_END = 0         # CL_MEM_DEVICE_HANDLE_LIST_END_KHR
DEVICE_UUID = 0x106A        # CL_DEVICE_UUID_KHR


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("handle_types", ctypes.c_int),
                ("location", Location), ("win32", ctypes.c_void_p),
                ("flags", ctypes.c_ubyte * 8)]


class AccessDesc(ctypes.Structure):
    _fields_ = [("location", Location), ("flags", ctypes.c_int)]


class Cuda:
    """The few driver-API calls the route needs, through ctypes on ``libcuda.so.1``."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.call("cuInit", 0)

    def call(self, name: str, *args):
        rc = getattr(self.lib, name)(*args)
        if rc:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorName(rc, ctypes.byref(msg))
            raise RuntimeError(f"{name}: {msg.value.decode() if msg.value else rc}")

    def device_of(self, uuid: bytes) -> int:
        count = ctypes.c_int()
        self.call("cuDeviceGetCount", ctypes.byref(count))
        for i in range(count.value):
            dev, got = ctypes.c_int(), (ctypes.c_ubyte * 16)()
            self.call("cuDeviceGet", ctypes.byref(dev), i)
            self.call("cuDeviceGetUuid", got, dev)
            if bytes(got) == uuid:
                return dev.value
        raise RuntimeError("no CUDA device has the OpenCL device's UUID")

    def use(self, dev: int) -> None:
        ctx = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        self.call("cuCtxSetCurrent", ctx)
        self.dev = dev

    def prop(self) -> AllocProp:
        return AllocProp(type=1, handle_types=1, location=Location(1, self.dev))

    def create(self, nbytes: int) -> tuple[int, int, int]:
        """An exportable allocation of at least ``nbytes`` on the current device:
        ``(handle, size, fd)``."""
        prop, gran = self.prop(), ctypes.c_size_t()
        self.call("cuMemGetAllocationGranularity", ctypes.byref(gran), ctypes.byref(prop), 0)
        size = -(-nbytes // gran.value) * gran.value
        handle, fd = ctypes.c_uint64(), ctypes.c_int()
        self.call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size),
                  ctypes.byref(prop), ctypes.c_uint64(0))
        self.call("cuMemExportToShareableHandle", ctypes.byref(fd), handle, 1,
                  ctypes.c_uint64(0))
        return handle.value, size, fd.value

    def map(self, handle: int, size: int, devices: list[int]) -> int:
        """Map ``handle`` into this process's addresses, read-write for ``devices``."""
        ptr = ctypes.c_uint64()
        self.call("cuMemAddressReserve", ctypes.byref(ptr), ctypes.c_size_t(size),
                  ctypes.c_size_t(0), ctypes.c_uint64(0), ctypes.c_uint64(0))
        self.call("cuMemMap", ptr, ctypes.c_size_t(size), ctypes.c_size_t(0),
                  ctypes.c_uint64(handle), ctypes.c_uint64(0))
        descs = (AccessDesc * len(devices))(*[AccessDesc(Location(1, d), 3) for d in devices])
        self.call("cuMemSetAccess", ptr, ctypes.c_size_t(size), descs,
                  ctypes.c_size_t(len(devices)))
        return ptr.value

    def imported(self, fd: int) -> int:
        handle = ctypes.c_uint64()
        self.call("cuMemImportFromShareableHandle", ctypes.byref(handle),
                  ctypes.c_void_p(fd), 1)
        return handle.value

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        self.call("cuMemcpyDtoD_v2", ctypes.c_uint64(dst), ctypes.c_uint64(src),
                  ctypes.c_size_t(nbytes))
        self.call("cuCtxSynchronize")


def opencl_gpu(rank: int):
    """This rank's GPU (the platform's GPU ``rank``, else its first), a context and queue."""
    from finepar.device import cl
    from finepar.device.discovery import _cl_device, list_devices
    infos = list_devices()
    gpus = [d for d in infos if d.kind == "gpu"] or infos
    info = gpus[rank % len(gpus)]
    dev = _cl_device(info)
    mod = cl()
    ctx = mod.Context([dev])
    return mod, dev, ctx, mod.CommandQueue(ctx, dev), f"{info.name} ({info.platform})"


def opencl_lib():
    import pyopencl
    libs = os.path.join(os.path.dirname(pyopencl.__file__), ".libs")
    names = [n for n in os.listdir(libs) if n.startswith("libOpenCL")] if os.path.isdir(libs) else []
    return ctypes.CDLL(os.path.join(libs, names[0]) if names else "libOpenCL.so.1")


def device_uuid(lib, dev) -> bytes:
    out = (ctypes.c_ubyte * 16)()
    rc = lib.clGetDeviceInfo(ctypes.c_void_p(dev.int_ptr), ctypes.c_uint(DEVICE_UUID),
                             ctypes.c_size_t(16), out, None)
    if rc:
        raise RuntimeError(f"clGetDeviceInfo(CL_DEVICE_UUID_KHR): {rc}")
    return bytes(out)


def import_buffer(mod, lib, ctx, dev, fd: int, size: int):
    """The allocation behind ``fd`` as a ``pyopencl.Buffer`` of ``size`` bytes."""
    props = (ctypes.c_uint64 * 6)(OPAQUE_FD, fd, DEVICE_LIST, dev.int_ptr, DEVICE_LIST_END, 0)
    err = ctypes.c_int()
    lib.clCreateBufferWithProperties.restype = ctypes.c_void_p
    mem = lib.clCreateBufferWithProperties(ctypes.c_void_p(ctx.int_ptr), props,
                                           ctypes.c_uint64(1), ctypes.c_size_t(size),
                                           None, ctypes.byref(err))
    if err.value or not mem:
        raise RuntimeError(f"clCreateBufferWithProperties: {err.value}")
    return mod.Buffer.from_int_ptr(mem, retain=False)


class Rank:
    """One process's side: its GPU, its imported buffer, and the peer's mapped one."""

    def __init__(self, rank: int, nbytes: int, report: dict):
        self.rank, self.report = rank, report
        mod, dev, ctx, queue, name = opencl_gpu(rank)
        self.mod, self.dev, self.ctx, self.queue = mod, dev, ctx, queue
        report["device"] = name
        report["extensions"] = [e for e in dev.extensions.split() if "external" in e]
        report["all_extensions"] = dev.extensions.split()
        report["driver"] = dev.driver_version
        self.lib = opencl_lib()
        self.cuda = Cuda()
        self.cuda.use(self.cuda.device_of(device_uuid(self.lib, dev)))
        report["cuda_device"] = self.cuda.dev
        self.handle, self.size, self.fd = self.cuda.create(nbytes)
        self.ptr = self.cuda.map(self.handle, self.size, [self.cuda.dev])
        self.buf = import_buffer(mod, self.lib, ctx, dev, os.dup(self.fd), self.size)
        self.touch = mod.Kernel(mod.Program(ctx, KERNEL).build(), "touch")
        report["imported"] = True

    def map_peer(self, fd: int, size: int) -> None:
        handle = self.cuda.imported(fd)
        self.peer_ptr = self.cuda.map(handle, size, [self.cuda.dev])
        self.report["peer_mapped"] = True

    def write(self, k: int, words: int) -> None:
        self.touch(self.queue, (words,), None, self.buf, np.uint32(k))
        self.queue.finish()

    def ends(self, words: int) -> tuple[int, int]:
        out = np.empty(1, np.uint32)
        first, last = out.copy(), out.copy()
        self.mod.enqueue_copy(self.queue, first, self.buf, src_offset=0)
        self.mod.enqueue_copy(self.queue, last, self.buf, src_offset=4 * (words - 1),
                              is_blocking=True)
        return int(first[0]), int(last[0])


def send(sock, obj, fds=()) -> None:
    data = json.dumps(obj).encode()
    socket.send_fds(sock, [len(data).to_bytes(4, "little") + data], list(fds))


def recv(sock):
    msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 4)
    return json.loads(msg[4:4 + int.from_bytes(msg[:4], "little")]), fds


def rank_main(rank: int, sock, args, sizes: list[int]) -> dict:
    """Rank 0 writes, rank 1 copies and checks; returns this rank's report."""
    report: dict = {"rank": rank, "steps": []}
    try:
        me = Rank(rank, max(sizes), report)
        send(sock, {"size": me.size}, [me.fd])
        peer, fds = recv(sock)
        me.map_peer(fds[0], peer["size"])
    except Exception as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
        report["trace"] = traceback.format_exc()
        try:
            send(sock, {"failed": report["error"]})
        except OSError:
            pass
        return report
    for nbytes in sizes:
        words, copies, rounds, right = nbytes // 4, [], [], True
        for k in range(args.repeats + 1):
            if rank == 0:
                t0 = time.perf_counter()
                me.write(k, words)
                send(sock, {"k": k})
                recv(sock)
                rounds.append(time.perf_counter() - t0)
            else:
                msg, _ = recv(sock)
                if "failed" in msg:
                    report["error"] = "peer failed: " + msg["failed"]
                    return report
                t0 = time.perf_counter()
                me.cuda.copy(me.ptr, me.peer_ptr, nbytes)
                copies.append(time.perf_counter() - t0)
                first, last = me.ends(words)
                right &= first == k and last == (k + words - 1) % (1 << 32)
                send(sock, {"done": k})
        step = {"mb": nbytes / 1e6}
        if rank == 0:
            step["round"] = rate_stats(rounds[1:], nbytes)
        else:
            step.update(copy=rate_stats(copies[1:], nbytes), right=bool(right))
        report["steps"].append(step)
    return report


def main(argv=None) -> int:
    args = parse_args(argv)
    sizes = [int(mb * 1e6) // 4 * 4 for mb in args.sizes]
    out = {"script": "benchmarks/probe_extmem.py", "date": today(), "args": vars(args)}
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        a.close()
        try:
            rep = rank_main(1, b, args, sizes)
        except Exception:
            rep = {"rank": 1, "error": traceback.format_exc()}
        send(b, {"report": rep})
        os._exit(0)
    b.close()
    out["rank0"] = rank_main(0, a, args, sizes)
    while True:
        msg, _ = recv(a)
        if "report" in msg:
            out["rank1"] = msg["report"]
            break
    os.waitpid(pid, 0)
    for step in out["rank1"].get("steps", []):
        log(f"{step['mb']:g} MB: copy {step['copy']['gbps_median']:.1f} GB/s"
            f"{'' if step['right'] else ' WRONG'}")
    for r in ("rank0", "rank1"):
        if "error" in out[r]:
            log(f"{r}: {out[r]['error']}")
    write_json(args.json, out)
    return 0


def parse_args(argv=None):
    return transfer_probe_args(__doc__, "probe_extmem", 8, argv)


if __name__ == "__main__":
    raise SystemExit(main_of(main))
