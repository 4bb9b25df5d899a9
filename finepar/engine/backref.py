"""A helper's reference back to its engine, held weakly (DESIGN.md §3).

An app keeps its helpers (a frontier queue, a walk, Afforest's rounds, a rank's level
parts) in ``engine.state``; a helper that held its engine strongly made a reference
cycle, so the engine and its device buffers outlived the run until Python's cycle
collector found them, at any later moment: inside another run's timed steps, where
NVIDIA's driver synchronises the device to free memory. With the back-reference weak,
an engine goes, with its buffers, when its last user lets go of it (``finepar.run``'s
return, where nothing keeps it resident).
"""

from __future__ import annotations

import weakref


class EngineRef:
    """A data descriptor for a helper's ``engine`` attribute: assigning an engine stores
    a weak reference, reading it returns the engine.

    Raises
    ------
    ReferenceError
        On reading, where the engine is gone (a helper used after its engine).
    """

    def __set_name__(self, owner, name: str) -> None:
        self.slot = f"_{name}_ref"

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        engine = obj.__dict__[self.slot]()
        if engine is None:
            raise ReferenceError(f"{type(obj).__name__}: its engine is gone")
        return engine

    def __set__(self, obj, engine) -> None:
        obj.__dict__[self.slot] = weakref.ref(engine)
