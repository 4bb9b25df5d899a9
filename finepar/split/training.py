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

Measurements go to ``ROOT/NAME/measurements.json`` (rewritten atomically after
every matrix, so an interrupted run resumes where it stopped), the recipe and
devices to ``ROOT/NAME/recipe.json``, the progress and warnings of every run to
``ROOT/NAME/train.log``, and the fitted model to ``MODELS/NAME.json``. ``ROOT``
and ``MODELS`` default to the user data directory
(:func:`finepar.perfmodel.user_training_dir`, :func:`~finepar.perfmodel.user_models_dir`).
"""

from __future__ import annotations

import datetime as _dt
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..engine.options import EngineOptions
from ..partition import GROUPINGS
from ..errors import FineParError, ModelError, UsageError
from ..files import atomic_write_json, atomic_write_text
from .perfmodel import (PlatformModel, TransferModel, available_models, fit_platform,
                        platform_name, user_models_dir, user_training_dir, warn)


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
        Plans measured per split (:data:`finepar.partition.GROUPINGS`: one launch
        per device, §4.1's length groups, CSR-adaptive blocks, ELL on the GPU);
        each gets its own models.
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
    groupings: tuple = GROUPINGS
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
    # the paper's recipe (1,280 runs per grouping) with the ends and hub shares: 3,840 runs
    "full": Recipe("full", (16, 17, 18, 19), 20, PAPER_THRESHOLDS + EXTRA_THRESHOLDS),
    # the paper's thresholds and quadruplets on smaller matrices (2-core machines)
    "reduced": Recipe("reduced", (13, 14, 15, 16), 20, PAPER_THRESHOLDS + EXTRA_THRESHOLDS),
    # minutes on 2 cores, for tests and a first look
    "quick": Recipe("quick", (12, 13), 4, PAPER_THRESHOLDS + EXTRA_THRESHOLDS),
    # what a first run on new devices measures (finepar.calibrate): the full recipe's scales,
    # 3 quadruplets, every other T_f and the ends. Fitted on this subset of the full recipe's
    # measurements (quadruplets 0-2), the models predict the share times of quadruplets
    # 10-19 about as well as when fitted on quadruplets 0-9 (median error x1.35 vs x1.32 on
    # the emulated pair, x1.27 vs x1.28 on the H200 pair)
    "calibrate": Recipe("calibrate", (16, 17, 18, 19), 3, (0, 32, 128, 512, 2048, 8192, ALL_GPU)),
}


def training_dir(platform: str, root: str | Path | None = None) -> Path:
    """``ROOT/NAME``: a platform's measurements (``ROOT`` default: the user data
    directory's ``training/``)."""
    return Path(root or user_training_dir()) / platform


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
    from ..device import alloc, cl
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
    from ..workload import Workload
    from ..io.graph500 import kronecker
    from ..features import length_group
    from ..partition import subset_plan
    from .perfmodel import LaunchOverhead
    wl = Workload("spmv", kronecker(scale, seed=7))
    lengths = wl.matrix.row_lengths().astype(np.int64)
    gid = length_group(lengths)
    firsts = np.unique(gid, return_index=True)[1]  # one row per length group
    short = int(np.flatnonzero(lengths > 0)[0])
    x = np.ones(wl.matrix.n, dtype=np.float32)
    def step_wall(rows, role=None) -> float:
        eng = wl.engine(pair, subset_plan(lengths, rows, role, grouping="pow4"),
                        EngineOptions.measuring())
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
    from ..workload import Workload
    from ..io.graph500 import kronecker
    from ..partition import fine_grained
    wl = Workload("spmv", kronecker(scale, seed=7))
    lengths = wl.matrix.row_lengths()
    eng = wl.engine(pair, fine_grained(lengths, int(np.percentile(lengths, 95))),
                    EngineOptions.measuring())
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


