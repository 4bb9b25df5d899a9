"""probe_calls.py at the session's code with every engine on the profiling queues
(``EngineOptions.profile`` ``auto`` read as ``batch``): a process that never makes a plain
queue. Run from benchmarks/ with the probe's arguments."""
import sys

from finepar.engine import options

real = options.EngineOptions.timing
options.EngineOptions.timing = lambda self, roles, plain_ok: real(self, roles, False)

import probe_calls  # noqa: E402

sys.exit(probe_calls.main_of(probe_calls.main))
