"""Afforest's final hooking list (finepar.apps.afforest): only vertices with an edge left
after the sampling rounds, counted against scipy's components, on one engine of the
emulated pair; and the giant found on the device."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import generated_graph
from finepar import api
from finepar.apps.afforest import ROUNDS, Afforest
from finepar.apps.cc import reference_components
from finepar.partition import single_device


@pytest.mark.parametrize("mode", ["shared", "split"])
@pytest.mark.parametrize("scale,seed", [(11, 0), (12, 3)])
def test_sampled_vertices_stay_off_the_hooking_list(scale, seed, mode, pairs):
    """Labels equal scipy's components (smallest vertex); the list holds every vertex
    outside the giant component with more than ROUNDS edges and no vertex with fewer
    (isolated vertices, half of a Graph500 graph's, are never listed): fewer than the
    vertices outside the giant, which GAPBS's loop visits."""
    g = generated_graph(scale, seed)
    wl = api.Workload("cc", g)
    sym = wl.matrix
    eng = wl.engine(pairs[mode], single_device(sym.row_lengths(), "gpu"))
    ref = reference_components(g)
    deg = np.diff(sym.indptr)
    giant = np.bincount(ref).argmax()
    least = int(((ref != giant) & (deg > ROUNDS)).sum())
    most = int((deg > ROUNDS).sum())
    aff = Afforest(eng, "gpu", sym)
    assert not aff.unsampled  # a graph passed in (a rank's subgraph) is always sampled
    aff.run(ROUNDS)
    np.testing.assert_array_equal(aff.labels(), ref)
    assert least <= aff.hooked() <= most
    assert aff.hooked() < int((ref != giant).sum())


@pytest.mark.parametrize("n,group", [(300, None), (5000, None), (5000, 64), (300, 256)])
def test_giant_is_the_most_frequent_sampled_root(n, group, pairs):
    """``afforest_sample`` on a hand-set forest: the most frequent root of the sampled
    vertices (each found by walking up: half of them two steps from it) and its count (a
    sample of n < 1,024 vertices is padded); on a tie the smaller root, as the host's
    ``np.unique`` and ``argmax`` took it; the same with fewer work-items than samples
    (``group``: a device's smaller limit; default the kernel's own, :func:`sample_group`)."""
    from finepar.apps.afforest import SAMPLES
    from finepar.device import cl
    from finepar.io.graph500 import kronecker
    g = kronecker(6)
    wl = api.Workload("cc", g)
    eng = wl.engine(pairs["shared"], single_device(wl.matrix.row_lengths(), "gpu"))
    aff = Afforest(eng, "gpu", wl.matrix)
    count = min(SAMPLES, n)
    rng = np.random.default_rng(7)
    queue = aff.side.queue
    # the sampled vertices are 0..n-1; the roots and the steps between live above them:
    # roots n + r, unique roots n + 1000 + i, steps n + 2500 + i, a root's parent itself
    big = 4999  # sorts after every other root: its run ends the sorted sample
    for roots, want in (([9] * 60 + [3] * 50 + [big] * 80, big), ([5] * 70 + [2] * 70, 2)):
        comp = np.arange(n + 5000, dtype=np.int32)
        idx = rng.permutation(n)[:count].astype(np.int32)
        root = np.concatenate([roots, 1000 + np.arange(count - len(roots))]) + n
        comp[idx] = root
        step = n + 2500 + np.arange(count)[::2]
        comp[idx[::2]], comp[step] = step, root[::2]
        aff.comp = eng.scratch("gpu", comp)
        aff.sample_idx = eng.scratch("gpu", idx)
        wg = group or aff.sample_wg
        eng.launch("gpu", aff.kernels["sample"], wg,
                   (np.int32(count), aff.sample_idx, aff.comp, aff.giant), wg=wg)
        out = np.zeros(2, np.int32)
        cl().enqueue_copy(queue, out, aff.giant, is_blocking=True)
        assert out.tolist() == [n + want, roots.count(want)]
