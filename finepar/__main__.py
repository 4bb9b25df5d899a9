"""``python -m finepar`` runs the command line; ``finepar run`` hands its command to a
listening ``finepar serve`` first (:mod:`finepar.serve`)."""

import sys

from .serve import console

sys.exit(console())
