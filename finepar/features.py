"""Workload features of a row share, and the matrix type (FinePar TKDE §3.3–3.4).

For a threshold ``T`` the CPU share is the rows with ``nnz > T`` and the GPU
share the rest. After one sort of the row lengths, prefix sums of the lengths
and of their squares give, for either share and any ``T``, in O(log n):

* ``AW``: mean nnz per row (the average work of a work-item),
* ``VW``: variance of nnz per row (population variance),
* ``NW``: number of rows (work-items),
* ``SW``: number of nonzeros (the size of the workload).

The type of a matrix is 1 (quasi-diagonal) when more than ``T_diag = 0.8`` of
its nonzeros lie within ``n/8`` of the diagonal, else 2; online it is
estimated from a 0.1% sample of rows (§3.4).
"""

from __future__ import annotations

from dataclasses import dataclass, asdict

import numpy as np

#: Fraction of near-diagonal nonzeros above which a matrix is type 1 (§3.3).
T_DIAG = 0.8
#: Rows sampled to detect the type online (§3.4).
SAMPLE_RATIO = 0.001


@dataclass(frozen=True)
class Features:
    """The four model features of one share.

    Attributes
    ----------
    AW : float
        Mean nonzeros per row (0 for an empty share).
    VW : float
        Population variance of nonzeros per row.
    NW : int
        Rows in the share.
    SW : int
        Nonzeros in the share.
    """

    AW: float
    VW: float
    NW: int
    SW: int

    def to_dict(self) -> dict:
        return asdict(self)

    def vector(self) -> np.ndarray:
        """``[AW, VW, log NW, log SW]`` as used by the regression (Eq. 1–2);
        ``log`` is the natural log of ``max(x, 1)``."""
        return np.array([self.AW, self.VW, np.log(max(self.NW, 1)), np.log(max(self.SW, 1))])


FEATURE_NAMES = ("AW", "VW", "log NW", "log SW")


