"""What every benchmark module stands on: this folder, the project's root (put at the front
of ``sys.path`` unless it is there already, so that ``finepar`` is the checkout's), a child
Python's environment, and the log line. It imports nothing of the others, so any of them
may import it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def child_env(code: Path = ROOT) -> dict:
    """This process's environment for a child Python that imports FinePar from ``code``
    (first on ``PYTHONPATH``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(code), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def log(msg: str) -> None:
    """One line on stdout, flushed at once (a device call's log is read as it goes)."""
    print(msg, flush=True)
