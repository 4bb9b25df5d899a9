"""Shared fixtures: the real inputs in ../shared/data, generated graphs, device pairs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

#: The real graphs: $FINEPAR_DATA, else ../shared/data beside the checkout. Without them the
#: tests that read them are skipped (pytest's header and summary say so).
DATA = Path(os.environ.get("FINEPAR_DATA")
            or Path(__file__).resolve().parents[1].parent / "shared" / "data")

# No test calibrates unless it asks to, and none writes to the user's data directory.
os.environ.setdefault("FINEPAR_NO_CALIBRATE", "1")
os.environ.setdefault("FINEPAR_HOME", tempfile.mkdtemp(prefix="finepar-tests-"))
# Runs prepare afresh unless a test asks for the prepared-graph cache (tests/test_cache.py).
os.environ.setdefault("FINEPAR_NO_CACHE", "1")


#: Parameters an app needs on an input it refuses by default (SSSP refuses the negative
#: values of these signed matrices as edge lengths; their magnitudes make a weighted case).
INPUT_PARAMS = {("sssp", "adder_dcop_05.mtx"): {"weights": "abs"},
                ("sssp", "memplus.mtx"): {"weights": "abs"}}


def pytest_report_header(config):
    if DATA.is_dir():
        return f"real graphs: {DATA}"
    return (f"real graphs: NOT FOUND at {DATA} (set FINEPAR_DATA): the tests that read them "
            f"are skipped")

#: Every real input, by file name (the README of ../shared/data describes them).
SHARED_GRAPHS = ("USPowerGrid.mtx", "adder_dcop_05.mtx", "ca-GrQc.mtx", "cnr-2000.mtx.gz",
                 "luxembourg.mtx", "memplus.mtx", "rajat01.mtx", "soc-Slashdot0902.txt.gz",
                 "wiki-Vote.txt")

#: The real graphs whose sweeps are marked ``slow`` (cnr-2000: 3.2 M entries; the others
#: the next largest): README's command (``-m "not slow"``) runs every app, schedule and
#: memory mode on the smaller ones, and ``.ci/run`` runs these too.
LARGE_GRAPHS = ("cnr-2000.mtx.gz", "soc-Slashdot0902.txt.gz", "luxembourg.mtx")


def graph_params(names, slow=LARGE_GRAPHS) -> list:
    """``names`` for ``pytest.mark.parametrize``, those in ``slow`` (default
    :data:`LARGE_GRAPHS`) marked ``slow``."""
    return [pytest.param(n, marks=pytest.mark.slow) if n in slow else n for n in names]


_GRAPH_CACHE: dict = {}


def shared_graph(name: str):
    """Load (once per session) a graph from ../shared/data; skip if the folder is absent."""
    if not DATA.is_dir():
        pytest.skip(f"{DATA} is not present")
    if name not in _GRAPH_CACHE:
        from finepar.io import load
        _GRAPH_CACHE[name] = load(DATA / name)
    return _GRAPH_CACHE[name]


def data_file(name: str):
    """Path of a file in ../shared/data; skip the test if the folder is absent."""
    if not DATA.is_dir():
        pytest.skip(f"{DATA} is not present")
    return DATA / name


def generated_graph(scale: int, seed: int = 0):
    key = ("graph500", scale, seed)
    if key not in _GRAPH_CACHE:
        from finepar.io.graph500 import kronecker
        _GRAPH_CACHE[key] = kronecker(scale, seed=seed)
    return _GRAPH_CACHE[key]


@pytest.fixture(scope="session")
def pairs():
    """Emulated (or real) pairs in both memory modes: {'shared': pair, 'split': pair}."""
    from finepar.api import make_pair
    return {"shared": make_pair(memory="shared", gpu="emulate"),
            "split": make_pair(memory="split", gpu="emulate")}


@pytest.fixture(autouse=True)
def _fresh_walk_costs(request):
    """Each test's walks start from the priors and its runs from no kept engine: the
    session's pairs and those the process keeps (:func:`finepar.device.pair.open_pair`)
    forget what earlier tests' walks measured (:func:`finepar.engine.walk.measured_rates`),
    and the engines a test's runs kept (:func:`finepar.prepare.kept_engines`) go after it,
    so a test does not depend on the tests that ran before it on the same worker."""
    from finepar.device import pair as pair_module
    from finepar.engine.walk import measured_rates
    held = list(pair_module._OPENED.values())
    if "pairs" in request.fixturenames:
        held += list(request.getfixturevalue("pairs").values())
    for pair in held:
        measured_rates(pair).clear()
    yield
    from finepar.prepare import release_engines
    release_engines()


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def pytest_terminal_summary(terminalreporter):
    """Lines the tests left for the summary (NetworkX's suite on the FinePar backend)."""
    import sys
    suite = sys.modules.get("test_nx_suite") or sys.modules.get("tests.test_nx_suite")
    for line in getattr(suite, "SUMMARY", ()):
        terminalreporter.write_line(line)


def push_from(monkeypatch, role: str) -> None:
    """Make ``role`` the push side of a frontier app's run, whatever the measured costs."""
    from finepar.engine import frontier
    monkeypatch.setattr(frontier, "choose_push_role",
                        lambda engine, names, owned_rows, roles=None: (role, {role: 1e-5}))
