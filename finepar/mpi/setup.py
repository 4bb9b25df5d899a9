"""What each rank of a distributed run sets up on its own: its device pair and its plan
(DESIGN.md §3, "mpi").

One rank per GPU: a rank takes the GPU its index among the ranks of its host names
(``--gpu`` as a list, or the ``k``-th of the GPUs a selector matches). Each rank is a
FinePar pair of its own: its rows split between its CPU and GPU by ``T_f`` (given, or
its own tuner's), grouped and throttled as in one process.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import UsageError
from ..features import RowStats, subset_features
from ..partition import Plan


def local_gpu(local_rank: int, gpu: str | None, config: dict | None = None) -> str | None:
    """The GPU selector of the rank with index ``local_rank`` on its host.

    Parameters
    ----------
    local_rank : int
    gpu : str or None
        ``--gpu``: a comma-separated list (the rank takes item ``local_rank`` modulo its
        length), a selector matching several devices (the rank takes the matching GPU
        ``local_rank`` modulo their number, in platform and device order), ``emulate``,
        or None (``FINEPAR_GPU_DEVICE``, the config's ``[devices] gpu``, else every GPU).

    Returns
    -------
    str or None
        A selector naming one device (``"P:D"``), or what was given when nothing
        matches (:func:`finepar.device.select_pair` then says why).
    """
    from ..device import list_devices
    config = config or {}
    sel = gpu or os.environ.get("FINEPAR_GPU_DEVICE") or (config.get("devices") or {}).get("gpu")
    if sel and "," in str(sel):
        items = [s.strip() for s in str(sel).split(",") if s.strip()]
        return items[local_rank % len(items)] if items else None
    if sel and str(sel).lower() == "emulate":
        return "emulate"
    devices = list_devices(config.get("cache_overrides"))
    if sel:
        s = str(sel).strip()
        if ":" in s or s.isdigit():
            return s  # one device by position
        found = [d for d in devices if s.lower() in d.key.lower()]
    else:
        found = [d for d in devices if d.kind == "gpu"]
    found.sort(key=lambda d: (d.platform_index, d.device_index))
    return found[local_rank % len(found)].address if found else sel


class _Rows:
    """The rank's row lengths, as :func:`finepar.split.choose.plan_for` reads a matrix."""

    def __init__(self, lengths: np.ndarray):
        self._lengths = lengths

    def row_lengths(self) -> np.ndarray:
        return self._lengths


class RankWorkload:
    """What the tuner reads of a workload, for one rank's rows (:func:`finepar.tuner.tune`).

    Its profiling engines (only used when no model fits) run this rank's rows alone, with
    no collective: ranks tune independently.
    """

    def __init__(self, app, matrix, owned: np.ndarray):
        self.app, self.matrix = app, matrix
        self.row_stats = RowStats(matrix.row_lengths()[owned])

    def engine(self, pair, plan, options=None):
        from ..engine import Engine
        eng = Engine(pair, self.matrix, plan, self.app.ops, options=options)
        self.app.prepared(eng, self.matrix)
        return eng


def rank_plan(app, matrix, owned: np.ndarray, pair, *, threshold, devices: str, grouping: str,
              model=None, step: int = 64, calibrate=None, options=None, throttle=None,
              steps: float = 1.0):
    """The plan of one rank: its rows only, split at ``threshold`` (or the tuner's).

    Parameters
    ----------
    app : App
    matrix : Graph
        The rank's rows of the app's matrix (the others empty).
    owned : ndarray of int64
        The rank's rows.
    pair : DevicePair
    threshold, devices, grouping, model, step, calibrate, options
        As :meth:`finepar.api.Workload.choose_plan`.
    throttle : ThrottleOptions, optional
        The GPU share's cache-fit partitions (relabelling is refused: it would have to
        be one order for every rank).
    steps : float
        Row operations the run is expected to make (:meth:`App.row_steps`), over which
        ``schedule='auto'`` weighs the partitioning's cost.

    Returns
    -------
    (Plan, str, dict or None)
        The plan (global row ids), where ``T_f`` came from, the tuner's record.
    """
    from ..split.choose import auto_devices, plan_for
    from ..throttle.plan import throttle_share
    if throttle is not None and throttle.remap != "none":
        raise UsageError("--remap relabels one process's vertices; a distributed run keeps "
                         "each rank's rows (use --partition metis for a locality order)")
    lengths = matrix.row_lengths()
    sub = _Rows(lengths[owned])
    tuning, source = None, "flag"
    devices, why = auto_devices(devices, pair, threshold)
    if devices in ("cpu", "gpu"):
        source = why or "single-device"
    elif threshold is None:
        from ..split.tuner import tune
        tr = tune(RankWorkload(app, matrix, owned), pair, model=model, step=step,
                  grouping=grouping, calibrate=calibrate, options=options)
        threshold, grouping, tuning, source = tr.threshold, tr.grouping, tr.to_dict(), "tuner"
    plan = plan_for(sub, threshold=threshold, devices=devices, grouping=grouping)
    _globalise(plan, owned, lengths)
    if throttle is not None and "gpu" in plan.active_roles():
        how = {"steps": steps, "step_seconds": ((tuning or {}).get("predicted") or {})
               .get("t_gpu"), "decision": {}}
        plan.throttle = throttle_share(matrix, plan.shares["gpu"].rows, throttle,
                                       pair.gpu.info.cache_bytes, **how)
        plan.throttle_auto = how["decision"] or None
    return plan, source, tuning


def _globalise(plan: Plan, owned: np.ndarray, lengths: np.ndarray) -> None:
    """Turn a plan over the rank's rows (ids ``0 .. k``) into one over the matrix's rows."""
    for share in plan.shares.values():
        for g in share.groups:
            g.rows = owned[g.rows].astype(np.int32)
    plan.n = int(lengths.size)
    plan.compute_stats(lengths)
    plan.stats["matrix_variance"] = subset_features(lengths[owned]).VW
