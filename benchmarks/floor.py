"""The bandwidth floor beside every figure: the least bytes an app's run must move through
device memory (:func:`bytes_floor`, the byte model, written down here once) and the copy
bandwidth of the GPU role measured in the same run (:func:`copy_bandwidth`).

The byte model is a **lower bound**: every byte an app cannot avoid, each moved once, with
perfect caching (every reuse a cache hit, x's gathers included). It extends the bandwidth
floor of ``../shared/ANCHORS.md`` ("SpMV and the bandwidth floor": the bytes a CSR product
must move, ``indptr + indices + values + x + y``) to every app. With ``I`` the bytes of an
``indptr`` entry (4, or 8 above 2**31 - 1 entries), ``J`` an index's (4), ``V`` a value's
(4; 0 for a pattern graph or an app that ignores values) and ``csr = (n + 1) I + nnz J +
nnz V``:

* ``spmv``: per product, ``csr + 4n`` (x read once) ``+ 4n`` (y written), times the products;
* ``pagerank``, ``rwr``: per iteration a pattern product (values ignored: ``V = 0``) and
  one vector pass, the out-degree scaling of x: ``csr + 4n (x) + 4n (y) + 4n (1/outdeg)``;
  the L1 change and the dangling sum fuse with the product's write (RWR's restart at one
  seed moves no vector);
* ``hits``: per iteration, a pattern product over the stacked ``B = [[0, A], [A^T, 0]]``
  (``2n`` rows, ``2 nnz`` entries): ``(2n + 1) I + 2 nnz J + 4 (2n)`` read ``+ 4 (2n)``
  written (the authority step, then the hub step);
* ``bfs``: a traversal: the pattern CSR read once, levels (int32, ``4n``) and parents
  (int32, ``4n``) written once, whatever the levels;
* ``sssp``: the CSR read once with its lengths (``V = 4``; a pattern graph's lengths are
  all 1, ``V = 0``), distances (float32, ``4n``) written once;
* ``cc``: the pattern CSR read once, labels (``4n``) written once;
* ``coloring``: the pattern CSR read once, colours (``4n``) written once.

Iterations count only where every algorithm repeats a pass over the graph (products,
power iterations); a traversal's levels or rounds move nothing a perfect cache must move
again (a per-level frontier, or FastSV's and Jones-Plassmann's rounds, are its algorithm's
choice): every FinePar algorithm of an app gets the app's one floor, so their shares
compare. The floor is in bytes; at the measured copy bandwidth (read plus written bytes a
second, as DESIGN.md §6 counts the H100's ~3.0 TB/s) it is ``floor_seconds``, and
``floor_seconds / median seconds`` the share of the copy bandwidth a run reached.
"""

from __future__ import annotations

import numpy as np

#: The byte model in one line (rendered under apps.py's tables).
MODEL = ("bytes floor: a lower bound, every byte once with perfect caching; csr = (n+1) "
         "indptr + nnz indices (+ nnz values where the app reads them and the graph has "
         "them); spmv csr + 4n x + 4n y per product; pagerank, rwr csr + 4n x + 4n y + 4n "
         "1/outdeg per iteration; hits the stacked [[0, A], [A^T, 0]]'s csr + 8n read + 8n "
         "written per iteration; bfs csr + 4n levels + 4n parents, sssp csr (+ lengths) + 4n "
         "distances, cc csr + 4n labels, coloring csr + 4n colours, once a run")

#: Apps whose floor repeats per iteration (a product per iteration).
PER_ITERATION = ("spmv", "pagerank", "rwr", "hits")

#: Bytes of one vector entry (float32 / int32).
WORD = 4


def _indptr_bytes(nnz: int) -> int:
    """Bytes of one ``indptr`` entry for ``nnz`` entries (:func:`finepar.graph.indptr_dtype`)."""
    from finepar.graph import indptr_dtype
    return int(indptr_dtype(int(nnz)).itemsize)


def csr_bytes(n: int, nnz: int, *, indptr: int | None = None, index: int = 4,
              value: int = 0) -> int:
    """Bytes of a CSR matrix read once.

    Parameters
    ----------
    n : int
        Rows.
    nnz : int
        Stored entries.
    indptr : int, optional
        Bytes of an ``indptr`` entry (default: FinePar's, 4 up to 2**31 - 1 entries, else 8).
    index : int
        Bytes of a column index (FinePar's are int32).
    value : int
        Bytes of a value (0: a pattern, or values the app does not read).

    Returns
    -------
    int
        ``(n + 1) indptr + nnz (index + value)``.
    """
    ip = _indptr_bytes(nnz) if indptr is None else int(indptr)
    return (int(n) + 1) * ip + int(nnz) * (int(index) + int(value))


