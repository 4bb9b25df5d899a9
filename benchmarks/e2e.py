"""Time to answer: `finepar run` as a user runs it, from the file to the answer, beside the
same job written plainly with CuPy and with scipy.

Every measurement is a fresh process, timed from its start to its exit, its answer saved
and checked against the app's reference:

* ``finepar-cold``: ``python -m finepar run APP FILE -o ANSWER`` with every cache empty:
  FinePar's (prepared plans and program binaries, ``$FINEPAR_CACHE_DIR``), the NVIDIA
  driver's JIT cache (``$CUDA_CACHE_PATH``) and PoCL's (``$POCL_CACHE_DIR``);
* ``finepar-new-input``: the same command on an input FinePar has not seen: its cache
  empty, the drivers' caches filled by an earlier run (what a user's first run on a new
  graph costs once FinePar's kernels have been built on the machine);
* ``finepar-warm``: the same command again, once a run has filled those caches;
* ``finepar-served``: the same command again while ``finepar serve`` listens (started
  with the warm caches, its first run not timed): the command is a client that hands its
  command to the server, which keeps the devices, the graph and the prepared engine;
* ``cupy`` / ``scipy``: :mod:`e2e_jobs` (read the ``.npz``, build the library's CSR, run
  the loop, copy the answer back); scipy only up to ``--scipy-max-nnz``.

FinePar's rows carry its report's phases (start: the interpreter and imports; devices;
load; cache: the key and a prepared entry; partition, setup, warm-up, run, results to the
host) and ``prep_s``, everything but reading the file (the process's wall time less
the load phase, Python's start and imports included); the peers' rows their own phases.
min / median / max over ``--repeats``; the JSON is written after every process.

Example (the GPU machine)::

    python3 benchmarks/e2e.py --scales 22,24 --real cnr-2000 --json $OUT/e2e.json \\
        --md $OUT/RESULTS.md
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from base import child_env  # noqa: E402
from common import (ROOT, Budget, Results, choices, graph_specs, log,  # noqa: E402
                    main_of, render_only, script_parser, stat_cell, target_lines)
from finepar.errors import UsageError  # noqa: E402
from measure import answer_problem, app_params, stats  # noqa: E402

APPS = ("bfs", "cc", "pagerank", "spmv")
SYSTEMS = ("finepar-cold", "finepar-new-input", "finepar-warm", "finepar-served", "cupy",
           "scipy", "finepar-before")
SECTION = "Time to answer: from the file to the answer (e2e.py)"


def input_file(spec: str, folder: Path) -> tuple[Path, object]:
    """The ``.npz`` every system reads for ``spec`` (Graph500 from the inputs cache, a real
    graph converted once), and the graph itself (for parameters and references)."""
    from finepar.io import load, save
    from inputs import graph500_file, load_input
    g, _ = load_input(spec)
    if spec.startswith("graph500:"):
        parts = spec.split(":")[1:]
        return graph500_file(int(parts[0]), int(parts[1]) if len(parts) > 1 else 0), g
    path = folder / (Path(spec).name.split(".")[0] + ".npz")
    if not path.exists():
        save(load(spec), path)
    return path, g


#: ``python -c`` that runs the FinePar of the folder in argv[1]: an editable install's
#: import hook (setuptools' ``__editable__`` finder) would otherwise win over PYTHONPATH.
_FROM_FOLDER = ("import runpy, sys; "
                "sys.meta_path[:] = [f for f in sys.meta_path "
                "if not str(getattr(f, '__module__', '')).startswith('__editable__')]; "
                "sys.path.insert(0, sys.argv.pop(1)); "
                "runpy.run_module('finepar', run_name='__main__', alter_sys=True)")


def _env(cold_dir: Path | None, code: Path = ROOT, drivers: bool = True,
         driver_dir: Path | None = None, server=None) -> dict:
    """A process's environment: FinePar from ``code``; with ``cold_dir``, FinePar's cache and
    (``drivers``) NVIDIA's JIT and PoCL's kernel caches in folders there (the drivers' in
    ``driver_dir`` instead, when given); ``server`` (a socket path, or the server process)
    the ``finepar serve`` its ``finepar run`` hands its command to (none otherwise)."""
    env = child_env(code)
    env.pop("FINEPAR_NO_CACHE", None)
    env.pop("FINEPAR_SERVER_SOCKET", None)
    if server is None:
        env["FINEPAR_NO_SERVER"] = "1"  # a user's server never serves a measurement
    else:
        env.pop("FINEPAR_NO_SERVER", None)
        env["FINEPAR_SERVER_SOCKET"] = str(getattr(server, "socket", server))
    if cold_dir is not None:
        for var, sub in (("FINEPAR_CACHE_DIR", "finepar"), ("CUDA_CACHE_PATH", "nv"),
                         ("POCL_CACHE_DIR", "pocl"))[:3 if drivers else 1]:
            env[var] = str((cold_dir if var == "FINEPAR_CACHE_DIR" or driver_dir is None
                            else driver_dir) / sub)
    return env


def one_process(cmd: list, env: dict, answer: Path, report: Path | None) -> dict:
    """Run one process; its wall time, exit status, answer and report or phases."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    rec = {"wall_s": time.perf_counter() - t0, "rc": out.returncode}
    if out.stderr.strip():  # a successful run prints nothing there: keep whatever it did
        rec["stderr"] = out.stderr[-2000:]
    if out.returncode != 0:
        rec["problem"] = (out.stderr.strip().splitlines() or ["?"])[-1][:400]
        return rec
    import numpy as np
    rec["answer"] = np.load(answer)
    if report is not None:
        rep = json.loads(report.read_text())
        rec["phases"] = {k: v for k, v in rep["timings"].items() if isinstance(v, (int, float))}
        rec["cache_hit"] = bool((rep.get("cache") or {}).get("hit"))
        rec["resident"] = bool((rep.get("cache") or {}).get("resident"))
        rec["plan"] = rep["plan"]["label"]
        rec["iterations"] = rep["result"]["iterations"]
        rec["builds"] = rep.get("builds")
    else:
        rec["phases"] = json.loads(out.stdout.strip().splitlines()[-1])
        rec["iterations"] = rec["phases"].pop("iterations", 0)
    return rec


