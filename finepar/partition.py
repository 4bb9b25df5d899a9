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
from .parallel import chunked, take

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

    @property
    def rows(self) -> np.ndarray:
        """All row ids of the share, in launch order (int32)."""
        if not self.groups:
            return np.zeros(0, dtype=np.int32)
        return np.concatenate([g.rows for g in self.groups]).astype(np.int32, copy=False)

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

    def compute_stats(self, row_lengths: np.ndarray) -> dict:
        """Table 3: variance of the matrix and of each share, GPU/CPU workload
        ratio (nnz of the GPU share over nnz of the CPU share; ``inf`` if the CPU
        has none), and Table 7's space overhead (bytes of row maps and group
        descriptors, and that as a fraction of the CSR's bytes)."""
        whole = subset_features(row_lengths)
        g = self.shares["gpu"].features(row_lengths)
        c = self.shares["cpu"].features(row_lengths)
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


def _groups_for(role: str, rows: np.ndarray, lengths: np.ndarray, grouping: str,
                limits: dict | None) -> list[Group]:
    rows = np.asarray(rows, dtype=np.int32)
    if rows.size == 0:
        return []
    if grouping == "ell":
        if role == "gpu":
            return [Group(rows=rows, mapping="ell", lo=0, hi=None,
                          nnz=int(lengths[rows].sum(dtype=np.int64)))]
        grouping = "pow4"  # the CPU keeps the long rows: ELL would pad them
    if grouping in ("none", "adaptive"):
        return [Group(rows=rows, mapping="item" if grouping == "none" else "stream", lo=0,
                      hi=None, nnz=int(lengths[rows].sum(dtype=np.int64)))]
    if grouping != "pow4":
        raise ValueError(f"unknown grouping {grouping!r} (use {', '.join(GROUPINGS)})")
    lens = take(lengths, rows)
    gid = np.empty(rows.size, np.uint8)  # < 32 groups: a radix sort below
    chunked(lambda a, b: np.copyto(gid[a:b], length_group(lens[a:b]), casting="unsafe"),
            rows.size)
    order = np.argsort(gid, kind="stable")
    gid_sorted = gid[order]
    bounds = np.flatnonzero(np.diff(gid_sorted)) + 1
    out = []
    for idx in np.split(order, bounds):
        i = int(gid[idx[0]])
        lo = 0 if i == 0 else 4 ** (i - 1)
        hi = 1 if i == 0 else 4 ** i
        mapping = mapping_for(role, lo, hi, limits)
        out.append(Group(rows=take(rows, idx), mapping=mapping, lo=lo, hi=hi,
                         nnz=int(take(lens, idx).sum(dtype=np.int64)),
                         lanes=team_lanes(lo) if mapping == "team" else None))
    return out


def _make(method: str, threshold, grouping: str, lengths: np.ndarray, cpu_rows, gpu_rows,
          limits, t0: float) -> Plan:
    shares = {"cpu": Share("cpu", _groups_for("cpu", cpu_rows, lengths, grouping, limits)),
              "gpu": Share("gpu", _groups_for("gpu", gpu_rows, lengths, grouping, limits))}
    plan = Plan(method=method, threshold=threshold, grouping=grouping, n=int(lengths.size),
                nnz=int(lengths.sum(dtype=np.int64)), shares=shares)
    plan.compute_stats(lengths)
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
    to_cpu = lengths > threshold
    return _make("fine", int(threshold), grouping, lengths, np.flatnonzero(to_cpu),
                 np.flatnonzero(~to_cpu), limits, t0)


def coarse_grained(row_lengths: np.ndarray, cpu_rows: int, *, grouping: str = "none",
                   limits: dict | None = None) -> Plan:
    """Coarse-grained plan: the first ``cpu_rows`` rows (``T_c``) to the CPU."""
    t0 = time.perf_counter()
    lengths = np.asarray(row_lengths)
    n = lengths.size
    t_c = int(min(max(cpu_rows, 0), n))
    return _make("coarse", t_c, grouping, lengths, np.arange(t_c), np.arange(t_c, n),
                 limits, t0)


def single_device(row_lengths: np.ndarray, role: str, *, grouping: str = "none",
                  limits: dict | None = None) -> Plan:
    """Every row on one device (``role`` is ``'cpu'`` or ``'gpu'``)."""
    t0 = time.perf_counter()
    if role not in ("cpu", "gpu"):
        raise ValueError(f"role must be 'cpu' or 'gpu', not {role!r}")
    lengths = np.asarray(row_lengths)
    allrows = np.arange(lengths.size)
    none = np.zeros(0, dtype=np.int64)
    cpu, gpu = (allrows, none) if role == "cpu" else (none, allrows)
    plan = _make("single", None, grouping, lengths, cpu, gpu, limits, t0)
    return plan


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
    return _make("sample", None, grouping, lengths, cpu, gpu, None, t0)


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
