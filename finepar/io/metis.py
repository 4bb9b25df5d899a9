"""METIS graphs (``.graph``, ``.graph.gz``): the header, one line per vertex, and every
check of an undirected adjacency (symmetric, no self-loops, ``2 m`` neighbours)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..graph import Graph
from .construct import finish_values
from .context import LoadContext, reading
from .text import Text, blank_ranges, lines_of
from .validate import validate


# METIS ---------------------------------------------------------------------------


@dataclass
class _MetisHeader:
    """The header line ``n m [fmt [ncon]]`` of a METIS graph file."""

    n: int
    m: int
    fmt: str  # three digits: vertex sizes, vertex weights, edge weights
    ncon: int  # vertex weights per vertex (0 without)
    line: int  # 0-based line of the header

    @property
    def leading(self) -> int:
        """Numbers before the neighbours on each vertex line."""
        return (self.fmt[0] == "1") + self.ncon

    @property
    def edge_weights(self) -> bool:
        return self.fmt[2] == "1"


def _metis_header(ctx: LoadContext) -> _MetisHeader:
    """Read the first non-comment line (only that much of the file)."""
    with reading(ctx.path, ctx.gz) as f:
        for number, line in enumerate(f):
            if not line.startswith(b"%"):
                return _parse_metis_header(ctx.path, line, number)
    raise InputError(ctx.path, "no METIS header line 'n m [fmt [ncon]]' (the file holds only comments)")


def _parse_metis_header(path: str, line: bytes, number: int) -> _MetisHeader:
    words = line.split()
    where = f"line {number + 1:,}: METIS header"
    if not 2 <= len(words) <= 4:
        raise InputError(path, f"{where} must be 'n m [fmt [ncon]]', found {len(words)} fields")
    try:
        n, m = int(words[0]), int(words[1])
        ncon = int(words[3]) if len(words) > 3 else None
    except ValueError:
        raise InputError(path, f"{where}: n, m and ncon must be integers") from None
    if n < 0 or m < 0:
        raise InputError(path, f"{where}: negative {'n' if n < 0 else 'm'}")
    fmt = words[2].decode("ascii", "replace") if len(words) > 2 else "0"
    if len(fmt) > 3 or set(fmt) - {"0", "1"}:
        raise InputError(path, f"{where}: fmt '{fmt[:8]}' must be up to three digits 0 or 1")
    fmt = fmt.zfill(3)
    if ncon is not None and fmt[1] != "1":
        raise InputError(path, f"{where}: ncon is given but fmt {fmt} has no vertex weights")
    if ncon is not None and not 1 <= ncon <= 1024:
        raise InputError(path, f"{where}: ncon {ncon:,} must be 1 to 1024")
    return _MetisHeader(n, m, fmt, (ncon or 1) if fmt[1] == "1" else 0, number)


def load_metis(ctx: LoadContext) -> Graph:
    path = ctx.path
    h = _metis_header(ctx)
    validate(name=path, shape=(h.n, h.n))
    ctx.check_declared(2 * h.m, 2, f"line {h.line + 1:,}: the METIS header ({h.m:,} edges)")
    ctx.declare(h.n, 2 * h.m)
    raw = ctx.text()
    buf, newlines = lines_of(raw, b"%", line_start=True)
    starts = np.concatenate((np.zeros(1, dtype=np.int64), newlines + 1))
    end = int(newlines[h.line]) if h.line < newlines.size else len(raw)
    text = Text(path, blank_ranges(buf, starts[h.line:h.line + 1], np.array([end])), newlines)
    del buf
    comment = np.frombuffer(raw, dtype=np.uint8)[text.line_starts] == ord("%")
    del raw
    lines = np.flatnonzero(~comment)
    lines = lines[lines > h.line]
    if lines.size < h.n:
        raise InputError(path, f"the METIS header declares {h.n:,} vertices but the file has {lines.size:,} "
                               f"vertex lines")
    extra = lines[h.n:][text.per_line[lines[h.n:]] > 0]
    if extra.size:
        raise text.error(int(extra[0]), f"more vertex lines than the header's {h.n:,} vertices")
    lines = lines[:h.n]
    rows, cols, weights = _metis_adjacency(text, h, lines)
    notes = [f"read a METIS graph: {h.n:,} vertices, {h.m:,} undirected edges (both directions stored)"]
    if h.fmt[0] == "1":
        notes.append("skipped the vertex sizes")
    if h.ncon:
        notes.append(f"skipped the vertex weights ({h.ncon} per vertex)")
    keys = _metis_check(text, lines, rows, cols, weights)
    del rows, cols
    indptr = np.zeros(h.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys >> 32, minlength=h.n), out=indptr[1:])
    indices = (keys & 0xFFFFFFFF).astype(np.int32)
    del keys
    indptr, indices, values = finish_values(indptr, indices, weights, path, drop_zeros=ctx.drop_zeros,
                                             notes=notes)
    return Graph(indptr, indices, values, ctx.name, path, not h.edge_weights, None, notes, symmetric=True)


def _metis_adjacency(text: Text, h: _MetisHeader, lines: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Rows, 0-based neighbours and (with fmt xx1) weights of every vertex line, in file order."""
    counts = text.per_line[lines]
    step = 2 if h.edge_weights else 1
    listed = counts - h.leading
    bad = np.flatnonzero((listed < 0) | (listed % step != 0))
    if bad.size:
        v = int(bad[0])
        pairs = "neighbour weight pairs" if step == 2 else "neighbours"
        raise text.error(int(lines[v]), f"vertex {v + 1:,} has {int(counts[v])} numbers, which is not "
                                        f"{h.leading} leading numbers (fmt {h.fmt}) then {pairs}")
    degrees = listed // step
    total = int(degrees.sum())
    if total != 2 * h.m:
        raise InputError(text.path, f"the METIS header declares {h.m:,} edges but the vertex lines list "
                                    f"{total:,} neighbours (expected {2 * h.m:,}: every edge appears on both "
                                    f"of its endpoints' lines)")
    values = text.ints("METIS number")
    first = np.cumsum(counts) - counts + h.leading  # token of each vertex's first neighbour
    rows = np.repeat(np.arange(h.n, dtype=np.int64), degrees)
    pos = np.arange(total, dtype=np.int64)
    pos -= np.repeat(np.cumsum(degrees) - degrees, degrees)
    pos *= step
    pos += np.repeat(first, degrees)
    cols = values[pos] - 1
    weights = values[pos + 1] if h.edge_weights else None
    del values, pos
    bad = np.flatnonzero((cols < 0) | (cols >= h.n) | (cols == rows))
    if bad.size:
        v, u = int(rows[bad[0]]), int(cols[bad[0]])
        problem = (f"vertex {v + 1:,} lists itself (METIS graphs have no self-loops)" if u == v
                   else f"vertex {v + 1:,} has neighbour {u + 1:,}, outside 1..{h.n:,}")
        raise text.error(int(lines[v]), problem)
    return rows, cols, weights


