"""Host <-> device copies at the bus's speed: page-locked memory and staged transfers.

A device with memory of its own (a discrete GPU) copies from and to page-locked (pinned)
host memory by DMA at tens of GB/s; to or from ordinary pageable memory its driver goes
through a staging buffer of its own, one thread at a time, at a few GB/s (2.6-5 GB/s
measured on the H100 machine, 2026-11-25). :class:`PinnedHost` is page-locked memory a
context owns; :func:`read_staged` and :func:`write_staged` move large arrays through two
page-locked chunks kept on the side, the device copying one while the host's threads fill
or drain the other. Devices whose buffers live in host memory (CPUs, APUs, the emulated
GPU) take one plain copy.
"""

from __future__ import annotations

import threading
from collections import deque

import numpy as np

from .handles import Side, cl


#: Events of :func:`write_async` copies not yet seen complete (oldest first).
_HELD: deque = deque()
#: At most this many held; past it the oldest is waited for.
MAX_HELD = 4096


def write_async(queue, buffer, array: np.ndarray, **kw) -> None:
    """Enqueue a host-to-device copy of ``array`` into ``buffer`` and return at once.

    pyopencl keeps the host array of a non-blocking copy alive through the copy's event,
    which waits for the copy when it is dropped: a non-blocking copy whose event is
    discarded makes the host wait until its queue drains, so the device then idles while
    the host enqueues what follows. Here the event is held until a later call sees it
    complete (or :data:`MAX_HELD` are held). ``kw`` as for ``enqueue_copy``
    (``dst_offset``, ``wait_for``)."""
    mod = cl()
    _HELD.append(mod.enqueue_copy(queue, buffer, array, is_blocking=False, **kw))
    done = mod.command_execution_status.COMPLETE
    while _HELD and (len(_HELD) > MAX_HELD or _HELD[0].command_execution_status == done):
        _HELD.popleft()


class PinnedHost:
    """Page-locked host memory holding ``array``: an ALLOC_HOST_PTR buffer, mapped.

    Uploads copy from the mapped host array ``host`` (a host-to-device DMA), not
    from the buffer itself: on NVIDIA's driver the buffer may live on the
    device, and a buffer-to-buffer copy would never cross the bus. Streamed
    chunks live here (FinePar TKDE §4.3).

    Parameters
    ----------
    side : Side
        The device whose context pins the memory.
    array : ndarray
        Copied in; ``host[:array.size]`` holds it (at least one element).
    size : int
        At least this many entries of ``array``'s dtype (the rest left as they are).
    """

    def __init__(self, side: Side, array: np.ndarray, size: int = 0):
        mod = cl()
        mf = mod.mem_flags
        count = max(array.size, int(size), 1)
        self.buffer = mod.Buffer(side.context, mf.READ_WRITE | mf.ALLOC_HOST_PTR,
                                 size=count * array.itemsize)
        self.host, _ = mod.enqueue_map_buffer(side.queue, self.buffer, mod.map_flags.WRITE, 0,
                                              (count,), array.dtype, is_blocking=True)
        self.host[:array.size] = array


#: Transfers of at least this many bytes to or from a device with memory of its own go
#: through page-locked staging; smaller ones are one pageable copy.
STAGED_BYTES = 8 << 20
#: Bytes of each of the two staging chunks.
STAGE_BYTES = 32 << 20
#: Bytes of host memory one of the pool's threads copies at a time (8 pieces a chunk).
_PIECE = 4 << 20
_LOCK = threading.Lock()


def staged(side: Side, array: np.ndarray) -> bool:
    """Whether a copy of ``array`` to or from ``side`` goes through page-locked staging
    (:func:`read_staged`, :func:`write_staged`) rather than one plain copy."""
    return (array.nbytes >= STAGED_BYTES and not side.host_memory
            and array.flags.c_contiguous)


def share_stages(side: Side, other: Side) -> None:
    """Give ``other`` (a copy of ``side`` on another queue of its context and device,
    :meth:`finepar.device.DevicePair.plain_side`) ``side``'s staging chunks, whenever they
    are made: one pair of page-locked chunks a device, not one a copy."""
    other.__dict__["_stage_box"] = _stage_box(side)


