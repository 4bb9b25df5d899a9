"""The prepared-graph cache: what a run decided before its first step, kept for the next run.

A run on a large graph spends most of its wall time before the GPU starts:
choosing ``T_f`` (the tuner and its measured correction), cutting the GPU share
into cache-fit partitions, relabelling the vertices, measuring the split-join
cover. None of that changes while the input, the devices and the options stay
the same, so a second run reuses it. An entry is keyed by

* the content of the input (a digest of its ``indptr``, ``indices`` and values,
  :func:`input_digest`; for a file, memoised by the file's identity so an
  unchanged file is not hashed again),
* the platform (both devices, their drivers, the memory mode),
* the app and every option that shapes the preparation, and
* FinePar's version and the source of the modules that prepare a run
  (:func:`code_digest`), so an upgrade never reads an older decision.

A key's first 16 hex digits (:meth:`PrepCache.prefix`) cover everything but the input's
content (its shape stands in for it), so a run whose prefix no entry has knows it misses
without hashing its input: it hashes on a thread while it prepares (:class:`InputDigest`)
and stores its entry under the whole key.

Entries live in the user's cache directory (``platformdirs.user_cache_dir``,
``$FINEPAR_HOME/cache`` or ``$FINEPAR_CACHE_DIR``) under ``prepared/``, one
folder each: ``manifest.json`` (the decision, the arrays' names, sizes and
checksums, and a checksum of the manifest itself) and one ``.npy`` file per
array. An entry is written to a temporary folder and renamed into place
(atomic); one whose manifest or arrays do not match their checksums, or were
written by another format, is removed and rebuilt, never used. The cache is
capped (:data:`DEFAULT_MAX_BYTES`, ``$FINEPAR_CACHE_MAX_BYTES`` or the config's
``[prepared_cache] max_bytes``): the least recently used entries go first.

Program binaries are kept beside the entries (``programs/``) by
:mod:`finepar.device`, keyed by source, options and device. What runs learnt about an
input file (its digest; that its rows are sorted and duplicate-free, so a later load of
the unchanged file skips that scan) is kept under ``inputs/`` (:class:`FileFacts`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .parallel import chunked

#: The layout of an entry; another one is stale.
FORMAT = "finepar-prepared/1"
#: The cache's default cap, bytes.
DEFAULT_MAX_BYTES = 4 << 30
#: Bytes hashed per task of a parallel digest: 1 MiB, so a graph of a few million entries
#: (a repeated call's key) spreads over the host's cores too (16 MiB pieces left cnr-2000's
#: 13-MB arrays one thread each).
DIGEST_CHUNK = 1 << 20


def cache_root() -> Path:
    """``$FINEPAR_CACHE_DIR``, else ``$FINEPAR_HOME/cache``, else the user's cache
    directory (``platformdirs.user_cache_dir("finepar")``: ``~/.cache/finepar``)."""
    env = os.environ.get("FINEPAR_CACHE_DIR")
    if env:
        return Path(env)
    home = os.environ.get("FINEPAR_HOME")
    if home:
        return Path(home) / "cache"
    return _user_cache_dir(os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))


@lru_cache(maxsize=8)
def _user_cache_dir(xdg: str | None, home: str | None) -> Path:
    """``platformdirs.user_cache_dir("finepar")``, once for the variables it reads (a
    repeated call asks for the root two or three times; platformdirs took about 40 us each
    on the 2-core box)."""
    import platformdirs
    return Path(platformdirs.user_cache_dir("finepar", appauthor=False))


def default_max_bytes(config: dict | None = None) -> int:
    """The cap: ``$FINEPAR_CACHE_MAX_BYTES``, the config's ``[prepared_cache] max_bytes``,
    or :data:`DEFAULT_MAX_BYTES`."""
    env = os.environ.get("FINEPAR_CACHE_MAX_BYTES")
    if env and env.isdigit():
        return int(env)
    table = (config or {}).get("prepared_cache") or {}
    return int(table.get("max_bytes", DEFAULT_MAX_BYTES))


def digest(*arrays: np.ndarray) -> str:
    """A content digest of arrays (their dtypes, shapes and bytes): BLAKE2b of the
    SHA-256 digests of :data:`DIGEST_CHUNK` pieces, the pieces hashed by the pool's threads
    (hashlib releases the GIL; OpenSSL's SHA-256 uses the CPU's SHA instructions, 1.7x
    BLAKE2b's speed on the 2-core box), so gigabytes hash at memory speed. 32 hex digits."""
    top = hashlib.blake2b(digest_size=16)
    for a, parts in zip(arrays, _piece_digests(arrays)):
        _absorb(top, a, parts)
    return top.hexdigest()


def digests(arrays: list) -> list[str]:
    """``[digest(a) for a in arrays]``, every array's pieces hashed on the pool at once
    (a few large arrays keep every thread busy, not one each)."""
    return [_absorb(hashlib.blake2b(digest_size=16), a, parts).hexdigest()
            for a, parts in zip(arrays, _piece_digests(arrays))]


def _absorb(top, a: np.ndarray, parts: list[bytes]):
    """``top`` updated with one array's dtype, shape and pieces' digests; returned."""
    top.update(f"{a.dtype.str}{a.shape}".encode())
    top.update(b"".join(parts))
    return top


def _piece_digests(arrays) -> list[list[bytes]]:
    """Each array's :data:`DIGEST_CHUNK` pieces' SHA-256 digests (16 bytes of each), all
    pieces hashed on the pool."""
    raws = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays]
    pieces = [(k, lo, min(lo + DIGEST_CHUNK, raw.size)) for k, raw in enumerate(raws)
              for lo in range(0, raw.size, DIGEST_CHUNK)]
    done = chunked(lambda i, _: hashlib.sha256(raws[pieces[i][0]][pieces[i][1]:pieces[i][2]]
                                               ).digest()[:16], len(pieces), 1)
    out: list[list[bytes]] = [[] for _ in raws]
    for (k, _, _), d in zip(pieces, done):
        out[k].append(d)
    return out


