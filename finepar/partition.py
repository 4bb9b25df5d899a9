"""Plans: which rows each device runs, in which launch groups (FinePar TKDE §3.2, §4.1).

A :class:`Plan` names, for the ``cpu`` and ``gpu`` roles, lists of global row
ids grouped into launches. Each :class:`Group` is one kernel launch with one
thread mapping:

* ``item``: a work-item per row (short rows),
* ``team``: a sub-group-sized team of work-items per row (medium rows),
* ``group``: a work-group per row (long rows).

Strategies
----------
``fine_grained(T_f)``  rows with nnz > T_f to the CPU, the rest to the GPU (§3.2).
``coarse_grained(T_c)``  the first T_c rows to the CPU, the rest to the GPU.
``single_device(role)``  every row on one device.
Any plan can be *grouped* by row length in powers of four (§4.1): group i holds
rows with ``floor(4**(i-1)) <= nnz < 4**i``, one launch per group, each with
the mapping that suits its length; ungrouped, a device makes one launch with
the work-item-per-row mapping (FinePar-original).

Plans report Table 3's statistics and their space overhead (Table 7).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .features import Features, length_group, subset_features
from .parallel import chunked

MAPPINGS = ("item", "team", "group", "stream", "ell")
#: How a share becomes launches: one work-item per row in one launch (FinePar-original),
#: §4.1's power-of-4 length groups with a mapping each, CSR-adaptive row blocks, or the
#: GPU share in ELL format (the TKDE paper's SpMV-ELL; the CPU's share in length groups).
GROUPINGS = ("none", "pow4", "adaptive", "ell")

#: Default length limits for the mapping of a length group, per role: rows with
#: nnz < item_below use ``item``; nnz >= group_from use ``group``; else ``team``.
DEFAULT_MAPPING_LIMITS = {
    "gpu": {"item_below": 4, "group_from": 1024},
    "cpu": {"item_below": 4096, "group_from": 4096},
}


@dataclass
class Group:
    """One kernel launch: a row list and its thread mapping.

    Attributes
    ----------
    rows : ndarray of int32
        Global row ids, in ascending order.
    mapping : {'item', 'team', 'group'}
    lo, hi : int
        Row-length range ``[lo, hi)`` this group was built for (``hi`` may be
        ``None`` for no upper bound).
    nnz : int
        Nonzeros in these rows.
    lanes : int or None
        Work-items per row of a ``team`` group (``None``: the device's default,
        its sub-group size).
    """

    rows: np.ndarray
    mapping: str
    lo: int = 0
    hi: int | None = None
    nnz: int = 0
    lanes: int | None = None

    def __len__(self) -> int:
        return int(self.rows.size)


@dataclass
class Share:
    """One device's part of a plan.

    Attributes
    ----------
    role : {'cpu', 'gpu'}
    groups : list of Group
        Launch order. Empty if the device runs nothing.
    """

    role: str
    groups: list[Group] = field(default_factory=list)
    _rows: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def rows(self) -> np.ndarray:
        """All row ids of the share, in launch order (int32; joined once, then kept while
        the groups stay the same arrays)."""
        key = tuple(id(g.rows) for g in self.groups)
        if self._rows is not None and self._rows[0] == key:
            return self._rows[1]
        rows = (np.concatenate([g.rows for g in self.groups]).astype(np.int32, copy=False)
                if self.groups else np.zeros(0, dtype=np.int32))
        self.keep_rows(rows)
        return rows

    def keep_rows(self, rows: np.ndarray) -> None:
        """Remember ``rows`` as the join of the groups' rows (the caller made them so)."""
        self._rows = (tuple(id(g.rows) for g in self.groups), rows)

    @property
    def nrows(self) -> int:
        return sum(len(g) for g in self.groups)

    @property
    def nnz(self) -> int:
        return sum(g.nnz for g in self.groups)

    def features(self, row_lengths: np.ndarray) -> Features:
        return subset_features(row_lengths[self.rows]) if self.nrows else Features(0.0, 0.0, 0, 0)


