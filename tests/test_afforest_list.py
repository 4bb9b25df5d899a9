"""Afforest's final hooking list on a rank's subgraph (finepar.apps.afforest with
``sampled_off_list``): only vertices with an edge left after the sampling rounds, counted
against scipy's components, on one engine of the emulated pair."""

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
    (isolated vertices, half of a rank's subgraph on Graph500, are never listed), where
    the default lists every vertex outside the giant's sampled tree (the sampled trees
    are the components of the sampled edges: the same in both runs)."""
    g = generated_graph(scale, seed)
    wl = api.Workload("cc", g)
    sym = wl.matrix
    eng = wl.engine(pairs[mode], single_device(sym.row_lengths(), "gpu"))
    ref = reference_components(g)
    deg = np.diff(sym.indptr)
    giant = np.bincount(ref).argmax()
    least = int(((ref != giant) & (deg > ROUNDS)).sum())
    most = int((deg > ROUNDS).sum())
    short = Afforest(eng, "gpu", sym, sampled_off_list=True)
    whole = Afforest(eng, "gpu", sym)
    for aff in (short, whole):
        aff.run(ROUNDS)
        np.testing.assert_array_equal(aff.labels(), ref)
    assert least <= short.hooked() <= most
    assert int((ref != giant).sum()) <= whole.hooked()
    assert whole.hooked() - short.hooked() >= int((deg == 0).sum()) > 0
