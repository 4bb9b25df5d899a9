"""The ``finepar`` command line (DESIGN.md §2, "cli"): a module per command
(:mod:`~finepar.cli.run`, :mod:`~finepar.cli.compare`, :mod:`~finepar.cli.generate`,
:mod:`~finepar.cli.devices`, :mod:`~finepar.cli.cache`, :mod:`~finepar.cli.models`;
:mod:`~finepar.cli.mpirun` for ``finepar run`` over MPI ranks), the options they share
(:mod:`~finepar.cli.options`), what a run writes (:mod:`~finepar.cli.outputs`), config
files (:mod:`~finepar.cli.config`), the parser and :func:`main` (:mod:`~finepar.cli.entry`)
and ``finepar serve`` (:mod:`~finepar.cli.serve`).

The console script is :func:`console`. This package's import is kept to the standard
library: every ``finepar`` command imports it first, and a command a listening server
runs needs nothing else in its own process.
"""

from __future__ import annotations

import sys


def console() -> int:
    """The ``finepar`` console script: ``finepar run`` through a listening server
    (:func:`finepar.cli.serve.forward`), else :func:`finepar.cli.entry.main` here; the
    process then ends at once (:func:`finepar.cli.serve.exit_now`)."""
    from .serve import exit_now, forward
    code = forward(sys.argv[1:])
    if code is None:
        from .entry import main
        code = main()
    exit_now(code)


def __getattr__(name: str):
    """``main``, ``build_parser`` and the other parts of :mod:`finepar.cli.entry`, loaded
    on first use (``from finepar.cli import main``)."""
    if name.startswith("_"):
        raise AttributeError(name)
    import importlib
    entry = importlib.import_module(f"{__name__}.entry")
    try:
        return getattr(entry, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
