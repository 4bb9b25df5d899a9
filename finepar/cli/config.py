"""Platform configuration files (TOML), read with :mod:`tomllib`.

A config names the devices for each role, overrides figures drivers get wrong
(NVIDIA reports a few MiB of L2 cache), and sets budgets and tuner options.
Which file is used: ``--config PATH``, else ``$FINEPAR_CONFIG``, else
``./finepar.toml``, else none. Example (``configs/`` holds real ones)::

    platform = "nvidia-h100-xeon"      # model name used by the tuner
    memory = "split"                   # auto | shared | split

    [devices]
    cpu = "pocl"                       # selector: "P:D", or a substring of "platform|device"
    gpu = "nvidia"                     # or "emulate"

    [cache]                            # device-name substring -> last-level cache bytes
    "H100" = 52428800

    [launch.gpu]                       # work-group geometry (see runtime.LaunchConfig)
    wg_item = 128
    lanes = 32

    [tuner]
    step = 64

    [budget]                           # memory FinePar may use per device, bytes
    gpu_memory = 8000000000            # beyond it the GPU's share streams (§4.3)
    cpu_memory = 64000000000

    [throttle]                         # the GPU share's cache-fit partitions
    schedule = "auto"                  # none | cf | cf-q | sj | sj-q | auto
    bisect = "kd"                      # kd | spac
    remap = "none"                     # none | dbwp | degree
    cache_bytes = 52428800             # default: the GPU's L2
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from ..errors import ConfigError

_TOP_KEYS = {"platform", "memory", "devices", "cache", "launch", "tuner", "budget", "models",
             "throttle", "prepared_cache"}
_THROTTLE_KEYS = {"schedule": str, "bisect": str, "remap": str, "cache_bytes": int,
                  "fraction": float}
_LAUNCH_KEYS = {"wg_item", "wg_team", "lanes", "wg_group", "wg_stream", "wg_stream_small",
                "stream_small_nnz", "block_nnz",
                "resident_groups"}


def find_config(path: str | os.PathLike | None = None) -> Path | None:
    """The config file to use, or None (see module docstring for the order)."""
    if path:
        return Path(path)
    env = os.environ.get("FINEPAR_CONFIG")
    if env:
        return Path(env)
    local = Path("finepar.toml")
    return local if local.is_file() else None


def load_config(path: str | os.PathLike | None = None) -> dict:
    """Read and check a config.

    Returns
    -------
    dict
        Keys: ``platform``, ``memory``, ``devices`` ({cpu, gpu}),
        ``cache_overrides`` ({name substring: bytes}), ``launch`` ({cpu, gpu}:
        {...}), ``tuner``, ``budget``, ``source`` (the path, or None).

    Raises
    ------
    ConfigError
        Unreadable file, TOML syntax error, unknown key or wrong type; the
        message names the file.
    """
    p = find_config(path)
    if p is None:
        return {"source": None}
    try:
        with open(p, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{p}: config file not found") from None
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read config ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML: {exc}") from None
    unknown = set(raw) - _TOP_KEYS
    if unknown:
        raise ConfigError(f"{p}: unknown key(s) {', '.join(sorted(unknown))} "
                          f"(known: {', '.join(sorted(_TOP_KEYS))})")
    out: dict = {"source": str(p)}
    if "platform" in raw:
        out["platform"] = _typed(p, "platform", raw["platform"], str)
    if "memory" in raw:
        mem = _typed(p, "memory", raw["memory"], str)
        if mem not in ("auto", "shared", "split"):
            raise ConfigError(f"{p}: memory must be auto, shared or split, not {mem!r}")
        out["memory"] = mem
    devices = _typed(p, "devices", raw.get("devices", {}), dict)
    bad = set(devices) - {"cpu", "gpu"}
    if bad:
        raise ConfigError(f"{p}: [devices] takes cpu and gpu, not {', '.join(sorted(bad))}")
    out["devices"] = {k: _typed(p, f"devices.{k}", v, str) for k, v in devices.items()}
    cache = _typed(p, "cache", raw.get("cache", {}), dict)
    out["cache_overrides"] = {k: _positive(p, f"cache.{k}", v) for k, v in cache.items()}
    launch = _typed(p, "launch", raw.get("launch", {}), dict)
    out["launch"] = {}
    for role, table in launch.items():
        if role not in ("cpu", "gpu"):
            raise ConfigError(f"{p}: [launch] tables are cpu and gpu, not {role!r}")
        table = _typed(p, f"launch.{role}", table, dict)
        bad = set(table) - _LAUNCH_KEYS
        if bad:
            raise ConfigError(f"{p}: unknown [launch.{role}] key(s) {', '.join(sorted(bad))}")
        out["launch"][role] = {k: _positive(p, f"launch.{role}.{k}", v) for k, v in table.items()}
    out["tuner"] = _typed(p, "tuner", raw.get("tuner", {}), dict)
    if "step" in out["tuner"]:
        _positive(p, "tuner.step", out["tuner"]["step"])
    out["budget"] = _typed(p, "budget", raw.get("budget", {}), dict)
    bad = set(out["budget"]) - {"gpu_memory", "cpu_memory"}
    if bad:
        raise ConfigError(f"{p}: unknown [budget] key(s) {', '.join(sorted(bad))} "
                          f"(known: cpu_memory, gpu_memory)")
    for k, v in out["budget"].items():
        _positive(p, f"budget.{k}", v)
    out["models"] = _typed(p, "models", raw.get("models", {}), dict)
    prepared = _typed(p, "prepared_cache", raw.get("prepared_cache", {}), dict)
    bad = set(prepared) - {"max_bytes"}
    if bad:
        raise ConfigError(f"{p}: unknown [prepared_cache] key(s) {', '.join(sorted(bad))} "
                          f"(known: max_bytes)")
    out["prepared_cache"] = {k: _positive(p, f"prepared_cache.{k}", v) for k, v in prepared.items()}
    throttle = _typed(p, "throttle", raw.get("throttle", {}), dict)
    bad = set(throttle) - set(_THROTTLE_KEYS)
    if bad:
        raise ConfigError(f"{p}: unknown [throttle] key(s) {', '.join(sorted(bad))} "
                          f"(known: {', '.join(sorted(_THROTTLE_KEYS))})")
    out["throttle"] = {k: _typed(p, f"throttle.{k}", v, _THROTTLE_KEYS[k])
                       for k, v in throttle.items()}
    if out["throttle"]:
        from ..throttle.plan import ThrottleOptions
        try:
            ThrottleOptions(**out["throttle"]).check()
        except Exception as exc:  # noqa: BLE001 - any bad value: name the file
            raise ConfigError(f"{p}: [throttle]: {exc}") from None
    return out


def _typed(path, key, value, typ):
    if not isinstance(value, typ):
        raise ConfigError(f"{path}: {key} must be a {typ.__name__}, not {type(value).__name__}")
    return value


def _positive(path, key, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{path}: {key} must be a positive integer, not {value!r}")
    return value