@dataclass
class _Store:
    """A platform's training measurements: ``records`` and the ``unneeded`` splits
    (matrix, T_f, grouping), saved to ``folder/measurements.json`` atomically."""

    folder: Path
    platform: str
    records: list
    unneeded: list

    def save(self) -> None:
        atomic_write_json(self.folder / "measurements.json",
                          {"platform": self.platform, "records": self.records,
                           "skipped": [list(k) for k in self.unneeded]})


def _check_folder(folder: Path, pair) -> dict:
    """The devices of ``pair`` as recorded in ``recipe.json``; refuse a folder that
    holds measurements of other devices."""
    devices = {"cpu": pair.selection.cpu.key, "gpu": pair.selection.gpu.key}
    info_path = folder / "recipe.json"
    if info_path.exists():
        try:
            info = json.loads(info_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelError(f"{info_path}: unreadable training recipe ({exc})") from None
        if info.get("devices") != devices or info.get("emulated") != pair.emulated:
            raise FineParError(
                f"{folder}: measurements were taken on {info.get('devices')}, not on the devices "
                f"in use ({devices}); choose another --platform name")
    return devices


def _plan(rec: Recipe, records: list, unneeded_before: list) -> list[dict]:
    """The recipe's matrices in order, each with its splits classified.

    Returns
    -------
    list of dict
        Per matrix: ``scale``, ``quad``, ``abcd``, ``type``, ``key``, ``todo``
        (the ``(T_f, grouping)`` splits to run), ``resumed`` (splits with
        records) and ``unneeded`` (splits found earlier to need no run).
    """
    from ..io.graph500 import random_quadruplet
    recorded = {(r["matrix"], r["T_f"], r.get("split", r.get("grouping", "none")))
                for r in records}
    unneeded = set(map(tuple, unneeded_before)) - recorded
    known = recorded | unneeded
    rng = np.random.default_rng(rec.seed)
    quads = {s: [random_quadruplet(rng) for _ in range(rec.quadruplets)] for s in rec.scales}
    out = []
    for s in rec.scales:
        for q, abcd in enumerate(quads[s]):
            for m in (1, 2):
                key = _matrix_key(s, q, m)
                splits = [(t, g) for t in rec.thresholds for g in rec.groupings]
                out.append({"scale": s, "quad": q, "abcd": abcd, "type": m, "key": key,
                            "resumed": sum((key, *x) in recorded for x in splits),
                            "unneeded": sum((key, *x) in unneeded for x in splits),
                            "todo": [x for x in splits if (key, *x) not in known]})
    return out


def _measure_matrix(pair, rec: Recipe, item: dict, graph, store: _Store) -> tuple[int, int]:
    """Run the splits ``item['todo']`` of one matrix, adding to ``store.records``
    (one per non-empty share) and ``store.unneeded`` (splits at a ``T_f`` past the
    longest row: the same split as :data:`ALL_GPU`). Returns the two counts."""
    from ..workload import Workload
    from ..partition import fine_grained
    wl = Workload(rec.app, graph)
    lengths = wl.matrix.row_lengths()
    x = np.random.default_rng(item["scale"] * 100 + item["quad"]).uniform(-1, 1, wl.matrix.n) \
        .astype(np.float32)
    longest = int(lengths.max())
    about = {"matrix": item["key"], "scale": item["scale"], "quad": item["quad"],
             "abcd": list(item["abcd"]), "type": item["type"]}
    measured = skipped = 0
    for t, gr in item["todo"]:
        if t != ALL_GPU and t >= longest and t > 0:
            store.unneeded.append((item["key"], t, gr))
            skipped += 1
            continue
        plan = fine_grained(lengths, longest if t == ALL_GPU else t, grouping=gr)
        eng = wl.engine(pair, plan, EngineOptions.measuring())
        if gr == "ell" and "gpu" in eng.stores and eng.stores["gpu"].low.ell is None:
            # padding too much: the engine ran adaptive blocks, measured as "adaptive"
            store.unneeded.append((item["key"], t, gr))
            skipped += 1
            continue
        eng.write("x", x)
        times = _co_run(eng, rec.repeats)
        for role in ("cpu", "gpu"):
            share = plan.shares[role]
            if share.nrows == 0 or share.nnz == 0 or role not in times:
                continue
            f, sec = share.features(lengths), times[role]
            # the CPU's share under "ell" is in length groups: its model is pow4's
            recorded = "pow4" if gr == "ell" and role == "cpu" else gr
            store.records.append({**about, "T_f": t, "split": gr, "grouping": recorded,
                                  "role": role,
                                  "AW": f.AW, "VW": f.VW, "NW": f.NW, "SW": f.SW, "seconds": sec,
                                  "throughput": f.SW / sec if sec > 0 else 0.0})
        measured += 1
    return measured, skipped


def _duration(seconds: float) -> str:
    """``1h 02m``, ``4m 05s`` or ``12s``."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 60}m {s % 60:02d}s" if s >= 60 else f"{s}s"


class TrainingLog:
    """The log of a platform's training runs (``training/NAME/train.log``, kept
    across runs) and, optionally, the same lines on standard error.

    Parameters
    ----------
    path : Path
    echo : bool
        Also print each progress line on standard error (terminal or not).

    Notes
    -----
    Each line is added by rewriting the file atomically (:mod:`finepar.files`), so
    the log is never left half-written.
    """

    def __init__(self, path: Path, echo: bool):
        self.path, self.echo = path, echo
        self.text = path.read_text(encoding="utf-8") if path.exists() else ""

    def line(self, text: str, *, echo: bool | None = None) -> None:
        """Add one line (UTC-stamped in the file); print it too if echoing."""
        stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self.text += f"{stamp} {text}\n"
        atomic_write_text(self.path, self.text)
        if self.echo if echo is None else echo:
            print(text, file=sys.stderr, flush=True)

    def warning(self, text: str) -> None:
        """Add a warning line and print it on standard error (always)."""
        self.line(f"warning: {text}", echo=False)
        warn(text)


class _ETA:
    """Remaining time of a training run, weighted by each run's matrix size.

    A run's weight is its matrix's generated edges, ``16 * 2^S`` (proportional to
    its nnz): runs of a scale-19 matrix cost about eight times those of scale 16,
    so counting runs alone predicts the remaining time several times too short.
    The rate (seconds per weight) is taken from the largest scale measured so
    far, since the time per nonzero grows with the matrix (caches)."""

    def __init__(self, plan: list[dict]):
        self.left = sum(self.weight(it) * len(it["todo"]) for it in plan)
        self.by_scale: dict = {}

    @staticmethod
    def weight(item: dict) -> float:
        return 16.0 * 2 ** item["scale"]

    def done(self, item: dict, seconds: float) -> float:
        """Record a matrix's runs; return the estimated seconds left."""
        w = self.weight(item) * len(item["todo"])
        self.left -= w
        sec, wt = self.by_scale.get(item["scale"], (0.0, 0.0))
        self.by_scale[item["scale"]] = (sec + seconds, wt + w)
        sec, wt = self.by_scale[max(self.by_scale)]
        return self.left * sec / wt if wt > 0 else 0.0