class FileFacts:
    """What earlier runs learnt about one input file, remembered under the file's identity
    (real path, size, inode, modification and change times) in the cache's ``inputs/``
    folder: a file that changes in any way has another identity, and nothing is known
    of it.

    Parameters
    ----------
    path : str or os.PathLike
        The input file.
    root : Path, optional
        The cache's root (default :func:`cache_root`).
    """

    def __init__(self, path: str | os.PathLike, root: Path | None = None):
        st = os.stat(path)
        ident = (f"{os.path.realpath(path)}|{st.st_size}|{st.st_ino}|{st.st_mtime_ns}|"
                 f"{st.st_ctime_ns}")
        self.source = os.fspath(path)
        self.path = (root or cache_root()) / "inputs" / (
            hashlib.sha256(ident.encode()).hexdigest()[:32] + ".json")
        known = _FACTS.get(self.path)
        if known is not None:  # read before in this process: the file is unchanged
            self.facts = dict(known)
            return
        try:
            self.facts = json.loads(self.path.read_text())["facts"]
        except (OSError, ValueError, KeyError, TypeError):
            self.facts = {}
        else:
            _remember(self.path, self.facts)

    def get(self, key: str, default: Any = None) -> Any:
        return self.facts.get(key, default)

    def set(self, **facts: Any) -> None:
        """Remember ``facts`` beside those known (written atomically; a cache that cannot
        be written only costs the next run the work again)."""
        from .files import atomic_write_json
        self.facts.update(facts)
        _remember(self.path, self.facts)
        try:
            atomic_write_json(self.path, {"source": self.source, "facts": self.facts})
        except OSError:
            pass


#: The facts of the input files read or written in this process, by their facts file
#: (whose name holds the input's path, size, inode and times, so an unchanged input's
#: facts hold): a repeated call on a file's graph read them from disk each time, about
#: 80 us on the 2-core box. Another process's later additions are missed, and found again.
_FACTS: dict = {}
_FACTS_KEPT = 256
_FACTS_LOCK = threading.Lock()


def _remember(path: Path, facts: dict) -> None:
    """Keep ``facts`` of the facts file ``path`` (the oldest dropped past
    :data:`_FACTS_KEPT`)."""
    with _FACTS_LOCK:  # threads may read files at once
        _FACTS.pop(path, None)
        _FACTS[path] = dict(facts)
        while len(_FACTS) > _FACTS_KEPT:
            _FACTS.pop(next(iter(_FACTS)))


