"""``finepar train`` and ``finepar models list|show|fit``: measuring a platform, fitting
and inspecting its performance models (FinePar TKDE §3.3)."""

from __future__ import annotations

import json
import os
from .options import add_device_options



def cmd_train(args) -> int:
    from ..api import make_pair
    from .config import load_config
    from ..split.training import ALL_GPU, RECIPES, summary, train
    config = load_config(args.config)
    pair = make_pair(cpu=args.cpu, gpu=args.gpu, memory=args.memory or "auto", config=config)
    rec = RECIPES[args.recipe]
    print(f"training on {pair.describe()}")
    print(f"recipe {rec.name}: S={','.join(map(str, rec.scales))}, {rec.quadruplets} quadruplets "
          f"per S, type 1 and 2, T_f in "
          f"{{{', '.join('all-GPU' if t == ALL_GPU else str(t) for t in rec.thresholds)}}}: "
          f"{rec.runs} runs", flush=True)
    out = train(pair, platform=args.platform or config.get("platform"), recipe=rec,
                training_root=args.training_dir, models_dir=args.models_dir, kind=args.kind,
                progress=not args.no_progress)
    print(summary(out))
    print(f"measurements: {out['measurements_path']} ({out['records']} records); "
          f"log: {out['log_path']}")
    if out.get("model") is not None:
        print(f"model written to {out['model_path']}")
        for w in out["warnings"]:
            print(f"warning: {w}")
        print(_model_tables(out["model"]))
    return 0


def _model_tables(model) -> str:
    from ..features import FEATURE_NAMES
    from ..report import format_table
    rows, corr = [], []
    for (g, t, r), dm in sorted(model.models.items()):
        r2 = f"{dm.r2:.2f}" + (" (!)" if dm.r2 < 0 else "")
        if dm.kind in ("linear", "loglinear"):
            rows.append([g, f"Type {t}", r.upper(), *[f"{c:.4g}" for c in dm.coef],
                         f"{dm.intercept:.4g}", r2, f"{dm.r2_log:.2f}", dm.n_samples])
        else:
            rows.append([g, f"Type {t}", r.upper(), "mlp", "", "", "", "", r2,
                         f"{dm.r2_log:.2f}", dm.n_samples])
        corr.append([g, f"Type {t}", r.upper(), *[f"{dm.correlations.get(f, 0):.2f}"
                                                  for f in FEATURE_NAMES]])
    head = (f"model {model.platform} ({'emulated pair' if model.emulated else 'two devices'}; "
            f"trained {model.meta.get('trained') or model.meta.get('date', '?')}, "
            f"recipe {(model.meta.get('recipe') or {}).get('name', '?')}, "
            f"{model.meta.get('records', '?')} measurements)\n"
            f"  file: {model.path or 'not saved'} ({model.origin or 'in memory'})\n"
            f"  cpu: {model.devices.get('cpu')}\n  gpu: {model.devices.get('gpu')}\n")
    t4 = format_table(["groups", "type", "device", "C1 (AW)", "C2 (VW)", "C3 (log NW)",
                       "C4 (log SW)", "C5", "r2", "r2 log", "samples"], rows,
                      align="lllrrrrrrrr")
    t5 = format_table(["groups", "type", "device", *FEATURE_NAMES], corr, align="lllrrrr")
    tr = model.transfer
    tail = (f"\ntransfer: latency {tr.latency_s * 1e6:.1f} us, bandwidth {tr.bandwidth / 1e9:.2f} "
            f"GB/s, one halo exchange round {tr.round_s * 1e6:.1f} us" if tr
            else "\ntransfer: none (shared memory)")
    tail += f"\nco-running step: +{model.corun_s * 1e6:.1f} us over the slower device alone"
    for role, o in sorted(model.overhead.items()):
        tail += (f"\n{role} step overhead: {o.step_s * 1e6:.1f} us for one launch, "
                 f"+{o.launch_s * 1e6:.1f} us per further launch")
    for w in model.poor_fits():
        tail += f"\nwarning: {w}"
    kinds = {dm.kind for dm in model.models.values()}
    form = "C1*AW + C2*VW + C3*log NW + C4*log SW + C5"
    eq = (f"log(throughput) = {form}" if kinds == {"loglinear"} else
          f"throughput (nnz/s) = {form}" if kinds == {"linear"} else
          f"throughput (nnz/s) = {form} (linear), exp(...) (loglinear)")
    return (head + f"\nTable 4: {eq}; r2 on the throughput and on its log (!: below 0)\n"
            + t4 + "\n\nTable 5: correlation of each feature with throughput\n" + t5 + tail)


def _devices_match(args):
    """(selection, match) for the devices the options name; (None, reason) if there
    are none to be found."""
    from .config import load_config
    from ..errors import DeviceError
    from ..split.perfmodel import match_model
    from ..device import select_pair
    try:
        sel = select_pair(args.cpu, args.gpu, config=load_config(args.config))
    except DeviceError as exc:
        return None, str(exc)
    return sel, match_model(sel)


def cmd_models_list(args) -> int:
    from ..split.calibrate import explain
    from ..split.perfmodel import available_models, model_sources
    from ..report import format_table
    models = available_models()
    sel, match = _devices_match(args)
    chosen = match.path if sel is not None else None
    rows = [[m.platform, m.origin, m.meta.get("kind", "linear"), "yes" if m.emulated else "no",
             m.devices.get("cpu", "")[:40], m.devices.get("gpu", "")[:40],
             ("<- " + ("exact" if match.exact else "nearest")) if m.path == chosen else "",
             m.path] for m in models]
    if rows:
        print(format_table(["platform", "from", "kind", "emulated", "cpu", "gpu", "applies",
                            "file"], rows))
    else:
        print("no models found (run 'finepar train')")
    print("searched, in order: " + "; ".join(f"{o} {f}" for o, f in model_sources()))
    if sel is None:
        print(f"devices in use: unknown ({match})")
    else:
        print(f"devices in use: cpu={sel.cpu.key!r}, gpu={sel.gpu.key!r}"
              f"{' (emulated)' if sel.emulated else ''}: {explain(match)}")
    return 0