def train(pair, *, platform: str | None = None, recipe: str | Recipe = "quick",
          training_root: str | Path | None = None, models_dir: str | Path | None = None,
          kind: str = "loglinear", progress: bool = True, fit: bool = True) -> dict:
    """Measure (resuming), then fit and write the platform model.

    Parameters
    ----------
    pair : DevicePair
        Split or shared memory; both roles co-run every measurement.
    platform : str, optional
        Name of the platform (default from the devices, see
        :func:`finepar.perfmodel.platform_name`).
    recipe : {'full', 'reduced', 'quick', 'calibrate'} or Recipe
    training_root, models_dir : path, optional
        Where measurements (``ROOT/NAME/``) and the model (``DIR/NAME.json``) go;
        default: the user data directory (:func:`finepar.perfmodel.user_training_dir`,
        :func:`~finepar.perfmodel.user_models_dir`), never the current directory.
    kind : {'loglinear', 'linear', 'mlp'}
        Model kind (see :mod:`finepar.perfmodel`).
    progress : bool
        One line per matrix on standard error, terminal or not: runs done /
        total and the time left, weighted by matrix size. The same lines go to
        ``ROOT/NAME/train.log`` either way, with any warning.
    fit : bool
        Fit and write the model after measuring (models with r² < 0 are
        reported by a warning line, on standard error and in the log).

    Returns
    -------
    dict
        ``platform``; ``total`` (the recipe's runs) = ``measured`` (this call)
        + ``resumed`` (recorded earlier) + ``unneeded`` (a ``T_f`` past the
        longest row: the same split as every row on the GPU, not run);
        ``records`` (in the file), ``seconds``, ``measurements_path``,
        ``log_path``, ``model_path`` (None without ``fit``), ``model`` and
        ``warnings`` (the r² warnings).

    Raises
    ------
    FineParError
        If the recipe is unknown or the training folder belongs to other devices.
    """
    rec = _recipe(recipe)
    platform = platform or platform_name(pair.selection)
    folder = training_dir(platform, training_root)
    devices = _check_folder(folder, pair)
    store = _Store(folder, platform, *load_measurements(folder, with_skipped=True))
    plan = _plan(rec, store.records, store.unneeded)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_json(folder / "recipe.json", {"platform": platform, "devices": devices,
                                               "emulated": pair.emulated, "memory": pair.mode,
                                               "recipe": asdict(rec),
                                               "pair": pair.selection.to_dict()})
    log = TrainingLog(folder / "train.log", progress)
    counts = {"measured": 0, "resumed": sum(it["resumed"] for it in plan),
              "unneeded": sum(it["unneeded"] for it in plan)}
    log.line(f"training {platform} on {pair.describe()}: recipe {rec.name}, {rec.runs} runs"
             + (f" ({counts['resumed']} resumed, {counts['unneeded']} found not needed before)"
                if counts["resumed"] + counts["unneeded"] else ""))
    t_start = time.perf_counter()
    _measure_all(pair, rec, plan, store, counts, log)
    out = {"platform": platform, "total": rec.runs, **counts, "records": len(store.records),
           "measurements_path": str(folder / "measurements.json"),
           "log_path": str(log.path), "model_path": None, "model": None, "warnings": []}
    if fit:
        log.line("measuring fixed costs and fitting the model")
        model = _fit(pair, rec, store.records, platform=platform, devices=devices, kind=kind)
        path = Path(models_dir or user_models_dir()) / f"{platform}.json"
        model.save(path)
        model.path = str(path)
        model.origin = "user" if path.parent.resolve() == user_models_dir().resolve() else "path"
        out.update(model_path=str(path), model=model, warnings=model.poor_fits())
        for w in out["warnings"]:
            log.warning(w)
    out["seconds"] = time.perf_counter() - t_start
    log.line(summary(out), echo=False)
    return out