def measure(system: str, app, g, path: Path, params: dict, ref, repeats: int,
            root: Path, args) -> dict:
    """``repeats`` processes of one system; a record of their times and the check.
    ``args.generated``: FinePar's command generates the Graph500 graph itself (its spec, not
    the file); ``args.previous``: the folder of the FinePar ``finepar-before`` runs;
    ``args.keep_driver_caches``: a cold run empties FinePar's cache alone."""
    answer, report = root / "answer.npy", root / "report.json"
    extra = ["--root", str(params["root"])] if app.name == "bfs" else []
    code = Path(args.previous) if system == "finepar-before" else ROOT
    drivers = not args.keep_driver_caches
    if system.startswith("finepar"):
        target = args.spec if args.generated else str(path)
        start = (["-c", _FROM_FOLDER, str(code)] if system == "finepar-before"
                 else ["-m", "finepar"])
        cmd = [sys.executable, *start, "run", app.name, target, "-o", str(answer),
               "--json", str(report), "-q", *extra]
    else:
        cmd = [sys.executable, str(HERE / "e2e_jobs.py"), system, app.name, str(path),
               "--out", str(answer), *extra]
        report = None
    warm_dir = (Path(tempfile.mkdtemp(dir=root))
                if system in ("finepar-warm", "finepar-new-input", "finepar-served") else None)
    server = _start_server(warm_dir, drivers) if system == "finepar-served" else None
    if warm_dir is not None:  # a first run fills the caches the timed ones reuse
        one_process(cmd, _env(warm_dir, drivers=drivers, server=server), answer, report)
    runs, problem = [], ""
    for _ in range(repeats):
        fresh = system in ("finepar-cold", "finepar-before", "finepar-new-input")
        cold = Path(tempfile.mkdtemp(dir=root)) if fresh else None
        env = (_env(cold, code, drivers, driver_dir=warm_dir) if cold is not None
               else _env(warm_dir, code, drivers, server=server))
        rec = one_process(cmd, env, answer, report)
        if rec["rc"] != 0:
            problem = rec["problem"]
            break
        got = rec.pop("answer")
        rec["answer_bytes"] = int(getattr(got, "nbytes", 0))
        problem = answer_problem(app, g, got, ref, params, iterations=rec.get("iterations", 0))
        if problem:
            break
        runs.append(rec)
    if server is not None:
        _stop_server(server, _env(warm_dir, drivers=drivers, server=server))
    out = summarise(system, runs, problem, path)
    if server is not None:  # the server's line per command: what it kept, each run's time
        out["server_log"] = server.log.read_text().splitlines()[-12:]
    return out


