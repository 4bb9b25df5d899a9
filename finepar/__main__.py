"""``python -m finepar`` runs the command line; ``finepar run`` hands its command to a
listening ``finepar serve`` first (:mod:`finepar.cli.serve`)."""

import sys

from .cli import console

sys.exit(console())