def _recipe(recipe: str | Recipe) -> Recipe:
    if isinstance(recipe, Recipe):
        return recipe
    if recipe not in RECIPES:
        raise UsageError(f"unknown recipe {recipe!r} (choose from {', '.join(RECIPES)})")
    return RECIPES[recipe]


def _measure_all(pair, rec: Recipe, plan: list[dict], store: _Store, counts: dict,
                 log: TrainingLog) -> None:
    """Measure every matrix of ``plan`` with splits to do, saving and logging a
    progress line after each; ``counts`` is updated in place."""
    from ..io.graph500 import diagonal_copy, kronecker
    eta, t0, graphs = _ETA(plan), time.perf_counter(), {}
    for item in plan:
        if not item["todo"]:
            continue
        t_item = time.perf_counter()
        s, q = item["scale"], item["quad"]
        if (s, q) not in graphs:
            graphs = {(s, q): kronecker(s, 16, *item["abcd"], seed=rec.seed + 1000 * s + q)}
        graph = graphs[(s, q)] if item["type"] == 2 else diagonal_copy(graphs[(s, q)])
        measured, skipped = _measure_matrix(pair, rec, item, graph, store)
        counts["measured"] += measured
        counts["unneeded"] += skipped
        store.save()
        left = eta.done(item, time.perf_counter() - t_item)
        done = sum(counts.values())
        log.line(f"S={s} quad {q + 1}/{rec.quadruplets} type {item['type']}: {measured} runs "
                 f"measured, {skipped} not needed; {done}/{rec.runs} runs done; "
                 f"{_duration(time.perf_counter() - t0)} elapsed, about {_duration(left)} left")