@dataclass
class Plan:
    """A partition of a matrix's rows between the cpu and gpu roles.

    Attributes
    ----------
    method : str
        ``fine``, ``coarse`` or ``single``.
    threshold : int or None
        ``T_f`` for fine plans, ``T_c`` (rows) for coarse plans.
    grouping : {'none', 'pow4'}
    n, nnz : int
        Matrix rows and nonzeros.
    shares : dict
        ``{'cpu': Share, 'gpu': Share}``.
    stats : dict
        Table 3's statistics, filled by :meth:`compute_stats`.
    seconds : float
        Time spent building the plan (partitioning overhead), seconds.
    throttle : finepar.throttle.ThrottleSpec or None
        The GPU share's cache-fit partitions and schedule, when throttled.
    throttle_auto : dict or None
        What ``schedule='auto'`` weighed (:func:`finepar.throttle.plan.auto_decision`).
    chunk_bounds : ndarray of int64 or None
        The dynamic baseline's row chunks (chunk ``c``: rows ``chunk_bounds[c] ..
        chunk_bounds[c+1]``).
    """

    method: str
    threshold: int | None
    grouping: str
    n: int
    nnz: int
    shares: dict[str, Share]
    stats: dict = field(default_factory=dict)
    seconds: float = 0.0
    throttle: object = None
    throttle_auto: dict | None = None
    chunk_bounds: np.ndarray | None = None

    @property
    def label(self) -> str:
        """Short description, e.g. ``fine T_f=64 (pow4 groups)``."""
        if self.method == "fine":
            s = f"fine T_f={self.threshold}"
        elif self.method == "coarse":
            s = f"coarse T_c={self.threshold} rows ({100.0 * self.threshold / max(self.n, 1):.0f}%)"
        else:
            s = f"single {self.active_roles()[0] if self.active_roles() else '-'}"
        if self.method == "dynamic":
            s = f"dynamic, {len(self.chunk_bounds) - 1} chunks"
        tail = {"pow4": " (pow4 groups)", "adaptive": " (adaptive row blocks)",
                "ell": " (ELL on the gpu)"}.get(self.grouping, "")
        if self.throttle is not None:
            tail += f" + throttled GPU share ({self.throttle.schedule})"
        return s + tail

    def to_arrays(self) -> tuple[dict, dict]:
        """``(arrays, scalars)`` that :meth:`from_arrays` rebuilds the plan from (the
        prepared-graph cache): each share's rows in launch order, its groups' sizes and
        mappings, and the plan's figures."""
        arrays = {f"{role}_rows": share.rows for role, share in self.shares.items()}
        groups = {role: [{"rows": len(g), "mapping": g.mapping, "lo": g.lo, "hi": g.hi,
                          "nnz": int(g.nnz), "lanes": g.lanes} for g in share.groups]
                  for role, share in self.shares.items()}
        return arrays, {"method": self.method, "threshold": self.threshold,
                        "grouping": self.grouping, "n": self.n, "nnz": self.nnz,
                        "stats": self.stats, "groups": groups}

    @classmethod
    def from_arrays(cls, arrays: dict, scalars: dict) -> "Plan":
        """The plan :meth:`to_arrays` described."""
        shares = {}
        for role, groups in scalars["groups"].items():
            rows, at, out = arrays[f"{role}_rows"], 0, []
            for g in groups:
                out.append(Group(rows=rows[at:at + g["rows"]], mapping=g["mapping"], lo=g["lo"],
                                 hi=g["hi"], nnz=g["nnz"], lanes=g["lanes"]))
                at += g["rows"]
            shares[role] = Share(role, out)
            shares[role].keep_rows(rows)
        return cls(method=scalars["method"], threshold=scalars["threshold"],
                   grouping=scalars["grouping"], n=scalars["n"], nnz=scalars["nnz"],
                   shares=shares, stats=scalars["stats"])

    def active_roles(self) -> list[str]:
        """Roles that run at least one row."""
        return [r for r in ("cpu", "gpu") if self.shares[r].nrows]

    def owner(self) -> np.ndarray:
        """Per-row owner: int8 array, 0 for cpu, 1 for gpu."""
        own = np.zeros(self.n, dtype=np.int8)
        gpu_rows = self.shares["gpu"].rows
        own[gpu_rows] = 1
        return own

    def compute_stats(self, row_lengths: np.ndarray, moments: dict | None = None) -> dict:
        """Table 3: variance of the matrix and of each share, GPU/CPU workload
        ratio (nnz of the GPU share over nnz of the CPU share; ``inf`` if the CPU
        has none), and Table 7's space overhead (bytes of row maps and group
        descriptors, and that as a fraction of the CSR's bytes). ``moments``
        (``{role: (rows, nnz, sum of squared lengths)}`` of shares that hold every row
        between them) gives the variances without a pass over the rows."""
        if moments is None:
            whole = subset_features(row_lengths)
            g = self.shares["gpu"].features(row_lengths)
            c = self.shares["cpu"].features(row_lengths)
        else:
            g, c = (_moment_features(*moments[r]) for r in ("gpu", "cpu"))
            whole = _moment_features(*(a + b for a, b in zip(moments["gpu"], moments["cpu"])))
        overhead = 4 * (self.shares["gpu"].nrows + self.shares["cpu"].nrows) \
            + 16 * sum(len(s.groups) for s in self.shares.values())
        csr_bytes = 4 * (self.n + 1) + 8 * self.nnz
        self.stats = {
            "matrix_variance": whole.VW,
            "gpu_variance": g.VW,
            "cpu_variance": c.VW,
            "gpu_rows": g.NW, "cpu_rows": c.NW,
            "gpu_nnz": g.SW, "cpu_nnz": c.SW,
            "gpu_cpu_workload_ratio": (g.SW / c.SW) if c.SW else float("inf"),
            "space_overhead_bytes": int(overhead),
            "space_overhead_fraction": overhead / csr_bytes if csr_bytes else 0.0,
            "groups": {r: [{"mapping": gr.mapping, "lo": gr.lo, "hi": gr.hi, "lanes": gr.lanes,
                            "rows": len(gr), "nnz": gr.nnz} for gr in s.groups]
                       for r, s in self.shares.items()},
        }
        return self.stats