def _digest_fact(graph) -> str:
    """The fact's name: the shape, and the piece size (a digest taken with other pieces
    is another value)."""
    return f"digest {graph.n} {graph.nnz} {int(graph.pattern)} {DIGEST_CHUNK}"


def known_digest(graph, root: Path | None = None) -> str | None:
    """The digest of a graph read from a file, when an earlier run remembered it among the
    unchanged file's :class:`FileFacts`; else None."""
    if graph.source and os.path.isfile(graph.source):
        value = FileFacts(graph.source, root).get(_digest_fact(graph))
        return value if isinstance(value, str) else None
    return None


def input_digest(graph, root: Path | None = None) -> str:
    """The digest of a graph's content (``n``, ``indptr``, ``indices``, values unless a
    pattern). For a graph read from a file the digest is remembered among the file's
    :class:`FileFacts`, so an unchanged file is hashed once."""
    value = known_digest(graph, root)
    if value is not None:
        return value
    arrays = [np.array([graph.n, int(graph.pattern)]), graph.indptr, graph.indices]
    if not graph.pattern:
        arrays.append(graph.data)
    value = digest(*arrays)
    if graph.source and os.path.isfile(graph.source):
        FileFacts(graph.source, root).set(**{_digest_fact(graph): value})
    return value


class InputDigest:
    """An input's :func:`input_digest`, taken from its file's facts when known, else
    computed when first asked for, or on a thread from :meth:`start` (a run that cannot
    find its entry hashes its input while it prepares, for the entry it stores).

    Parameters
    ----------
    graph : Graph
    root : Path, optional
        The cache's root (default :func:`cache_root`).
    known : str, optional
        The digest, where the caller took it already.
    """

    def __init__(self, graph, root: Path | None = None, known: str | None = None):
        self.graph, self.root = graph, root
        self._value = known or known_digest(graph, root)
        self._thread: threading.Thread | None = None

    @property
    def known(self) -> bool:
        """Whether the digest is known without hashing."""
        return self._value is not None

    def start(self) -> None:
        """Hash on a thread of its own (the pool's threads do the hashing)."""
        if self._value is None and self._thread is None:
            self._thread = threading.Thread(target=self._compute, name="input-digest",
                                            daemon=True)
            self._thread.start()

    def _compute(self) -> None:
        try:
            self._value = input_digest(self.graph, self.root)
        except Exception:  # noqa: BLE001 - value() hashes again and raises in its caller
            self._value = None

    def value(self) -> str:
        """The digest (waits for :meth:`start`'s thread)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._value is None:
            self._value = input_digest(self.graph, self.root)
        return self._value


#: The modules whose output a cache entry holds (the plan, the tuner's and the whole-run
#: choice's figures, the partitions): a change to any of them makes every key new.
CODE_FILES = ("partition.py", "split/tuner.py", "split/perfmodel.py", "features.py",
              "split/choose.py", "split/answer.py", "apps/powerloop.py", "prepare.py",
              "workload.py", "engine/launches.py", "throttle/dbwp.py", "throttle/kdtile.py",
              "throttle/spac.py", "throttle/plan.py", "throttle/remap.py",
              "throttle/schedule.py", "prepcache.py")


def code_digest() -> str:
    """FinePar's version and the source of :data:`CODE_FILES`."""
    global _CODE
    if _CODE is None:
        from . import __version__
        here = Path(__file__).resolve().parent
        h = hashlib.blake2b(__version__.encode(), digest_size=16)
        for rel in CODE_FILES:
            h.update((here / rel).read_bytes())
        _CODE = h.hexdigest()
    return _CODE


_CODE: str | None = None


@dataclass
class Entry:
    """One prepared run in the cache.

    Attributes
    ----------
    key : str
    meta : dict
        The decision (JSON): plan, tuning, throttling, and what they cost.
    arrays : dict of str to ndarray
    path : Path
    nbytes : int
        The entry's size on disk.
    used : float
        Last use (seconds since the epoch).
    """

    key: str
    meta: dict
    arrays: dict
    path: Path
    nbytes: int
    used: float


