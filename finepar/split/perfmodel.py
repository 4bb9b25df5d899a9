"""Performance models per (platform, matrix type, device) (FinePar TKDE §3.3, Eq. 1–2, §4.4).

Each model predicts a device's throughput (nonzeros per second) on a share
from the share's features ``[AW, VW, log NW, log SW]``. Three kinds:

``linear`` (the paper's Eq. 1-2)
    ``throughput = C1*AW + C2*VW + C3*log(NW) + C4*log(SW) + C5``
``loglinear`` (the default)
    ``throughput = exp(C1*AW + C2*VW + C3*log(NW) + C4*log(SW) + C5)``: the
    same regression (scikit-learn ``LinearRegression``) on the log of the
    throughput. Throughput spans two orders of magnitude across the training
    shares; fitted linearly, the line goes negative at the small end of the
    data, so small shares are predicted at the floor and shares of small
    graphs come out many times too slow. On the log scale every prediction
    is positive and errors are relative. On the H200 pair's training set the
    90th percentile of the time error fell from 2.3x to 2.0x (CPU) and from
    1.6x to 1.4x (GPU), and the CPU-alone times of the shared real graphs came
    within 15% where the linear fit was up to 2x off.
``mlp`` (§4.4)
    a small ``MLPRegressor`` on standardised features. A platform's model file
holds four of them (type 1 and 2, cpu and gpu) and, on a discrete pair, the
measured transfer cost (latency + bytes / bandwidth).

Files are JSON, never pickle: coefficients, r², Table 5's feature
correlations, the devices they were measured on, library versions, date and
recipe; an MLP is stored as its weight matrices and evaluated with numpy.

Where models are found, in this order and never in the current directory
(:func:`model_sources`): a model named explicitly (``--model``: a platform name
or a path), the folders of ``$FINEPAR_MODELS``, the user data directory
(``platformdirs.user_data_dir("finepar")/models``, or ``$FINEPAR_HOME/models``),
the models shipped with FinePar (``models/``, the package data ``finepar.models``, read
through :mod:`importlib.resources`). A file that is not a readable model is
reported by one warning line naming it. :func:`match_model` picks the first
whose devices match exactly; :mod:`finepar.calibrate` decides what happens when
none does.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..features import FEATURE_NAMES, Features
from ..files import atomic_write_json, jsonable

FORMAT = "finepar-model/2"
#: Formats this version reads: /1 had no loglinear kind, fixed costs or r2_log.
READABLE_FORMATS = ("finepar-model/1", "finepar-model/2")
ROLES = ("cpu", "gpu")
TYPES = (1, 2)
#: Smallest throughput a model may predict, as a fraction of its training median
#: (a linear model can go negative far from its data).
MIN_FRACTION = 0.02
#: A share whose features lie outside the model's training range is predicted to run at
#: most this many times the training median: a fit extrapolated past the largest shares it
#: saw (a CPU share of a few hub rows of 70,000 entries each, say) may promise rates the
#: device never reached (11 Gnnz/s from 16 Xeon cores through PoCL, which do 3-4).
EXTRAPOLATION_CAP = 2.0


@dataclass
class DeviceModel:
    """One (type, device) regression.

    Attributes
    ----------
    kind : {'linear', 'loglinear', 'mlp'}
    coef : list of float
        C1..C4 (linear, loglinear).
    intercept : float
        C5 (linear, loglinear).
    layers : list
        MLP weights: ``[(W, b), ...]`` as nested lists; with ``mean``/``scale``
        of the feature standardisation.
    r2 : float
        Coefficient of determination of the throughput on the training data.
    r2_log : float
        The same on the log of the throughput (what a log-linear model fits).
    correlations : dict
        Pearson correlation of each feature with throughput (Table 5).
    n_samples : int
    median_throughput : float
        nnz/s, for the prediction floor.
    x_min, x_max : list of float
        Range of each feature in the training data; inputs are clamped to it,
        so a share larger or more irregular than any trained on is predicted
        like the nearest trained one instead of by a line extended past its
        data (a linear model extrapolated that far can go negative).
    """

    kind: str
    coef: list = field(default_factory=list)
    intercept: float = 0.0
    layers: list = field(default_factory=list)
    mean: list = field(default_factory=list)
    scale: list = field(default_factory=list)
    r2: float = float("nan")
    r2_log: float = float("nan")
    correlations: dict = field(default_factory=dict)
    n_samples: int = 0
    median_throughput: float = 0.0
    x_min: list = field(default_factory=list)
    x_max: list = field(default_factory=list)

    def predict_many(self, X: np.ndarray) -> np.ndarray:
        """Throughput (nnz/s) for feature rows ``X`` of shape (k, 4); floored above 0."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        outside = np.zeros(X.shape[0], dtype=bool)
        if self.x_min and self.x_max:
            clipped = np.clip(X, self.x_min, self.x_max)
            outside = (clipped != X).any(axis=1)
            X = clipped
        if self.kind == "linear":
            y = X @ np.asarray(self.coef) + self.intercept
        elif self.kind == "loglinear":
            y = np.exp(np.minimum(X @ np.asarray(self.coef) + self.intercept, 700.0))
        else:
            h = (X - np.asarray(self.mean)) / np.asarray(self.scale)
            for i, (W, b) in enumerate(self.layers):
                h = h @ np.asarray(W) + np.asarray(b)
                if i < len(self.layers) - 1:
                    h = np.maximum(h, 0.0)
            y = h.ravel() * self.median_throughput  # the MLP is fitted on y / median
        y = np.where(outside, np.minimum(y, self._extrapolated_cap()), y)
        return np.maximum(y, MIN_FRACTION * max(self.median_throughput, 1.0))

    def _extrapolated_cap(self) -> float:
        """The most a share outside the training range may be predicted to run at:
        :data:`EXTRAPOLATION_CAP` times the training median (inf for a model without one)."""
        return EXTRAPOLATION_CAP * self.median_throughput if self.median_throughput > 0 \
            else float("inf")

    def predict(self, f: Features) -> float:
        """Throughput (nnz/s) of one share. The tuner calls this thousands of times,
        so a linear model is evaluated in plain Python (same result as
        :meth:`predict_many`)."""
        if self.kind not in ("linear", "loglinear"):
            return float(self.predict_many(f.vector()[None, :])[0])
        x = (f.AW, f.VW, math.log(max(f.NW, 1)), math.log(max(f.SW, 1)))
        outside = False
        if self.x_min and self.x_max:
            inside = tuple(min(max(v, lo), hi) for v, lo, hi in zip(x, self.x_min, self.x_max))
            outside, x = inside != x, inside
        y = self.intercept + sum(c * v for c, v in zip(self.coef, x))
        if self.kind == "loglinear":
            y = math.exp(min(y, 700.0))
        if outside:
            y = min(y, self._extrapolated_cap())
        return max(y, MIN_FRACTION * max(self.median_throughput, 1.0))

    def to_dict(self) -> dict:
        d = {"kind": self.kind, "r2": self.r2, "r2_log": self.r2_log,
             "correlations": self.correlations,
             "n_samples": self.n_samples, "median_throughput": self.median_throughput,
             "x_min": self.x_min, "x_max": self.x_max}
        if self.kind in ("linear", "loglinear"):
            d.update(coef=self.coef, intercept=self.intercept)
        else:
            d.update(layers=self.layers, mean=self.mean, scale=self.scale)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "DeviceModel":
        return cls(**{k: d[k] for k in ("kind", "coef", "intercept", "layers", "mean", "scale",
                                        "r2", "r2_log", "correlations", "n_samples", "median_throughput",
                                        "x_min", "x_max")
                      if k in d})