def _moment_features(rows: int, nnz: int, squares: float) -> Features:
    """:class:`Features` of rows of ``nnz`` entries whose squared lengths sum to
    ``squares`` (population variance)."""
    if rows <= 0:
        return Features(0.0, 0.0, 0, 0)
    mean = nnz / rows
    return Features(float(mean), max(squares / rows - mean * mean, 0.0), int(rows), int(nnz))


def mapping_for(role: str, lo: int, hi: int | None, limits: dict | None = None) -> str:
    """Thread mapping for a length group ``[lo, hi)`` on ``role``."""
    lim = (limits or DEFAULT_MAPPING_LIMITS)[role]
    if hi is not None and hi <= lim["item_below"]:
        return "item"
    if lo >= lim["group_from"]:
        return "group"
    return "team" if lo >= lim["item_below"] else "item"


def team_lanes(lo: int, limit: int = 32) -> int:
    """Work-items per row for a team group whose rows have at least ``lo`` nonzeros:
    the largest power of two <= lo, between 2 and ``limit`` (so a row's first
    pass keeps every lane busy)."""
    lanes = 2
    while lanes * 2 <= min(max(lo, 2), limit):
        lanes *= 2
    return lanes


#: Length groups a bucket of :func:`_bucketed` can name: §4.1's group of any int32 length.
GROUP_IDS = 17


