"""Edge lists: SNAP (``.txt``, ``.tsv``, ``.edges``, ``.el``), KONECT (``out.NAME``)
and networkx (``.edgelist``), each optionally gzipped."""

from __future__ import annotations

import re

import numpy as np

from ..errors import InputError
from ..graph import Graph
from .construct import finish_values, valued_csr, from_edges
from .context import LoadContext
from .text import Text, blank_ranges, check_weights, lines_of


# edge lists: SNAP, KONECT, networkx -------------------------------------------------


def _compact_ids(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Renumber the used ids to ``0 .. n-1`` in increasing order; return (src, dst, ids)."""
    low = min(int(src.min()), int(dst.min()))
    top = max(int(src.max()), int(dst.max()))
    m = src.size
    if low >= 0 and top < 4 * m + (1 << 20):
        used = np.zeros(top + 1, dtype=bool)
        used[src] = True
        used[dst] = True
        ids = np.flatnonzero(used)
        if ids.size == top + 1:
            return src, dst, ids
        remap = np.cumsum(used, dtype=np.int64)
        remap -= 1
        del used
        return remap[src], remap[dst], ids
    ids, inverse = np.unique(np.concatenate((src, dst)), return_inverse=True)
    return inverse[:m], inverse[m:], ids


def _compacted(src: np.ndarray, dst: np.ndarray, notes: list[str], what: str = "ids"
               ) -> tuple[np.ndarray, np.ndarray, int, np.ndarray | None]:
    """Compact raw ids (:func:`_compact_ids`); ids None when they were already ``0 .. n-1``."""
    src, dst, ids = _compact_ids(src, dst)
    n = ids.size
    if int(ids[0]) == 0 and int(ids[-1]) == n - 1:
        return src, dst, n, None
    notes.append(f"compacted raw {what} (largest {int(ids[-1]):,}) to {n:,} vertices")
    return src, dst, n, ids


def _edges_graph(ctx: LoadContext, src: np.ndarray, dst: np.ndarray, weights: np.ndarray | None, n: int,
                 ids: np.ndarray | None, notes: list[str], *, symmetric: bool = False) -> Graph:
    """The graph of parsed edges (endpoints in ``[0, n)``): pattern, or valued with duplicates summed."""
    m = src.size
    ctx.declare(n, 2 * m if symmetric else m)
    src, dst = src.astype(np.int32, copy=False), dst.astype(np.int32, copy=False)
    if weights is None:
        return from_edges(src, dst, n, name=ctx.name, source=ctx.path, symmetric=symmetric, ids=ids, notes=notes)
    if symmetric:
        off = src != dst
        src, dst = np.concatenate((src, dst[off])), np.concatenate((dst, src[off]))
        weights = np.concatenate((weights, weights[off]))
        del off
        notes.append(f"stored both directions of every undirected edge ({m:,} -> {src.size:,} entries)")
    csr, merged = valued_csr(src, dst, weights, n)
    del src, dst, weights
    if merged:
        notes.append(f"summed the weights of {merged:,} duplicate edges")
    indptr, indices, values = finish_values(csr.indptr, csr.indices, csr.data, ctx.path,
                                             drop_zeros=ctx.drop_zeros, notes=notes)
    return Graph(indptr, indices, values, ctx.name, ctx.path, False, ids, notes, symmetric=symmetric)


def _extra_columns_note(k: int, first: int, notes: list[str], why: str) -> None:
    if k > first:
        extra = k - first
        notes.append(f"ignored {extra} extra column{'s' if extra > 1 else ''} after column {first} ({why})")


def load_snap(ctx: LoadContext) -> Graph:
    text = Text(ctx.path, *lines_of(ctx.text(), b"#%"))
    k = text.fields(lambda c: c >= 2, "2 integer vertex ids and an optional weight")
    ends = text.ints("vertex id", k=k, cols=(0, 1)).reshape(-1, 2)
    notes = [f"read {ends.shape[0]:,} edges"]
    weights = None
    if k >= 3:
        weights = text.floats("weight", k, 2)
        notes.append("third column read as edge weights")
        _extra_columns_note(k, 3, notes, "timestamps or other data")
    src, dst, n, ids = _compacted(ends[:, 0], ends[:, 1], notes)
    del ends, text
    return _edges_graph(ctx, src, dst, weights, n, ids, notes)


_KONECT_TYPES = ("sym", "asym", "bip")


def _konect_header(path: str, raw: bytes) -> tuple[str, str, list[int]]:
    """(network type, weight type, numbers of the second header line) of a KONECT file."""
    lines = raw[:4096].split(b"\n", 2)
    first = lines[0].strip()
    words = first[1:].split() if first.startswith(b"%") else []
    kind = words[0].decode("ascii", "replace").lower() if words else ""
    if kind not in _KONECT_TYPES:
        raise InputError(path, "line 1: expected a KONECT header '% sym|asym WEIGHTS' (files named out.NAME "
                               "are read as KONECT networks)")
    if kind == "bip":
        raise InputError(path, "line 1: bipartite KONECT networks (two vertex sets) are not supported")
    weight = words[1].decode("ascii", "replace").lower() if len(words) > 1 else "unweighted"
    counts: list[int] = []
    if len(lines) > 1 and lines[1].strip().startswith(b"%"):
        numbers = lines[1].strip()[1:].split()
        if numbers and all(w.isdigit() for w in numbers):
            counts = [int(w) for w in numbers]
    return kind, weight, counts


def load_konect(ctx: LoadContext) -> Graph:
    raw = ctx.text()
    kind, weight_type, counts = _konect_header(ctx.path, raw)
    text = Text(ctx.path, *lines_of(raw, b"%"))
    del raw
    k = text.fields(lambda c: c >= 2, "2 integer vertex ids, then optional weight and timestamp")
    ends = text.ints("vertex id", k=k, cols=(0, 1)).reshape(-1, 2)
    m = ends.shape[0]
    notes = [f"read {m:,} edges (KONECT '{kind} {weight_type}')"]
    if counts and counts[0] != m:
        raise InputError(ctx.path, f"line 2: the header declares {counts[0]:,} edges but the file lists "
                                   f"{m:,} (truncated?)")
    weights = None
    if k >= 3 and weight_type != "unweighted":
        weights = text.floats("weight", k, 2)
        notes.append("third column read as edge weights")
        _extra_columns_note(k, 3, notes, "timestamps")
    else:
        _extra_columns_note(k, 2, notes, f"'{weight_type}' network: multiplicities or timestamps")
    n = int(ends.max())
    if len(counts) > 1:
        n = max(n, counts[1])
        if n > counts[1]:
            row = int(np.flatnonzero((ends > counts[1]).any(axis=1))[0])
            raise text.error(int(text.data_lines[row]), f"vertex id {n:,} exceeds the header's "
                                                        f"{counts[1]:,} vertices")
    low = np.flatnonzero((ends == 0).any(axis=1))
    if low.size:
        raise text.error(int(text.data_lines[low[0]]), "vertex id 0 (KONECT ids start at 1)")
    del text
    ends -= 1
    symmetric = kind == "sym"
    if symmetric:
        notes.append("'% sym': undirected, each edge listed once; both directions are stored")
    return _edges_graph(ctx, ends[:, 0], ends[:, 1], weights, n, None, notes, symmetric=symmetric)


# networkx: "u v {'weight': 2.0, ...}". Values may come wrapped as np.float64(...).
_NX_WEIGHT = re.compile(rb"""[{,]\s*(?:'weight'|"weight")\s*:\s*(?:(?:np|numpy)\.\w+\()?([^\s,}()]+)""")
_NX_OTHER_KEY = re.compile(rb"""[{,]\s*(?:'(?!weight')([^'\\]*)'|"(?!weight")([^"\\]*)")\s*:""")


def load_networkx(ctx: LoadContext) -> Graph:
    buf, newlines = lines_of(ctx.text(), b"#")
    notes: list[str] = []
    found = _nx_attributes(ctx.path, buf, newlines, notes)
    if found is None:  # "u v" or write_weighted_edgelist's "u v w"
        text = Text(ctx.path, buf, newlines)
        k = text.fields(lambda c: c in (2, 3), "'u v', 'u v weight' or 'u v {attributes}'")
        weights = text.floats("weight", k, 2) if k == 3 else None
    else:
        buf, dict_lines, weights = found
        text = Text(ctx.path, buf, newlines)
        k = text.fields(lambda c: c == 2, "'u v {attributes}'")
        bare = _first_missing(text.data_lines, dict_lines)
        if bare is not None:
            raise text.error(bare, "no attribute dict, but other lines have one")
        empty = _first_missing(dict_lines, text.data_lines)
        if empty is not None:
            raise text.error(empty, "attribute dict without an edge")
    labels = text.ints("node label", k=k, cols=(0, 1), negative_ok=True).reshape(-1, 2)
    notes.insert(0, f"read {labels.shape[0]:,} edges")
    if weights is not None and found is None:
        notes.append("third column read as edge weights")
    del text, buf
    src, dst, n, ids = _compacted(labels[:, 0], labels[:, 1], notes, "node labels")
    del labels
    return _edges_graph(ctx, src, dst, weights, n, ids, notes)


def _run_ends(values: np.ndarray, *, last: bool = False) -> np.ndarray:
    """Mask of the first (or last) element of every run of equal values in sorted `values`."""
    mask = np.ones(values.size, dtype=bool)
    if last:
        mask[:-1] = values[:-1] != values[1:]
    else:
        mask[1:] = values[1:] != values[:-1]
    return mask


def _first_missing(a: np.ndarray, b: np.ndarray) -> int | None:
    """The first value of sorted `a` that sorted `b` does not hold, or None."""
    if b.size == 0:
        return int(a[0]) if a.size else None
    at = np.minimum(np.searchsorted(b, a), b.size - 1)
    missing = np.flatnonzero(b[at] != a)
    return int(a[missing[0]]) if missing.size else None


def _nx_attributes(path: str, buf: np.ndarray, newlines: np.ndarray, notes: list[str]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """Read and blank the attribute dicts of a networkx edge list.

    Two regular-expression passes over the whole text find the ``weight``
    values and the other keys; nothing is evaluated.

    Returns
    -------
    None when no line has a dict; else the text with each line's dict (its
    first ``{`` to its last ``}``) blanked, the 0-based lines holding dicts,
    and one weight per dict line (1 where a dict has no ``weight``), or None
    for weights when no dict has one.
    """
    opens = np.flatnonzero(buf == ord("{"))
    if opens.size == 0:
        return None
    closes = np.flatnonzero(buf == ord("}"))
    open_lines = np.searchsorted(newlines, opens)
    first = _run_ends(open_lines)
    starts, open_lines = opens[first], open_lines[first]
    close_lines = np.searchsorted(newlines, closes)
    last = _run_ends(close_lines, last=True)
    ends, close_lines = closes[last] + 1, close_lines[last]
    unpaired = [x for x in (_first_missing(open_lines, close_lines), _first_missing(close_lines, open_lines))
                if x is not None]
    if not unpaired:
        unpaired = open_lines[ends <= starts][:1].tolist()
    if unpaired:
        raise InputError(path, f"line {min(unpaired) + 1:,}: unbalanced attribute dict braces")
    keys = {a or b for a, b in set(_NX_OTHER_KEY.findall(buf))}
    if keys:
        shown = ", ".join(sorted(k.decode("utf-8", "replace") for k in keys)[:8])
        notes.append(f"ignored edge attributes other than 'weight': {shown}")
    tokens = _NX_WEIGHT.findall(buf)
    blanked = blank_ranges(buf, starts, ends)
    if not tokens:
        notes.append("no 'weight' attributes: a pattern graph")
        return blanked, open_lines, None
    where = np.searchsorted(newlines, np.fromiter(map(re.Match.start, _NX_WEIGHT.finditer(buf)), dtype=np.int64,
                                                  count=len(tokens)))
    twice = np.flatnonzero(where[1:] == where[:-1])
    if twice.size:
        raise InputError(path, f"line {int(where[twice[0]]) + 1:,}: two 'weight' attributes")
    outside = _first_missing(where, open_lines)
    if outside is not None:
        raise InputError(path, f"line {outside + 1:,}: 'weight' outside an attribute dict")
    values = _nx_weight_values(path, tokens, where)
    weights = np.ones(open_lines.size, dtype=np.float64)
    weights[np.searchsorted(open_lines, where)] = values
    missing = open_lines.size - values.size
    if missing:
        notes.append(f"{missing:,} edges have no 'weight' attribute: weight 1")
    return blanked, open_lines, weights


def _nx_weight_values(path: str, tokens: list[bytes], lines: np.ndarray) -> np.ndarray:
    """The `weight` values (one token each) as float64, finite and within float32."""
    joined = b" ".join(tokens)
    try:
        values = np.fromstring(joined, dtype=np.float64, sep=" ")
        if values.size != len(tokens):
            raise ValueError
    except ValueError:
        for token, line in zip(tokens, lines):
            try:
                np.fromstring(token, dtype=np.float64, sep=" ")
            except ValueError:
                shown = token.decode("utf-8", "replace")[:24]
                raise InputError(path, f"line {int(line) + 1:,}: weight '{shown}' is not a number") from None
        raise InputError(path, "cannot parse the 'weight' attributes") from None
    check_weights(path, values, lambda t: int(lines[t]), "weight")
    return values
