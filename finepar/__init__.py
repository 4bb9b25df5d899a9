"""FinePar: fine-grained CPU+GPU co-processing of irregular graph and sparse-matrix work.

See ``DESIGN.md`` for the layers. The Python API (:mod:`finepar.api`) is
re-exported here lazily, so that ``import finepar`` does not load OpenCL
until a device is needed::

    import finepar
    g = finepar.load_graph("cnr-2000.mtx.gz")
    scores, report = finepar.pagerank(g)
"""

from __future__ import annotations

__version__ = "0.1.0"

#: The API besides the apps' own functions (``finepar.pagerank``, ... from the registry).
_API = ("load_graph", "run", "Workload", "make_pair", "release")


def _app_functions() -> tuple[str, ...]:
    import importlib
    apps = importlib.import_module(f"{__name__}.apps")  # not `from . import`: that asks here
    return tuple(a.api_function for a in apps.get_all())


def __getattr__(name: str):
    if name == "load":
        from .io import load
        return load
    if name == "__all__":
        return [*_API, *_app_functions(), "load", "__version__"]
    if name.startswith("_") or not (name in _API or name in _app_functions()):
        raise AttributeError(f"module 'finepar' has no attribute {name!r}")
    from . import api
    return getattr(api, name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_API, *_app_functions(), "load"])