def length_group(lengths) -> np.ndarray:
    """§4.1's power-of-4 length group of each row (int64): 0 for an empty row,
    ``i >= 1`` for ``4**(i-1) <= nnz < 4**i``.

    Exact for any length below 2**53: ``frexp`` gives the bit length.
    """
    return ((np.frexp(np.asarray(lengths, dtype=np.float64))[1] + 1) // 2).astype(np.int64)


class RowStats:
    """Histogram of the row lengths with prefix sums, for share features at any
    threshold.

    Parameters
    ----------
    row_lengths : array_like of int, shape (n,)
        Nonzeros per row (``diff(indptr)``), non-negative.

    Notes
    -----
    The one sort the paper's O(log n) feature evaluation needs (§3.4) is done
    as a counting sort: one ``bincount`` of the lengths, O(n + longest row),
    several times faster than a comparison sort of n rows. The prefix sums run
    over the d distinct lengths (d <= sqrt(2 nnz)); :meth:`share` costs one
    binary search over them, O(log d).
    """

    def __init__(self, row_lengths):
        lengths = np.asarray(row_lengths).astype(np.int64, copy=False).ravel()
        self.n = int(lengths.size)
        counts = np.bincount(lengths) if self.n else np.zeros(0, dtype=np.int64)
        self._vals = np.flatnonzero(counts).astype(np.int64)  # distinct lengths, ascending
        cnt = counts[self._vals]
        v = self._vals.astype(np.float64)
        self._rows = np.concatenate(([0], np.cumsum(cnt)))
        self._c1 = np.concatenate(([0], np.cumsum(self._vals * cnt)))  # exact in int64
        self._c2 = np.concatenate(([0.0], np.cumsum(v * v * cnt)))
        self.nnz = int(self._c1[-1])
        # §4.1's length groups among the distinct lengths: group 0 holds empty rows,
        # group i >= 1 rows of 4**(i-1) <= nnz < 4**i; _new[j] = 1 where distinct
        # length j opens a group, so a share's launch count is a difference of sums
        gid = length_group(self._vals)
        new = np.ones(gid.size, dtype=np.int64)
        new[1:] = gid[1:] != gid[:-1]
        self._new = np.concatenate(([0], np.cumsum(new)))

    def _range(self, lo: int, hi: int) -> Features:
        """Features of the rows whose length is among distinct lengths ``lo:hi``."""
        nw = int(self._rows[hi] - self._rows[lo]) if hi > lo else 0
        if nw <= 0:
            return Features(0.0, 0.0, 0, 0)
        sw = int(self._c1[hi] - self._c1[lo])
        mean = sw / nw
        var = max(float(self._c2[hi] - self._c2[lo]) / nw - mean * mean, 0.0)
        return Features(float(mean), var, nw, sw)

    def _bin(self, threshold) -> int:
        return int(np.searchsorted(self._vals, threshold, side="right"))

    def cut(self, threshold: float) -> int:
        """Number of rows with ``nnz <= threshold`` (the GPU share's size)."""
        return int(self._rows[self._bin(threshold)])

    def share(self, threshold: float, role: str) -> Features:
        """Features of the ``'gpu'`` share (nnz <= T) or the ``'cpu'`` share (nnz > T)."""
        k = self._bin(threshold)
        if role == "gpu":
            return self._range(0, k)
        if role == "cpu":
            return self._range(k, self._vals.size)
        raise ValueError(f"role must be 'cpu' or 'gpu', not {role!r}")

    def launches(self, threshold: float, role: str, grouping: str = "pow4") -> int:
        """Kernel launches of a share per step: its non-empty length groups (``pow4``,
        §4.1); 1 (``none``, ``ell``, and ``adaptive``'s row blocks, whose cut rows fold
        inside the launch); 0 for an empty share."""
        k = self._bin(threshold)
        lo, hi = (0, k) if role == "gpu" else (k, self._vals.size)
        if hi <= lo:
            return 0
        if grouping in ("none", "ell", "adaptive"):
            return 1
        return int(self._new[hi] - self._new[lo + 1]) + 1

    def longest(self, threshold: float, role: str) -> int:
        """The longest row of the ``role`` share at ``threshold`` (0 for an empty share)."""
        k = self._bin(threshold)
        if role == "gpu":
            return int(self._vals[k - 1]) if k > 0 else 0
        return int(self._vals[-1]) if k < self._vals.size else 0

    def whole(self) -> Features:
        """Features of the whole matrix."""
        return self._range(0, self._vals.size)

    def nnz_below(self, threshold):
        """Nonzeros in rows with ``nnz <= threshold`` (int, or int64 array for an array)."""
        if np.ndim(threshold):
            return self._c1[np.searchsorted(self._vals, threshold, side="right")]
        return int(self._c1[self._bin(threshold)])

    def max_length(self) -> int:
        return int(self._vals[-1]) if self._vals.size else 0


def subset_features(row_lengths: np.ndarray) -> Features:
    """Features of an arbitrary set of rows given their lengths (O(k))."""
    lengths = np.asarray(row_lengths, dtype=np.float64)
    if lengths.size == 0:
        return Features(0.0, 0.0, 0, 0)
    return Features(float(lengths.mean()), float(lengths.var()), int(lengths.size),
                    int(lengths.sum()))


def diagonal_fraction(indptr: np.ndarray, indices: np.ndarray, n: int,
                      rows: np.ndarray | None = None) -> float:
    """Fraction of nonzeros with ``|col - row| <= n/8`` (over ``rows`` if given).

    Parameters
    ----------
    indptr : ndarray of int, shape (n+1,)
    indices : ndarray of int, shape (nnz,)
    n : int
        Matrix dimension.
    rows : ndarray of int, optional
        Restrict the count to these rows (a sample).

    Returns
    -------
    float
        In [0, 1]; 0 if the rows hold no nonzeros.
    """
    indptr = np.asarray(indptr)
    if rows is None:
        lengths = np.diff(indptr)
        row_of = np.repeat(np.arange(n, dtype=np.int64), lengths)
        cols = np.asarray(indices, dtype=np.int64)
    else:
        from .graph import row_positions
        rows = np.asarray(rows, dtype=np.int64)
        lengths = indptr[rows + 1] - indptr[rows]
        cols = np.asarray(indices)[row_positions(indptr, rows)].astype(np.int64)
        row_of = np.repeat(rows, lengths)
    if cols.size == 0:
        return 0.0
    near = np.abs(cols - row_of) <= n / 8.0
    return float(near.mean())


@dataclass(frozen=True)
class TypeDetection:
    """Result of :func:`detect_type`.

    Attributes
    ----------
    matrix_type : int
        1 (quasi-diagonal) or 2.
    fraction : float
        Near-diagonal fraction measured on the sample.
    sampled_rows : int
    """

    matrix_type: int
    fraction: float
    sampled_rows: int


def detect_type(indptr: np.ndarray, indices: np.ndarray, n: int, *,
                sample_ratio: float | None = SAMPLE_RATIO, seed: int = 0,
                min_rows: int = 64) -> TypeDetection:
    """Type-1 / type-2 detection by sampling rows (§3.4).

    Parameters
    ----------
    sample_ratio : float or None
        Fraction of rows sampled (at least ``min_rows``, at most all);
        ``None`` counts exactly over every row (§3.3).
    seed : int
        Sampling seed.

    Returns
    -------
    TypeDetection
    """
    if sample_ratio is None or n <= min_rows:
        frac = diagonal_fraction(indptr, indices, n)
        count = n
    else:
        k = min(n, max(min_rows, int(round(n * sample_ratio))))
        rng = np.random.default_rng(seed)
        rows = np.sort(rng.choice(n, size=k, replace=False))
        frac = diagonal_fraction(indptr, indices, n, rows)
        count = k
    return TypeDetection(1 if frac > T_DIAG else 2, frac, count)
