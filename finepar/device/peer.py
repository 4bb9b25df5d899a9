"""GPU memory that another process's GPU copies from directly (DESIGN.md §3, "mpi": the
exchange between ranks).

NVIDIA's OpenCL offers no copy between two contexts' buffers and no peer access, and its
pinned rate only from buffers it allocated itself, so without this every byte between two
ranks crosses host memory twice (``benchmarks/probe_pinned.py``, ``probe_p2p.py``). The
route taken here (``benchmarks/probe_extmem.py``, two H200s: 344 GB/s for 54 MB against
8.5 GB/s through the host):

1. CUDA's driver API allocates the memory on the rank's GPU (``cuMemCreate``), exportable
   as a POSIX file descriptor (``cuMemExportToShareableHandle``);
2. NVIDIA's OpenCL imports it as a buffer (``cl_khr_external_memory_opaque_fd``,
   ``clCreateBufferWithProperties``): the rank's kernels read and write it as any buffer;
3. another rank, given the descriptor (``SCM_RIGHTS``, :mod:`finepar.mpi.peers`), maps the
   memory into its own addresses for its own GPU (``cuMemImportFromShareableHandle``,
   ``cuMemMap``, ``cuMemSetAccess``) and copies out of it with ``cuMemcpyDtoDAsync``, over
   NVLink where the GPUs have it.

The OpenCL queue is finished before CUDA reads the memory and the CUDA stream
synchronised before OpenCL reads what CUDA wrote; the extension's
``clEnqueueAcquireExternalMemObjectsKHR`` / ``Release`` are not called (on NVIDIA's driver
580 that ordering gave exact copies in every check: the probe's words, every distributed
PageRank's answer). OpenCL's import gets a duplicate of the descriptor; the extension does
not say whether the import closes it, so at most one descriptor a region may stay open
until the process ends. The driver API is reached through
:mod:`ctypes` on ``libcuda.so.1`` (the driver's own library: no CUDA toolkit, no CuPy).
"""

from __future__ import annotations

import ctypes
import functools
import os

from .handles import Side, cl

#: The OpenCL extension the import needs.
EXTENSION = "cl_khr_external_memory_opaque_fd"
_OPAQUE_FD = 0x2060          # CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR
_DEVICE_LIST = 0x2051        # CL_MEM_DEVICE_HANDLE_LIST_KHR
_DEVICE_LIST_END = 0         # CL_MEM_DEVICE_HANDLE_LIST_END_KHR
_DEVICE_UUID = 0x106A        # CL_DEVICE_UUID_KHR
_PINNED, _ON_DEVICE, _POSIX_FD, _READ_WRITE = 1, 1, 1, 3


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocProp(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("handle_types", ctypes.c_int),
                ("location", _Location), ("win32", ctypes.c_void_p),
                ("flags", ctypes.c_ubyte * 8)]


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class PeerUnavailable(RuntimeError):
    """This process cannot share its GPU's memory with another's (the reason is the
    message)."""