class PrepCache:
    """The prepared-graph cache of one directory.

    Parameters
    ----------
    root : path, optional
        Default :func:`cache_root`; entries go in ``root/prepared``.
    max_bytes : int, optional
        Default :func:`default_max_bytes`.

    Attributes
    ----------
    events : list of str
        What happened (hits, misses, damaged entries removed), for the report.
    """

    def __init__(self, root: str | os.PathLike | None = None, max_bytes: int | None = None):
        self.root = Path(root) if root is not None else cache_root()
        self.dir = self.root / "prepared"
        self.max_bytes = default_max_bytes() if max_bytes is None else int(max_bytes)
        self.events: list[str] = []

    @staticmethod
    def prefix(parts: dict) -> str:
        """The first 16 hex digits of every key of ``parts`` (JSON-able: the platform, the
        app, the options and the input's shape), whatever the input's content."""
        return hashlib.sha256(_key_text(parts).encode()).hexdigest()[:16]

    @staticmethod
    def key(parts: dict, content: str = "") -> str:
        """The key of an entry: :meth:`prefix`, then 24 hex digits of a digest of ``parts``,
        the input's ``content`` digest (:func:`input_digest`) and :func:`code_digest`."""
        text = _key_text(parts) + "\0" + content
        return PrepCache.prefix(parts) + hashlib.sha256(text.encode()).hexdigest()[:24]

    def holds(self, prefix: str) -> bool:
        """Whether any entry's key starts with ``prefix``: where none does, a run on an input
        of that shape misses whatever its content, and need not hash it first."""
        try:
            return any(p.name.startswith(prefix) for p in self.dir.iterdir())
        except OSError:
            return False

    # ------------------------------------------------------------------ reading
    def get(self, key: str) -> Entry | None:
        """The entry of ``key``, checked; None when there is none or it was damaged or
        stale (then it is removed, and :attr:`events` says so)."""
        path = self.dir / key
        if not path.is_dir():
            self.events.append("miss")
            return None
        try:
            entry = self._read(key, path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            self.events.append(f"damaged entry removed ({exc})")
            shutil.rmtree(path, ignore_errors=True)
            return None
        os.utime(path / "manifest.json")  # least recently used goes first
        self.events.append("hit")
        return entry

    def _read(self, key: str, path: Path) -> Entry:
        manifest = json.loads((path / "manifest.json").read_text())
        body = {k: v for k, v in manifest.items() if k != "checksum"}
        if manifest.get("checksum") != _text_digest(body):
            raise ValueError("manifest checksum mismatch")
        if manifest.get("format") != FORMAT or manifest.get("key") != key:
            raise ValueError("another format or key")
        infos = manifest["arrays"]
        files = {info["file"]: info["digest"] for info in infos.values()}
        order = sorted(files, key=lambda f: -(path / f).stat().st_size)
        got = [np.load(path / f, mmap_mode="r", allow_pickle=False) for f in order]
        for file, d in zip(order, digests(got)):  # the pieces of every file hashed at once
            if d != files[file]:
                raise ValueError(f"array file {file} checksum mismatch")
        loaded = dict(zip(order, got))
        arrays = {name: loaded[info["file"]] for name, info in infos.items()}
        size = sum(int(a.nbytes) for a in loaded.values())
        return Entry(key, manifest["meta"], arrays, path, size,
                     (path / "manifest.json").stat().st_mtime)

    # ------------------------------------------------------------ generated inputs
    def generated(self, name: str, make: Callable[[], Any]):
        """The graph ``make()`` generates (deterministically), kept as ``inputs/NAME-TAG.npz``
        (TAG: a digest of the generator's source) and read back by later calls. Graphs
        whose arrays exceed an eighth of the cache's cap are generated every time.

        Parameters
        ----------
        name : str
            The graph's name (``graph500-s18-ef16-seed0``).
        make : callable
            Generates the graph (a :class:`~finepar.graph.Graph`).

        Returns
        -------
        Graph
            Generated, or read from the kept file (its ``source``; a note says so).
        """
        from .io import edges, graph500
        from .io import load, save
        tag = hashlib.sha256(b"".join(Path(m.__file__).read_bytes()
                                      for m in (graph500, edges))).hexdigest()[:10]
        path = self.root / "inputs" / f"{name}-{tag}.npz"
        if path.is_file():
            try:
                g = load(path, facts=FileFacts(path, self.root))
            except Exception as exc:  # noqa: BLE001 - a damaged copy is generated again
                self.events.append(f"generated graph regenerated ({exc})")
            else:
                g.name = name
                g.notes.append(f"read from FinePar's cache of generated graphs ({path})")
                return g
        g = make()
        if g.indptr.nbytes + g.indices.nbytes + g.data.nbytes <= self.max_bytes // 8:
            try:
                save(g, path, compressed=False)  # read back at disk speed
            except OSError as exc:
                self.events.append(f"generated graph not kept ({exc})")
        return g

    # ------------------------------------------------------------------ writing
    def put(self, key: str, meta: dict, arrays: dict | None = None) -> None:
        """Write an entry (replacing one of the same key) atomically, then trim the cache
        to its cap. A cache that cannot be written is noted in :attr:`events`, not raised:
        the run it serves is already done."""
        arrays = arrays or {}
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=self.dir))
            try:
                infos, files = {}, {}  # equal arrays (same dtype, shape, bytes) share a file
                named = {k: np.ascontiguousarray(a) for k, a in arrays.items()}
                for (name, a), d in zip(named.items(), digests(list(named.values()))):
                    if d not in files:
                        files[d] = f"{name}.npy"
                        np.save(tmp / files[d], a, allow_pickle=False)
                    infos[name] = {"file": files[d], "bytes": int(a.nbytes), "digest": d}
                body = {"format": FORMAT, "key": key, "created": time.time(),
                        "meta": meta, "arrays": infos}
                from .files import jsonable
                body = jsonable(body)
                body["checksum"] = _text_digest(body)
                (tmp / "manifest.json").write_text(json.dumps(body, indent=1))
                final = self.dir / key
                if final.exists():
                    shutil.rmtree(final, ignore_errors=True)
                os.replace(tmp, final)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            self.trim()
        except OSError as exc:
            self.events.append(f"not written ({exc})")

    def update_meta(self, key: str, **changes: Any) -> None:
        """Merge ``changes`` into an entry's meta (e.g. the split-join cover a run measured):
        the manifest alone is rewritten, atomically, with a new checksum; a damaged or
        missing entry is left to the next run to rebuild."""
        from .files import atomic_write_text, jsonable
        mf = self.dir / key / "manifest.json"
        try:
            manifest = json.loads(mf.read_text())
            body = {k: v for k, v in manifest.items() if k != "checksum"}
            if manifest.get("checksum") != _text_digest(body):
                return
            body["meta"] = jsonable({**body["meta"], **changes})
            body["checksum"] = _text_digest(body)
            atomic_write_text(mf, json.dumps(body, indent=1))
        except (OSError, ValueError):
            pass

    # ------------------------------------------------------------------ housekeeping
    def entries(self) -> list[Entry]:
        """Every readable entry's summary (arrays not loaded), most recently used first."""
        out = []
        for path in self.dir.glob("*") if self.dir.is_dir() else []:
            mf = path / "manifest.json"
            if path.name.startswith(".") or not mf.is_file():
                continue
            try:
                manifest = json.loads(mf.read_text())
                size = sum(f.stat().st_size for f in path.iterdir())
                out.append(Entry(path.name, manifest.get("meta", {}), {}, path, size,
                                 mf.stat().st_mtime))
            except (OSError, ValueError):
                continue
        return sorted(out, key=lambda e: e.used, reverse=True)

    def trim(self) -> list[str]:
        """Remove the least recently used entries until the cache fits its cap; their keys."""
        gone, total = [], 0
        for e in self.entries():
            total += e.nbytes
            if total > self.max_bytes:
                shutil.rmtree(e.path, ignore_errors=True)
                gone.append(e.key)
        return gone

    def clear(self) -> tuple[int, int]:
        """Remove every entry, the inputs' digests and the program binaries; returns
        (entries removed, bytes freed)."""
        count, freed = 0, 0
        for e in self.entries():
            count += 1
            freed += e.nbytes
        for sub in ("prepared", "inputs", "programs"):
            d = self.root / sub
            if d.is_dir():
                if sub != "prepared":
                    freed += sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
                shutil.rmtree(d, ignore_errors=True)
        return count, freed


def _key_text(parts: dict) -> str:
    return json.dumps({"parts": parts, "code": code_digest(), "format": FORMAT},
                      sort_keys=True, default=str)


def _text_digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()