def _stage_box(side: Side) -> dict:
    """Where ``side``'s staging chunks are kept (``{"stages": ...}`` once made)."""
    return side.__dict__.setdefault("_stage_box", {})


def _stages(side: Side) -> tuple[list, threading.Lock]:
    """The side's two staging chunks and the lock that serialises their users (made on
    first use, kept with the side and the copies it shares them with,
    :func:`share_stages`)."""
    with _LOCK:
        box = _stage_box(side)
        stages = box.get("stages")
        if stages is None:
            stages = box["stages"] = (
                [PinnedHost(side, np.zeros(0, np.uint8), size=STAGE_BYTES) for _ in range(2)],
                threading.Lock())
    return stages


def read_staged(side: Side, out: np.ndarray, buffer, src_offset: int = 0) -> np.ndarray:
    """Blocking read of ``out.nbytes`` bytes of ``buffer`` (from byte ``src_offset``)
    into the host array ``out``, at the bus's speed rather than pageable memory's.

    Parameters
    ----------
    side : Side
        The buffer's device (its context and queue).
    out : ndarray
        Filled and returned. Contiguous arrays of at least :data:`STAGED_BYTES` from a
        device with memory of its own are staged; the rest take one plain copy.
    buffer : pyopencl.Buffer
    src_offset : int
        Bytes.

    Returns
    -------
    ndarray
        ``out``.
    """
    mod = cl()
    if not staged(side, out):
        mod.enqueue_copy(side.queue, out, buffer, src_offset=src_offset, is_blocking=True)
        return out
    from ..parallel import copy_spans
    chunks, lock = _stages(side)
    ob, nb = out.reshape(-1).view(np.uint8), out.nbytes

    def drain(pending) -> None:
        ev, host, lo, hi = pending
        ev.wait()
        copy_spans([(ob[lo:hi], host[:hi - lo])], _PIECE)

    with lock:
        pending = None
        for k, lo in enumerate(range(0, nb, STAGE_BYTES)):
            hi = min(nb, lo + STAGE_BYTES)
            host = chunks[k % 2].host
            ev = mod.enqueue_copy(side.queue, host[:hi - lo], buffer,
                                  src_offset=src_offset + lo, is_blocking=False)
            if pending is not None:
                drain(pending)  # frees the other chunk before the next read fills it
            pending = (ev, host, lo, hi)
        drain(pending)
    return out


def write_staged(side: Side, buffer, array: np.ndarray, dst_offset: int = 0) -> None:
    """Blocking write of ``array`` into ``buffer`` (from byte ``dst_offset``), at the
    bus's speed rather than pageable memory's.

    The host's threads copy the array into one page-locked chunk while the device reads
    the other; a chunk is refilled once the copy that read it has finished.

    Parameters
    ----------
    side : Side
        The buffer's device.
    buffer : pyopencl.Buffer
        At least ``dst_offset + array.nbytes`` bytes.
    array : ndarray
        Contiguous arrays of at least :data:`STAGED_BYTES` to a device with memory of its
        own are staged; the rest take one plain copy.
    dst_offset : int
        Bytes.
    """
    mod = cl()
    if not staged(side, array):
        mod.enqueue_copy(side.queue, buffer, array, dst_offset=dst_offset, is_blocking=True)
        return
    from ..parallel import copy_spans
    chunks, lock = _stages(side)
    src, nb = array.reshape(-1).view(np.uint8), array.nbytes
    with lock:
        done = [None, None]  # the copy that last read each chunk
        for k, lo in enumerate(range(0, nb, STAGE_BYTES)):
            hi, host = min(nb, lo + STAGE_BYTES), chunks[k % 2].host
            if done[k % 2] is not None:
                done[k % 2].wait()
            copy_spans([(host[:hi - lo], src[lo:hi])], _PIECE)
            done[k % 2] = mod.enqueue_copy(side.queue, buffer, host[:hi - lo],
                                           dst_offset=dst_offset + lo, is_blocking=False)
        for ev in done:
            if ev is not None:
                ev.wait()


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
            write_staged(side, buf, array)
        return buf
    size = max(int(nbytes or 0), 1)
    if side.host_memory:
        flags |= mf.ALLOC_HOST_PTR
    return mod.Buffer(side.context, flags, size=size)