class _Driver:
    """The driver-API calls the route needs; one a process (:func:`driver`)."""

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            raise PeerUnavailable("no CUDA driver (libcuda.so.1)") from None
        self.call("cuInit", 0)
        self.current: int | None = None
        self.stream = ctypes.c_void_p()

    def call(self, name: str, *args) -> None:
        fn = getattr(self.lib, name, None)
        if fn is None:
            raise PeerUnavailable(f"the CUDA driver has no {name}")
        rc = fn(*args)
        if rc:
            msg = ctypes.c_char_p()
            self.lib.cuGetErrorName(rc, ctypes.byref(msg))
            raise PeerUnavailable(f"{name}: {(msg.value or b'').decode() or rc}")

    def device_of(self, uuid: bytes) -> int:
        """The CUDA ordinal of the GPU whose UUID is ``uuid``."""
        count = ctypes.c_int()
        self.call("cuDeviceGetCount", ctypes.byref(count))
        for i in range(count.value):
            dev, got = ctypes.c_int(), (ctypes.c_ubyte * 16)()
            self.call("cuDeviceGet", ctypes.byref(dev), i)
            self.call("cuDeviceGetUuid", got, dev)
            if bytes(got) == uuid:
                return dev.value
        raise PeerUnavailable("no CUDA device has the OpenCL device's UUID")

    def use(self, dev: int) -> None:
        """Make ``dev``'s primary context current on this thread, with a stream of its own
        (retained once; every later call only makes it current again)."""
        if self.current is not None and self.current != dev:
            raise PeerUnavailable("one GPU a process: this one already shares another's memory")
        if self.current is None:
            self.ctx = ctypes.c_void_p()
            self.call("cuDevicePrimaryCtxRetain", ctypes.byref(self.ctx), dev)
            self.current = dev
        self.call("cuCtxSetCurrent", self.ctx)
        if not self.stream.value:
            self.call("cuStreamCreate", ctypes.byref(self.stream), 1)  # non-blocking

    def current_again(self) -> None:
        """The bound GPU's context current on this thread (a copy or a release may run on
        another thread than the binding did)."""
        if self.current is not None:
            self.call("cuCtxSetCurrent", self.ctx)

    def drop(self) -> None:
        """Give the bound GPU's stream and primary context back (where the run's exchanges
        went another way: CUDA's context holds device memory)."""
        if self.current is None:
            return
        destroy = getattr(self.lib, "cuStreamDestroy_v2", None)
        if destroy is not None and self.stream.value:
            destroy(self.stream)
        release = getattr(self.lib, "cuDevicePrimaryCtxRelease_v2", None)
        if release is not None:
            release(ctypes.c_int(self.current))  # device 0 included
        self.stream, self.current = ctypes.c_void_p(), None

    def granule(self) -> int:
        prop, gran = self._prop(), ctypes.c_size_t()
        self.call("cuMemGetAllocationGranularity", ctypes.byref(gran), ctypes.byref(prop), 0)
        return gran.value

    def _prop(self) -> _AllocProp:
        return _AllocProp(type=_PINNED, handle_types=_POSIX_FD,
                          location=_Location(_ON_DEVICE, self.current))

    def create(self, size: int) -> tuple[int, int]:
        """An exportable allocation of ``size`` bytes (a multiple of :meth:`granule`) on
        the current GPU: ``(handle, descriptor)``."""
        handle, fd, prop = ctypes.c_uint64(), ctypes.c_int(), self._prop()
        self.call("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size),
                  ctypes.byref(prop), ctypes.c_uint64(0))
        try:
            self.call("cuMemExportToShareableHandle", ctypes.byref(fd), handle, _POSIX_FD,
                      ctypes.c_uint64(0))
        except PeerUnavailable:
            self.call("cuMemRelease", handle)
            raise
        return handle.value, fd.value

    def imported(self, fd: int) -> int:
        handle = ctypes.c_uint64()
        self.call("cuMemImportFromShareableHandle", ctypes.byref(handle),
                  ctypes.c_void_p(fd), _POSIX_FD)
        return handle.value

    def map(self, handle: int, size: int) -> int:
        """``handle`` mapped into this process's addresses, read-write for the current
        GPU: the device address."""
        ptr = ctypes.c_uint64()
        self.call("cuMemAddressReserve", ctypes.byref(ptr), ctypes.c_size_t(size),
                  ctypes.c_size_t(0), ctypes.c_uint64(0), ctypes.c_uint64(0))
        try:
            self.call("cuMemMap", ptr, ctypes.c_size_t(size), ctypes.c_size_t(0),
                      ctypes.c_uint64(handle), ctypes.c_uint64(0))
            desc = _AccessDesc(_Location(_ON_DEVICE, self.current), _READ_WRITE)
            self.call("cuMemSetAccess", ptr, ctypes.c_size_t(size), ctypes.byref(desc),
                      ctypes.c_size_t(1))
        except PeerUnavailable:
            self.unmap(ptr.value, size)
            raise
        return ptr.value

    def unmap(self, ptr: int, size: int) -> None:
        self.current_again()
        self.lib.cuMemUnmap(ctypes.c_uint64(ptr), ctypes.c_size_t(size))
        self.lib.cuMemAddressFree(ctypes.c_uint64(ptr), ctypes.c_size_t(size))

    def release(self, handle: int) -> None:
        self.lib.cuMemRelease(ctypes.c_uint64(handle))

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        """Enqueue a copy of ``nbytes`` from device address ``src`` to ``dst`` on the
        stream (:meth:`synchronize` waits for it)."""
        self.call("cuMemcpyDtoDAsync_v2", ctypes.c_uint64(dst), ctypes.c_uint64(src),
                  ctypes.c_size_t(nbytes), self.stream)

    def synchronize(self) -> None:
        self.call("cuStreamSynchronize", self.stream)


_DRIVER: _Driver | None = None


def driver() -> _Driver:
    """This process's CUDA driver (loaded once).

    Raises
    ------
    PeerUnavailable
        No ``libcuda.so.1``, or ``cuInit`` failed.
    """
    global _DRIVER
    if _DRIVER is None:
        _DRIVER = _Driver()
    return _DRIVER


@functools.cache
def _opencl_library():
    """The OpenCL ICD loader :mod:`pyopencl` was built against (its wheel bundles one)."""
    import pyopencl
    libs = os.path.join(os.path.dirname(pyopencl.__file__), ".libs")
    names = sorted(n for n in os.listdir(libs) if n.startswith("libOpenCL")) \
        if os.path.isdir(libs) else []
    return ctypes.CDLL(os.path.join(libs, names[0]) if names else "libOpenCL.so.1")


