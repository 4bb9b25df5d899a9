"""The dispatched algorithms' registry, their argument checks, and the hand-back to NetworkX.

Two kinds of "cannot do exactly" (NetworkX's backend interface):

* an **argument** the backend cannot honour (a callable weight, an interchange
  colouring, ...) is seen before any conversion: the algorithm's ``can_run`` returns
  the reason, and NetworkX runs the call itself (or, with ``backend="finepar"`` given
  explicitly, raises its ``NotImplementedError`` naming the reason);
* a **graph** whose answer would differ (non-uniform PageRank weights, fractional
  Dijkstra lengths, no edges) is seen after conversion: :func:`networkx_call` runs
  NetworkX's own implementation on the original graph, so the call still answers.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from .device import STATS

#: name -> (function, can_run(bound arguments) -> True or a reason)
ALGORITHMS: dict[str, tuple[Callable, Callable]] = {}


def _always(arguments: dict):
    return True


def implements(name: str, can_run: Callable | None = None):
    """Register ``func`` as the backend's ``name`` (NetworkX's signature, without
    ``backend``); ``can_run(arguments)`` gets the call's bound arguments with defaults."""
    def register(func):
        ALGORITHMS[name] = (func, can_run or _always)
        func.__name__ = name
        return func
    return register


def nx_function(name: str):
    """NetworkX's dispatchable ``name``."""
    from networkx.utils.backends import _registered_algorithms
    return _registered_algorithms[name]


def bind(name: str, args, kwargs) -> dict:
    """The arguments of a call to NetworkX's ``name`` by parameter, defaults applied
    (``backend`` and backend keywords dropped). Raises TypeError as the call would."""
    sig = inspect.signature(nx_function(name))
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    out = dict(bound.arguments)
    out.pop("backend", None)
    out.pop("backend_kwargs", None)
    return out


def can_run(name: str, args, kwargs):
    """NetworkX's ``can_run`` hook: True, or why not (a string)."""
    if name not in ALGORITHMS:
        return False
    try:
        arguments = bind(name, args, kwargs)
    except TypeError as exc:
        return f"arguments do not fit: {exc}"
    return ALGORITHMS[name][1](arguments)


def networkx_call(name: str, G, *args, **kwargs):
    """Run NetworkX's own ``name`` on the graph ``G`` was converted from (rebuilt from
    ``G`` when that graph is gone), for a case the backend cannot answer exactly."""
    from .graph import convert_to_nx
    STATS["networkx"] += 1
    return nx_function(name).orig_func(convert_to_nx(G), *args, **kwargs)

