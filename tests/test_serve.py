"""``finepar serve``: a resident process that runs ``finepar run`` for its clients, keeping
the devices, graphs and prepared engines between runs; the answers stay right, a changed
file is read again, and anything the server should not run runs in the client (asserted by
what the reports say ran, never by time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import generated_graph
from finepar.device import resident
from finepar.cli import serve
from finepar.io import save
from finepar.apps.bfs import bfs_levels


def test_resident_keeps_the_most_recent_of_each_kind():
    store = resident.Resident(keep=2)
    made = []
    for key in ("a", "b", "a", "c", "b"):
        store.kept("graph", key, lambda k=key: made.append(k) or k.upper())
    assert made == ["a", "b", "c", "b"]  # "b" went when "c" came after "a" was used again
    assert store.sizes()["graph"] == 2 and store.get("graph", "a") is None
    assert store.hits["graph"] == 1
    with pytest.raises(ValueError):
        resident.Resident(keep=0)
    assert resident.current() is None  # nothing is kept outside a server
    assert resident.kept("graph", "x", lambda: 1) == 1


def _env(tmp_path, **extra) -> dict:
    env = dict(os.environ)
    env.pop("FINEPAR_NO_CACHE", None)
    env.pop("FINEPAR_NO_SERVER", None)
    env.update(FINEPAR_CACHE_DIR=str(tmp_path / "cache"),
               FINEPAR_SERVER_SOCKET=str(tmp_path / "s.sock"), **extra)
    return env


def _finepar(env, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "finepar", *args], env=env,
                          capture_output=True, text=True, check=False, timeout=300)


def _bfs(env, tmp_path, graph, name, *extra) -> tuple[np.ndarray, dict]:
    out, rep = tmp_path / f"{name}.npy", tmp_path / f"{name}.json"
    done = _finepar(env, "run", "bfs", str(graph), "--root", "0", "-o", str(out),
                    "--json", str(rep), "-q", *extra)
    assert done.returncode == 0, done.stderr
    return np.load(out), json.loads(rep.read_text())


@pytest.fixture
def server(tmp_path):
    env = _env(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "finepar", "serve", "--idle-timeout", "300"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sock = tmp_path / "s.sock"
    for _ in range(600):
        if sock.exists() or proc.poll() is not None:
            break
        time.sleep(0.1)
    assert sock.exists(), proc.stdout.read() if proc.poll() is not None else "no socket"
    yield env, proc
    if proc.poll() is None:
        _finepar(env, "serve", "--stop")
        proc.wait(timeout=60)


@pytest.mark.slow  # servers and clients in their own processes
def test_a_served_rerun_reuses_the_engine_and_follows_the_file(server, tmp_path):
    env, proc = server
    g = generated_graph(10, 1)
    path = tmp_path / "g.npz"
    save(g, path)
    want = bfs_levels(g, 0)
    first, r1 = _bfs(env, tmp_path, path, "first")
    again, r2 = _bfs(env, tmp_path, path, "again")
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(again, want)
    assert r1["cache"]["resident"] is False and r2["cache"]["resident"] is True
    assert r2["timings"]["setup"] == 0.0 and r2["cache"]["hit"] is True
    # the file rewritten with another graph of the same shape: read again, its own answer
    other = g.permuted(np.random.default_rng(2).permutation(g.n))
    os.remove(path)
    save(other, path)
    changed, r3 = _bfs(env, tmp_path, path, "changed")
    np.testing.assert_array_equal(changed, bfs_levels(other, 0))
    assert r3["cache"]["resident"] is False
    # a served client loads neither numpy nor OpenCL (0.14 s of every rerun, once)
    out = tmp_path / "plain.npy"
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "finepar", "run", "bfs",
                           str(path), "--root", "0", "-o", str(out), "-q"], env=env,
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0 and out.exists()
    assert " numpy" not in done.stderr and "pyopencl" not in done.stderr
    # --no-server, and a client whose FinePar variables differ, run in their own process
    _, r4 = _bfs(env, tmp_path, path, "local", "--no-server")
    _, r5 = _bfs({**env, "FINEPAR_CACHE_MAX_BYTES": str(1 << 30)}, tmp_path, path, "other-env")
    assert r4["cache"]["resident"] is False and r5["cache"]["resident"] is False
    # a second server on the socket is refused in one line; --stop stops the first
    again = _finepar(env, "serve")
    assert again.returncode == 2 and "already listens" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    stopped = _finepar(env, "serve", "--stop")
    assert stopped.returncode == 0, stopped.stderr
    assert proc.wait(timeout=60) == 0
    assert not (tmp_path / "s.sock").exists()
    log = proc.stdout.read()
    assert log.count("-> exit 0") == 4  # first, again, changed and plain were served
    assert _finepar(env, "serve", "--stop").returncode == 2  # none listens now


@pytest.mark.slow  # servers and clients in their own processes
def test_a_client_runs_here_when_no_server_listens(tmp_path, monkeypatch):
    env = _env(tmp_path)
    (tmp_path / "s.sock").write_text("")  # a stale file, not a socket anyone listens on
    monkeypatch.setenv("FINEPAR_SERVER_SOCKET", str(tmp_path / "s.sock"))
    assert serve.forward(["run", "bfs", "x.npz"]) is None
    assert serve.forward(["cache", "list"]) is None  # only runs are handed over
    g = generated_graph(9, 0)
    path = tmp_path / "g.npz"
    save(g, path)
    levels, rep = _bfs(env, tmp_path, path, "here")
    np.testing.assert_array_equal(levels, bfs_levels(g, 0))
    assert rep["cache"]["resident"] is False


@pytest.mark.slow  # servers and clients in their own processes
def test_a_relative_path_means_the_file_in_the_clients_folder(server, tmp_path):
    """Two folders hold a g.npz each, of one shape and other values: a served run of each,
    named relatively from its own folder (and one through the other's), answers for the
    file the client names, and the cache's memory of each file stays its own."""
    from finepar.io import from_csr
    env, _ = server
    g = generated_graph(10, 1)
    ones = np.ones(g.nnz, np.float32)
    a = from_csr(g.indptr, g.indices, ones, g.n, name="g")
    b = from_csr(g.indptr, g.indices, 3 * ones, g.n, name="g")
    for folder, graph in (("x", a), ("y", b)):
        (tmp_path / folder).mkdir()
        save(graph, tmp_path / folder / "g.npz")

    def spmv_in(folder, graph):
        out = tmp_path / f"{folder}-{graph.replace('/', '_')}.npy"
        done = subprocess.run([sys.executable, "-m", "finepar", "run", "spmv", graph, "-o",
                               str(out), "-q"], env=env, cwd=tmp_path / folder,
                              capture_output=True, text=True, check=False, timeout=300)
        assert done.returncode == 0, done.stderr
        return np.load(out)
    ya = spmv_in("x", "g.npz")  # y = A x for the app's default x (its seed)
    assert np.abs(ya).max() > 0
    for folder, name, scale in (("y", "../x/g.npz", 1), ("y", "g.npz", 3),
                                ("x", "../y/g.npz", 3), ("x", "g.npz", 1)):
        np.testing.assert_allclose(spmv_in(folder, name), scale * ya, rtol=1e-4, atol=1e-4)
    # a served error names the file as the client typed it, as a local run does
    (tmp_path / "x" / "bad.mtx").write_text("%%MatrixMarket matrix coordinate real general\n")
    for extra in ((), ("--no-server",)):
        done = subprocess.run([sys.executable, "-m", "finepar", "run", "spmv", "bad.mtx", *extra],
                              env=env, cwd=tmp_path / "x", capture_output=True, text=True,
                              check=False, timeout=300)
        assert done.returncode == 2
        assert done.stderr.startswith("finepar: error: bad.mtx: "), done.stderr
        assert str(tmp_path) not in done.stderr


def test_the_client_keeps_to_its_own_sockets_and_flags(tmp_path, monkeypatch):
    """A prefix of --no-server or --distributed keeps the command here (argparse takes
    prefixes); a file that is not this user's socket is never talked to, and a server is
    not started over a file that is not a socket."""
    import socket as sk
    path = tmp_path / "s.sock"
    monkeypatch.setenv("FINEPAR_SERVER_SOCKET", str(path))
    listener = sk.socket(sk.AF_UNIX, sk.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    try:
        assert serve._ours(str(path))
        for flag in ("--no-server", "--no-serv", "--distrib"):
            assert serve.forward(["run", "bfs", "g.npz", flag]) is None
    finally:
        listener.close()
    path.unlink()
    path.write_text("not a socket")
    assert not serve._ours(str(path)) and serve.forward(["run", "bfs", "g.npz"]) is None
    env = _env(tmp_path)
    refused = _finepar(env, "serve", "--socket", str(path))
    assert refused.returncode == 2 and "not a socket" in refused.stderr
    assert path.read_text() == "not a socket"


def test_a_kept_engine_starts_no_builds_ahead(tmp_path, monkeypatch):
    """A rerun on an engine a resident process kept guesses no programs: the guesses it
    once started (and then waited for) cost a served PageRank rerun 1.96 s on the H100."""
    from finepar import api
    from finepar.engine import frontier
    pair = api.make_pair(memory="shared", gpu="emulate")
    g = generated_graph(10, 3)
    guessed = []  # every start of the builds ahead goes through early_build
    real = frontier.early_build
    monkeypatch.setattr(frontier, "early_build", lambda *a: guessed.append(a) or real(*a))
    resident.install(resident.Resident(4))
    try:
        _, first = api.run("pagerank", g, pair=pair, cache=tmp_path, devices="both")
        ahead = len(guessed)
        _, again = api.run("pagerank", g, pair=pair, cache=tmp_path, devices="both")
    finally:
        resident.install(None)
    assert first.cache["resident"] is False and again.cache["resident"] is True
    assert ahead > 0 and len(guessed) == ahead
