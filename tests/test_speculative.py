"""Speculative greedy colouring: replayed exactly on the host, within the colours of
greedy largest-first, in batches of rounds read back once each, on the emulated pair."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import SHARED_GRAPHS, generated_graph, shared_graph
from finepar import api, apps
from finepar.io import from_scipy
from finepar.apps.coloring import validate_coloring


def speculative(g, seed):
    """The speculative rounds replayed on the host: every uncoloured vertex takes the
    smallest colour no coloured neighbour has; it keeps it unless a neighbour of the round
    took the same colour and outranks it (larger row length of the symmetrised matrix,
    ties by the hashed id). Returns the colours and the rounds."""
    apps.names()
    from finepar.apps.coloring import priorities
    sym = g.symmetrized()
    deg = np.diff(sym.indptr).astype(np.int64)
    rank = deg * 2**32 + priorities(g.n, seed).astype(np.int64)
    rows = np.repeat(np.arange(g.n), deg)
    cols = sym.indices
    color = np.full(g.n, -1)
    rounds = 0
    while (color < 0).any():
        active = color < 0
        tent = np.full(g.n, -1)
        for v in np.flatnonzero(active):
            used = set(color[cols[sym.indptr[v]:sym.indptr[v + 1]]].tolist())
            tent[v] = next(c for c in range(len(used) + 1) if c not in used)
        clash = (active[rows] & active[cols] & (rows != cols) & (tent[rows] == tent[cols])
                 & (rank[cols] > rank[rows]))
        lose = np.zeros(g.n, bool)
        lose[rows[clash]] = True
        win = active & ~lose
        color[win] = tent[win]
        rounds += 1
    return color, rounds


def star_and_clique():
    """A 300-leaf star (a long row: a work-group per vertex) joined to a 70-clique (a second
    window of 64 colours) and a Kronecker graph."""
    g = generated_graph(8, 1)
    k, leaves = 70, 300
    clique = sp.csr_array(np.ones((k, k)) - np.eye(k))
    star = sp.lil_array((leaves + 1, leaves + 1))
    star[0, 1:] = 1
    star[1:, 0] = 1
    a = sp.block_diag([clique, sp.csr_array(star), g.to_scipy()], format="csr")
    bridge = sp.csr_array((np.ones(4), ([3, k, k + 2, 3], [k, 3, 3, k + 2])), shape=a.shape)
    return from_scipy(a + bridge, name="star-clique", pattern=True)


@pytest.mark.parametrize("mode", ["shared", "split"])
def test_speculative_colouring_is_replayed_exactly(mode, pairs):
    """The same colours as the host's replay at every threshold (the device that runs it
    changes with the split, the answer does not), one read per batch of rounds."""
    for g in (shared_graph("ca-GrQc.mtx"), star_and_clique()):
        for seed, t in ((0, 8), (3, 2**31 - 1)):
            want, rounds = speculative(g, seed)
            res, rep = api.run("coloring", g, pair=pairs[mode], threshold=t, warmup=False,
                               seed=seed)
            assert res.extra["algorithm"] == "speculative"
            np.testing.assert_array_equal(res.values, want)
            assert res.iterations == rounds == len(res.extra["rounds"])
            batches = int(np.ceil(np.log2(rounds + 1)))  # rounds 1, 2, 4, ... per batch
            assert rep.timings["host_syncs"] <= batches + 1
    assert res.extra["colors"] >= 70


def test_speculative_colours_near_greedy_largest_first():
    """On every shared graph and a Kronecker graph, at most 1.1x + 1 the colours of
    networkx's greedy largest-first, in at most 2x + 2 as many rounds as colours."""
    pair = api.make_pair(memory="split", gpu="emulate")
    for g in [shared_graph(n) for n in SHARED_GRAPHS] + [generated_graph(12, 4)]:
        res, _ = api.run("coloring", g, pair=pair, devices="gpu", warmup=False)
        greedy = apps.get("coloring").reference(g, {})
        assert not apps.get("coloring").check(g, res, greedy, {})
        k = res.extra["colors"]
        assert k <= 1.1 * greedy + 1 and res.iterations <= 2 * k + 2, (g.name, k, greedy)


def test_speculative_needs_a_device_holding_the_csr(pairs, monkeypatch):
    """auto falls back to Jones-Plassmann where no device holds the CSR; asking for the
    speculative rounds there is a one-line error."""
    import dataclasses
    from finepar.errors import UsageError
    pair = pairs["split"]
    for side in (pair.cpu, pair.gpu):
        monkeypatch.setattr(side, "info", dataclasses.replace(side.info, int64_atomics=False))
    g = generated_graph(9, 1)
    res, _ = api.run("coloring", g, pair=pair, threshold=8, warmup=False)
    assert res.extra["algorithm"] == "jp"
    assert not validate_coloring(g, res.values)
    with pytest.raises(UsageError, match="speculative needs one device"):
        api.run("coloring", g, pair=pair, threshold=8, warmup=False, algorithm="speculative")