def _metis_check(text: Text, lines: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                 weights: np.ndarray | None) -> np.ndarray:
    """Sorted ``row << 32 | col`` keys of a METIS adjacency after checking it is a simple undirected graph.

    `weights` (when given) is reordered in place to match the keys.
    """
    keys = rows << 32 | cols
    order = np.argsort(keys, kind="stable") if weights is not None else None
    if order is None:
        keys.sort()
    else:
        keys = keys[order]
        weights[:] = weights[order]
    twice = np.flatnonzero(keys[1:] == keys[:-1])
    if twice.size:
        v, u = int(keys[twice[0]] >> 32), int(keys[twice[0]] & 0xFFFFFFFF)
        raise text.error(int(lines[v]), f"vertex {v + 1:,} lists neighbour {u + 1:,} twice")
    mirror = (keys & 0xFFFFFFFF) << 32 | keys >> 32
    back = np.argsort(mirror) if weights is not None else None
    mirror = mirror[back] if back is not None else np.sort(mirror)
    if not np.array_equal(keys, mirror):
        at = np.minimum(np.searchsorted(mirror, keys), keys.size - 1)
        k = int(keys[np.flatnonzero(mirror[at] != keys)[0]])
        v, u = k >> 32, k & 0xFFFFFFFF
        raise text.error(int(lines[v]), f"vertex {v + 1:,} lists {u + 1:,}, but vertex {u + 1:,} (line "
                                        f"{int(lines[u]) + 1:,}) does not list {v + 1:,}")
    if weights is not None:
        differ = np.flatnonzero(weights != weights[back])
        if differ.size:
            k = int(keys[differ[0]])
            v, u = k >> 32, k & 0xFFFFFFFF
            raise text.error(int(lines[v]), f"vertex {v + 1:,} gives edge {v + 1:,}-{u + 1:,} weight "
                                            f"{int(weights[differ[0]]):,}, but vertex {u + 1:,} (line "
                                            f"{int(lines[u]) + 1:,}) gives {int(weights[back][differ[0]]):,}")
    return keys
