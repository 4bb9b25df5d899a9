"""The backend's function list for NetworkX's documentation, generated from the
implementations' registrations (``implements(name, ..., docs=...)``), as nx-cugraph
generates its own: :data:`finepar.nx.FUNCTIONS` is a literal, so that NetworkX reading the
backend's ``backend_info`` at its import imports nothing, and this module writes it.

    python -m finepar.nx.functions          # rewrite FUNCTIONS in finepar/nx/__init__.py

``tests/test_nx.py`` checks that the literal is what the registrations give.
"""

from __future__ import annotations

import re
from pathlib import Path

#: Where the literal lives.
TARGET = Path(__file__).with_name("__init__.py")


def generated() -> dict[str, str]:
    """Every dispatched algorithm's documentation note, in registration order."""
    from . import interface  # noqa: F401 - importing it registers every implementation
    from .dispatch import DOCS
    return dict(DOCS)


def literal(functions: dict[str, str], width: int = 96) -> str:
    """``FUNCTIONS = {...}`` as the source of :data:`finepar.nx.FUNCTIONS` (each note in
    double-quoted pieces of at most ``width`` characters a line)."""
    import json
    lines = ["FUNCTIONS = {"]
    for name, doc in functions.items():
        head = f"    {json.dumps(name)}: "
        pieces, cur = [], ""
        for word in doc.split(" "):
            if cur and len(head) + len(json.dumps(cur + " " + word)) + 2 > width:
                pieces.append(cur + " ")
                cur = word
            else:
                cur = f"{cur} {word}" if cur else word
        pieces.append(cur)
        if len(pieces) == 1:
            lines.append(f"{head}{json.dumps(pieces[0])},")
        else:
            pad = " " * (len(head) + 1)
            body = f"\n{pad}".join(json.dumps(x) for x in pieces)
            lines.append(f"{head}({body}),")
    return "\n".join(lines + ["}"])


def main() -> int:
    """Rewrite the literal in ``finepar/nx/__init__.py``; 0."""
    text = TARGET.read_text(encoding="utf-8")
    new = re.sub(r"(?ms)^FUNCTIONS = \{.*?^\}", lambda _: literal(generated()), text, count=1)
    TARGET.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