def _uuid(device) -> bytes:
    out = (ctypes.c_ubyte * 16)()
    rc = _opencl_library().clGetDeviceInfo(ctypes.c_void_p(device.int_ptr),
                                           ctypes.c_uint(_DEVICE_UUID), ctypes.c_size_t(16),
                                           out, None)
    if rc:
        raise PeerUnavailable(f"clGetDeviceInfo(CL_DEVICE_UUID_KHR) failed ({rc})")
    return bytes(out)


def unavailable(side: Side) -> str | None:
    """Why ``side``'s device cannot share memory with other processes' GPUs, or None
    when it can (its OpenCL has :data:`EXTENSION` and CUDA's driver knows the device;
    the driver is then bound to it)."""
    if EXTENSION not in side.queue.device.extensions.split():
        return f"{side.queue.device.name.strip()}'s OpenCL has no {EXTENSION}"
    try:
        drv = driver()
        drv.use(drv.device_of(_uuid(side.queue.device)))
    except PeerUnavailable as exc:
        return str(exc)
    except (OSError, AttributeError, ValueError) as exc:  # a loader or driver too old
        return f"{type(exc).__name__}: {exc}"
    return None


def release() -> None:
    """Unbind this process's GPU from CUDA's driver, if :func:`unavailable` bound one."""
    if _DRIVER is not None:
        _DRIVER.drop()


class PeerMemory:
    """Device memory on ``side``'s GPU, an OpenCL buffer there, and a descriptor another
    process maps it by (:meth:`PeerView`).

    Parameters
    ----------
    side : Side
        A device for which :func:`unavailable` returned None.
    nbytes : int
        At least this many bytes (rounded up to the driver's granule, 2 MiB on NVIDIA's).

    Attributes
    ----------
    buffer : pyopencl.Buffer
        The memory, for ``side``'s kernels and copies.
    ptr : int
        Its device address in this process (for :meth:`_Driver.copy`).
    fd : int
        The descriptor to send (closed by :meth:`close`).
    size : int
        Bytes allocated.

    Raises
    ------
    PeerUnavailable
        An allocation, export or import failed.
    """

    def __init__(self, side: Side, nbytes: int):
        drv = driver()
        gran = drv.granule()
        self.size = max(-(-int(nbytes) // gran), 1) * gran
        self.handle, self.fd = drv.create(self.size)
        self.ptr = self.buffer = None
        try:
            self.ptr = drv.map(self.handle, self.size)
            self.buffer = _import(side, os.dup(self.fd), self.size)
        except PeerUnavailable:
            self.close()
            raise

    def forget_descriptor(self) -> None:
        """Close the descriptor now: no other process will map this memory."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def close(self) -> None:
        """Release the buffer, the mapping, the allocation and the descriptor."""
        drv = driver()
        if self.buffer is not None:
            self.buffer.release()
            self.buffer = None
        if self.ptr is not None:
            drv.unmap(self.ptr, self.size)
            self.ptr = None
        if self.handle is not None:
            drv.release(self.handle)
            self.handle = None
        self.forget_descriptor()


class PeerView:
    """Another process's :class:`PeerMemory`, mapped here for this process's GPU.

    Parameters
    ----------
    fd : int
        The descriptor received (this object closes it).
    size : int
        The memory's :attr:`PeerMemory.size`.

    Attributes
    ----------
    ptr : int
        Its device address here: a source of :meth:`_Driver.copy`.
    """

    def __init__(self, fd: int, size: int):
        drv = driver()
        self.size = size
        try:
            self.handle = drv.imported(fd)
        finally:
            os.close(fd)
        try:
            self.ptr = drv.map(self.handle, size)
        except PeerUnavailable:
            drv.release(self.handle)
            raise

    def close(self) -> None:
        if self.handle is not None:
            drv = driver()
            drv.unmap(self.ptr, self.size)
            drv.release(self.handle)
            self.handle = None


def _import(side: Side, fd: int, size: int):
    """The allocation behind ``fd`` as a ``pyopencl.Buffer`` of ``size`` bytes in
    ``side``'s context (OpenCL takes the descriptor)."""
    lib = _opencl_library()
    fn = lib.clCreateBufferWithProperties
    fn.restype = ctypes.c_void_p
    props = (ctypes.c_uint64 * 6)(_OPAQUE_FD, fd, _DEVICE_LIST, side.queue.device.int_ptr,
                                  _DEVICE_LIST_END, 0)
    err = ctypes.c_int()
    mem = fn(ctypes.c_void_p(side.context.int_ptr), props, ctypes.c_uint64(1),
             ctypes.c_size_t(size), None, ctypes.byref(err))
    if err.value or not mem:
        os.close(fd)
        raise PeerUnavailable(f"clCreateBufferWithProperties failed ({err.value})")
    return cl().Buffer.from_int_ptr(mem, retain=False)
