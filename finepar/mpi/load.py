"""Per-rank loading: each rank reads only its rows (DESIGN.md §3, "mpi").

* ``.npz`` in CSR layout (:func:`finepar.io.save`, :func:`scipy.sparse.save_npz`): every
  rank reads the row pointers, draws the partition from them, then reads only its
  rows' slice of ``indices`` and ``data``: through a memory map where the member is
  stored uncompressed (its bytes sit at a fixed offset in the archive), by seeking in
  the inflated stream where it is deflated.
* ``graph500:SCALE[:SEED]``: every rank generates its share of the edge chunks and
  routes each entry to the rank owning its row (:mod:`finepar.mpi.kronecker`).
* anything else, and every METIS partition: rank 0 loads the whole input (the one
  reader of text formats; METIS needs the whole graph) and sends each rank its rows.

Every path returns a :class:`RankRows`: the rows a rank owns, global column ids, and what
every rank knows of the whole graph (vertex count, entries, out-degrees).
"""

from __future__ import annotations

import time
import zipfile

import numpy as np

from ..errors import InputError
from ..graph import Graph
from .comm import Communicator, checked
from .partition import RowPartition, by_nnz, metis_order
from .rows import RankRows, finish_rows


def load_rows(spec, comm: Communicator, *, partition: str = "nnz", weights=None,
              drop_zeros: bool = False, check_size=None, progress: bool = False) -> RankRows:
    """Read this rank's rows of ``spec`` (collective: every rank calls it).

    Parameters
    ----------
    spec : str or Graph
        A path, ``graph500:SCALE[:SEED]``, or a Graph every rank already holds (sliced
        where it is, nothing sent).
    comm : Communicator
    partition : {'nnz', 'metis'}
    weights : callable, optional
        ``weights(graph) -> ndarray (n,)``: METIS's vertex weights, the entries of each
        vertex's rows of the app's matrix (default: out-degrees).
    drop_zeros : bool
        Drop stored zeros (as :func:`finepar.io.load`).
    check_size : callable, optional
        ``check_size(n, nnz)``, called on each rank with its own entries before its
        large arrays are built; raises to refuse.
    progress : bool
        Rank 0 reports the stages of a generation (minutes at scale 29) on stderr.

    Returns
    -------
    RankRows

    Raises
    ------
    RankFailure
        On every rank, when any rank met a bad input (the message names the file).
    """
    t0 = time.perf_counter()
    if isinstance(spec, Graph):
        rows = _from_graph(spec, comm, partition, weights)
    elif partition != "metis" and str(spec).startswith("graph500:"):
        from .kronecker import generation_progress, graph500_rows
        with generation_progress(str(spec), comm, progress) as on_stage:
            rows = graph500_rows(str(spec), comm, check_size, on_stage)
    elif (partition != "metis" and str(spec).lower().endswith(".npz")
          and checked(comm, _csr_npz, str(spec))):
        rows = _npz_rows(str(spec), comm, drop_zeros, check_size)
    else:
        rows = _whole_on_root(str(spec), comm, partition, weights, drop_zeros, check_size)
    rows.seconds = time.perf_counter() - t0
    return rows


def _rows_of(graph: Graph, lo: int, hi: int):
    """Rows ``lo .. hi`` of ``graph``: (row pointers from 0, indices, data)."""
    a, b = int(graph.indptr[lo]), int(graph.indptr[hi])
    return (graph.indptr[lo:hi + 1].astype(np.int64) - a, graph.indices[a:b],
            graph.data[a:b])


def _meta(graph: Graph, how: str, perm=None) -> dict:
    return {"name": graph.name, "source": graph.source, "pattern": graph.pattern,
            "symmetric": graph.symmetric, "ids": graph.ids, "notes": list(graph.notes),
            "perm": perm, "how": how}


def _metis(graph: Graph, comm: Communicator, weights) -> tuple[np.ndarray, np.ndarray]:
    """METIS's relabelling and part bounds, computed on rank 0 and sent to every rank."""
    def order():
        w = graph.out_degrees() if weights is None else weights(graph)
        return metis_order(graph, comm.size, w)
    perm, bounds = checked(comm, order) if comm.rank == 0 else checked(comm, lambda: (None, None))
    return comm.bcast_array(perm), comm.bcast_array(bounds)