def bytes_floor(app: str, n: int, nnz: int, iterations: int = 1, *, pattern: bool = False,
                indptr: int | None = None, index: int = 4, value: int = 4) -> int:
    """The least bytes a run of ``app`` must move through device memory (module docstring).

    Parameters
    ----------
    app : str
        A registered app's name (:func:`finepar.apps.names`).
    n, nnz : int
        The graph's vertices and stored entries.
    iterations : int
        The run's products (``spmv``) or iterations (``pagerank``, ``rwr``, ``hits``); the
        other apps' floors do not depend on it.
    pattern : bool
        The graph has no values (then ``spmv`` and ``sssp`` read none).
    indptr : int, optional
        Bytes of an ``indptr`` entry (default: FinePar's for ``nnz``, or for ``2 nnz`` in
        ``hits``' stacked matrix).
    index, value : int
        Bytes of a column index and of a value.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        For an app the model does not know.
    """
    n, nnz, it, w = int(n), int(nnz), max(int(iterations), 1), WORD
    valued = 0 if pattern else int(value)
    if app == "spmv":
        return it * (csr_bytes(n, nnz, indptr=indptr, index=index, value=valued) + 2 * w * n)
    if app in ("pagerank", "rwr"):
        return it * (csr_bytes(n, nnz, indptr=indptr, index=index) + 3 * w * n)
    if app == "hits":
        return it * (csr_bytes(2 * n, 2 * nnz, indptr=indptr, index=index) + 2 * w * 2 * n)
    if app == "bfs":
        return csr_bytes(n, nnz, indptr=indptr, index=index) + 2 * w * n
    if app == "sssp":
        return csr_bytes(n, nnz, indptr=indptr, index=index, value=valued) + w * n
    if app in ("cc", "coloring"):
        return csr_bytes(n, nnz, indptr=indptr, index=index) + w * n
    raise ValueError(f"no byte model for app {app!r}")


def graph_floor(app: str, g, iterations: int = 1) -> int:
    """:func:`bytes_floor` of a :class:`finepar.graph.Graph` (its dtypes and pattern flag)."""
    return bytes_floor(app, g.n, g.nnz, iterations, pattern=bool(g.pattern),
                       index=int(g.indices.dtype.itemsize), value=int(g.data.dtype.itemsize),
                       indptr=None if app == "hits" else int(g.indptr.dtype.itemsize))


def floor_record(app: str, g, rec: dict, bandwidth: float | None) -> dict:
    """``bytes_floor``, ``floor_seconds`` and ``floor_share`` of a FinePar record.

    Parameters
    ----------
    app : str
    g : finepar.graph.Graph
    rec : dict
        A :func:`measure.finepar_config` record (``iterations`` of its timed runs,
        ``seconds`` their statistics).
    bandwidth : float or None
        The measured copy bandwidth, bytes a second (:func:`copy_bandwidth`).

    Returns
    -------
    dict
        ``bytes_floor`` (for the median iterations of the timed runs), ``floor_seconds``
        (bytes / bandwidth) and ``floor_share`` (floor_seconds / median seconds); each
        None where the record has no time or no bandwidth was measured.
    """
    its = rec.get("iterations") or []
    ok = bool(rec.get("correct") and rec.get("seconds"))
    b = graph_floor(app, g, int(np.median(its)) if its else 1) if ok else None
    fs = b / bandwidth if b is not None and bandwidth else None
    med = (rec.get("seconds") or {}).get("median")
    return {"bytes_floor": b, "floor_seconds": fs,
            "floor_share": fs / med if fs is not None and med else None}


def copy_bandwidth(pair, nbytes: int = 1 << 30, repeats: int = 5) -> dict:
    """The GPU role's device-to-device copy bandwidth, on the queue FinePar uses.

    One buffer filled, then copied to a second one ``repeats`` times after a warm-up
    copy, each copy timed by its OpenCL profiling event (the pair's queues profile);
    the best copy counts. Bandwidth is bytes read plus written a second (``2 nbytes /
    seconds``), as DESIGN.md §6 gives the H100's. On the emulated pair the GPU role is a
    PoCL context on the CPU, so this is PoCL's memcpy in host memory.

    Parameters
    ----------
    pair : DevicePair
    nbytes : int
        Bytes of the buffer copied (default 1 GiB), cut to an eighth of the device's
        global memory and to its largest allocation.
    repeats : int

    Returns
    -------
    dict
        ``bytes_per_s`` (None where the copy failed), ``buffer_bytes``, ``seconds`` (every
        timed copy), ``device`` (the GPU role's name), ``method``, and ``problem``
        (empty, or why there is no bandwidth).
    """
    from finepar.device.handles import cl
    mod, side = cl(), pair.gpu
    info = side.info
    size = int(min(nbytes, info.max_alloc_bytes, info.global_mem_bytes // 8))
    size -= size % 64
    out = {"bytes_per_s": None, "buffer_bytes": size, "seconds": [], "device": info.name,
           "method": ("OpenCL enqueue_copy between two buffers on the GPU role's queue, "
                      "profiling events, best of "
                      f"{repeats} after a warm-up; bytes read + written"),
           "problem": ""}
    src = dst = None
    try:
        src = mod.Buffer(side.context, mod.mem_flags.READ_WRITE, size)
        dst = mod.Buffer(side.context, mod.mem_flags.READ_WRITE, size)
        mod.enqueue_fill_buffer(side.queue, src, np.ones(1, np.float32), 0, size)
        mod.enqueue_fill_buffer(side.queue, dst, np.zeros(1, np.float32), 0, size)
        side.queue.finish()
        for i in range(repeats + 1):
            ev = mod.enqueue_copy(side.queue, dst, src, byte_count=size)
            ev.wait()
            if i:
                out["seconds"].append((ev.profile.end - ev.profile.start) * 1e-9)
        best = min(out["seconds"])
        out["bytes_per_s"] = 2 * size / best if best > 0 else None
    except Exception as exc:  # noqa: BLE001 - no bandwidth: the floor's share is left out
        out["problem"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        for buf in (src, dst):
            if buf is not None:
                buf.release()
    return out