@dataclass
class TransferModel:
    """Per-iteration transfer cost of a discrete pair: a fixed cost per exchange
    plus ``bytes / bandwidth``.

    Attributes
    ----------
    latency_s : float
        Seconds per copy (the intercept of the copy timings).
    bandwidth : float
        Bytes per second.
    round_s : float
        Seconds of one whole halo exchange of a few entries, both directions
        (pack kernels, copies through the host, unpack kernels and the host's
        waits), measured as wall time; 0 if not measured. Copies alone miss
        most of it: on a discrete GPU with a PoCL CPU it is hundreds of
        microseconds, while a copy's own latency is a few.
    """

    latency_s: float
    bandwidth: float
    round_s: float = 0.0

    def seconds(self, nbytes: float, transfers: int = 2) -> float:
        """Seconds to exchange ``nbytes`` in one round (0 for nothing to move)."""
        if nbytes <= 0:
            return 0.0
        return max(self.round_s, transfers * self.latency_s) + nbytes / self.bandwidth


@dataclass
class LaunchOverhead:
    """Fixed host and launch cost of a device's share per step (measured).

    A step on a device with ``k`` launches costs about ``step_s + (k - 1) *
    launch_s`` before any nonzero is processed: enqueueing, the device's launch
    latency and the host's wait. The throughput models of Eq. 1-2 are fitted on
    kernel times and leave this out; on a discrete pair, where a step may take
    well under a millisecond, it decides whether the slower device should get a
    handful of rows at all.

    Attributes
    ----------
    step_s : float
        Seconds for a step of one launch of negligible work.
    launch_s : float
        Seconds per further launch in the same step.
    """

    step_s: float
    launch_s: float

    def seconds(self, launches: int) -> float:
        if launches <= 0:
            return 0.0
        return self.step_s + (launches - 1) * self.launch_s