def _start_server(warm_dir: Path, drivers: bool):
    """``finepar serve`` on a socket in ``warm_dir`` (its caches there); the process, once
    it listens."""
    sock = warm_dir / "s.sock"
    proc = subprocess.Popen([sys.executable, "-m", "finepar", "serve", "--idle-timeout", "900"],
                            env=_env(warm_dir, drivers=drivers, server=sock),
                            stdout=open(warm_dir / "server.log", "w"), stderr=subprocess.STDOUT)
    proc.socket, proc.log = sock, warm_dir / "server.log"
    for _ in range(1200):
        if sock.exists() or proc.poll() is not None:
            break
        time.sleep(0.1)
    return proc


def _stop_server(proc, env: dict) -> None:
    subprocess.run([sys.executable, "-m", "finepar", "serve", "--stop"], env=env,
                   capture_output=True, check=False)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()


def summarise(system: str, runs: list, problem: str, path: Path) -> dict:
    """min / median / max of the wall time, of everything but reading the file, and of
    each phase."""
    out = {"system": system, "correct": not problem and bool(runs), "problem": problem,
           "repeats": len(runs)}
    if not runs:
        return out
    out["wall_s"] = stats([r["wall_s"] for r in runs])
    out["prep_s"] = stats([r["wall_s"] - r["phases"].get("load", 0.0) for r in runs])
    keys = [k for k in runs[0]["phases"] if all(k in r["phases"] for r in runs)]
    out["phases"] = {k: stats([r["phases"][k] for r in runs]) for k in keys}
    size = path.stat().st_size
    out["load_gb_per_s"] = stats([size / r["phases"]["load"] / 1e9 for r in runs
                                  if r["phases"].get("load") and system != "finepar-served"])
    back = "copy" if "copy" in runs[0]["phases"] else "collect"
    out["results_gb_per_s"] = stats([r["answer_bytes"] / r["phases"][back] / 1e9 for r in runs
                                     if r["phases"].get(back) and r.get("answer_bytes")])
    for k in ("cache_hit", "plan", "iterations"):
        if k in runs[-1]:
            out[k] = runs[-1][k]
    if any(r.get("builds") for r in runs):  # each run's kernel programs (FinePar's report)
        out["builds"] = [r.get("builds") for r in runs]
    if any("resident" in r for r in runs):  # a served run's engine kept from the last one
        out["resident"] = [r.get("resident") for r in runs]
    if any(r.get("stderr") for r in runs):
        out["stderr"] = [r.get("stderr", "") for r in runs]
    return out


