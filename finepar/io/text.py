"""Scanning text formats as byte arrays: lines, comments, tokens and their first bad
byte, all vectorised (:class:`Text`); shared by the edge lists and METIS."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import InputError
from .validate import fmt_value


# text formats: reading and scanning ---------------------------------------------

_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[9, 10, 11, 12, 13, 32]] = True
_ALLOWED = _WHITESPACE.copy()  # bytes of whitespace and [+-]digits tokens
_ALLOWED[ord("0"):ord("9") + 1] = True
_ALLOWED[[ord("+"), ord("-")]] = True
_INT64_LIMITS = (int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max))


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of `a`."""
    view = a.view()
    view.flags.writeable = False
    return view


def _as_bytes(buf: np.ndarray) -> bytes:
    """`buf` as a bytes object: the one it views when it spans all of it, else a copy.

    ``np.fromstring`` must get bytes: they end in a NUL, while an array's last
    token would be read past its end.
    """
    base = buf
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if (isinstance(base, bytes) and len(base) == buf.size
            and np.frombuffer(base, dtype=np.uint8).ctypes.data == buf.ctypes.data):
        return base
    return buf.tobytes()


def lines_of(raw: bytes, comments: bytes, *, line_start: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of `raw` with comments blanked, and the offsets of its newlines.

    A comment starts at any byte in `comments` (only at the start of a line
    when `line_start`) and runs to the end of its line.
    """
    original = np.frombuffer(raw, dtype=np.uint8)
    newlines = np.flatnonzero(original == ord("\n"))
    marks = np.flatnonzero(np.isin(original, np.frombuffer(comments, dtype=np.uint8)))
    if line_start and marks.size:
        first = np.ones(marks.size, dtype=bool)  # a mark at offset 0 starts the first line
        inner = marks > 0
        first[inner] = original[marks[inner] - 1] == ord("\n")
        marks = marks[first]
    return _blank_to_line_end(original, newlines, marks), newlines


def _blank_to_line_end(buf: np.ndarray, newlines: np.ndarray, marks: np.ndarray) -> np.ndarray:
    """`buf` with every range from a mark to the end of its line blanked (`buf` itself if none)."""
    if marks.size == 0:
        return buf
    line = np.searchsorted(newlines, marks)  # 0-based line of each mark
    first = np.ones(marks.size, dtype=bool)
    first[1:] = line[1:] != line[:-1]
    starts, line = marks[first], line[first]
    ends = np.full(starts.size, buf.size, dtype=np.int64)
    ended = line < newlines.size
    ends[ended] = newlines[line[ended]]
    return blank_ranges(buf, starts, ends)


def blank_ranges(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, *, keep: bool = False) -> np.ndarray:
    """A copy of `buf` with the disjoint ranges ``[starts, ends)`` blanked (or, with `keep`, all but them)."""
    step = np.zeros(buf.size + 1, dtype=np.int8)
    step[starts] = 1
    step[ends] -= 1
    inside = np.cumsum(step[:-1], dtype=np.int8).view(bool)
    del step
    return np.where(inside, buf, np.uint8(32)) if keep else np.where(inside, np.uint8(32), buf)


def _token_text(buf: np.ndarray, pos: int) -> str:
    """The whitespace-delimited token around byte offset `pos`, for messages."""
    start = pos
    while start > 0 and not _WHITESPACE[buf[start - 1]] and pos - start < 24:
        start -= 1
    end = pos
    while end < buf.size and not _WHITESPACE[buf[end]] and end - start < 40:
        end += 1
    text = bytes(buf[start:end]).decode("ascii", errors="replace")
    return text if len(text) <= 24 else text[:21] + "..."


def _first_bad_byte(buf: np.ndarray) -> int | None:
    """Offset of the first byte that cannot belong to a ``[+-]digits`` token."""
    bad = np.flatnonzero(~_ALLOWED[buf])
    first = int(bad[0]) if bad.size else None
    signs = np.flatnonzero((buf == ord("+")) | (buf == ord("-")))
    if signs.size:
        at_start = np.ones(signs.size, dtype=bool)
        inner = signs > 0
        at_start[inner] = _WHITESPACE[buf[signs[inner] - 1]]
        nxt = np.minimum(signs + 1, buf.size - 1)
        digit_next = (signs + 1 < buf.size) & (buf[nxt] >= ord("0")) & (buf[nxt] <= ord("9"))
        bad_sign = signs[~(at_start & digit_next)]
        if bad_sign.size and (first is None or bad_sign[0] < first):
            first = int(bad_sign[0])
    return first


def _first_unparsable(buf: np.ndarray, ends: np.ndarray, dtype) -> int:
    """Index of the first token (ending at byte ``ends[i]``) that ``np.fromstring`` rejects.

    A bisection over prefixes of `buf`: ``log2(tokens)`` parses, for messages only.
    """
    lo, hi = 0, ends.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            np.fromstring(buf[: int(ends[mid])].tobytes(), dtype=dtype, sep=" ")
            lo = mid + 1
        except ValueError:
            hi = mid
    return lo


class Text:
    """A text file's bytes, comments blanked: its tokens per line, parsers and line-numbered errors.

    Parameters
    ----------
    path : str
        Named in errors.
    buf : numpy.ndarray of uint8
        The text, comments (and anything else to skip) already blanked.
    newlines : numpy.ndarray of int64
        Offsets of the ``\\n`` bytes.
    """

    def __init__(self, path: str, buf: np.ndarray, newlines: np.ndarray):
        self.path = path
        self.buf = _readonly(buf)
        self.newlines = newlines
        token = ~_WHITESPACE[buf]
        starts = token.copy()
        starts[1:] &= ~token[:-1]  # first byte of each token
        del token
        line_starts = np.concatenate((np.zeros(1, dtype=np.int64), newlines + 1))
        if line_starts[-1] == buf.size:
            line_starts = line_starts[:-1]
        self.per_line = (np.add.reduceat(starts.view(np.uint8), line_starts, dtype=np.int64) if buf.size
                         else np.zeros(0, dtype=np.int64))
        self.line_starts = line_starts
        self.data_lines = np.flatnonzero(self.per_line)
        self._cum = None
        self._bounds = None

    def error(self, line: int, problem: str) -> InputError:
        """An InputError for 0-based `line`, numbered from 1 in the message."""
        return InputError(self.path, f"line {int(line) + 1:,}: {problem}")

    def token_line(self, t: int) -> int:
        """0-based line of token `t` (counting every token of the file)."""
        if self._cum is None:
            self._cum = np.cumsum(self.per_line)
        return int(np.searchsorted(self._cum, t, side="right"))

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Byte offsets of every token's first byte and of the byte after its last."""
        if self._bounds is None:
            token = ~_WHITESPACE[self.buf]
            edges = np.diff(token.view(np.int8), prepend=np.int8(0), append=np.int8(0))
            del token
            self._bounds = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        return self._bounds

    def fields(self, ok: Callable[[int], bool], expected: str, nothing: str = "no edges in the file") -> int:
        """The number of fields every non-blank line has; raise naming the first line that differs."""
        if self.data_lines.size == 0:
            raise InputError(self.path, f"empty graph: {nothing}")
        first = int(self.data_lines[0])
        k = int(self.per_line[first])
        odd = self.data_lines[self.per_line[self.data_lines] != k]
        for line in (first, *odd[:1].tolist()):
            c = int(self.per_line[line])
            if not ok(c):
                raise self.error(line, f"expected {expected}, found {c} field{'s' if c != 1 else ''}")
        if odd.size:
            c = int(self.per_line[odd[0]])
            raise self.error(odd[0], f"{c} columns, but line {first + 1:,} has {k} "
                                     f"(every line needs the same columns)")
        return k

    def _columns(self, k: int, cols: Sequence[int]) -> np.ndarray:
        """The text with only columns `cols` of its `k`-field lines left."""
        if len(cols) == k:
            return self.buf
        starts, ends = self.bounds()
        keep = np.zeros(k, dtype=bool)
        keep[list(cols)] = True
        keep = np.tile(keep, starts.size // k)
        return _readonly(blank_ranges(self.buf, starts[keep], ends[keep], keep=True))

    def _value_line(self, t: int, k: int | None, cols: Sequence[int] | None) -> int:
        if k is not None and cols is not None:
            t = (t // len(cols)) * k + cols[t % len(cols)]
        return self.token_line(t)

    def ints(self, what: str, *, k: int | None = None, cols: Sequence[int] | None = None,
             negative_ok: bool = False) -> np.ndarray:
        """Parse the tokens (of columns `cols` of `k`-field lines, or all) as int64, in file order."""
        buf = self.buf if cols is None else self._columns(k, cols)
        bad = _first_bad_byte(buf)
        if bad is not None:
            line = int(np.searchsorted(self.newlines, bad))
            raise self.error(line, f"'{_token_text(buf, bad)}' is not an integer {what}")
        values = np.fromstring(_as_bytes(buf), dtype=np.int64, sep=" ")  # the bytes were checked: it parses
        tokens = int(self.per_line.sum())
        if values.size != (tokens if cols is None else tokens // k * len(cols)):
            raise InputError(self.path, f"cannot read every {what}: {values.size:,} numbers for {tokens:,} fields")
        odd = np.flatnonzero((values == _INT64_LIMITS[1]) | (values == _INT64_LIMITS[0])
                             | ((values < 0) if not negative_ok else False))
        if odd.size:
            t = int(odd[0])
            line = self._value_line(t, k, cols)
            if values[t] < 0 and values[t] != _INT64_LIMITS[0]:
                raise self.error(line, f"negative {what} {int(values[t]):,}")
            raise self.error(line, f"{what} is too large")
        return values

    def floats(self, what: str, k: int, col: int) -> np.ndarray:
        """Parse column `col` of the `k`-field lines as float64; finite and within float32."""
        buf = self._columns(k, (col,))
        try:
            values = np.fromstring(_as_bytes(buf), dtype=np.float64, sep=" ")
        except ValueError:
            ends = self.bounds()[1][col::k]
            t = _first_unparsable(buf, ends, np.float64)
            raise self.error(self._value_line(t, k, (col,)),
                             f"{what} '{_token_text(buf, int(ends[t]) - 1)}' is not a number") from None
        check_weights(self.path, values, lambda t: self._value_line(t, k, (col,)), what)
        return values


def check_weights(path: str, values: np.ndarray, line_of: Callable[[int], int], what: str) -> None:
    """Raise naming the line (0-based from `line_of`) of the first value that is NaN, infinite or
    beyond float32."""
    big = float(np.finfo(np.float32).max)
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~(np.abs(values) <= big))
    if bad.size:
        t = int(bad[0])
        v = float(values[t])
        problem = f"is {fmt_value(v)}" if not math.isfinite(v) else f"{v:g} is too large for float32"
        raise InputError(path, f"line {line_of(t) + 1:,}: {what} {problem}")