@dataclass
class PlatformModel:
    """The models of one platform (one CPU + GPU pair).

    Attributes
    ----------
    platform : str
    devices : dict
        ``{'cpu': key, 'gpu': key}`` device identifiers (``platform|device``).
    emulated : bool
    models : dict
        ``{(grouping, type, role): DeviceModel}``; ``grouping`` is ``none``
        (one launch per device, FinePar-original) or ``pow4`` (§4.1's groups).
    transfer : TransferModel or None
    overhead : dict
        ``{role: LaunchOverhead}`` measured per device (empty for models trained
        before it was measured: then no fixed cost is added).
    corun_s : float
        Measured extra wall time of a step in which both devices run, over the
        slower of the two alone (the host waits on two queues); 0 if not measured.
    meta : dict
        Date, recipe, library versions, sample counts.
    path : str or None
        Where it was loaded from.
    origin : {'path', 'env', 'user', 'shipped'} or None
        Which lookup source it was found in (see :func:`model_sources`); ``path``
        for a file named explicitly, None for a model made in this process.
    """

    platform: str
    devices: dict
    emulated: bool
    models: dict
    transfer: TransferModel | None = None
    meta: dict = field(default_factory=dict)
    path: str | None = None
    overhead: dict = field(default_factory=dict)
    corun_s: float = 0.0
    origin: str | None = None

    def groupings(self) -> list[str]:
        return sorted({k[0] for k in self.models})

    def device_model(self, matrix_type: int, role: str, grouping: str = "none") -> DeviceModel:
        """The (grouping, type, role) model; a missing grouping falls back to ``none``."""
        for g in (grouping, "none"):
            if (g, matrix_type, role) in self.models:
                return self.models[(g, matrix_type, role)]
        raise ModelError(f"model {self.platform} has no type-{matrix_type} {role} model")

    def predict_seconds(self, f: Features, matrix_type: int, role: str,
                        grouping: str = "none") -> float:
        """Predicted time of a share: ``SW / throughput`` (0 for an empty share)."""
        if f.SW == 0:
            return 0.0
        return f.SW / self.device_model(matrix_type, role, grouping).predict(f)

    def to_dict(self) -> dict:
        return {
            "format": FORMAT, "platform": self.platform, "devices": self.devices,
            "emulated": self.emulated, "feature_names": list(FEATURE_NAMES),
            "models": {g: {f"type{t}": {r: self.models[(g, t, r)].to_dict() for r in ROLES
                                        if (g, t, r) in self.models} for t in TYPES}
                       for g in self.groupings()},
            "transfer": (None if self.transfer is None else
                         {"latency_s": self.transfer.latency_s,
                          "bandwidth_bytes_per_s": self.transfer.bandwidth,
                          "round_s": self.transfer.round_s}),
            "corun_s": self.corun_s,
            "overhead": {r: {"step_s": o.step_s, "launch_s": o.launch_s}
                         for r, o in self.overhead.items()},
            "meta": self.meta,
        }

    def save(self, path: str | os.PathLike) -> None:
        """Write the model as JSON, atomically."""
        atomic_write_json(path, jsonable(self.to_dict()))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "PlatformModel":
        """Read a model file.

        Raises
        ------
        ModelError
            Missing, unreadable, truncated or malformed file (the message names it).
        """
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ModelError(f"{p}: no such model file") from None
        except (OSError, ValueError) as exc:
            raise ModelError(f"{p}: not a readable model file ({exc})") from None
        return cls.from_json(text, str(p))

    @classmethod
    def from_json(cls, text: str, where: str) -> "PlatformModel":
        """A model from the text of a model file; ``where`` names the file in
        errors and becomes :attr:`path`.

        Raises
        ------
        ModelError
            Truncated or malformed JSON, an unknown format, or missing fields.
        """
        try:
            d = json.loads(text)
        except ValueError as exc:
            raise ModelError(f"{where}: not a readable model file, truncated or not JSON "
                             f"({exc})") from None
        if not isinstance(d, dict) or d.get("format") not in READABLE_FORMATS:
            raise ModelError(f"{where}: not a FinePar model this version reads (format must be "
                             f"one of {', '.join(READABLE_FORMATS)})")
        try:
            models = {}
            for g, by_type in d["models"].items():
                for t in TYPES:
                    for r, md in by_type.get(f"type{t}", {}).items():
                        models[(g, t, r)] = DeviceModel.from_dict(md)
            tr = d.get("transfer")
            transfer = (TransferModel(float(tr["latency_s"]), float(tr["bandwidth_bytes_per_s"]),
                                      float(tr.get("round_s", 0.0)))
                        if tr else None)
            overhead = {r: LaunchOverhead(float(o["step_s"]), float(o["launch_s"]))
                        for r, o in (d.get("overhead") or {}).items()}
            return cls(platform=d["platform"], devices=d["devices"],
                       emulated=bool(d.get("emulated")), models=models, transfer=transfer,
                       meta=d.get("meta", {}), path=where, overhead=overhead,
                       corun_s=float(d.get("corun_s", 0.0)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelError(f"{where}: malformed model file ({exc!r})") from None

    def poor_fits(self) -> list[str]:
        """One line per (grouping, type, device) model whose r² on the throughput
        is below 0, i.e. predicts worse than the mean throughput would."""
        return [f"model {self.platform}: groups {g} type {t} {r} has r2 {dm.r2:.3g} < 0 on the "
                f"throughput (r2 {dm.r2_log:.2g} on its log; {dm.n_samples} samples): it "
                f"predicts the throughput worse than the mean throughput would"
                for (g, t, r), dm in sorted(self.models.items()) if dm.r2 < 0]


# --------------------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------------------


def fit_device_model(X: np.ndarray, y: np.ndarray, kind: str = "loglinear",
                     seed: int = 0) -> DeviceModel:
    """Fit one (type, device) model.

    Parameters
    ----------
    X : ndarray, shape (k, 4)
        ``[AW, VW, log NW, log SW]`` per measurement.
    y : ndarray, shape (k,)
        Measured throughput, nnz/s (positive).
    kind : {'loglinear', 'linear', 'mlp'}
        See the module's docstring; r² is computed on the throughput in every case.

    Returns
    -------
    DeviceModel
    """
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.shape[0] < 5:
        raise ModelError(f"too few measurements to fit a model ({X.shape[0]}; need at least 5)")
    corr = {}
    for i, name in enumerate(FEATURE_NAMES):
        col = X[:, i]
        corr[name] = (float(np.corrcoef(col, y)[0, 1])
                      if np.std(col) > 0 and np.std(y) > 0 else 0.0)
    median = float(np.median(y))
    bounds = {"x_min": X.min(axis=0).tolist(), "x_max": X.max(axis=0).tolist()}
    if kind in ("linear", "loglinear"):
        # Fit on standardised features (VW spans 0..1e9, which leaves the raw
        # least-squares problem ill-conditioned), then map the coefficients back
        # to the raw features of Eq. 1-2: exact algebra, same predictions.
        mean, scale = X.mean(axis=0), X.std(axis=0)
        scale[scale == 0] = 1.0
        target = np.log(y) if kind == "loglinear" else y
        reg = LinearRegression().fit((X - mean) / scale, target)
        coef = reg.coef_ / scale
        intercept = float(reg.intercept_ - np.dot(coef, mean))
        m = DeviceModel(kind=kind, coef=[float(c) for c in coef], intercept=intercept,
                        correlations=corr, n_samples=int(X.shape[0]), median_throughput=median,
                        **bounds)
        m.r2 = float(r2_score(y, m.predict_many(X)))
        m.r2_log = float(r2_score(np.log(y), np.log(m.predict_many(X))))
        return m
    if kind == "mlp":
        from sklearn.neural_network import MLPRegressor
        mean, scale = X.mean(axis=0), X.std(axis=0)
        scale[scale == 0] = 1.0
        Z = (X - mean) / scale
        reg = MLPRegressor(hidden_layer_sizes=(16, 16), activation="relu", max_iter=5000,
                           random_state=seed, alpha=1e-3, learning_rate_init=1e-2,
                           n_iter_no_change=50, tol=1e-6).fit(Z, y / median)
        layers = [(W.tolist(), b.tolist()) for W, b in zip(reg.coefs_, reg.intercepts_)]
        m = DeviceModel(kind="mlp", layers=layers, mean=mean.tolist(), scale=scale.tolist(),
                        correlations=corr, n_samples=int(X.shape[0]), median_throughput=median,
                        **bounds)
        m.r2 = float(r2_score(y, m.predict_many(X)))
        m.r2_log = float(r2_score(np.log(y), np.log(m.predict_many(X))))
        return m
    raise ModelError(f"unknown model kind {kind!r} (use loglinear, linear or mlp)")


def fit_platform(records: list[dict], *, platform: str, devices: dict, emulated: bool,
                 kind: str = "loglinear", transfer: TransferModel | None = None,
                 meta: dict | None = None, overhead: dict | None = None,
                 corun_s: float = 0.0) -> PlatformModel:
    """Fit the four models of a platform from training measurements.

    Parameters
    ----------
    records : list of dict
        Each with ``grouping``, ``type`` (1 or 2), ``role``, ``AW``, ``VW``,
        ``NW``, ``SW`` and ``throughput`` (nnz/s); records with ``SW == 0``
        are skipped.

    Raises
    ------
    ModelError
        If a (type, device) has too few measurements.
    """
    models = {}
    for g in sorted({x.get("grouping", "none") for x in records}):
        for t in TYPES:
            for r in ROLES:
                rows = [x for x in records if x.get("grouping", "none") == g and x["type"] == t
                        and x["role"] == r and x["SW"] > 0 and x["throughput"] > 0]
                if not rows:
                    continue
                X = np.array([Features(x["AW"], x["VW"], x["NW"], x["SW"]).vector()
                              for x in rows])
                y = np.array([x["throughput"] for x in rows])
                models[(g, t, r)] = fit_device_model(X, y, kind)
    if not models:
        raise ModelError("no usable measurements to fit")
    meta = dict(meta or {})
    meta.setdefault("date", _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    meta.setdefault("kind", kind)
    meta["versions"] = _versions()
    return PlatformModel(platform=platform, devices=devices, emulated=emulated, models=models,
                         transfer=transfer, meta=meta, overhead=dict(overhead or {}),
                         corun_s=float(corun_s))


def _versions() -> dict:
    import platform as _pf
    import scipy
    import sklearn
    from .. import __version__
    out = {"finepar": __version__, "python": _pf.python_version(), "numpy": np.__version__,
           "scipy": scipy.__version__, "scikit-learn": sklearn.__version__}
    try:
        import pyopencl
        out["pyopencl"] = pyopencl.VERSION_TEXT
    except ImportError:
        pass
    return out


# --------------------------------------------------------------------------------------
# Finding a model for the devices in use
# --------------------------------------------------------------------------------------


def platform_name(selection) -> str:
    """A default platform name from a device selection, e.g. ``nvidia-h200-xeon``
    (letters, digits and '-' only, so it is safe as a file name anywhere)."""
    import re

    def slug(name: str) -> str:
        s = re.sub(r"\(r\)|\(tm\)|processor|cpu|pthread|@.*", "", name.lower())
        s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
        parts = [p for p in s.split("-") if p and p not in ("intel", "amd", "skylake", "avx512")]
        return "-".join(parts[:3]) or "device"
    cpu = slug(selection.cpu.name)
    if selection.emulated:
        return f"pocl-{cpu}-emulated"
    return f"{slug(selection.gpu.name)}-{cpu}"


# --------------------------------------------------------------------------------------
# Where models live: the lookup never depends on the current directory
# --------------------------------------------------------------------------------------

#: Environment variable: root of FinePar's per-user data (tests and CI point it elsewhere).
HOME_ENV = "FINEPAR_HOME"
#: Environment variable: folders of models searched before the user's and the shipped
#: ones, separated by ``os.pathsep``.
MODELS_ENV = "FINEPAR_MODELS"


def data_home() -> Path:
    """Root of FinePar's per-user data: ``$FINEPAR_HOME``, else
    ``platformdirs.user_data_dir("finepar")`` (``~/.local/share/finepar`` on Linux)."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs
    return Path(platformdirs.user_data_dir("finepar", appauthor=False))


def user_models_dir() -> Path:
    """Where trained and calibrated models go by default: ``data_home()/models``."""
    return data_home() / "models"


def user_training_dir() -> Path:
    """Where training measurements go by default: ``data_home()/training``."""
    return data_home() / "training"


def model_sources() -> list[tuple[str, object]]:
    """The folders searched for models, in lookup order, each with its origin.

    Returns
    -------
    list of (str, folder)
        ``('env', Path)`` for each folder of ``$FINEPAR_MODELS``, then
        ``('user', user_models_dir())``, then ``('shipped', folder)``: the
        models shipped with FinePar, the top-level ``models/`` folder, which the wheel
        maps to the package ``finepar.models`` (read through :mod:`importlib.resources`,
        so a copy installed anywhere finds them; in a source tree that was not
        installed, the folder beside the package).
    """
    env = [("env", Path(p).expanduser())
           for p in os.environ.get(MODELS_ENV, "").split(os.pathsep) if p]
    return env + [("user", user_models_dir()), ("shipped", shipped_models())]


def shipped_models():
    """The folder of the models shipped with FinePar (a Traversable or a Path)."""
    try:
        return resources.files("finepar.models")
    except ModuleNotFoundError:  # a source tree on PYTHONPATH: models/ beside finepar/
        return Path(__file__).resolve().parents[2] / "models"


def warn(message: str, key=None) -> None:
    """Print ``finepar: warning: MESSAGE`` as one line on standard error; with a
    ``key``, only the first time that key is seen in this process."""
    if key is not None:
        if key in _WARNED:
            return
        _WARNED.add(key)
    print(f"finepar: warning: {message}", file=sys.stderr, flush=True)


_WARNED: set = set()
_LOADED: dict = {}


def available_models(dirs: list | None = None) -> list[PlatformModel]:
    """Every readable model, in lookup order, each with its :attr:`~PlatformModel.origin`.

    Parameters
    ----------
    dirs : list, optional
        Folders to search instead of :func:`model_sources`: paths (origin
        ``path``) or ``(origin, folder)`` pairs.

    Returns
    -------
    list of PlatformModel
        A file reached twice (same resolved path) is listed once, at its first
        place. A file that is not a readable model (truncated, malformed, another
        format) is left out and reported by one warning line naming it, once per
        state of the file; a file that vanishes meanwhile is left out silently.
    """
    sources = model_sources() if dirs is None else [
        d if isinstance(d, tuple) else ("path", Path(d)) for d in dirs]
    seen, out = set(), []
    for origin, folder in sources:
        for entry in _model_entries(folder):
            ident = entry.resolve() if isinstance(entry, Path) else str(entry)
            if ident in seen:
                continue
            seen.add(ident)
            try:
                out.append(dataclasses.replace(_load_entry(entry), origin=origin))
            except (ModelError, OSError):  # reported by _load_entry, or gone meanwhile
                continue
    return out


def _model_entries(folder) -> list:
    """The ``*.json`` entries of a folder (a Path or a package Traversable), by name."""
    try:
        if not folder.is_dir():
            return []
        return sorted((e for e in folder.iterdir() if e.name.endswith(".json")),
                      key=lambda e: e.name)
    except OSError:
        return []


def _load_entry(entry) -> PlatformModel:
    """:meth:`PlatformModel.load` of a folder entry, memoised on the file's identity
    and state (the tuner looks a model up on every run; parsing every file each time
    costs more than the search). A failure is memoised too and warned about once.
    Callers must not modify the model.

    Raises
    ------
    OSError
        If the file cannot be stat'ed (gone, dangling link).
    ModelError
        As :meth:`PlatformModel.load`.
    """
    if isinstance(entry, Path):
        path = entry.resolve()
        st = path.stat()
        key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
        read = lambda: PlatformModel.load(path)  # noqa: E731
    else:  # package data in an archive: fixed while the process runs
        key = ("resource", str(entry))
        read = lambda: PlatformModel.from_json(entry.read_text(encoding="utf-8"),  # noqa: E731
                                               str(entry))
    hit = _LOADED.get(key)
    if hit is None:
        try:
            hit = read()
        except ModelError as exc:
            hit = exc
            warn(f"model file skipped: {exc}", key=key)
        _LOADED[key] = hit
    if isinstance(hit, ModelError):
        raise hit
    return hit


@dataclass
class ModelMatch:
    """Which model the tuner uses and how well it fits the devices in use.

    Attributes
    ----------
    model : PlatformModel or None
    exact : bool
        Both device identifiers (and the emulation) match.
    message : str
        What to tell the user; names the model file (a warning when not exact).
    status : {'exact', 'given', 'nearest', 'none', 'calibrated'}
        Why this model: its devices match; it was named explicitly; it is the
        nearest of those found; none was found; it was just calibrated.
    """

    model: PlatformModel | None
    exact: bool
    message: str
    status: str = ""

    @property
    def path(self) -> str | None:
        """The model's file (None without a model, or for one made in this process)."""
        return self.model.path if self.model is not None else None

    @property
    def origin(self) -> str | None:
        """``path``, ``env``, ``user`` or ``shipped`` (see :func:`model_sources`)."""
        return self.model.origin if self.model is not None else None


def describe_model(m: PlatformModel) -> str:
    """``NAME (FILE, ORIGIN)``: how reports name a model."""
    return f"{m.platform} ({m.path or 'not saved'}, {m.origin or 'in memory'})"


def find_model(name: str, dirs: list | None = None) -> PlatformModel:
    """A model by file path (a name ending in ``.json`` or containing a path
    separator) or by platform name, the first in lookup order
    (:func:`available_models`).

    Raises
    ------
    ModelError
        If no such model exists or the file is unreadable.
    """
    if name.endswith(".json") or os.sep in name or (os.altsep and os.altsep in name):
        m = PlatformModel.load(name)
        m.origin = "path"
        return m
    for m in available_models(dirs):
        if m.platform == name:
            return m
    raise ModelError(f"no model named {name!r} (see 'finepar models list')")


def match_model(selection, *, name: str | None = None, dirs: list | None = None) -> ModelMatch:
    """Find the model for the devices in ``selection`` (this finds; it never
    calibrates: see :func:`finepar.calibrate.choose_model`).

    ``name`` (a platform name or a path) forces one; it is still checked
    against the devices. Otherwise the first model in lookup order whose device
    identifiers and emulation both match; else the nearest (same emulation,
    then most words of the device names in common) with a warning in the
    message; else none.
    """
    keys = {"cpu": selection.cpu.key, "gpu": selection.gpu.key}
    if name:
        m = find_model(name, dirs)
        if m.devices == keys and m.emulated == selection.emulated:
            return ModelMatch(m, True, f"model {describe_model(m)} matches the devices in use",
                              "exact")
        return ModelMatch(m, False, f"model {describe_model(m)} was trained on "
                                    f"cpu={m.devices.get('cpu')!r}, gpu={m.devices.get('gpu')!r}, "
                                    f"not on the devices in use (cpu={keys['cpu']!r}, "
                                    f"gpu={keys['gpu']!r}): predictions may be off", "given")
    models = available_models(dirs)
    for m in models:
        if m.devices == keys and m.emulated == selection.emulated:
            return ModelMatch(m, True, f"model {describe_model(m)} matches the devices in use",
                              "exact")

    def overlap(m: PlatformModel) -> int:
        return sum(len(set(m.devices.get(r, "").lower().split()) & set(keys[r].lower().split()))
                   for r in ROLES)
    same = [m for m in models if m.emulated == selection.emulated]
    if same:
        best = max(same, key=overlap)  # the first in lookup order among equals
        return ModelMatch(best, False,
                          f"no model for these devices (cpu={keys['cpu']!r}, gpu={keys['gpu']!r}); "
                          f"using the nearest, {describe_model(best)}: predictions may be off "
                          f"(run 'finepar train' to fit one for this machine)", "nearest")
    return ModelMatch(None, False, "no model for these devices; T_f comes from measured "
                                   "profiling (run 'finepar train' to fit a model)", "none")