def _fit(pair, rec: Recipe, records: list, *, platform: str, devices: dict,
         kind: str) -> PlatformModel:
    """Measure the fixed costs (transfer on split memory, launches, co-running) and
    fit the platform's models on ``records``."""
    transfer = None if pair.shared else measure_transfer(pair)
    overhead, corun_s = measure_overhead(pair)
    return fit_platform(
        records, platform=platform, devices=devices, emulated=pair.emulated, kind=kind,
        transfer=transfer, overhead=overhead, corun_s=corun_s,
        meta={"recipe": asdict(rec), "memory": pair.mode, "records": len(records),
              "trained": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "pair": pair.describe()})


def summary(out: dict) -> str:
    """One line of counts for a :func:`train` result: they add up to the total."""
    return (f"{out['total']} runs: {out['measured']} measured, {out['resumed']} resumed, "
            f"{out['unneeded']} not needed (T_f past the longest row, or ELL padded too much) in "
            f"{_duration(out.get('seconds', 0.0))}; {out['records']} records in "
            f"{out['measurements_path']}"
            + (f"; model {out['model_path']}" if out.get("model_path") else ""))


def refit(platform: str, *, training_root: str | Path | None = None,
          models_dir: str | Path | None = None, kind: str = "loglinear") -> PlatformModel:
    """Fit a model again from recorded measurements (no device needed).

    Parameters
    ----------
    platform : str
        The training folder's name (``ROOT/NAME/``).
    training_root, models_dir : path, optional
        Default: the user data directory, as for :func:`train`.
    kind : {'loglinear', 'linear', 'mlp'}

    Returns
    -------
    PlatformModel
        Written to ``models_dir/NAME.json``; the fixed costs (transfer, launch,
        co-running) are kept from the model there, or else from the first model
        of that name and those devices in lookup order. Models with r² < 0 are
        reported by a warning line.

    Raises
    ------
    ModelError
        If there are no measurements for ``platform``.
    """
    folder = training_dir(platform, training_root)
    info_path = folder / "recipe.json"
    if not info_path.exists():
        raise ModelError(f"{folder}: no training measurements for platform {platform!r}")
    info = json.loads(info_path.read_text(encoding="utf-8"))
    records = load_measurements(folder)
    dest = Path(models_dir or user_models_dir()) / f"{platform}.json"
    prev = _previous_model(dest, platform, info)
    model = fit_platform(records, platform=platform, devices=info["devices"],
                         emulated=info["emulated"], kind=kind,
                         transfer=prev.transfer if prev else None,
                         overhead=prev.overhead if prev else None,
                         corun_s=prev.corun_s if prev else 0.0,
                         meta={"recipe": info["recipe"], "memory": info.get("memory"),
                               "records": len(records), "refit": True})
    model.save(dest)
    model.path = str(dest)
    for w in model.poor_fits():
        warn(w)
    return model


def _previous_model(dest: Path, platform: str, info: dict) -> PlatformModel | None:
    """The model whose fixed costs a refit keeps (see :func:`refit`)."""
    if dest.exists():
        return PlatformModel.load(dest)
    return next((m for m in available_models() if m.platform == platform
                 and m.devices == info["devices"] and m.emulated == info["emulated"]), None)
