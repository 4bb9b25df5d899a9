"""Reads from a device through page-locked staging (finepar.engine.memory.read_staged),
checked byte for byte against the buffer's contents: chunk counts odd and even, a
remainder, an offset, several dtypes. The emulated GPU keeps its buffers in host memory,
so the side is presented as one with memory of its own, with small chunks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from finepar.engine import memory
from finepar.runtime import alloc


@pytest.fixture
def gpu_side(pairs, monkeypatch):
    monkeypatch.setattr(memory, "STAGED_READ_BYTES", 64)
    monkeypatch.setattr(memory, "STAGE_BYTES", 4096)
    side = pairs["split"].side("gpu")
    return dataclasses.replace(side, host_memory=False)


@pytest.mark.parametrize("count", [10, 1024, 2048, 3000, 5 * 1024 + 7])
@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.uint8])
def test_staged_read_returns_the_buffer(gpu_side, count, dtype):
    data = (np.arange(3 * count) * 7919 % 65521).astype(dtype)
    buf = alloc(gpu_side, data, read_only=True)
    out = np.full(count, 99, dtype=dtype)
    offset = count // 3
    got = memory.read_staged(gpu_side, out, buf, src_offset=offset * data.itemsize)
    assert got is out
    np.testing.assert_array_equal(out, data[offset:offset + count])
    # two stages are kept on the side and reused by the next read
    stages = gpu_side.__dict__.get("_read_stages")
    assert stages is None or len(stages) == 2


def test_small_reads_take_one_plain_copy(gpu_side):
    buf = alloc(gpu_side, np.arange(8, dtype=np.int32), read_only=True)
    out = memory.read_staged(gpu_side, np.empty(8, np.int32), buf)
    np.testing.assert_array_equal(out, np.arange(8))
    assert "_read_stages" not in gpu_side.__dict__