def cmd_models_show(args) -> int:
    from ..split.calibrate import explain
    from ..errors import ModelError
    from ..split.perfmodel import find_model
    sel, match = _devices_match(args)
    if args.name:
        model = find_model(args.name)
        why = _why_named(model, sel, match)
    elif sel is None:
        raise ModelError(f"no devices to find a model for ({match}); name one")
    elif match.model is None:
        raise ModelError(f"no model for these devices: {explain(match)}")
    else:
        model, why = match.model, explain(match)
    if args.json:
        print(json.dumps(model.to_dict(), indent=2))
        return 0
    print(_model_tables(model))
    print(f"applies to the devices in use: {why}")
    return 0


def _why_named(model, sel, match) -> str:
    """Whether a model named on the command line is the one for the devices in use."""
    from ..split.calibrate import explain
    if sel is None:
        return f"unknown: no devices ({match})"
    if match.path and os.path.realpath(match.path) == os.path.realpath(model.path):
        return f"yes: {explain(match)}"
    other = (f"{match.model.platform} ({match.path})" if match.model else "none")
    if model.devices == {"cpu": sel.cpu.key, "gpu": sel.gpu.key} and \
            model.emulated == sel.emulated:
        return f"its devices match, but {other} comes first in lookup order"
    return f"no: trained on other devices; for the devices in use: {other}, {explain(match)}"


def cmd_models_fit(args) -> int:
    from ..split.training import refit
    model = refit(args.name, training_root=args.training_dir, models_dir=args.models_dir,
                  kind=args.kind)
    print(f"model written to {model.path}")
    print(_model_tables(model))
    return 0


def add(sub) -> None:
    """``finepar train`` and ``finepar models list|show|fit``."""
    from ..split.training import RECIPES
    t = sub.add_parser("train", help="measure this platform and fit its performance models",
                       description="Generate the training matrices (Graph500, type 1 and 2), "
                                   "split each at every T_f of the recipe, co-run both shares, "
                                   "record each device's throughput and fit the model (FinePar "
                                   "TKDE §3.3). Measurements, log and model go to the user data "
                                   "directory ($FINEPAR_HOME overrides it) unless "
                                   "--training-dir / --models-dir say otherwise. A rerun resumes.")
    t.add_argument("--platform", "-p", metavar="NAME",
                   help="platform name (default: derived from the devices)")
    t.add_argument("--recipe", choices=tuple(RECIPES), default="quick",
                   help="full: the paper's 3,840 runs (S=16..19; about 14 min on 2 cores, 5 on "
                        "a GPU machine); reduced: S=13..16; quick: minutes on 2 cores (default); "
                        "calibrate: what a first run on new devices measures (1-2 minutes)")
    t.add_argument("--kind", choices=("loglinear", "linear", "mlp"), default="loglinear",
                   help="loglinear: the paper's regression on log throughput (default); "
                        "linear: Eq. 1-2 as printed; mlp: §4.4")
    t.add_argument("--memory", choices=("auto", "shared", "split"), default=None)
    t.add_argument("--training-dir", default=None, metavar="DIR",
                   help="measurements root: DIR/NAME/ (default: the user data directory's "
                        "training/)")
    t.add_argument("--models-dir", default=None, metavar="DIR",
                   help="where NAME.json goes (default: the user data directory's models/)")
    t.add_argument("--no-progress", action="store_true",
                   help="no progress lines on stderr (they still go to the training log)")
    add_device_options(t)
    t.set_defaults(func=cmd_train)

    m = sub.add_parser("models", help="list, show or refit performance models",
                       description="Inspect the fitted performance models. Lookup order: "
                                   "--model, $FINEPAR_MODELS, the user data directory, the "
                                   "models shipped with FinePar (never the current directory).")
    msub = m.add_subparsers(dest="models_command", metavar="ACTION")
    msub.required = True
    ml = msub.add_parser("list", help="every model found, where from, and which one applies "
                                      "to the devices in use")
    add_device_options(ml)
    ml.set_defaults(func=cmd_models_list)
    ms = msub.add_parser("show", help="Table 4 (coefficients, r²) and Table 5 (correlations)")
    ms.add_argument("name", nargs="?", help="platform name or .json path (default: the model "
                                            "matching the devices in use)")
    ms.add_argument("--json", action="store_true", help="print the model file's JSON")
    add_device_options(ms)
    ms.set_defaults(func=cmd_models_show)
    mf = msub.add_parser("fit", help="refit a model from recorded training measurements")
    mf.add_argument("name", help="platform name (DIR/NAME/ of the training measurements)")
    mf.add_argument("--kind", choices=("loglinear", "linear", "mlp"), default="loglinear",
                    help="loglinear: the paper's regression on log throughput (default); "
                         "linear: Eq. 1-2 as printed; mlp: §4.4")
    mf.add_argument("--training-dir", default=None, metavar="DIR",
                    help="measurements root (default: the user data directory's training/)")
    mf.add_argument("--models-dir", default=None, metavar="DIR",
                    help="where NAME.json goes (default: the user data directory's models/)")
    mf.set_defaults(func=cmd_models_fit)
