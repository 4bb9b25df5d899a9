"""Training the performance models of a platform (FinePar TKDE §3.3).

The recipe generates Graph500 Kronecker matrices (scales ``S``, random
``(A, B, C, D)`` quadruplets with ``A`` the largest), their type-1 copies
(each row's nonzeros placed around the diagonal), splits each at every
``T_f`` of the recipe, runs both shares together on their devices (so
co-running effects are in the data) and records each device's throughput.
The full recipe is the paper's: S = 16..19, 20 quadruplets per S, T_f in
{16, 32, ..., 2048}: 4 x 20 x 2 x 8 = 1,280 runs per grouping.

Beyond the paper, every recipe also measures the two ends (``T_f = 0``: every
non-empty row on the CPU; :data:`ALL_GPU`: every row on the GPU) and hub-only CPU shares
(``T_f`` = 8,192 and 32,768, skipped where no row is that long). The paper's
T_f never give one device a whole matrix, or the CPU a handful of very long
rows, so a model fitted on them alone is extrapolated exactly where a
discrete pair's best split lies (the GPU alone, or the GPU with a few hubs on
the CPU).

Measurements go to ``training/NAME/measurements.json`` (rewritten atomically
after every matrix, so an interrupted run resumes where it stopped), the
recipe and devices to ``training/NAME/recipe.json``, and the fitted model to
``models/NAME.json``.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .errors import FineParError, ModelError
from .files import atomic_write_json
from .perfmodel import (PlatformModel, TransferModel, default_models_dir, fit_platform,
                        platform_name)


@dataclass(frozen=True)
class Recipe:
    """What to measure.

    Attributes
    ----------
    name : str
    scales : tuple of int
        Graph500 scales S (2^S vertices, 16 * 2^S edges before symmetrisation).
    quadruplets : int
        Random (A, B, C, D) per scale.
    thresholds : tuple of int
        T_f values each matrix is split at (rows longer than ``T_f`` go to the
        CPU); :data:`ALL_GPU` stands for the longest row (every row on the GPU).
        A ``T_f`` at or past the longest row, other than ``ALL_GPU``, is skipped.
    groupings : tuple of str
        Plans measured per split: ``none`` (one launch per device) and
        ``pow4`` (§4.1's length groups); each gets its own models.
    repeats : int
        Timed co-runs per split (the median is kept).
    seed : int
    app : str
        The row operation measured (``spmv``: the (+, x) semiring with values).
    """

    name: str
    scales: tuple
    quadruplets: int
    thresholds: tuple
    groupings: tuple = ("none", "pow4")
    repeats: int = 3
    seed: int = 2017
    app: str = "spmv"

    @property
    def runs(self) -> int:
        return len(self.scales) * self.quadruplets * 2 * len(self.thresholds) * len(self.groupings)


PAPER_THRESHOLDS = (16, 32, 64, 128, 256, 512, 1024, 2048)
#: Recipe value standing for "T_f = the longest row": every row on the GPU.
ALL_GPU = -1
#: The two single-device ends and two hub-only CPU shares, added to the paper's T_f.
EXTRA_THRESHOLDS = (0, 8192, 32768, ALL_GPU)

RECIPES = {
    # the paper's recipe: 1,280 runs
    "full": Recipe("full", (16, 17, 18, 19), 20, PAPER_THRESHOLDS + EXTRA_THRESHOLDS),
    # the paper's thresholds and quadruplets on smaller matrices (2-core machines)
    "reduced": Recipe("reduced", (13, 14, 15, 16), 20, PAPER_THRESHOLDS + EXTRA_THRESHOLDS),
    # minutes on 2 cores, for tests and a first look
    "quick": Recipe("quick", (12, 13), 4, PAPER_THRESHOLDS + EXTRA_THRESHOLDS),
}


def training_dir(platform: str, root: str | Path = "training") -> Path:
    return Path(root) / platform


def _matrix_key(scale: int, q: int, mtype: int) -> str:
    return f"s{scale}-q{q:02d}-type{mtype}"


def load_measurements(folder: Path, *, with_skipped: bool = False):
    """Measurements already recorded in ``folder`` (empty if none).

    With ``with_skipped``, also the ``(matrix, T_f, grouping)`` splits the
    recipe named but that needed no run (a ``T_f`` past the longest row), as
    ``(records, skipped)``.
    """
    p = folder / "measurements.json"
    records, skipped = [], []
    if p.exists():
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
            records = list(data["records"])
            skipped = [tuple(k) for k in data.get("skipped", [])]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelError(f"{p}: unreadable training measurements ({exc})") from None
    return (records, skipped) if with_skipped else records


def measure_transfer(pair, sizes=None, repeats: int = 5) -> TransferModel:
    """Measure host<->GPU-side copies and fit ``latency + bytes / bandwidth``.

    Parameters
    ----------
    pair : DevicePair
    sizes : list of int, optional
        Bytes per copy (default 4 KiB .. 64 MiB, powers of four).

    Returns
    -------
    TransferModel
    """
    from .runtime import alloc, cl
    mod = cl()
    side = pair.gpu
    sizes = sizes or [4 ** k for k in range(6, 14)]
    xs, ys = [], []
    for nbytes in sizes:
        host = np.ones(nbytes // 4, dtype=np.float32)
        buf = alloc(side, nbytes=nbytes)
        for direction in ("h2d", "d2h"):
            times = []
            for _ in range(repeats + 1):
                if direction == "h2d":
                    ev = mod.enqueue_copy(side.queue, buf, host, is_blocking=False)
                else:
                    ev = mod.enqueue_copy(side.queue, host, buf, is_blocking=False)
                ev.wait()
                times.append((ev.profile.end - ev.profile.start) * 1e-9)
            xs.append(nbytes)
            ys.append(float(np.median(times[1:])))
    x, y = np.array(xs, dtype=np.float64), np.array(ys)
    slope, intercept = np.polyfit(x, y, 1)
    bandwidth = 1.0 / slope if slope > 0 else float(x.max() / y.max())
    return TransferModel(latency_s=float(max(intercept, 0.0)), bandwidth=float(bandwidth),
                         round_s=measure_exchange_round(pair))


def measure_overhead(pair, *, repeats: int = 30, scale: int = 10) -> tuple[dict, float]:
    """Measure each device's fixed cost per step: the wall time of a step of one
    launch doing almost nothing, what each further launch adds, and what a step
    in which both devices run costs over the slower of them alone.

    Runs SpMV on one short row (one launch), then on one row of each length group
    of a small Graph500 matrix (one launch per group), on each device alone; then
    one short row on each device together.

    Returns
    -------
    (dict, float)
        ``{role: LaunchOverhead}`` and the co-running extra, seconds.
    """
    from .api import Workload
    from .graph500 import kronecker
    from .features import length_group
    from .partition import subset_plan
    from .perfmodel import LaunchOverhead
    wl = Workload("spmv", kronecker(scale, seed=7))
    lengths = wl.matrix.row_lengths().astype(np.int64)
    gid = length_group(lengths)
    firsts = np.unique(gid, return_index=True)[1]  # one row per length group
    short = int(np.flatnonzero(lengths > 0)[0])
    x = np.ones(wl.matrix.n, dtype=np.float32)
    def step_wall(rows, role=None) -> float:
        eng = wl.engine(pair, subset_plan(lengths, rows, role, grouping="pow4"))
        eng.write("x", x)
        for _ in range(3):
            eng.rowop(x="x", y="y")
        eng.reset_records()
        for _ in range(repeats):
            eng.rowop(x="x", y="y")
        return float(np.median([r.wall for r in eng.records]))

    out, one = {}, {}
    for role in ("cpu", "gpu"):
        one[role] = step_wall(np.array([short]), role)
        every = step_wall(np.sort(firsts), role)
        k = firsts.size
        per = max((every - one[role]) / (k - 1), 0.0) if k > 1 else 0.0
        out[role] = LaunchOverhead(step_s=one[role], launch_s=per)
    second = int(np.flatnonzero(lengths > 0)[1])
    both = step_wall({"cpu": np.array([short]), "gpu": np.array([second])})
    return out, max(both - max(one.values()), 0.0)


def measure_exchange_round(pair, *, repeats: int = 30, scale: int = 10) -> float:
    """Wall time (seconds) of one halo exchange of a small split, both directions.

    Split memory only; this is :class:`~finepar.perfmodel.TransferModel`'s
    ``round_s``."""
    from .api import Workload
    from .graph500 import kronecker
    from .partition import fine_grained
    wl = Workload("spmv", kronecker(scale, seed=7))
    lengths = wl.matrix.row_lengths()
    eng = wl.engine(pair, fine_grained(lengths, int(np.percentile(lengths, 95))))
    eng.prepare_exchange()
    for _ in range(3):
        eng.exchange("x")
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        eng.exchange("x")
        walls.append(time.perf_counter() - t0)
    return float(np.median(walls))


def _co_run(engine, repeats: int) -> dict[str, float]:
    """Median per-device kernel time (seconds) of ``repeats`` co-running row operations."""
    engine.rowop(x="x", y="y")  # warm-up: compilation, first touch
    engine.reset_records()
    for _ in range(repeats):
        engine.rowop(x="x", y="y")
    out = {}
    for role in engine.roles:
        out[role] = float(np.median([r.kernel.get(role, 0.0) for r in engine.records]))
    return out


def train(pair, *, platform: str | None = None, recipe: str | Recipe = "quick",
          training_root: str | Path = "training", models_dir: str | Path | None = None,
          kind: str = "loglinear", progress: bool = True, fit: bool = True) -> dict:
    """Measure (resuming), then fit and write the platform model.

    Parameters
    ----------
    pair : DevicePair
        Split or shared memory; both roles co-run every measurement.
    platform : str, optional
        Name of the platform (default from the devices, see
        :func:`finepar.perfmodel.platform_name`).
    recipe : {'full', 'reduced', 'quick'} or Recipe
    training_root, models_dir : path
        Where measurements and the model go (``training/``, ``models/``).
    kind : {'loglinear', 'linear', 'mlp'}
        Model kind (see :mod:`finepar.perfmodel`).
    progress : bool
        Show a progress bar (tqdm) on stderr.
    fit : bool
        Fit and write the model after measuring.

    Returns
    -------
    dict
        ``platform``, ``measured`` (new runs), ``skipped`` (resumed runs),
        ``unneeded`` (splits at a ``T_f`` past the longest row, not run),
        ``records``, ``seconds``, ``model_path``.

    Raises
    ------
    FineParError
        If the training folder belongs to other devices.
    """
    from tqdm import tqdm
    from .api import Workload
    from .graph500 import diagonal_copy, kronecker, random_quadruplet
    from .partition import fine_grained
    if isinstance(recipe, str) and recipe not in RECIPES:
        raise FineParError(f"unknown recipe {recipe!r} (choose from {', '.join(RECIPES)})")
    rec = RECIPES[recipe] if isinstance(recipe, str) else recipe
    platform = platform or platform_name(pair.selection)
    folder = training_dir(platform, training_root)
    folder.mkdir(parents=True, exist_ok=True)
    devices = {"cpu": pair.selection.cpu.key, "gpu": pair.selection.gpu.key}
    info_path = folder / "recipe.json"
    if info_path.exists():
        info = json.loads(info_path.read_text(encoding="utf-8"))
        if info.get("devices") != devices or info.get("emulated") != pair.emulated:
            raise FineParError(
                f"{folder}: measurements were taken on {info.get('devices')}, not on the devices "
                f"in use ({devices}); choose another --platform name")
    records, skipped_splits = load_measurements(folder, with_skipped=True)
    done = {(r["matrix"], r["T_f"], r.get("grouping", "none")) for r in records}
    done.update(skipped_splits)
    atomic_write_json(info_path, {"platform": platform, "devices": devices,
                                  "emulated": pair.emulated, "memory": pair.mode,
                                  "recipe": asdict(rec),
                                  "pair": pair.selection.to_dict()})
    t_start = time.perf_counter()
    rng = np.random.default_rng(rec.seed)
    quads = {s: [random_quadruplet(rng) for _ in range(rec.quadruplets)] for s in rec.scales}
    measured = skipped = unneeded = 0
    bar = tqdm(total=rec.runs, disable=None if progress else True, unit="run",
               desc=f"training {platform}", dynamic_ncols=True)
    try:
        for s in rec.scales:
            for q, (a, b, c, d) in enumerate(quads[s]):
                keys = {m: _matrix_key(s, q, m) for m in (1, 2)}
                todo = [(m, t, gr) for m in (1, 2) for t in rec.thresholds
                        for gr in rec.groupings if (keys[m], t, gr) not in done]
                per_quad = 2 * len(rec.thresholds) * len(rec.groupings)
                skipped += per_quad - len(todo)
                bar.update(per_quad - len(todo))
                if not todo:
                    continue
                bar.set_postfix_str(f"S={s} quad {q + 1}/{rec.quadruplets}: generating")
                g2 = kronecker(s, 16, a, b, c, d, seed=rec.seed + 1000 * s + q)
                graphs = {2: g2, 1: diagonal_copy(g2)}
                for m in (1, 2):
                    ts = [(t, gr) for mm, t, gr in todo if mm == m]
                    if not ts:
                        continue
                    wl = Workload(rec.app, graphs[m])
                    lengths = wl.matrix.row_lengths()
                    x = np.random.default_rng(s * 100 + q).uniform(-1, 1, wl.matrix.n) \
                        .astype(np.float32)
                    longest = int(lengths.max())
                    for t, gr in ts:
                        if t != ALL_GPU and t >= longest and t > 0:
                            # the same split as every row on the GPU: measured once, as ALL_GPU
                            skipped_splits.append((keys[m], t, gr))
                            done.add((keys[m], t, gr))
                            unneeded += 1
                            bar.update(1)
                            continue
                        bar.set_postfix_str(f"S={s} quad {q + 1}/{rec.quadruplets} type {m} "
                                            f"T_f={'all-gpu' if t == ALL_GPU else t} {gr}")
                        plan = fine_grained(lengths, longest if t == ALL_GPU else t,
                                            grouping=gr)
                        eng = wl.engine(pair, plan)
                        eng.write("x", x)
                        times = _co_run(eng, rec.repeats)
                        for role in ("cpu", "gpu"):
                            share = plan.shares[role]
                            if share.nrows == 0 or share.nnz == 0 or role not in times:
                                continue
                            f = share.features(lengths)
                            sec = times[role]
                            records.append({
                                "matrix": keys[m], "scale": s, "quad": q, "abcd": [a, b, c, d],
                                "type": m, "T_f": t, "grouping": gr, "role": role,
                                "AW": f.AW, "VW": f.VW,
                                "NW": f.NW, "SW": f.SW, "seconds": sec,
                                "throughput": f.SW / sec if sec > 0 else 0.0})
                        done.add((keys[m], t, gr))
                        measured += 1
                        bar.update(1)
                    atomic_write_json(folder / "measurements.json",
                                      {"platform": platform, "records": records,
                                       "skipped": [list(k) for k in skipped_splits]})
    finally:
        bar.close()
    out = {"platform": platform, "measured": measured, "skipped": skipped,
           "unneeded": unneeded,
           "records": len(records), "seconds": time.perf_counter() - t_start,
           "model_path": None}
    if fit:
        transfer = None if pair.shared else measure_transfer(pair)
        overhead, corun_s = measure_overhead(pair)
        model = fit_platform(
            records, platform=platform, devices=devices, emulated=pair.emulated, kind=kind,
            transfer=transfer, overhead=overhead, corun_s=corun_s,
            meta={"recipe": asdict(rec), "memory": pair.mode, "records": len(records),
                  "trained": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                  "pair": pair.describe()})
        path = Path(models_dir or default_models_dir()) / f"{platform}.json"
        model.save(path)
        out["model_path"] = str(path)
        out["model"] = model
    return out


def refit(platform: str, *, training_root: str | Path = "training",
          models_dir: str | Path | None = None, kind: str = "loglinear") -> PlatformModel:
    """Fit a model again from recorded measurements (no device needed)."""
    folder = training_dir(platform, training_root)
    info_path = folder / "recipe.json"
    if not info_path.exists():
        raise ModelError(f"{folder}: no training measurements for platform {platform!r}")
    info = json.loads(info_path.read_text(encoding="utf-8"))
    records = load_measurements(folder)
    old = Path(models_dir or default_models_dir()) / f"{platform}.json"
    prev = PlatformModel.load(old) if old.exists() else None
    model = fit_platform(records, platform=platform, devices=info["devices"],
                         emulated=info["emulated"], kind=kind,
                         transfer=prev.transfer if prev else None,
                         overhead=prev.overhead if prev else None,
                         corun_s=prev.corun_s if prev else 0.0,
                         meta={"recipe": info["recipe"], "memory": info.get("memory"),
                               "records": len(records), "refit": True})
    model.save(old)
    return model
