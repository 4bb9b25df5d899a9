"""The app registry: adding an app is one module in finepar/apps/ (plus its kernel
fragment folder and its tests); the CLI, the Python API and the benchmarks see it with
nothing else edited."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap

import numpy as np
import pytest

from conftest import generated_graph

#: An out-degree app: y_i = the number of stored entries of row i, by the (+, 1) row
#: operation on the kernel skeleton, checked against numpy.
OUTDEG = '''
    """Out-degree of every vertex (a test of the registry)."""

    from pathlib import Path

    import numpy as np

    from finepar.apps import register
    from finepar.apps.base import App, AppResult
    from finepar.engine import RowOp

    FRAGMENT = str(Path(__file__).parent / "opencl" / "apps" / "outdeg" / "rowop.cl")


    @register
    class OutDegree(App):
        name = "outdeg"
        title = "out-degree of every vertex"
        order = 999
        api_doc = "Out-degrees (float32); returns ``(degrees, report)``."
        ops = (RowOp("outdeg", FRAGMENT),)
        exchanges = False

        def prepare(self, engine, graph):
            engine.vector("y", np.zeros(graph.n, dtype=np.float32))
            engine.vector("x", np.zeros(graph.n, dtype=np.float32))
            return {}

        def run(self, engine, graph, **params):
            self.prepared(engine, graph)
            engine.rowop(x="x", y="y")
            return AppResult(values=None, iterations=1, work_edges=graph.nnz)

        def collect(self, engine, graph, result):
            result.values = engine.read("y")
            return result

        def profile_step(self, engine):
            engine.rowop(x="x", y="y")

        def reference(self, graph, params):
            return np.diff(graph.indptr).astype(np.float64)

        def check(self, graph, result, ref, params):
            bad = np.flatnonzero(result.values != ref)
            return f"{bad.size} degrees differ (first {bad[0]})" if bad.size else ""

        def summary(self, result, graph):
            return [("max degree", f"{int(result.values.max())}")]
'''

FRAGMENT = '''
    /* Out-degree: the (+, 1) semiring over float32. Concatenated before skeleton/rowop.cl. */
    #define APP_FRAGMENT
    typedef float acc_t;
    typedef float part_t;
    #define X_DECL __global const float *restrict x
    #define Y_DECL __global float *restrict y
    #define S0_DECL __global const float *restrict s0
    #define S1_DECL __global float *restrict s1
    #define S2_DECL __global const float *restrict s2
    #define AUX_DECL __global const float *restrict aux
    #define IDENTITY 0.0f
    #define REDUCE(a, b) ((a) + (b))
    #define TERM(k) (1.0f)
    #define COMPENSATED 0
    #define EPILOGUE(r, acc) y[r] = (acc);
'''


@pytest.fixture
def outdeg(tmp_path, monkeypatch):
    """The out-degree app's module and fragment in a folder of the apps package's path."""
    from finepar import apps
    folder = tmp_path / "more_apps"
    (folder / "opencl" / "apps" / "outdeg").mkdir(parents=True)
    (folder / "outdeg.py").write_text(textwrap.dedent(OUTDEG))
    (folder / "opencl" / "apps" / "outdeg" / "rowop.cl").write_text(textwrap.dedent(FRAGMENT))
    monkeypatch.setattr(apps, "__path__", [*apps.__path__, str(folder)])
    yield apps.get("outdeg")
    apps._APPS.pop("outdeg", None)
    apps._loaded.discard("outdeg")
    sys.modules.pop("finepar.apps.outdeg", None)
    import finepar.api
    finepar.api.__dict__.pop("outdeg", None)


def test_a_new_module_is_an_app_everywhere(outdeg, capsys, tmp_path, pairs):
    from finepar import apps
    from finepar.cli import build_parser, main
    assert apps.names()[-1] == "outdeg" and outdeg.name == "outdeg"
    g = generated_graph(9)
    want = np.diff(g.indptr)
    # the Python API: finepar.outdeg, made from the registry
    import finepar
    assert "outdeg" in finepar.__all__ and "outdeg" in dir(finepar)
    degrees, report = finepar.outdeg(g, pair=pairs["split"], threshold=16)
    np.testing.assert_array_equal(degrees, want)
    assert report.app == "outdeg" and "Out-degrees" in finepar.outdeg.__doc__
    # the command line: finepar run outdeg and finepar compare outdeg
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "outdeg", "--help"])
    assert "out-degree of every vertex" in capsys.readouterr().out
    out = tmp_path / "deg.npy"
    assert main(["run", "outdeg", "graph500:9", "--gpu", "emulate", "-o", str(out), "-q"]) == 0
    np.testing.assert_array_equal(np.load(out), want)
    js = tmp_path / "c.json"
    assert main(["compare", "outdeg", "graph500:9", "--gpu", "emulate", "--methods",
                 "cpu-only,finepar", "--repeats", "1", "--json", str(js), "-q"]) == 0
    assert all(r["correct"] for r in json.loads(js.read_text())["results"])
    capsys.readouterr()
    # the benchmarks: the apps stage offers it
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]
                           / "benchmarks"))
    try:
        bench = importlib.import_module("apps")
        assert "outdeg" in bench.app_names("all")
    finally:
        sys.path.pop(0)


def test_the_api_functions_come_from_the_registry():
    import finepar
    from finepar import api, apps
    assert [a.api_function for a in apps.get_all()] == list(api.app_functions())
    assert finepar.connected_components.__name__ == "connected_components"
    with pytest.raises(TypeError, match="takes 2 positional"):
        finepar.bfs(generated_graph(6), 0, 1)
    with pytest.raises(AttributeError):
        finepar.no_such_app  # noqa: B018
