"""``finepar generate``: a Graph500 Kronecker graph written as ``.npz`` or ``.mtx``."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UsageError
from .options import NONNEG, POSITIVE, UNIT_OPEN, check_outputs, int_at_least


def cmd_generate(args) -> int:
    import resource  # Unix only, as PoCL
    import time
    from ..io.graph500 import diagonal_copy, kronecker
    from ..io import save
    check_outputs(args, output=(".npz", ".mtx", ".mtx.gz"))
    out = Path(args.output)
    started = time.perf_counter()
    tty = sys.stderr.isatty()
    stages: list[str] = []

    def progress(fraction: float, what: str) -> None:
        """A stderr line per stage with the fraction done (on a terminal, updated in place)."""
        new = not stages or stages[-1] != what
        if new:
            stages.append(what)
        if tty:
            lead = "\n\r" if new and len(stages) > 1 else "\r"
            print(f"{lead}generate: {fraction:4.0%} {what}", end="", file=sys.stderr, flush=True)
        elif new:
            print(f"generate: {fraction:4.0%} {what}", file=sys.stderr, flush=True)

    try:
        g = kronecker(args.scale, args.edgefactor, args.a, args.b, args.c, args.d, seed=args.seed,
                      symmetric=not args.directed, workers=args.workers, progress=progress)
    except ValueError as exc:
        raise UsageError(f"generate --scale {args.scale}: {exc}") from None
    if args.type1:
        progress(1.0, "placing each row's nonzeros around the diagonal")
        g = diagonal_copy(g)
    big = g.nnz > 10 ** 8  # deflating gigabytes of indices takes minutes and saves little
    progress(1.0, f"writing {out}{' uncompressed' if big else ''}")
    save(g, out, compressed=not big)
    if tty:
        print(file=sys.stderr)
    print(f"wrote {out}: {g.n:,} vertices, {g.nnz:,} stored entries ({g.name})")
    for note in g.notes:
        print(f"  {note}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB (bytes on macOS)
    peak *= 1 if sys.platform == "darwin" else 1024
    print(f"took {time.perf_counter() - started:.1f} s, peak memory {peak / 2 ** 30:.2f} GiB")
    return 0


def add(sub) -> None:
    """``finepar generate``."""
    gen = sub.add_parser("generate", help="write a Graph500 Kronecker graph",
                         description="Generate a Graph500 Kronecker graph (2^SCALE vertices, "
                                     "EDGEFACTOR*2^SCALE edges, random vertex relabelling, "
                                     "seeded) and write it as .npz or .mtx.")
    gen.add_argument("--scale", "-s", type=int_at_least(1), required=True,
                     help="log2 of the vertex count (1..30)")
    gen.add_argument("--edgefactor", "-e", type=POSITIVE, default=16, help="edges per vertex (16)")
    gen.add_argument("-a", type=UNIT_OPEN, default=0.57, help="initiator A (0.57)")
    gen.add_argument("-b", type=UNIT_OPEN, default=0.19, help="initiator B (0.19)")
    gen.add_argument("-c", type=UNIT_OPEN, default=0.19, help="initiator C (0.19)")
    gen.add_argument("-d", type=UNIT_OPEN, default=0.05, help="initiator D (0.05)")
    gen.add_argument("--seed", type=NONNEG, default=0)
    gen.add_argument("--directed", action="store_true",
                     help="keep edge directions (default: undirected, as Graph500)")
    gen.add_argument("--workers", type=POSITIVE, default=None,
                     help="threads (default: every CPU available); the graph does not depend on it")
    gen.add_argument("--type1", action="store_true",
                     help="write the quasi-diagonal (type 1) copy: each row's nonzeros placed "
                          "around the diagonal")
    gen.add_argument("--output", "-o", required=True, help="output .npz, .mtx or .mtx.gz")
    gen.add_argument("--force", action="store_true",
                     help="replace the output file even where it is read-only")
    gen.set_defaults(func=cmd_generate)
