"""The package's layout holds: no import cycle between FinePar's modules (imports inside
functions count; those made for annotations only, under ``if TYPE_CHECKING:``, do not), no
module over 900 lines, the API module under 400."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "finepar"


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its __init__)."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (annotations only:
    not imported when the code runs)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            yield from (n for child in node.orelse for n in [child, *_runtime_nodes(child)])
            continue
        yield node
        yield from _runtime_nodes(node)


def imports(name: str, path: Path, known: dict) -> set[str]:
    """The package's modules ``name`` imports, anywhere in the file (functions too)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    # a package imports its own modules to re-export them: not a cycle of the layers
    for name in graph:
        graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    assert cycles(graph) == []


def test_the_cycle_finder_finds_one(tmp_path):
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    src = tmp_path / "m.py"  # a function's import counts, an annotation's does not
    src.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import b\n"
                   "def f():\n    from . import c\n")
    known = {"p": None, "p.m": src, "p.b": None, "p.c": None}
    assert imports("p.m", src, known) == {"p", "p.c"}


def test_modules_fit_their_limits():
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert {n: s for n, s in sizes.items() if s > 900} == {}
    assert sizes["finepar.api"] < 400


#: The layers of DESIGN.md §2, bottom up: a module may import its own layer and those
#: below, never one above (the package's __init__, which re-exports the API lazily,
#: aside).
LAYERS = (
    ("core", ("finepar.errors", "finepar.graph", "finepar.files", "finepar.parallel",
              "finepar.progress", "finepar.report", "finepar.features", "finepar.partition",
              "finepar.reference")),
    ("io", ("finepar.io",)),
    ("cache", ("finepar.prepcache",)),
    ("device", ("finepar.device",)),
    ("engine", ("finepar.engine", "finepar.throttle")),
    ("apps", ("finepar.apps",)),
    ("workload", ("finepar.workload",)),
    ("split", ("finepar.split",)),
    ("run", ("finepar.prepare", "finepar.inputs", "finepar.api", "finepar.baselines")),
    ("mpi", ("finepar.mpi",)),
    ("front", ("finepar.cli", "finepar.nx", "finepar.__main__")),
)


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module`` (its longest matching prefix)."""
    found = [(len(p), i) for i, (_, prefixes) in enumerate(LAYERS) for p in prefixes
             if module == p or module.startswith(p + ".")]
    return max(found)[1] if found else None


def test_every_module_has_a_layer_and_imports_only_below():
    known = modules()
    unplaced = [m for m in known if m != "finepar" and layer_of(m) is None]
    assert unplaced == []
    upward = [(m, t) for m, path in known.items() if m != "finepar"
              for t in imports(m, path, known)
              if t != "finepar" and layer_of(t) > layer_of(m)]
    assert upward == []
