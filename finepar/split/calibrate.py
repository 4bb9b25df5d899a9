"""Which model the tuner uses, and calibration: a model measured on first use.

A model is looked up in a fixed order, never in the current directory (see
:func:`finepar.perfmodel.model_sources`): a model named explicitly, then
``$FINEPAR_MODELS``, the user data directory, the models shipped in the
package. When none matches the devices in use exactly (every new machine),
the first run *calibrates*: it measures the ``calibrate`` training recipe
(:data:`finepar.training.RECIPES`: 336 co-runs of Graph500 matrices of scales
16-19; measured: 32 s on a fresh H100 machine with 16 Xeon cores through PoCL,
42 s in another run; 53 s of CPU time and 1 min 53 s of wall time on a busy
2-core EPYC emulating the pair),
fits the model as ``finepar train`` does (FinePar TKDE §3.3), writes it to the
user data directory and uses it. Later runs find it there as an exact match
and do not calibrate again; ``finepar train --recipe full`` (same default
platform name) replaces it with a better one.

The single switch is ``calibrate`` (:func:`enabled`): ``None`` calibrates
unless ``$FINEPAR_NO_CALIBRATE`` is set, or the pair is emulated and a model
is near (the gpu role is the CPU itself: a minute of measurements would teach
nothing about a GPU, and a default run on such a pair runs the CPU alone,
:func:`finepar.split.choose.auto_devices`); ``False`` never does (the nearest model is
used with a warning naming it, or, without any, T_f comes from measured
profiling, §3.4's fallback); ``True`` or a recipe always does.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time

from ..errors import FineParError
from .perfmodel import (ModelMatch, PlatformModel, describe_model, match_model, platform_name,
                        user_models_dir, user_training_dir, warn)

#: Environment variable: set (to anything but ``0``) to turn automatic calibration off.
NO_CALIBRATE_ENV = "FINEPAR_NO_CALIBRATE"


def enabled(calibrate=None) -> bool:
    """Whether a run calibrates when no model matches the devices exactly.

    Parameters
    ----------
    calibrate : None, bool or finepar.training.Recipe
        ``None``: yes unless ``$FINEPAR_NO_CALIBRATE`` is set to anything but
        ``''`` or ``'0'``; ``True`` or a recipe: yes; ``False``: no.
    """
    if calibrate is None:
        return os.environ.get(NO_CALIBRATE_ENV, "") in ("", "0")
    return calibrate is not False


def choose_model(pair, model=None, *, calibrate=None) -> ModelMatch:
    """The model the tuner uses for ``pair``.

    Parameters
    ----------
    pair : DevicePair
    model : str, PlatformModel, ModelMatch or None
        A platform name or ``.json`` path (looked up, checked against the
        devices), a loaded model or a match (used as given); ``None``: the first
        model in lookup order that matches the devices exactly.
    calibrate : None, bool or finepar.training.Recipe
        See :func:`enabled`; a recipe replaces the ``calibrate`` recipe (tests).
        Only consulted when ``model`` is None and no model matches exactly.

    Returns
    -------
    ModelMatch
        ``status`` says why: ``exact``, ``given``, ``calibrated``, ``nearest``
        (calibration off or failed; a warning line names the model) or ``none``
        (T_f from measured profiling).
    """
    if isinstance(model, ModelMatch):
        return model
    if isinstance(model, PlatformModel):
        keys = {"cpu": pair.selection.cpu.key, "gpu": pair.selection.gpu.key}
        exact = model.devices == keys and model.emulated == pair.emulated
        return ModelMatch(model, exact, f"model {describe_model(model)} given",
                          "exact" if exact else "given")
    match = match_model(pair.selection, name=model)
    if match.exact or model:
        return match
    if enabled(calibrate) and not (calibrate is None and pair.emulated and match.model):
        from .training import Recipe
        try:
            return calibrate_pair(pair, calibrate if isinstance(calibrate, Recipe) else None)
        except (FineParError, OSError) as exc:  # e.g. a user data directory not writable
            warn(f"calibration failed ({exc}); going on without it")
    if match.model is not None:  # once per model and devices, not on every tuned run
        warn(match.message, key=("nearest", match.path, pair.selection.cpu.key,
                                 pair.selection.gpu.key))
    return match


def calibrate_pair(pair, recipe=None) -> ModelMatch:
    """Measure the ``calibrate`` recipe (or ``recipe``) on ``pair``, fit and cache
    the model in the user data directory, and return it as an exact match.

    Prints one progress line on standard error before it starts. Measurements
    go to ``user_training_dir()/NAME`` (a later ``finepar train`` of that name
    resumes from them), the model to ``user_models_dir()/NAME.json``; ``NAME``
    is :func:`~finepar.perfmodel.platform_name`, with a hash of the device
    identifiers appended if that name is taken by other devices.

    Returns
    -------
    ModelMatch
        ``status='calibrated'``; the message names the model file.

    Raises
    ------
    FineParError
        As :func:`finepar.training.train`.
    """
    from .training import RECIPES, train
    rec = recipe or RECIPES["calibrate"]
    name = calibration_name(pair)
    print(f"finepar: no model matches these devices (cpu={pair.selection.cpu.key!r}, "
          f"gpu={pair.selection.gpu.key!r}): calibrating once ({rec.runs} runs of the "
          f"'{rec.name}' recipe, 1-2 minutes); the model will be kept in "
          f"{user_models_dir() / (name + '.json')}", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    out = train(pair, platform=name, recipe=rec, progress=False)
    model = out["model"]
    return ModelMatch(model, True, f"model {describe_model(model)} calibrated for the devices "
                                   f"in use ({out['measured']} runs, "
                                   f"{time.perf_counter() - t0:.0f} s)", "calibrated")


def calibration_name(pair) -> str:
    """The platform name a calibration of ``pair`` is saved under: the default
    platform name, unless the user data directory holds measurements or a model
    of other devices under it; then that name with a hash of the devices."""
    base = platform_name(pair.selection)
    keys = {"cpu": pair.selection.cpu.key, "gpu": pair.selection.gpu.key}
    for path in (user_training_dir() / base / "recipe.json", user_models_dir() / f"{base}.json"):
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # absent, or unreadable: calibration replaces it
            continue
        if not isinstance(d, dict) or d.get("devices") != keys or \
                bool(d.get("emulated")) != pair.emulated:
            digest = hashlib.sha1(json.dumps([keys, pair.emulated], sort_keys=True)
                                  .encode()).hexdigest()[:8]
            return f"{base}-{digest}"
    return base


def explain(match: ModelMatch, calibrate=None) -> str:
    """Why ``match`` applies to the devices in use, in a few words, as ``finepar
    models list/show`` print it (``calibrate`` as in :func:`enabled`)."""
    if match.exact:
        return "exact match of both devices"
    if match.status == "given":
        return "named explicitly; trained on other devices"
    if enabled(calibrate):
        near = f"; with calibration off: the nearest, {match.model.platform}" if match.model else ""
        return (f"none matches exactly: the first run calibrates one and keeps it in "
                f"{user_models_dir()}{near}")
    if match.model is not None:
        return f"nearest ({match.model.platform}; calibration off): predictions may be off"
    return "none: T_f comes from measured profiling (calibration off)"