# ------------------------------------------------------------------ a graph in memory


def _from_graph(graph: Graph, comm: Communicator, method: str, weights) -> RankRows:
    """Every rank holds ``graph``: each keeps its rows (in METIS's order, rank 0's)."""
    perm = None
    if method == "metis":
        perm, bounds = _metis(graph, comm, weights)
        graph = graph.permuted(perm, note=f"relabelled by METIS into {comm.size} parts")
    else:
        bounds = by_nnz(graph.indptr, comm.size)
    part = RowPartition(bounds, graph.n, 1, method)
    indptr, indices, data = _rows_of(graph, int(bounds[comm.rank]), int(bounds[comm.rank + 1]))
    return finish_rows(comm, part, indptr, indices, data,
                       _meta(graph, "in memory on every rank", perm))


# ------------------------------------------------------------------ rank 0 reads all


def _whole_on_root(spec: str, comm: Communicator, method: str, weights, drop_zeros: bool,
                   check_size) -> RankRows:
    """Rank 0 loads ``spec`` whole (and orders it by METIS); every rank gets its rows."""
    from ..inputs import load_graph
    graph = perm = bounds = None
    if comm.rank == 0:
        graph = checked(comm, load_graph, spec, drop_zeros=drop_zeros, check_size=check_size)
        if method == "metis":
            perm, bounds = _metis(graph, comm, weights)
            graph = graph.permuted(perm, note=f"relabelled by METIS into {comm.size} parts")
        else:
            bounds = comm.bcast_array(by_nnz(graph.indptr, comm.size))
    else:
        checked(comm, lambda: None)
        if method == "metis":
            perm, bounds = _metis(None, comm, weights)
        else:
            bounds = comm.bcast_array(None)
    meta = comm.bcast({**_meta(graph, ""), "ids": graph.ids is not None}
                      if comm.rank == 0 else None)
    meta["ids"] = comm.bcast_array(graph.ids if comm.rank == 0 else None) if meta["ids"] else None
    meta.update(perm=perm, how=("read by rank 0, rows sent to each rank" if comm.size > 1
                                else "read whole"))
    part = RowPartition(bounds, int(bounds[-1]), 1, method)
    if comm.rank == 0:
        for r in range(1, comm.size):
            for a in _rows_of(graph, int(bounds[r]), int(bounds[r + 1])):
                comm.send_array(a, r)
        indptr, indices, data = _rows_of(graph, int(bounds[0]), int(bounds[1]))
    else:
        indptr, indices, data = (comm.recv_array(0) for _ in range(3))
    return finish_rows(comm, part, indptr, indices, data, meta)


# ------------------------------------------------------------------ .npz by row range


class NpzMember:
    """One ``.npy`` member of a zip archive, read by element ranges without reading the
    rest: straight from the file where it is stored (:func:`finepar.io.npz.read_member`),
    by a seek in its inflated stream where it is deflated.

    Parameters
    ----------
    archive : zipfile.ZipFile
    path : str
        The archive's file.
    key : str
        The array's name (the member is ``key + '.npy'``).
    stored : dict
        :func:`finepar.io.npz.stored_members` of the archive.
    """

    def __init__(self, archive: zipfile.ZipFile, path: str, key: str, stored: dict):
        self.archive, self.path = archive, path
        self.member = stored.get(key)
        if self.member is not None:
            self.dtype, self.size, self.stored = self.member.dtype, self.member.shape[0], True
            return
        self.info = archive.getinfo(key + ".npy")
        with archive.open(self.info) as f:
            version = np.lib.format.read_magic(f)
            read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                    else np.lib.format.read_array_header_2_0)
            shape, _, self.dtype = read(f)
            self.header = f.tell()
        if len(shape) != 1:
            raise InputError(path, f"'{key}' has shape {shape}, expected 1-D")
        self.size, self.stored = int(shape[0]), False

    def read(self, start: int, stop: int) -> np.ndarray:
        """Elements ``start .. stop`` (a new array)."""
        from ..io.npz import read_member
        if self.stored:
            return read_member(self.path, self.member, start, stop)
        count = max(int(stop) - int(start), 0)
        item = self.dtype.itemsize
        with self.archive.open(self.info) as f:
            f.seek(self.header + int(start) * item)
            return np.frombuffer(f.read(count * item), dtype=self.dtype).copy()


