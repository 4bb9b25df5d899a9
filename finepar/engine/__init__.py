"""The engine: lowers a plan to launches and runs them on both devices (DESIGN.md §3).

``launches`` (Launch, Signature, the lowering of a share to segments and
launches), ``memory`` (a share's arrays and launches on one device),
``executors`` (static co-run, split-join profiling, the dynamic baseline's
chunk hand-out, §4.2's co-run rule), ``frontier`` (the frontier apps' loop),
``options`` (memory budgets and chunking), ``exchange`` (the halo of split memory), ``timing`` (step
records) and ``core`` (the :class:`Engine` the apps drive).
"""

from .core import Engine
from .launches import RowOp
from .memory import SLOTS
from .options import EngineOptions
from .timing import StepRecord

__all__ = ["Engine", "EngineOptions", "RowOp", "SLOTS", "StepRecord"]
