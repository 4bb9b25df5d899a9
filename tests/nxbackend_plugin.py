"""A pytest plugin for NetworkX's own tests run against the FinePar backend
(``NETWORKX_TEST_BACKEND=finepar``; loaded with ``-p nxbackend_plugin``): counts the tests
in which FinePar itself ran (not only NetworkX's fallback) and how they ended, and
prints one line ``finepar backend: N tests ran on FinePar: P passed, X xfailed, F failed``
(the ids of those that failed follow).

NetworkX's tests use graphs of a few nodes, which the backend would hand to NetworkX by
its measured sizes (:mod:`finepar.nx.policy`), and whose connectivity the search from the
first node would answer (:mod:`finepar.nx.components`); the plugin sets ``min_edges`` to 0
and turns that search off, so that FinePar answers them.
"""

from __future__ import annotations

import pytest

_RAN: dict[str, str] = {}
_RUNS: dict[str, int] = {}
_BACK: dict[str, int] = {}


def pytest_configure(config):
    import networkx as nx

    from finepar.nx import components
    nx.config.backends.finepar.min_edges = 0  # FinePar at every size
    # and no search from the first node before is_connected's CC: in graphs this small it
    # would answer every call itself (32 of the 95 tests that run FinePar)
    components.PROBE_NODES = 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    from finepar.nx.device import STATS
    before, back = STATS["runs"], STATS["networkx"]
    yield
    _RUNS[item.nodeid] = STATS["runs"] - before
    _BACK[item.nodeid] = STATS["networkx"] - back


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        state = "xfailed" if hasattr(report, "wasxfail") and report.outcome != "failed" \
            else report.outcome
        _RAN[report.nodeid] = state


def pytest_terminal_summary(terminalreporter):
    ran = {k: v for k, v in _RAN.items() if _RUNS.get(k, 0) > 0}
    count = {s: sum(v == s for v in ran.values()) for s in ("passed", "xfailed", "failed")}
    terminalreporter.write_line(
        f"finepar backend: {len(ran)} tests ran on FinePar: {count['passed']} passed, "
        f"{count['xfailed']} xfailed, {count['failed']} failed "
        f"({sum(_RUNS.values())} FinePar runs; {sum(_BACK.values())} dispatched calls "
        f"handed back to NetworkX in {sum(v > 0 for v in _BACK.values())} tests)")
    if terminalreporter.config.option.verbose > 0:
        for k in sorted(k for k, v in _BACK.items() if v):
            terminalreporter.write_line(f"finepar backend: handed back in {k}")
    for k, v in sorted(ran.items()):
        if v == "failed":
            terminalreporter.write_line(f"finepar backend: FAILED {k}")
