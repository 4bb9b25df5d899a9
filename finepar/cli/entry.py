"""The ``finepar`` command line: the parser of every command (each command's module
adds its own) and :func:`main`.

Every error FinePar raises on purpose is printed as one line ``finepar: error: ...`` with
exit status 2 (bad input, bad option) or 1 (device, build, model), and leaves no partial
output file; an unconverged answer exits with 3 (:data:`finepar.cli.outputs.NOT_CONVERGED`).
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from ..errors import BuildError, FineParError, UsageError
from .options import POSITIVE, Parser


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command: each command's module adds its own."""
    from . import cache, compare, devices, generate, models, run
    p = Parser(
        prog="finepar",
        description="Run irregular graph and sparse-matrix work on a CPU and a GPU at once, "
                    "with a fine-grained row split (FinePar).")
    p.add_argument("--version", action="version", version=f"finepar {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in (devices, run):
        command.add(sub)
    add_serve(sub)
    for command in (generate, compare, cache, models):
        command.add(sub)
    return p


def cmd_serve(args) -> int:
    """``finepar serve``: run clients' commands, keeping what they prepare."""
    from .serve import serve, socket_path, stop
    path = args.socket or socket_path()
    if args.stop:
        if not stop(path):
            raise UsageError(f"no FinePar server listens on {path}")
        print(f"stopped the FinePar server on {path}")
        return 0
    if args.idle_timeout < 0:
        raise UsageError(f"--idle-timeout must be >= 0 seconds, not {args.idle_timeout:g}")
    return serve(main, path, idle_timeout=args.idle_timeout, keep=args.keep,
                 ready=lambda p: print(f"finepar serve: listening on {p} (idle timeout "
                                       f"{args.idle_timeout:g} s; 'finepar serve --stop' "
                                       f"stops it)", flush=True))


def add_serve(sub) -> None:
    """``finepar serve``."""
    sv = sub.add_parser("serve", help="stay up and run 'finepar run' commands, keeping "
                                      "devices, graphs and engines between them",
                        description="Listen on a socket and run the 'finepar run' commands "
                                    "of this user, one at a time, keeping the device pair, "
                                    "the graphs read and their prepared engines (buffers on "
                                    "the devices) between runs: a rerun on the same input "
                                    "skips opening the devices, reading the file and the "
                                    "uploads. While it listens, 'finepar run' hands its "
                                    "command to it (--no-server, or FINEPAR_NO_SERVER=1, "
                                    "runs in the caller's process).")
    sv.add_argument("--socket", default=None, metavar="PATH",
                    help="the socket (default: $FINEPAR_SERVER_SOCKET, else "
                         "finepar-UID/serve.sock in $XDG_RUNTIME_DIR or the temporary "
                         "directory)")
    sv.add_argument("--idle-timeout", type=float, default=3600.0, metavar="SECONDS",
                    help="stop after this long without a command (3600; 0: never)")
    sv.add_argument("--keep", type=POSITIVE, default=4, metavar="N",
                    help="graphs and prepared engines kept at most, each (4; the least "
                         "recently used go first)")
    sv.add_argument("--stop", action="store_true", help="stop the server that listens")
    sv.set_defaults(func=cmd_serve)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``finepar`` console script."""
    if not (os.environ.get("FINEPAR_DEBUG") or os.environ.get("PYOPENCL_COMPILER_OUTPUT")):
        import warnings  # a driver's notes on a build that succeeded are not the user's news
        warnings.filterwarnings("ignore", message="Non-empty compiler output")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a one-line usage error
        return int(exc.code or 0)
    try:
        return int(args.func(args) or 0)
    except BuildError as exc:  # a driver's compiler failed: not the user's doing
        print(f"finepar: error: {exc}", file=sys.stderr)
        if os.environ.get("FINEPAR_DEBUG") and exc.log:
            print(exc.log, file=sys.stderr)
        return 1
    except FineParError as exc:  # what the user asked for cannot be done: say why, once
        print(f"finepar: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of our output went away (| head)
        return 0
    except OSError as exc:  # e.g. a disk that filled while writing an output
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"finepar: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("finepar: interrupted", file=sys.stderr)
        return 130
