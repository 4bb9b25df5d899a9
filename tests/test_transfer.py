"""Transfers through page-locked staging (finepar.device.transfer): reads and writes checked byte
for byte against the buffer's contents: chunk counts odd and even, a remainder, an offset,
several dtypes. The emulated GPU keeps its buffers in host memory, so the side is
presented as one with memory of its own, with small chunks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from finepar.device import transfer
from finepar.device import alloc, cl

COUNTS = [10, 1024, 2048, 3000, 5 * 1024 + 7]
DTYPES = [np.int32, np.float64, np.uint8]


@pytest.fixture
def gpu_side(pairs, monkeypatch):
    monkeypatch.setattr(transfer, "STAGED_BYTES", 64)
    monkeypatch.setattr(transfer, "STAGE_BYTES", 4096)
    side = pairs["split"].side("gpu")
    return dataclasses.replace(side, host_memory=False)


def _data(count, dtype):
    return (np.arange(count) * 7919 % 65521).astype(dtype)


def _plain_read(side, buf, count, dtype):
    out = np.empty(count, dtype)
    cl().enqueue_copy(side.queue, out, buf, is_blocking=True)
    return out


@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_staged_read_returns_the_buffer(gpu_side, count, dtype):
    data = _data(3 * count, dtype)
    buf = alloc(gpu_side, data, read_only=True)
    out = np.full(count, 99, dtype=dtype)
    offset = count // 3
    got = transfer.read_staged(gpu_side, out, buf, src_offset=offset * data.itemsize)
    assert got is out
    np.testing.assert_array_equal(out, data[offset:offset + count])
    # two chunks are kept on the side and reused by the next transfer
    stages = _stages_of(gpu_side)
    assert stages is None or len(stages[0]) == 2


@pytest.mark.parametrize("count", COUNTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_staged_write_fills_the_buffer(gpu_side, count, dtype):
    data = _data(count, dtype)
    before = np.full(3 * count, 42, dtype)
    buf = alloc(gpu_side, before)
    offset = count // 2
    transfer.write_staged(gpu_side, buf, data, dst_offset=offset * data.itemsize)
    want = before.copy()
    want[offset:offset + count] = data
    np.testing.assert_array_equal(_plain_read(gpu_side, buf, 3 * count, dtype), want)
    if data.nbytes >= transfer.STAGED_BYTES:
        assert len(_stages_of(gpu_side)[0]) == 2


def _stages_of(side):
    """The staging chunks kept with ``side`` (None before its first staged copy)."""
    return side.__dict__.get("_stage_box", {}).get("stages")


def test_alloc_uploads_through_the_stages(gpu_side):
    data = _data(10_000, np.int32)  # 40 kB: ten chunks of 4 kB
    buf = alloc(gpu_side, data, read_only=True)
    assert _stages_of(gpu_side) is not None
    np.testing.assert_array_equal(_plain_read(gpu_side, buf, data.size, np.int32), data)


def test_small_transfers_take_one_plain_copy(gpu_side):
    buf = alloc(gpu_side, np.arange(8, dtype=np.int32), read_only=True)
    out = transfer.read_staged(gpu_side, np.empty(8, np.int32), buf)
    np.testing.assert_array_equal(out, np.arange(8))
    transfer.write_staged(gpu_side, buf, np.arange(8, 16, dtype=np.int32))
    np.testing.assert_array_equal(_plain_read(gpu_side, buf, 8, np.int32), np.arange(8, 16))
    assert _stages_of(gpu_side) is None


def test_write_async_returns_before_the_queue_drains(pairs):
    """A non-blocking copy whose event pyopencl drops waits for its queue to drain (the
    event keeps the host array alive); write_async holds the event instead, so it returns
    while a long kernel still runs, and the data lands in order after it."""
    mod = cl()
    side = pairs["split"].side("gpu")
    prg = mod.Program(side.context, """
        __kernel void spin(__global float *a) {
            float x = a[get_global_id(0)];
            for (int i = 0; i < 20000000; ++i) x = x * 1.0000001f + 1e-7f;
            a[get_global_id(0)] = x;
        }""").build()
    a = alloc(side, np.zeros(2, np.float32))
    b = alloc(side, np.zeros(2, np.int32))
    spin = mod.Kernel(prg, "spin")
    spin(side.queue, (2,), None, a)
    transfer.write_async(side.queue, b, np.array([7, 9], np.int32))
    ev = transfer._HELD[-1]
    assert ev.command_execution_status != mod.command_execution_status.COMPLETE
    side.queue.finish()
    out = np.zeros(2, np.int32)
    mod.enqueue_copy(side.queue, out, b, is_blocking=True)
    assert out.tolist() == [7, 9]
    transfer.write_async(side.queue, b, np.array([1, 2], np.int32))  # drops the done ones
    assert ev not in transfer._HELD
