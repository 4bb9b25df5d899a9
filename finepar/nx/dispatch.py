"""The dispatched algorithms' registry, their argument checks, and the hand-back to NetworkX.

Two kinds of "cannot do exactly" (NetworkX's backend interface):

* an **argument** the backend cannot honour (a callable weight, an interchange
  colouring, ...) is seen before any conversion: the algorithm's ``can_run`` returns
  the reason, and NetworkX runs the call itself (or, with ``backend="finepar"`` given
  explicitly, raises its ``NotImplementedError`` naming the reason);
* a **graph** whose answer would differ (non-uniform PageRank weights, fractional
  Dijkstra lengths, no edges) is seen after conversion: :func:`networkx_call` runs
  NetworkX's own implementation on the original graph, so the call still answers.

And one of "slower": a graph on which NetworkX answers faster (:mod:`finepar.nx.policy`,
its measured sizes) is handed back the same way before anything is read, also where
``backend="finepar"`` was given explicitly (NetworkX then asks no ``should_run``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from .device import STATS
from .graph import FineParGraph, release_networkx_entry
from .policy import prefer_networkx

#: name -> (function, can_run(bound arguments) -> True or a reason)
ALGORITHMS: dict[str, tuple[Callable, Callable]] = {}
#: name -> what the implementation adds to NetworkX's documentation (``implements``'s
#: ``docs``); :data:`finepar.nx.FUNCTIONS` is generated from it (:mod:`finepar.nx.functions`)
DOCS: dict[str, str] = {}


def _always(arguments: dict):
    return True


def implements(name: str, can_run: Callable | None = None, quick: Callable | None = None,
               docs: str = ""):
    """Register ``func`` as the backend's ``name`` (NetworkX's signature, without
    ``backend``); ``can_run(arguments)`` gets the call's bound arguments with defaults;
    ``quick(G)``, where given, is NetworkX's answer where it comes at once (None
    otherwise), asked before anything else; ``docs`` is what the backend adds to
    NetworkX's documentation of ``name`` (:data:`DOCS`).

    The function registered wraps ``func``: it first drops NetworkX's own reference to
    the graph from the graph's cache (:func:`finepar.nx.graph.release_networkx_entry`),
    then hands the call to NetworkX's implementation where :func:`finepar.nx.policy.
    prefer_networkx` says NetworkX answers faster, and otherwise runs ``func``, which
    reads what it needs of the graph; a generator's graph is read before it returns
    (:meth:`~finepar.nx.graph.FineParGraph.materialize`: its answer is made later, when
    the NetworkX graph may be gone)."""
    def register(func):
        generator = inspect.isgeneratorfunction(func)

        @functools.wraps(func)
        def call(G, *args, **kwargs):
            if isinstance(G, FineParGraph):
                release_networkx_entry(G)
                answer = quick(G) if quick is not None else None
                if answer is not None:
                    return answer
                if G.source_graph() is not None and prefer_networkx(name, G) is not None:
                    STATS["by_size"] += 1
                    return networkx_call(name, G, *args, **kwargs)
                if generator:
                    G.materialize()
            return func(G, *args, **kwargs)
        call.__name__ = name
        ALGORITHMS[name] = (call, can_run or _always)
        DOCS[name] = docs
        return call
    return register


def nx_function(name: str):
    """NetworkX's dispatchable ``name``."""
    from networkx.utils.backends import _registered_algorithms
    return _registered_algorithms[name]


@functools.lru_cache(maxsize=None)
def _signature(name: str) -> inspect.Signature:
    return inspect.signature(nx_function(name))


def bind(name: str, args, kwargs) -> dict:
    """The arguments of a call to NetworkX's ``name`` by parameter, defaults applied
    (``backend`` and backend keywords dropped). Raises TypeError as the call would."""
    sig = _signature(name)
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
    if ALGORITHMS[name][1] is _always:  # nothing to check: no binding (a few us a call)
        return True
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

