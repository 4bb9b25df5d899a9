"""GPU memory shared between processes (finepar.device.peer) where it cannot be: the reason
is named, and nothing is bound. The path itself runs on NVIDIA's OpenCL only
(``benchmarks/probe_extmem.py``, ``benchmarks/dist.py`` on the lent GPUs); its layout runs
emulated under ``mpiexec`` in ``tests/test_mpi.py``."""

from __future__ import annotations

import ctypes

import pytest

from finepar.device import peer


@pytest.mark.parametrize("memory", ["shared", "split"])
def test_a_device_without_the_extension_is_named(pairs, memory):
    side = pairs[memory].side("gpu")
    why = peer.unavailable(side)
    assert why is not None and peer.EXTENSION in why
    assert side.queue.device.name.strip() in why


def test_no_cuda_driver_is_a_reason_not_a_crash(monkeypatch):
    real = ctypes.CDLL

    def cdll(name, *args, **kwargs):
        if name == "libcuda.so.1":
            raise OSError("no such file")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(ctypes, "CDLL", cdll)
    monkeypatch.setattr(peer, "_DRIVER", None)
    with pytest.raises(peer.PeerUnavailable, match="no CUDA driver"):
        peer.driver()
    assert peer._DRIVER is None  # a later call tries again


def test_import_failure_closes_the_descriptor(pairs, tmp_path):
    """An import OpenCL refuses (PoCL has no external memory) raises PeerUnavailable and
    closes the descriptor it was given."""
    import os
    fd = os.open(tmp_path / "f", os.O_CREAT | os.O_RDWR)
    os.write(fd, b"\0" * 4096)
    with pytest.raises(peer.PeerUnavailable, match="clCreateBufferWithProperties"):
        peer._import(pairs["split"].side("gpu"), fd, 4096)
    with pytest.raises(OSError):
        os.fstat(fd)


def test_release_gives_back_stream_and_context_of_device_zero(monkeypatch):
    """:func:`finepar.device.peer.release` destroys the stream and releases the primary
    context of the bound device, device 0 included (a stand-in driver library)."""
    calls = []

    class Lib:
        def cuStreamDestroy_v2(self, stream):
            calls.append(("stream", stream.value))

        def cuDevicePrimaryCtxRelease_v2(self, dev):
            calls.append(("context", dev.value))
    drv = peer._Driver.__new__(peer._Driver)
    drv.lib, drv.current, drv.stream = Lib(), 0, ctypes.c_void_p(1234)
    monkeypatch.setattr(peer, "_DRIVER", drv)
    peer.release()
    assert calls == [("stream", 1234), ("context", 0)]
    assert drv.current is None
    peer.release()  # nothing bound: nothing released twice
    assert len(calls) == 2