def main(argv=None) -> int:
    p = script_parser(__doc__, SECTION)
    p.add_argument("--scales", default="22,24", help="Graph500 scales (22,24)")
    p.add_argument("--real", default="cnr-2000", help="real graphs (cnr-2000; all; none)")
    p.add_argument("--apps", default=",".join(APPS))
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--scipy-max-nnz", type=float, default=2e8,
                   help="skip scipy above this many stored entries (single-threaded)")
    p.add_argument("--previous", metavar="DIR", default=None,
                   help="a FinePar to compare (finepar-before): `git archive REV finepar "
                        "opencl | tar -x -C DIR`")
    p.add_argument("--generated", action="store_true",
                   help="FinePar's command generates graph500:SCALE itself (as `finepar run "
                        "bfs graph500:18`); the peers still read the file")
    p.add_argument("--keep-driver-caches", action="store_true",
                   help="a cold run empties FinePar's cache alone (NVIDIA's and PoCL's stay)")
    args = p.parse_args(argv)
    if args.render:
        return render_only(args, lambda rows, device, a, dates: render(
            {"rows": rows, "device": device, "date": dates, "targets": targets({"rows": rows})}))
    apps_, systems = choices("--apps", args.apps, APPS), choices("--systems", args.systems,
                                                                  SYSTEMS)
    specs = graph_specs(args.real, args.scales)
    if "finepar-before" in systems and not (args.previous and Path(args.previous).is_dir()):
        raise UsageError("--systems finepar-before needs --previous DIR (a FinePar checkout)")
    from finepar import apps
    from finepar.api import make_pair
    from inputs import reference
    res = Results("e2e.py", args, make_pair().describe(), render, lambda d, a: targets(d))
    budget = Budget(args.budget_s)
    work = Path(tempfile.mkdtemp(prefix="finepar-e2e-"))
    for spec in specs:
        if budget.spent():
            res.note(f"budget spent: {spec} not measured")
            break
        path, g = input_file(spec, work)
        row = {"graph": g.name, "n": g.n, "nnz": g.nnz, "file": path.name,
               "file_bytes": path.stat().st_size, "apps": {}}
        res.add(row)
        for name in apps_:
            app = apps.get(name)
            params = app_params(app, g)
            ref, _ = reference(app, g, params)
            row["apps"][name] = recs = []
            for system in systems:
                if system == "scipy" and g.nnz > args.scipy_max_nnz:
                    continue
                if args.generated and not system.startswith("finepar"):
                    continue  # the peers read files; the comparison here is FinePar's own
                args.spec = spec
                rec = measure(system, app, g, path, params, ref, args.repeats, work, args)
                recs.append(rec)
                res.save()
                log(line(g.name, name, rec))
    return 0


def line(graph: str, app: str, rec: dict) -> str:
    if not rec["correct"]:
        return f"{graph} {app} {rec['system']}: WRONG or failed: {rec['problem']}"
    return (f"{graph} {app} {rec['system']}: wall {stat_cell(rec['wall_s'], 1, 2)} s, "
            f"all but the file {stat_cell(rec['prep_s'], 1, 2)} s")


# ------------------------------------------------------------------------- targets


def targets(doc) -> list:
    """Issue 17's targets at scale 24 (and the load rate), met, missed or not measured."""
    out = []
    bound = {"bfs": 2.0, "cc": 2.0, "pagerank": 3.0, "spmv": 3.0}
    rows = {r["graph"]: r for r in doc["rows"]}
    big = next((r for k, r in rows.items() if "-s24-" in k), None)
    for app, limit in bound.items() if big is not None else ():
        recs = {r["system"]: r for r in (big or {}).get("apps", {}).get(app, [])}
        cold, warm = recs.get("finepar-cold"), recs.get("finepar-warm")
        out.append(_target(f"{app} at scale 24, cold cache, all but reading the file <= "
                           f"{limit:g} s", cold, "prep_s", limit))
        if "finepar-new-input" in recs:
            out.append(_target(f"{app} at scale 24, cold prepared-graph cache (a new input; "
                               f"kernels built before), all but reading the file <= "
                               f"{limit:g} s", recs["finepar-new-input"], "prep_s", limit))
        run = (warm or {}).get("phases", {}).get("run")
        out.append(_target(f"{app} at scale 24, warm cache, all but reading the file <= 0.5 s "
                           f"+ the computation", warm, "prep_s",
                           0.5 + (run["median"] if run else 0.0)))
        served = recs.get("finepar-served")
        if served is not None:
            run = (served.get("phases") or {}).get("run")
            out.append(_target(f"{app} at scale 24, warm, with finepar serve listening: the "
                               f"rerun's wall time <= 0.5 s + the computation", served,
                               "wall_s", 0.5 + (run["median"] if run else 0.0)))
    for row in doc["rows"]:  # against the FinePar before this work, where it ran
        for app, recs in row["apps"].items():
            by = {r["system"]: r for r in recs if r.get("correct")}
            before = by.get("finepar-before")
            if before is None:
                continue
            b = before["wall_s"]["median"]
            for system, bound, text in (("finepar-cold", 1.0, "no slower than before"),
                                        ("finepar-warm", 0.5, "a warm rerun at least 2x "
                                                              "faster than before")):
                r = by.get(system)
                v = r["wall_s"]["median"] if r else None
                out.append({"target": f"{row['graph']} {app}, wall time: {text}",
                            "met": None if v is None else v <= bound * b,
                            "detail": "not measured" if v is None else
                            f"{v:.2f} s against {b:.2f} s ({b / v:.2f}x)"})
    loads = [r for r in ((big or {}).get("apps", {}).get("bfs", [])) if
             r["system"] == "finepar-warm" and r.get("load_gb_per_s")]
    back = [r for r in ((big or {}).get("apps", {}).get("cc", [])) if
            r["system"] == "finepar-warm" and r.get("results_gb_per_s")]
    if big is not None:
        out.append({"target": "results to the host >= 5 GB/s (CC's labels at scale 24, the "
                              "answer's bytes over the results phase)",
                    "met": (back[0]["results_gb_per_s"]["median"] >= 5.0) if back else None,
                    "detail": (f"{back[0]['results_gb_per_s']['median']:.2f} GB/s (median)"
                               if back else "not measured")})
        out.append({"target": "reading the scale-24 .npz >= 1 GB/s",
                    "met": (loads[0]["load_gb_per_s"]["median"] >= 1.0) if loads else None,
                    "detail": (f"{loads[0]['load_gb_per_s']['median']:.2f} GB/s (median)"
                               if loads else "not measured")})
    return out


