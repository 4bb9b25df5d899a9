"""Hot columns first (finepar.engine.columns): each device's share's columns renumbered on
that device; every product the same as without, bit for bit, and against float64 numpy."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import generated_graph
from finepar import api
from finepar.split import choose
from finepar.engine import Engine, EngineOptions
from finepar.engine.columns import CLASSES, hot_share
from finepar.errors import DeviceError
from finepar.apps.spmv import reference_spmv, spmv_error_bound
from finepar.io import from_scipy


@pytest.fixture(scope="module")
def split_pair():
    return api.make_pair(memory="split", gpu="emulate")


def _spmv(g, pair, x, columns, **kw):
    return api.run("spmv", g, pair=pair, x=x, cache=False, warmup=False,
                   options=EngineOptions(columns=columns), **kw)


@pytest.mark.parametrize("grouping,threshold,devices", [
    ("pow4", 60, "both"), ("adaptive", 60, "both"), ("none", None, "gpu"),
    ("adaptive", None, "gpu")])
def test_renumbered_columns_give_the_same_products(split_pair, grouping, threshold, devices):
    g = generated_graph(12)
    x = np.random.default_rng(3).random(g.n, dtype=np.float32)
    plain, _ = _spmv(g, split_pair, x, "none", grouping=grouping, threshold=threshold,
                     devices=devices)
    hot, rep = _spmv(g, split_pair, x, "hot", grouping=grouping, threshold=threshold,
                     devices=devices)
    cols = rep.plan["columns"]["gpu"]
    assert cols["applied"] and cols["vectors"] == ["x"], cols
    if devices == "both":  # the CPU's share (its own buffers in split memory) too
        assert rep.plan["columns"]["cpu"]["applied"], rep.plan["columns"]
    assert np.array_equal(hot.values, plain.values)  # each row sums in its stored order
    ref = reference_spmv(g, x)
    assert np.all(np.abs(hot.values - ref) <= spmv_error_bound(g, x))


def test_the_numbering_is_a_permutation_hottest_first(split_pair):
    g = generated_graph(12)
    wl = api.Workload("spmv", g)
    plan = choose.plan_for(wl.matrix, threshold=None, devices="gpu", grouping="pow4")
    eng = Engine(split_pair, wl.matrix, plan, wl.app.ops, options=EngineOptions(columns="hot"),
                 column_vectors=wl.app.column_vectors)
    order = eng.columns["gpu"]
    assert order.applied
    perm = order.perm_host(split_pair.gpu)
    assert np.array_equal(np.sort(perm), np.arange(g.n))
    reads = np.bincount(np.asarray(wl.matrix.indices), minlength=g.n)
    cls = np.where(reads > 0, np.floor(np.log2(np.maximum(reads, 1))).astype(int) + 1, 0)
    by_number = cls[np.argsort(perm)]
    hot = by_number[by_number > 0]
    assert np.all(np.diff(hot) <= 0) and np.all(by_number[hot.size:] == 0)
    x, x2 = np.random.default_rng(4).random((2, g.n), dtype=np.float32)
    eng.vector("x", x)  # a new vector, then one written again
    assert np.array_equal(eng.read("x", role="gpu"), x)  # read back in the input's order
    eng.vector("x", x2)
    assert np.array_equal(eng.read("x"), x2)
    with pytest.raises(DeviceError, match="renumbered"):
        eng.iota("x")
    eng.vector("z", x)
    with pytest.raises(DeviceError, match="cannot gather 'z'"):  # read in the old numbering
        eng.rowop(x="z", y="y")
    with pytest.raises(DeviceError, match="cannot write it by row"):
        eng.rowop(x="x", y="x")


def test_auto_renumbers_only_past_the_cache_and_where_few_columns_take_most_reads():
    g = generated_graph(12)
    x = np.ones(g.n, np.float32)
    roomy = api.make_pair(memory="split", gpu="emulate")
    _, rep = _spmv(g, roomy, x, "auto", devices="gpu")
    cols = rep.plan["columns"]["gpu"]
    assert not cols["applied"] and "within the cache" in cols["reason"]
    small = api.make_pair(memory="split", gpu="emulate", config={"cache_overrides": {"": 4096}})
    _, rep = _spmv(g, small, x, "auto", devices="gpu")
    assert rep.plan["columns"]["gpu"]["applied"], rep.plan["columns"]
    hist = np.zeros(CLASSES, np.int64)
    hist[1] = 1000  # every column read once: the hot ones take a small share
    assert hot_share(hist, 4 * 2 * 100, 4, 1000) == pytest.approx(0.1)
    hist[11] = 10  # ten columns read 1024+ times each
    assert hot_share(hist, 4 * 2 * 10, 4, 1000 + 10 * 1024) > 0.9


def test_auto_renumbers_a_gpus_columns_past_a_sixteenth_of_its_cache():
    """A GPU's gathers miss before x outgrows its L2 (each reads 4 bytes of a sector): auto
    renumbers a GPU's columns where x passes GPU_X_CACHE_SHARE of its cache, a CPU's only
    past the whole cache."""
    import dataclasses
    from finepar.engine.columns import GPU_X_CACHE_SHARE
    g = generated_graph(12)  # x: 16 KiB
    cache = 4 * g.n * 4  # x is a quarter of it
    assert 4 * g.n > cache * GPU_X_CACHE_SHARE
    x = np.ones(g.n, np.float32)
    pair = api.make_pair(memory="split", gpu="emulate", config={"cache_overrides": {"": cache}})
    _, rep = _spmv(g, pair, x, "auto", devices="gpu")  # the emulated role is a CPU device
    assert not rep.plan["columns"]["gpu"]["applied"]
    assert "within the cache" in rep.plan["columns"]["gpu"]["reason"]
    pair.gpu.info = dataclasses.replace(pair.gpu.info, kind="gpu")
    y, rep = _spmv(g, pair, x, "auto", devices="gpu")
    assert rep.plan["columns"]["gpu"]["applied"], rep.plan["columns"]
    assert np.allclose(y.values, reference_spmv(g, x), rtol=1e-5, atol=1e-4)
    # a mesh's columns are read alike: its hottest eighth takes an eighth of the reads
    import scipy.sparse as sp
    side = int(np.sqrt(g.n))
    path = sp.diags([1.0, 1.0], [-1, 1], shape=(side, side))
    mesh = from_scipy((sp.kron(path, sp.eye(side)) + sp.kron(sp.eye(side), path)).tocsr(),
                      "mesh")
    _, rep = _spmv(mesh, pair, np.ones(mesh.n, np.float32), "auto", devices="gpu")
    assert not rep.plan["columns"]["gpu"]["applied"]
    assert "hottest columns" in rep.plan["columns"]["gpu"]["reason"]


def test_apps_reading_no_vector_by_column_are_left_alone(split_pair):
    g = generated_graph(10)
    _, rep = api.run("cc", g, pair=split_pair, cache=False,
                     options=EngineOptions(columns="hot"))
    assert rep.plan["columns"] is None
