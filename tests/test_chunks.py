"""Chunked shares (FinePar TKDE §4.3): a budget that forces at least 8 chunks, resident or
streamed, gives every app its reference answer, in both memory modes and with the CPU share
on; chunking composes with the length groups, the CSR-adaptive blocks and throttling; the
forced 64-bit kernels equal the 32-bit ones."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import generated_graph, graph_params, shared_graph
from finepar import api, apps
from finepar.engine import Engine, EngineOptions, RowOp
from finepar.errors import DeviceError
from finepar.partition import fine_grained

GRAPHS = ("graph500:11", "cnr-2000.mtx.gz", "wiki-Vote.txt", "luxembourg.mtx")
_REFS: dict = {}


def get(name):
    return generated_graph(11, 6) if name.startswith("graph500") else shared_graph(name)


def options(share_nnz: int, *, chunks: int, streamed: bool, offsets: str = "auto"
            ) -> EngineOptions:
    """Chunks of about 1/chunks of a share's entries (a chunk's column indices are one
    allocation); streamed: a GPU budget of three chunks' indices and values (a ring of two,
    one resident chunk), everything else streams."""
    chunk = max(4 * share_nnz // chunks, 64)
    return EngineOptions(chunk_bytes=chunk, gpu_memory=6 * chunk if streamed else None,
                         offsets=offsets)


def gpu_share_nnz(app_name, g, plan_kw) -> int:
    lengths = api.Workload(app_name, g).matrix.row_lengths().astype(np.int64)
    t = plan_kw.get("threshold")
    return int(lengths.sum() if t is None else lengths[lengths <= t].sum())


@pytest.mark.parametrize("mode", ["shared", "split"])
@pytest.mark.parametrize("name", graph_params(GRAPHS))
@pytest.mark.parametrize("app_name", apps.names())
def test_chunked_runs_match_the_reference(app_name, name, mode, pairs):
    g = get(name)
    app = apps.get(app_name)
    params = app.reference_params(g, app.check_params(g, {}))
    key = (app_name, name)
    if key not in _REFS:
        _REFS[key] = app.reference(g, params)
    runs = ((dict(threshold=64, grouping="pow4"), dict(streamed=False)),
            (dict(threshold=32, grouping="adaptive"), dict(streamed=True)),
            (dict(devices="gpu", grouping="adaptive", schedule="cf",
                  cache_bytes=max(1024, g.n)), dict(streamed=True)))
    for plan_kw, store_kw in runs:
        opts = options(gpu_share_nnz(app_name, g, plan_kw), chunks=10, **store_kw)
        res, rep = api.run(app_name, g, pair=pairs[mode], warmup=False, options=opts,
                           **plan_kw, **params)
        problem = app.check(g, res, _REFS[key], params)
        assert not problem, f"{plan_kw} {store_kw}: {problem}"
        gpu = rep.plan["lowering"]["gpu"]
        assert gpu["chunks"] >= 8, gpu
        assert (gpu["streamed_chunks"] > 0) == store_kw["streamed"]


def test_streamed_steps_report_the_upload_and_overlap(pairs):
    g = shared_graph("cnr-2000.mtx.gz")
    _, rep = api.run("spmv", g, pair=pairs["split"], devices="gpu", grouping="adaptive",
                     warmup=False, repeat=3, options=options(g.nnz, chunks=12, streamed=True))
    low = rep.plan["lowering"]["gpu"]
    assert low["streamed_chunks"] >= 8 and low["streamed_bytes"] > 0
    st = rep.timings["streaming"]["gpu"]
    assert st["bytes"] == 3 * low["streamed_bytes"] and st["upload_s"] > 0
    assert 0.0 <= st["overlap"] <= 1.0
    # a streamed share keeps the profiling queue: the overlap needs the kernels' times
    assert rep.timings["profile"] == "batch" and st["kernel_s"] > 0


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_int64_kernels_equal_int32(pairs, mode):
    """The same products through 32- and 64-bit offsets (chunked and whole), bit for bit."""
    g = shared_graph("soc-Slashdot0902.txt.gz")
    op = RowOp("spmv", "apps/spmv/rowop.cl", has_data=True)
    x = np.random.default_rng(4).uniform(-1, 1, g.n).astype(np.float32)
    outs = []
    for opt in (EngineOptions(), EngineOptions(offsets="int64"),
                options(g.nnz, chunks=9, streamed=True, offsets="int64")):
        eng = Engine(pairs[mode], g, fine_grained(g.row_lengths(), 128, grouping="adaptive"), op,
                     options=opt)
        eng.vector("x", x)
        eng.vector("y", np.zeros(g.n, np.float32))
        eng.rowop(x="x", y="y")
        outs.append(eng.read("y"))
        assert all(st.offset_type == ("int" if opt.offsets == "auto" else "long")
                   for st in eng.stores.values())
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


def test_budget_too_small_is_one_line_before_any_work(pairs):
    g = shared_graph("cnr-2000.mtx.gz")
    op = RowOp("spmv", "apps/spmv/rowop.cl", has_data=True)
    plan = fine_grained(g.row_lengths(), 10**6, grouping="pow4")  # whole rows, up to 2,716
    with pytest.raises(DeviceError) as e:  # a chunk smaller than the longest row
        Engine(pairs["split"], g, plan, op, options=EngineOptions(chunk_bytes=4000))
    assert "raise the memory budget" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(DeviceError) as e:  # no room even for the ring of streamed chunks
        Engine(pairs["split"], g, plan, op, options=EngineOptions(gpu_memory=1000))
    assert "--gpu-memory" in str(e.value) and "2,716 entries" in str(e.value)
