"""NetworkX's own tests of the dispatched algorithms, run against the FinePar backend
through NetworkX's backend test mechanism (``NETWORKX_TEST_BACKEND=finepar``,
``NETWORKX_FALLBACK_TO_NX=1``: calls the backend declines run in NetworkX) on the
emulated pair, in a subprocess. The plugin ``tests/nxbackend_plugin.py`` counts the tests
in which FinePar itself ran; the count is printed in this run's summary."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("networkx")

#: NetworkX's own suite, in a process of its own: the slow set (pyproject.toml).
pytestmark = pytest.mark.slow

#: The test modules of the dispatched algorithms, and some whose algorithms call them
#: (NetworkX's nested calls are dispatched too: Euler circuits, dominating sets, DAGs test
#: connectivity and BFS). ``tests.test_distance_measures`` is left out: a FinePar run per
#: eccentricity source makes it take many minutes here (its first fifth ran without a
#: failure); ``tests.test_cycles`` (8 tests on FinePar, 20 s) too.
MODULES = [f"networkx.algorithms.{m}" for m in (
    "link_analysis.tests.test_pagerank", "link_analysis.tests.test_hits",
    "components.tests.test_connected", "components.tests.test_weakly_connected",
    "traversal.tests.test_bfs", "shortest_paths.tests.test_unweighted",
    "shortest_paths.tests.test_weighted", "shortest_paths.tests.test_generic",
    "coloring.tests.test_coloring", "tests.test_euler", "tests.test_dominating",
    "tests.test_dag")]

#: Lines for the run's summary (tests/conftest.py prints them).
SUMMARY: list[str] = []


def test_networkx_suite_on_finepar(tmp_path):
    env = dict(os.environ, NETWORKX_TEST_BACKEND="finepar", NETWORKX_FALLBACK_TO_NX="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(Path(__file__).parent),
                                                        os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "-p", "nxbackend_plugin", "--pyargs", *MODULES]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1200)
    out = proc.stdout + proc.stderr
    line = re.search(r"finepar backend: (\d+) tests ran on FinePar: (\d+) passed, "
                     r"(\d+) xfailed, (\d+) failed.*", out)
    assert line, out[-3000:]
    SUMMARY.append(line.group(0))
    ran, passed, xfailed, failed = map(int, line.groups())
    assert proc.returncode == 0 and failed == 0, out[-5000:]
    assert ran >= 80 and passed + xfailed == ran
