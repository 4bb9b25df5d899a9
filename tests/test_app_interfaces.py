"""Each app through the command line and the API beyond the generic test: relabelled runs
answer in the input's ids, bad parameters are one-line errors, saved answers, the API's
functions."""

from __future__ import annotations

import os
import numpy as np
import pytest

from conftest import data_file, shared_graph
from finepar import api, apps
from finepar.cli import main
from finepar.apps.bfs import bfs_levels_fast
from finepar.apps.coloring import validate_coloring
from finepar.apps.hits import reference_hits
from finepar.apps.rwr import reference_rwr
from finepar.apps.sssp import reference_sssp, validate_sssp

nx = pytest.importorskip("networkx")


@pytest.mark.parametrize("app_name", ["rwr", "hits", "sssp", "coloring"])
def test_relabelled_runs_answer_in_input_ids(app_name, pairs):
    """A run on the relabelled graph, its parameters mapped (permute_params) and its
    result mapped back (unpermute), answers as the run on the input does."""
    g = shared_graph("wiki-Vote.txt")
    perm = np.random.default_rng(0).permutation(g.n)
    app = apps.get(app_name)
    given = {"restart": np.random.default_rng(1).uniform(0, 1, g.n)} if app_name == "rwr" else {}
    params = app.check_params(g, given)
    kw = dict(pair=pairs["split"], threshold=16, warmup=False)
    res, _ = api.run(app_name, g, **kw, **params)
    rel, _ = api.run(app_name, g.permuted(perm), **kw, **app.permute_params(params, perm))
    rel = app.unpermute(rel, perm)
    if app_name == "sssp":
        np.testing.assert_array_equal(rel.values, res.values)
    elif app_name == "coloring":
        assert not validate_coloring(g, rel.values)
    else:
        assert np.abs(rel.values - res.values).sum() < 1e-5
    if app_name == "hits":
        assert np.abs(rel.extra["authorities"] - res.extra["authorities"]).sum() < 1e-5


BAD = [
    (("sssp", "{memplus}"), "memplus.mtx: 76,396 negative edge weights"),
    (("sssp", "{wiki}", "--root", "99999"), "--root 99999"),
    (("sssp", "{wiki}", "--weights", "signed"), "--weights"),
    (("rwr", "{wiki}", "--restart-prob", "0"), "--restart-prob"),
    (("rwr", "{wiki}", "--restart-prob", "1"), "--restart-prob"),
    (("rwr", "{wiki}", "--seed", "0"), "--seed 0"),  # SNAP ids of wiki-Vote start at 3
    (("hits", "{wiki}", "--tol", "-1"), "--tol"),
    (("hits", "{wiki}", "--max-iter", "0"), "--max-iter"),
    (("coloring", "{wiki}", "--seed", "-2"), "--seed"),
]


@pytest.mark.parametrize("argv,needle", BAD, ids=[" ".join(a[0][:1] + a[0][2:]) for a in BAD])
def test_bad_parameters_are_one_line_errors(capsys, tmp_path, argv, needle):
    files = {"memplus": data_file("memplus.mtx"), "wiki": data_file("wiki-Vote.txt")}
    out_npy = tmp_path / "out.npy"
    rc = main(["run", *(a.format(**files) for a in argv), "--gpu", "emulate", "-o",
               str(out_npy)])
    out, err = capsys.readouterr()
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("finepar: error:"), err
    assert needle in lines[0] and out == ""
    assert not os.listdir(tmp_path)


def test_run_saves_each_new_apps_answer(capsys, tmp_path):
    """finepar run APP -o FILE for each new app: the saved values are the app's answer."""
    g = shared_graph("USPowerGrid.mtx")
    saved = {}
    for app in ("rwr", "hits", "sssp", "coloring"):
        out_npy = tmp_path / f"{app}.npy"
        rc = main(["run", app, str(data_file("USPowerGrid.mtx")), "--gpu", "emulate",
                   "--threshold", "4", "-q", "-o", str(out_npy)])
        assert rc == 0, capsys.readouterr().err
        saved[app] = np.load(out_npy)
    root = int(np.argmax(g.out_degrees()))
    p = np.eye(1, g.n, root).ravel()
    assert np.abs(saved["rwr"] - reference_rwr(g, p)).sum() < 1e-4
    assert np.abs(saved["hits"] - reference_hits(g)[0]).sum() < 1e-4
    assert not validate_sssp(g, root, saved["sssp"], "values",
                                       *reference_sssp(g, root))
    assert not validate_coloring(g, saved["coloring"])


def test_api_wrappers_of_the_new_apps(pairs):
    """finepar.rwr / hits / sssp / coloring return what their docstrings say."""
    import finepar
    g = shared_graph("wiki-Vote.txt")
    pair = pairs["split"]
    kw = dict(pair=pair, threshold=64, warmup=False)
    root = int(np.argmax(g.out_degrees()))
    scores, rep = finepar.rwr(g, seed=root, **kw)
    assert rep.app == "rwr" and abs(float(scores.sum()) - 1) < 1e-5
    hubs, auth, _ = finepar.hits(g, **kw)
    assert hubs.shape == auth.shape == (g.n,) and abs(float(auth.sum()) - 1) < 1e-5
    dist, _ = finepar.sssp(g, root=root, **kw)
    np.testing.assert_array_equal(np.isfinite(dist), bfs_levels_fast(g, root) >= 0)
    colours, _ = finepar.coloring(g, **kw)
    assert not validate_coloring(g, colours)