def _target(text: str, rec: dict | None, key: str, limit: float) -> dict:
    if not rec or not rec.get("correct"):
        return {"target": text, "met": None, "detail": "not measured" if not rec else
                f"wrong: {rec['problem']}"}
    v = rec[key]["median"]
    return {"target": text, "met": v <= limit, "detail": f"{v:.2f} s (median of "
            f"{rec['repeats']}; min {rec[key]['min']:.2f}, max {rec[key]['max']:.2f})"}


# -------------------------------------------------------------------------- render


def render(doc) -> str:
    lines = [f"## {SECTION}", "", f"Device: {doc['device']}; date: {doc['date']}.", "",
             "Each cell: median (min-max) seconds over fresh processes, every answer checked "
             "against the app's reference. *wall*: the process from start to exit (the time "
             "a user waits); *but file*: the wall time less FinePar's load phase (or the "
             "peer's own read); phases as each reports them.", ""]
    if doc.get("targets"):
        lines += ["Targets:", ""] + target_lines(doc["targets"]) + [""]
    for row in doc["rows"]:
        lines += [f"### {row['graph']} ({row['n']:,} vertices, {row['nnz']:,} nnz; "
                  f"{row['file']}, {row['file_bytes'] / 1e9:.2f} GB)", "",
                  "| app | system | wall | but file | start | devices | load | cache | partition "
                  "| tune, throttle, correction, store | setup | warm-up | run | results "
                  "| answer | GB/s read | GB/s results |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for app, recs in row["apps"].items():
            for r in recs:
                lines.append(_row(app, r))
        lines.append("")
    return "\n".join(lines)


def _row(app: str, r: dict) -> str:
    if not r["correct"]:
        return f"| {app} | {r['system']} | wrong or failed: {r['problem'][:80]} |||||||||||||||"
    ph = r.get("phases", {})
    peer = "build" in ph

    def cell(k):
        return stat_cell(ph.get(k), 1, 3) if ph.get(k) else "-"
    other = sum(ph[k]["median"] for k in ("tune", "throttle", "correct", "store") if k in ph)
    cols = ([cell("import"), "-", cell("load"), "-", "-", "-", cell("build"), "-", cell("run"),
             cell("copy"), "-"] if peer else
            [cell("start"), cell("devices"), cell("load"), cell("cache"), cell("partition"),
             f"{other:.3f}" if other else "-", cell("setup"), cell("warmup"), cell("run"),
             cell("collect"), cell("answer")])
    gbps = stat_cell(r.get("load_gb_per_s"), 1, 2) if r.get("load_gb_per_s") else "-"
    back = stat_cell(r.get("results_gb_per_s"), 1, 2) if r.get("results_gb_per_s") else "-"
    return (f"| {app} | {r['system']} | {stat_cell(r['wall_s'], 1, 2)} | "
            f"{stat_cell(r['prep_s'], 1, 2)} | " + " | ".join(cols) + f" | {gbps} | {back} |")


if __name__ == "__main__":
    sys.exit(main_of(main))