def _bucketed(lengths: np.ndarray, to_cpu, pow4: dict) -> tuple:
    """Every row placed in its launch group, by a counting sort on the pool's threads.

    A row's bucket is ``role * GROUP_IDS + group``: role 1 for the CPU (``to_cpu``), group
    its §4.1 length group where that role's share is grouped by ``pow4[role]``, else 0.
    Each chunk of rows sorts its own buckets (numpy's radix sort of one byte, stable) and
    sums its buckets' lengths and squared lengths; the chunks' counts then place every
    chunk's rows, which the threads copy there. No pass over all rows runs on one thread.

    Parameters
    ----------
    lengths : ndarray of int, shape (n,)
    to_cpu : ndarray of bool, shape (n,), or bool
        The CPU's rows (a bool: every row on one device).
    pow4 : dict
        ``{'cpu': bool, 'gpu': bool}``: which shares are cut into length groups.

    Returns
    -------
    rows : ndarray of int32, shape (n,)
        Row ids by bucket; ascending within each bucket.
    bounds : ndarray of int64, shape (2 * GROUP_IDS + 1,)
        Bucket ``k`` is ``rows[bounds[k]:bounds[k + 1]]``.
    nnz : ndarray of int64, shape (2 * GROUP_IDS,)
        Entries of each bucket's rows.
    squares : ndarray of float64, shape (2 * GROUP_IDS,)
        Sum of each bucket's squared row lengths (Table 3's variances).
    """
    from .parallel import n_workers, spans
    n, K = int(lengths.size), 2 * GROUP_IDS
    cpu_all = np.broadcast_to(np.asarray(to_cpu, dtype=bool), (n,))

    def sort_chunk(lo: int, hi: int):
        lens, cpu = lengths[lo:hi], cpu_all[lo:hi]
        grp = length_group(lens).astype(np.uint8) if pow4["cpu"] or pow4["gpu"] else None
        on_gpu = grp if pow4["gpu"] else np.uint8(0)
        on_cpu = (grp if pow4["cpu"] else np.uint8(0)) + np.uint8(GROUP_IDS)
        key = np.where(cpu, on_cpu, on_gpu).astype(np.uint8, copy=False)
        order = np.argsort(key, kind="stable")
        at = np.searchsorted(key[order], np.arange(K + 1))
        ls = lens[order].astype(np.int64)
        c1 = np.concatenate(([0], np.cumsum(ls)))
        lf = ls.astype(np.float64)
        c2 = np.concatenate(([0.0], np.cumsum(lf * lf)))
        return order, at, c1[at[1:]] - c1[at[:-1]], c2[at[1:]] - c2[at[:-1]]
    size = max(1 << 16, -(-n // (4 * n_workers(None))))
    cuts = spans(n, size)
    parts = chunked(sort_chunk, n, size)
    counts = np.array([np.diff(p[1]) for p in parts], dtype=np.int64).reshape(-1, K)
    total = counts.sum(axis=0)
    bounds = np.concatenate(([0], np.cumsum(total)))
    offsets = bounds[:-1][None, :] + np.cumsum(counts, axis=0) - counts
    rows = np.empty(n, dtype=np.int32)

    def place(c: int) -> None:
        order, at = parts[c][0], parts[c][1]
        for k in np.flatnonzero(counts[c]):
            dst = rows[offsets[c, k]:offsets[c, k] + counts[c, k]]
            np.add(order[at[k]:at[k + 1]], cuts[c][0], out=dst, casting="unsafe")
    chunked(lambda a, b: [place(c) for c in range(a, b)], len(parts), 1)
    nnz = sum((p[2] for p in parts), np.zeros(K, dtype=np.int64))
    squares = sum((p[3] for p in parts), np.zeros(K))
    return rows, bounds, nnz, squares


def _group(role: str, rows: np.ndarray, grp: int | None, grouping: str, nnz: int,
           limits: dict | None) -> Group:
    """The launch of bucket ``grp`` (§4.1's length group; None: the share's one launch)."""
    if grp is None:
        mapping = ("ell" if grouping == "ell" and role == "gpu" else
                   "stream" if grouping == "adaptive" else "item")
        return Group(rows=rows, mapping=mapping, lo=0, hi=None, nnz=nnz)
    lo = 0 if grp == 0 else 4 ** (grp - 1)
    hi = 1 if grp == 0 else 4 ** grp
    mapping = mapping_for(role, lo, hi, limits)
    return Group(rows=rows, mapping=mapping, lo=lo, hi=hi, nnz=nnz,
                 lanes=team_lanes(lo) if mapping == "team" else None)


def _make(method: str, threshold, grouping: str, lengths: np.ndarray, to_cpu, limits,
          t0: float, ids: np.ndarray | None = None) -> Plan:
    """A plan whose CPU runs the rows ``to_cpu`` (bool array, or a bool for all or none),
    each share grouped as ``grouping`` says, with Table 3's statistics; with ``ids``
    (int, shape (k,)), a plan of those rows alone, ``to_cpu`` then saying it of each."""
    if grouping not in GROUPINGS:
        raise ValueError(f"unknown grouping {grouping!r} (use {', '.join(GROUPINGS)})")
    lengths = np.asarray(lengths)
    pow4 = {"gpu": grouping == "pow4", "cpu": grouping in ("pow4", "ell")}
    rows, bounds, nnz, squares = _bucketed(lengths if ids is None else lengths[ids], to_cpu,
                                           pow4)
    if ids is not None:
        rows = ids[rows].astype(np.int32)
    shares, moments = {}, {}
    for r, role in enumerate(("gpu", "cpu")):
        ks = range(r * GROUP_IDS, (r + 1) * GROUP_IDS)
        groups = [_group(role, rows[bounds[k]:bounds[k + 1]],
                         k - r * GROUP_IDS if pow4[role] else None, grouping, int(nnz[k]),
                         limits) for k in ks if bounds[k + 1] > bounds[k]]
        shares[role] = Share(role, groups)
        shares[role].keep_rows(rows[bounds[ks[0]]:bounds[ks[-1] + 1]])
        moments[role] = (int(bounds[ks[-1] + 1] - bounds[ks[0]]), int(nnz[ks[0]:ks[-1] + 1].sum()),
                         float(squares[ks[0]:ks[-1] + 1].sum()))
    whole = nnz.sum() if ids is None else lengths.sum(dtype=np.int64)
    plan = Plan(method=method, threshold=threshold, grouping=grouping, n=int(lengths.size),
                nnz=int(whole), shares={"cpu": shares["cpu"], "gpu": shares["gpu"]})
    plan.compute_stats(lengths, moments if ids is None else None)
    plan.seconds = time.perf_counter() - t0
    return plan


def fine_grained(row_lengths: np.ndarray, threshold: int, *, grouping: str = "none",
                 limits: dict | None = None) -> Plan:
    """Fine-grained plan (§3.2): rows with ``nnz > threshold`` to the CPU.

    Parameters
    ----------
    row_lengths : ndarray of int, shape (n,)
    threshold : int
        ``T_f`` (>= 0).
    grouping : {'none', 'pow4'}
        ``pow4`` makes §4.1's length groups on each device.
    limits : dict, optional
        Mapping limits per role (see :data:`DEFAULT_MAPPING_LIMITS`).

    Returns
    -------
    Plan
    """
    t0 = time.perf_counter()
    if threshold < 0:
        raise ValueError(f"T_f must be >= 0, not {threshold}")
    lengths = np.asarray(row_lengths)
    return _make("fine", int(threshold), grouping, lengths, lengths > threshold, limits, t0)


def coarse_grained(row_lengths: np.ndarray, cpu_rows: int, *, grouping: str = "none",
                   limits: dict | None = None) -> Plan:
    """Coarse-grained plan: the first ``cpu_rows`` rows (``T_c``) to the CPU."""
    t0 = time.perf_counter()
    lengths = np.asarray(row_lengths)
    n = lengths.size
    t_c = int(min(max(cpu_rows, 0), n))
    return _make("coarse", t_c, grouping, lengths, np.arange(n) < t_c, limits, t0)


def single_device(row_lengths: np.ndarray, role: str, *, grouping: str = "none",
                  limits: dict | None = None) -> Plan:
    """Every row on one device (``role`` is ``'cpu'`` or ``'gpu'``)."""
    t0 = time.perf_counter()
    if role not in ("cpu", "gpu"):
        raise ValueError(f"role must be 'cpu' or 'gpu', not {role!r}")
    return _make("single", None, grouping, np.asarray(row_lengths), role == "cpu", limits, t0)


def subset_plan(row_lengths: np.ndarray, rows, role: str | None = None, *,
                grouping: str = "none") -> Plan:
    """A plan that runs only ``rows`` (on ``role``), or ``rows = {'cpu': ..., 'gpu':
    ...}`` on each device: for profiling a sample and measuring overheads."""
    t0 = time.perf_counter()
    lengths = np.asarray(row_lengths)
    none = np.zeros(0, dtype=np.int64)
    if isinstance(rows, dict):
        cpu = np.asarray(rows.get("cpu", none), dtype=np.int64)
        gpu = np.asarray(rows.get("gpu", none), dtype=np.int64)
    else:
        rows = np.asarray(rows, dtype=np.int64)
        cpu, gpu = (rows, none) if role == "cpu" else (none, rows)
    ids = np.concatenate([gpu, cpu])
    return _make("sample", None, grouping, lengths, np.arange(ids.size) >= gpu.size, None, t0,
                 ids=ids)


def dynamic(row_lengths: np.ndarray, chunks: int = 32) -> Plan:
    """The dynamic baseline's plan (FinePar TKDE Table 2): the rows cut into ``chunks``
    contiguous chunks of about equal nnz that either device may take in a step; both
    devices hold the whole matrix.

    Returns
    -------
    Plan
        ``method='dynamic'``; both shares list every row (either may run any of
        them); ``chunk_bounds`` holds the chunks.
    """
    t0 = time.perf_counter()
    lengths = np.asarray(row_lengths)
    n = lengths.size
    csum = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
    k = max(1, min(int(chunks), n, 65535))  # the device counter packs two 16-bit counts
    targets = np.linspace(0, csum[-1], k + 1)
    bounds = np.unique(np.concatenate(([0], np.searchsorted(csum, targets[1:-1]), [n])))
    allrows = np.arange(n, dtype=np.int32)
    shares = {r: Share(r, [Group(rows=allrows, mapping="item", nnz=int(csum[-1]))])
              for r in ("cpu", "gpu")}
    plan = Plan(method="dynamic", threshold=None, grouping="none", n=n, nnz=int(csum[-1]),
                shares=shares, chunk_bounds=bounds.astype(np.int64))
    plan.stats = {"chunks": int(bounds.size - 1)}
    plan.seconds = time.perf_counter() - t0
    return plan