def _csr_npz(path: str) -> bool:
    """Whether ``path`` is an archive holding a CSR matrix (else the whole-file reader
    takes it and names any problem)."""
    try:
        with zipfile.ZipFile(path) as z:
            if "format.npy" not in z.namelist():
                return False
            with z.open("format.npy") as f:
                fmt = np.lib.format.read_array(f, allow_pickle=False).item()
        return (fmt.decode() if isinstance(fmt, bytes) else str(fmt)) == "csr"
    except (OSError, zipfile.BadZipFile, ValueError, UnicodeDecodeError):
        return False


def _npz_scalar(z: zipfile.ZipFile, key: str, default=None):
    if key + ".npy" not in z.namelist():
        return default
    with z.open(key + ".npy") as f:
        return np.lib.format.read_array(f, allow_pickle=False)


def _npz_rows(path: str, comm: Communicator, drop_zeros: bool, check_size) -> RankRows:
    """This rank's rows of a CSR ``.npz``: the row pointers whole, then only its slice."""
    from ..io import validate

    def read():
        from ..io.npz import stored_members
        stored = stored_members(path, min_bytes=0)
        with zipfile.ZipFile(path) as z:
            shape = tuple(int(s) for s in np.atleast_1d(_npz_scalar(z, "shape")))
            validate(name=path, shape=shape)
            n = shape[0]
            pattern = bool(_npz_scalar(z, "finepar_pattern", False))
            ptr = NpzMember(z, path, "indptr", stored)
            indptr = ptr.read(0, ptr.size).astype(np.int64)
            idx = NpzMember(z, path, "indices", stored)
            if (indptr.size != n + 1 or indptr[0] != 0 or indptr[-1] != idx.size
                    or np.any(np.diff(indptr) < 0)):
                raise InputError(path, "not a valid CSR matrix: indptr does not run from 0 to "
                                       "the entries, non-decreasing, over n + 1 rows")
            bounds = by_nnz(indptr, comm.size)
            lo, hi = int(bounds[comm.rank]), int(bounds[comm.rank + 1])
            a, b = int(indptr[lo]), int(indptr[hi])
            if check_size is not None:
                check_size(n, b - a)
            indices = idx.read(a, b)
            data = None if pattern else NpzMember(z, path, "data", stored).read(a, b)
            ids = _npz_scalar(z, "finepar_ids")
            meta = {"symmetric": bool(_npz_scalar(z, "finepar_symmetric", False)),
                    "pattern": pattern or (data is not None and data.dtype == np.bool_)}
        local = np.zeros(n + 1, dtype=np.int64)
        local[lo + 1:hi + 1] = indptr[lo + 1:hi + 1] - a
        local[hi + 1:] = b - a
        return n, bounds, local, indices, data, ids, meta
    n, bounds, local, indices, data, ids, meta = checked(comm, read)
    name = _stem(path)
    lo, hi = int(bounds[comm.rank]), int(bounds[comm.rank + 1])
    graph = checked(comm, _canonical_rows, local, indices, data, n, name, path, meta["pattern"],
                    drop_zeros)
    rows = _rows_of(graph, lo, hi) if graph is not None else (
        np.zeros(hi - lo + 1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))
    notes = graph.notes if graph is not None else []
    return finish_rows(comm, RowPartition(bounds, n, 1, "nnz"), *rows, {
        "name": name, "source": path, "pattern": meta["pattern"], "symmetric": meta["symmetric"],
        "ids": None if ids is None else ids.astype(np.int64), "notes": notes, "perm": None,
        "how": "each rank read its rows of the .npz"})


def _canonical_rows(indptr, indices, data, n, name, path, pattern, drop_zeros):
    """The rows validated and made canonical (:func:`finepar.io.from_csr`); None when this
    rank has no entries."""
    from ..io import from_csr
    if indices.size == 0:
        return None
    return from_csr(indptr, indices, data, n, name=name, source=path, pattern=pattern,
                    drop_zeros=drop_zeros)


def _stem(path: str) -> str:
    import os
    base = os.path.basename(path)
    return base[:-4] if base.lower().endswith(".npz") else base


