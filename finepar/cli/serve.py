"""``finepar serve``: a FinePar process that stays up between runs, and the client in
``finepar run`` that hands its command to it.

While a server listens on its socket, ``finepar run`` sends it the command line, the
working directory and its environment's FinePar, OpenCL and CUDA variables, and prints
what comes back. The server runs the command as ``finepar run`` would, in the client's
directory, with the device pair, the graphs, the apps' matrices and the prepared engines
of earlier runs kept (:mod:`finepar.device.resident`): a rerun on the same input skips opening
the devices, reading the file and uploading it. Anything else (another command, other
variables or code, ``--no-server``, ``$FINEPAR_NO_SERVER``, no server, one that stops
before it answers) runs in the client's own process, as without a server.

The socket (``$FINEPAR_SERVER_SOCKET``, else ``finepar-UID/serve.sock`` in
``$XDG_RUNTIME_DIR`` or the temporary directory, a folder of mode 0700) is the user's alone
(mode 0600), and a client talks only to a socket its user owns. A client is served only by
a server of the same FinePar code (:func:`code_tag`) and variables. One command runs at a
time: the GPU is one device, and a second client waits its turn. A command whose output
has begun is never run again in the client, whatever happens to the server.

This module is imported by every ``finepar`` command before anything else, so it uses
the standard library alone.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile

SOCKET_ENV = "FINEPAR_SERVER_SOCKET"
NO_SERVER_ENV = "FINEPAR_NO_SERVER"
#: Environment variables that change what a run does: a server serves a client only when
#: its own are the same (an MPI launcher's, so a rank of ``mpiexec`` never hands its
#: command over).
ENV_PREFIXES = ("FINEPAR_", "POCL_", "CUDA_", "OCL_", "PYOPENCL_", "PMI_", "OMPI_", "MV2_")
#: Default seconds a server waits for a command before it stops.
IDLE_TIMEOUT = 3600.0
#: Seconds a server waits for a connected client's command.
REQUEST_TIMEOUT = 10.0


def socket_path() -> str:
    """Where the server listens: ``$FINEPAR_SERVER_SOCKET``, else ``serve.sock`` in a folder
    of this user's alone (``finepar-UID``, mode 0700) in ``$XDG_RUNTIME_DIR`` or the
    temporary directory."""
    env = os.environ.get(SOCKET_ENV)
    if env:
        return env
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return os.path.join(base, f"finepar-{os.getuid()}", "serve.sock")


def _private_dir(path: str) -> None:
    """Make ``path``'s folder this user's alone where it is the default one (mode 0700);
    refuse one owned by another user or open to others."""
    import stat
    from ..errors import UsageError
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.stat(folder)
    if os.environ.get(SOCKET_ENV) is None and (st.st_uid != os.getuid()
                                               or stat.S_IMODE(st.st_mode) & 0o077):
        raise UsageError(f"{folder} is not this user's alone (owner {st.st_uid}, mode "
                         f"{stat.S_IMODE(st.st_mode):o}): refusing to serve there")


def _ours(path: str) -> bool:
    """Whether ``path`` is a socket this user owns (a client talks to no other)."""
    import stat
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid()


def code_tag() -> str:
    """FinePar's version and the size and modification time of every module and kernel
    source: a client is served only by a server of the same code (cheap: no file read)."""
    from .. import __version__
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # finepar/
    parts = [__version__]
    for folder in (root, os.path.join(os.path.dirname(root), "opencl")):
        for base, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".cl")):
                    path = os.path.join(base, name)
                    st = os.stat(path)
                    parts.append(f"{os.path.relpath(path, folder)}:{st.st_size}:{st.st_mtime_ns}")
    import hashlib
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]


def run_env() -> dict:
    """The variables that change what a run does (:data:`ENV_PREFIXES`), the server's
    own excepted."""
    return {k: v for k, v in os.environ.items()
            if k.startswith(ENV_PREFIXES) and k not in (SOCKET_ENV, NO_SERVER_ENV)}


def process_seconds() -> float | None:
    """Seconds since this process started (Linux's /proc; None elsewhere): the
    interpreter's start and the imports before a command begins."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: clock ticks
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        return max(uptime - started / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError):
        return None


def _connect(path: str, timeout: float | None = None) -> socket.socket | None:
    if not _ours(path):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    sock.settimeout(None)
    return sock


def _send(sock: socket.socket, message: dict) -> None:
    sock.sendall((json.dumps(message) + "\n").encode())


# ------------------------------------------------------------------------------ client


def forward(argv: list[str]) -> int | None:
    """Hand ``finepar run ...`` to a listening server; its exit status, or None when the
    command is to run here (not ``run``, ``--no-server``, no server, one that declines
    or stops before it answers)."""
    if not argv or argv[0] != "run" or os.environ.get(NO_SERVER_ENV) or any(
            a in ("-h", "--help") or (len(a) > 3 and any(o.startswith(a) for o in _LOCAL))
            for a in argv[1:]):  # argparse takes a flag's prefixes too
        return None
    sock = _connect(socket_path())
    if sock is None:
        return None
    heard = False
    with sock:
        try:
            _send(sock, {"argv": argv, "cwd": os.getcwd(), "env": run_env(),
                         "code": code_tag(), "start": process_seconds()})
            for line in sock.makefile("r", encoding="utf-8"):
                msg = json.loads(line)
                if "fallback" in msg:
                    return None
                if "rc" in msg:
                    return int(msg["rc"])
                heard = True
                stream = sys.stdout if "out" in msg else sys.stderr
                stream.write(msg.get("out", msg.get("err", "")))
                stream.flush()
        except (OSError, ValueError):
            pass
    if heard:  # it ran at least in part: not run twice
        print("finepar: error: the server stopped before the command finished",
              file=sys.stderr)
        return 1
    print("finepar: the server stopped before it answered; running here", file=sys.stderr)
    return None


#: Options of ``finepar run`` that keep a command in the caller's process.
_LOCAL = ("--no-server", "--distributed")


def exit_now(code: int) -> None:
    """End the process with ``code`` once its output is out, without the interpreter's
    and the drivers' teardown: every file the command writes is already written
    atomically, and the operating system frees the devices' memory and contexts as
    the process ends (NVIDIA's driver otherwise spent 0.13-0.3 s of each scale-24 run
    on the H100 destroying a context nothing uses again). Builds started ahead and not
    yet begun are dropped; one a compiler is running ends with the process, as it would
    at an interrupt. Under a profiler or a tracer (cProfile, coverage) the process exits
    normally, so they write their data, and so does a process that loaded MPI: its ranks
    finalise together at exit (``mpiexec`` would otherwise end the others' work)."""
    if (sys.getprofile() is not None or sys.gettrace() is not None
            or "mpi4py.MPI" in sys.modules):
        sys.exit(code)  # profilers and tracers write their data, MPI finalises, at exit
    parallel = sys.modules.get("finepar.parallel")  # a served client never loaded
    if parallel is not None:  # it, nor numpy, which importing it here cost 0.14 s a client
        parallel.drop_queued_builds()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away, or a closed stream
            pass
    os._exit(code)


def stop(path: str | None = None) -> bool:
    """Ask the server at ``path`` (default :func:`socket_path`) to stop; whether one did."""
    sock = _connect(path or socket_path(), timeout=5.0)
    if sock is None:
        return False
    with sock:
        _send(sock, {"stop": True})
        return bool(sock.makefile("r").readline())


# ------------------------------------------------------------------------------ server


class _Stream:
    """A text stream whose writes go to the client as messages (``{'out': text}``)."""

    def __init__(self, sock: socket.socket, name: str):
        self.sock, self.name, self.gone = sock, name, False

    def write(self, text: str) -> int:
        if text and not self.gone:
            try:
                _send(self.sock, {self.name: text})
            except OSError:  # the client went away: the command still finishes
                self.gone = True
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def serve(run, path: str | None = None, *, idle_timeout: float = IDLE_TIMEOUT, keep: int = 4,
          ready=None) -> int:
    """Listen on ``path`` (default :func:`socket_path`) and run the ``finepar run``
    commands clients send, one at a time, keeping what they prepare
    (:class:`finepar.device.resident.Resident`, ``keep`` of each kind) until ``idle_timeout``
    seconds pass without a command (0: never) or a client asks it to stop.

    Parameters
    ----------
    run : callable
        ``run(argv) -> exit status``: a command line's run in this process
        (:func:`finepar.cli.entry.main`).
    ready : callable, optional
        Called with the path once the server listens.

    Returns
    -------
    int
        0.

    Raises
    ------
    UsageError
        When a server already listens there.
    """
    import stat
    from ..device import resident
    from ..errors import UsageError
    path = path or socket_path()
    _private_dir(path)
    other = _connect(path, timeout=5.0)
    if other is not None:
        other.close()
        raise UsageError(f"a FinePar server already listens on {path} (stop it with "
                         f"'finepar serve --stop')")
    if os.path.lexists(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise UsageError(f"{path} exists and is not a socket: choose another --socket")
        os.unlink(path)  # a socket left by a server that died
    store = resident.Resident(keep)
    resident.install(store)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # the socket is the user's alone
    try:
        listener.bind(path)
    finally:
        os.umask(old_umask)
    listener.listen(16)
    listener.settimeout(idle_timeout or None)
    env, code = run_env(), code_tag()
    if ready is not None:
        ready(path)
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                break
            with conn:
                try:
                    if _handle(conn, env, code, store, run) == "stop":
                        break
                except OSError:  # the client went away before its answer: serve the next
                    pass
    finally:
        listener.close()
        try:
            os.unlink(path)
        except OSError:
            pass
        resident.install(None)
    return 0


def _handle(conn: socket.socket, env: dict, code: str, store, run) -> str | None:
    """One client's command: run it here with its output streamed back, or decline."""
    conn.settimeout(REQUEST_TIMEOUT)  # a client that sends nothing does not hold the server
    try:
        request = json.loads(conn.makefile("r", encoding="utf-8").readline() or "null")
    except (ValueError, OSError):
        return None
    conn.settimeout(None)
    if not isinstance(request, dict):  # a probe (another server checking), or garbage
        return None
    if request.get("stop"):
        _send(conn, {"rc": 0})
        return "stop"
    argv = request.get("argv") or []
    if request.get("env") != env or request.get("code") != code:
        _send(conn, {"fallback": "other variables or FinePar code than the server's"})
        return None
    _send(conn, {"rc": _run_here(conn, argv, request.get("cwd") or ".", request.get("start"),
                                 store, run)})
    return None


def _run_here(conn: socket.socket, argv: list, cwd: str, start, store, run) -> int:
    """``run(ARGV)`` (``finepar ARGV``) in this process, in ``cwd``, its output sent to the
    client."""
    import time
    import traceback
    saved = sys.stdout, sys.stderr, os.getcwd()
    out, err = _Stream(conn, "out"), _Stream(conn, "err")
    store.start_seconds = start
    t0, code = time.perf_counter(), 1
    try:
        os.chdir(cwd)
        sys.stdout, sys.stderr = out, err
        try:
            code = run(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # noqa: BLE001 - the server stays up; the client sees why
            err.write(traceback.format_exc())
        return code
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        store.start_seconds = None
        try:
            os.chdir(saved[2])
            print(f"finepar serve: finepar {' '.join(argv)} -> exit {code} in "
                  f"{time.perf_counter() - t0:.3f} s; kept {store.sizes()}", flush=True)
        except OSError:  # the server's own folder or terminal went away: the run stands
            pass
