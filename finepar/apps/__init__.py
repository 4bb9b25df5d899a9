"""The app registry (DESIGN.md §2, "apps/").

Each app is a module of this package that defines an
:class:`~finepar.apps.base.App` subclass decorated with :func:`register`; its OpenCL
fragments are in ``opencl/apps/<app>/``. The registry imports every module of the
package (:data:`HELPERS` aside) the first time it is asked, so adding an app is adding its
module: the CLI, the API (:mod:`finepar.api`'s per-app functions), the NetworkX backend's
documentation, the baselines, the tuner and the benchmarks find apps only through
:func:`get`, :func:`names` and :func:`get_all`, in the order of the apps' ``order``.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..errors import UsageError

_APPS: dict = {}
#: Modules of this package that define no app: the contract, and parts apps share.
HELPERS = ("base", "afforest", "speculative", "bfsranks", "ccranks", "powerloop")


def register(cls):
    """Class decorator: make an App subclass available under its ``name``."""
    _APPS[cls.name] = cls()
    return cls


_loaded: set = set()
_scanned: list = []  # the package path of the last scan


def _load() -> None:
    """Import every app module of the package once (importing one app alone registers
    only that one); the package's folders are scanned again only when its path changes
    (a folder added later: its modules are imported at the next call)."""
    if _scanned == list(__path__):
        return
    for info in pkgutil.iter_modules(__path__):
        if info.name not in HELPERS and info.name not in _loaded:
            importlib.import_module(f"{__name__}.{info.name}")
            _loaded.add(info.name)
    _scanned[:] = list(__path__)


def names() -> tuple[str, ...]:
    """Every app's name, in the registry's order (each app's ``order``, then its name)."""
    _load()
    return tuple(sorted(_APPS, key=lambda k: (_APPS[k].order, k)))


def get(name: str):
    """The app called ``name``.

    Raises
    ------
    UsageError
        For an unknown name (the message lists the apps).
    """
    _load()
    app = _APPS.get(name)
    if app is None:
        raise UsageError(f"unknown app {name!r} (choose from {', '.join(names())})")
    return app


def get_all() -> list:
    """Every app, in the registry's order."""
    return [get(n) for n in names()]
