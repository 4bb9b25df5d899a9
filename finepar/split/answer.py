"""The whole-run choice (issue 29, item 2): the CPU alone, the GPU alone or the tuner's
split, weighed by each one's predicted time to answer, not by one row operation's.

The tuner (:mod:`finepar.split.tuner`, FinePar TKDE §3.4) compares a split with each
device alone by the predicted seconds of one row operation over the plan. A run pays
more than its row operations: the uploads of each device's share, a host round trip
for each level of a frontier app (a launch and a blocking read on the push side's
queue, or on both queues for a split), the CPU's walk of small frontiers
(:mod:`finepar.engine.walk`) and a hand-over each time a level grows past the walk's
switch point. On small graphs those costs are the run: the H100 pair's default split
took 4.2 ms for SSSP on rajat01 where the CPU alone, walking every level, took 1.0.

Each candidate's predicted time to answer (:func:`weigh`) is

    uploads + steps x (its row operation) + levels x (its round trip)

with, for a frontier app, each level of a host BFS's level profile (:func:`level_profile`,
from the vertex of most out-edges, the apps' default root) either walked (seconds an
edge, the walk's measured rate) or pushed (a round trip plus its edges at the device's
predicted rate), as the engine's switch point decides, and a hand-over where a split's
walk gives a level to the GPU. The round trips and upload rates are measured once per
pair (:func:`host_costs`, kept on the pair as the walks keep their rates). The split
must be predicted :data:`~finepar.split.tuner.CORUN_MARGIN` faster than the better
device alone.

A frontier app's levels are the part the prediction knows least (how many launches a
level costs on each device, how many levels run in one launch): where the input is
small enough that a run costs milliseconds (:data:`TRIAL_NNZ`), each candidate is
built and its run measured once (:func:`trial`, the app's default parameters, after a
warm-up), and the measured times decide; the predictions are kept beside them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..engine.levels import LevelProfile, level_profile
from .tuner import CORUN_MARGIN

#: Frontier apps on inputs of at most this many entries are decided by one measured run
#: of each candidate (:func:`trial`): a run costs a few milliseconds there, mostly fixed
#: costs the per-step models do not see. At 2^21 Graph500 scale 18 (7.6 M entries) was
#: predicted: on one H200 its BFS ran the CPU alone, 6.3 ms, where the GPU alone took 2.0
#: (the predictions, 5.9 and 6.1 ms, were mostly the uploads, and counted a BFS as about
#: one row operation: 1.5 ms on the CPU, 0.7 on the GPU; benchmarks/RESULTS.md). The
#: trial costs a first call each candidate's engine and a few runs (tens of ms there); the
#: choice is kept with the prepared input (:mod:`finepar.prepcache`).
TRIAL_NNZ = 1 << 23


#: The candidates, in the report's order.
CANDIDATES = ("cpu", "gpu", "split")


@dataclass
class HostCosts:
    """What a run pays on a pair besides its row operations, measured once per pair.

    Attributes
    ----------
    round_trip : dict
        ``{'cpu': s, 'gpu': s, 'both': s}``: the least seconds of a 4-byte fill and a
        blocking 4-byte read on one queue, or on both queues at once (a level's host
        round trip on one device, or a split step's).
    upload : dict
        ``{'cpu': B/s, 'gpu': B/s}``: host-to-device bytes a second of a 4 MiB copy.
    seconds : float
        The measurement's own time.
    """

    round_trip: dict
    upload: dict
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"round_trip": dict(self.round_trip), "upload": dict(self.upload),
                "seconds": self.seconds}


def host_costs(pair) -> HostCosts:
    """The pair's :class:`HostCosts`, measured on first use (:func:`measure_host_costs`)
    and kept on the pair (``pair.answer_costs``; a test may set it)."""
    costs = getattr(pair, "answer_costs", None)
    if costs is None:
        costs = measure_host_costs(pair)
        pair.answer_costs = costs
    return costs


def measure_host_costs(pair, repeats: int = 5, upload_bytes: int = 4 << 20) -> HostCosts:
    """Measure :class:`HostCosts` on ``pair`` (least of ``repeats``; a few ms). Each upload
    is the copy's own time by its profiling event, after an untimed one that allocates the
    buffer, from touched host pages. Timed by the host's clock, two copies on one H200 once
    read 328 MB/s against 12 GB/s in the call before (the host's copies can wait behind
    programs being built ahead), and the whole-run choice then ran SpMV on cnr-2000 on the
    CPU alone, 100x slower (``benchmarks/runs/h200-2026-11-29o``)."""
    from ..device.handles import cl
    mod = cl()
    t_start = time.perf_counter()
    sides = {r: pair.side(r) for r in ("cpu", "gpu")}
    small = {r: mod.Buffer(s.context, mod.mem_flags.READ_WRITE, 4) for r, s in sides.items()}
    host = np.zeros(1, np.int32)
    pattern = np.zeros(1, np.int32)

    def trip(roles) -> float:
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            for r in roles:
                mod.enqueue_fill_buffer(sides[r].queue, small[r], pattern, 0, 4)
            for r in roles:
                mod.enqueue_copy(sides[r].queue, host, small[r], is_blocking=True)
            best = min(best, time.perf_counter() - t0)
        return best

    rt = {"cpu": trip(("cpu",)), "gpu": trip(("gpu",)), "both": trip(("cpu", "gpu"))}
    data = np.ones(upload_bytes // 4, np.int32)  # its pages touched: none faults in a copy
    up = {}
    for r, s in sides.items():
        buf = mod.Buffer(s.context, mod.mem_flags.READ_WRITE, data.nbytes)
        mod.enqueue_copy(s.queue, buf, data, is_blocking=True)  # the buffer's allocation
        best = float("inf")
        for _ in range(repeats):  # the copy's own time: not a wait behind a build's lock
            ev = mod.enqueue_copy(s.queue, buf, data, is_blocking=True)
            best = min(best, (ev.profile.end - ev.profile.start) * 1e-9)
        up[r] = data.nbytes / max(best, 1e-9)
        buf.release()
    for b in small.values():
        b.release()
    return HostCosts(rt, up, time.perf_counter() - t_start)


# ------------------------------------------------------------------ the levels


# ------------------------------------------------------------------ the weighing


@dataclass
class Inputs:
    """What :func:`weigh` needs besides the tuner's record.

    Attributes
    ----------
    costs : HostCosts
    steps : float
        The run's row operations over the whole plan (``App.row_steps``).
    nnz, n : int
        The matrix's entries and rows.
    bytes_per_nnz : int
        Uploaded bytes an entry (indices, and values where the app reads them).
    levels : LevelProfile or None
        A frontier app's level profile (None: an iterative app, one round trip a run).
    walk_edge_seconds : float or None
        The CPU walk's seconds an edge (None: the app does not walk).
    vector_bytes : int
        Bytes a hand-over moves (the walk's vectors over all vertices).
    """

    costs: HostCosts
    steps: float
    nnz: int
    n: int
    bytes_per_nnz: int = 4
    levels: LevelProfile | None = None
    walk_edge_seconds: float | None = None
    vector_bytes: int = 0
    trial: dict = field(default_factory=dict)


def alone_steps(tuning: dict) -> dict:
    """Each device alone's predicted row operation and grouping, from the tuner's
    trajectory at its two ends (``tuning['ends']``): ``{'cpu': (s, grouping), ...}``; a
    device absent where its end is not the whole matrix (a CPU budget)."""
    ends = tuning.get("ends") or {}
    out = {}
    for role, key in (("cpu", "t_cpu"), ("gpu", "t_gpu")):
        at = [e for e in tuning.get("trajectory", []) if e["T_f"] == ends.get(role)]
        if role == "cpu" and ends.get("cpu", 0) != 0:
            continue  # the CPU cannot hold every row
        if at:
            best = min(at, key=lambda e: e[key])
            out[role] = (float(best[key]), best.get("grouping", tuning.get("grouping")))
    return out


def weigh(tuning: dict, inp: Inputs) -> dict:
    """Each candidate's predicted time to answer, and the winner.

    Parameters
    ----------
    tuning : dict
        :meth:`TuneResult.to_dict` (``predicted``, ``trajectory``, ``ends``).
    inp : Inputs

    Returns
    -------
    dict
        ``candidates``: ``{name: {'seconds', 'parts', 'grouping'}}`` (``parts``:
        ``uploads``, ``steps``, ``round_trips``, ``walk``, ``handovers`` seconds);
        ``winner``; ``reason`` (one line); ``measured`` (from :func:`trial`, if any).
    """
    rt, up = inp.costs.round_trip, inp.costs.upload
    alone = alone_steps(tuning)
    p = tuning["predicted"]
    both = 0 < p.get("t_cpu", 0.0) and 0 < p.get("t_gpu", 0.0)
    walks = inp.walk_edge_seconds is not None and inp.levels is not None
    split_roles = ("cpu", "gpu") if both or walks else (
        ("cpu",) if p.get("t_gpu", 0.0) == 0.0 else ("gpu",))
    cands = {}
    whole = inp.nnz * inp.bytes_per_nnz + 4 * (inp.n + 1)
    for name in CANDIDATES:
        if name == "split":
            t_step, grouping, roles = p["t"], tuning.get("grouping"), split_roles
        elif name in alone and split_roles != (name,):  # else the tuner's end is it
            (t_step, grouping), roles = alone[name], (name,)
        else:
            continue
        uploads = max(whole / up[r] for r in roles)  # a walking CPU holds the whole CSR
        trip = rt["both"] if len(roles) == 2 else rt[roles[0]]
        parts = {"uploads": uploads, "steps": inp.steps * t_step, "round_trips": trip,
                 "walk": 0.0, "handovers": 0.0}
        if inp.levels is not None:
            parts.update(_levels(inp, name, roles, t_step, trip))
        cands[name] = {"seconds": float(sum(parts.values())), "parts": parts,
                       "grouping": grouping, "roles": list(roles)}
    return _winner(cands, "predicted")


def _levels(inp: Inputs, name: str, roles: tuple, t_step: float, trip: float) -> dict:
    """A frontier app's levels on one candidate: each level pushed (a round trip and its
    edges at the candidate's rate) or, where the CPU walks and the level is within the
    walk's switch point (the push side's round trip over the walk's seconds an edge),
    walked; a hand-over each time a split's walk gives a level to the GPU."""
    e = inp.levels.edges.astype(np.float64)
    per_edge = t_step / max(inp.nnz, 1)
    if inp.walk_edge_seconds is None or "cpu" not in roles:
        return {"steps": inp.steps * t_step, "round_trips": trip * e.size}
    push = "cpu" if name == "cpu" else "gpu"
    push_trip = inp.costs.round_trip[push] if name == "cpu" else trip
    walked = e * inp.walk_edge_seconds <= push_trip
    pushed = ~walked
    handovers = 0
    if name == "split":
        handovers = int(np.count_nonzero(walked[:-1] & pushed[1:]))
    hand = inp.vector_bytes / inp.costs.upload["gpu"] + 2 * trip
    return {"steps": inp.steps * per_edge * float(e[pushed].sum()),
            "round_trips": trip * (1 + int(pushed.sum())),
            "walk": inp.walk_edge_seconds * float(e[walked].sum()),
            "handovers": handovers * hand}


def _winner(cands: dict, by: str, key: str = "seconds") -> dict:
    """The fastest device alone, unless the split is :data:`CORUN_MARGIN` faster (a
    "split" that gives one device every row and no walk is that device alone: no margin)."""
    alone = [(c[key], n) for n, c in cands.items() if n != "split" and c.get(key) is not None]
    t_alone, best = min(alone) if alone else (float("inf"), None)
    split = cands.get("split", {}).get(key)
    one = len(cands.get("split", {}).get("roles", ())) == 1
    margin = 0.0 if one else CORUN_MARGIN
    if split is not None and (best is None or split * (1.0 + margin) < t_alone):
        winner = "split"
        why = ("the tuner's end, where the " + cands["split"]["roles"][0] + " holds every row"
               if one else f"{by} {CORUN_MARGIN:.0%} or more faster than the better device "
               f"alone" if best else "the only candidate")
    else:
        winner = best
        why = (f"{by} {t_alone * 1e3:.3g} ms against the split's "
               f"{split * 1e3:.3g}" + (f" (a split needs {margin:.0%} more)" if margin else "")
               if split is not None else "the only candidate")
    return {"candidates": cands, "winner": winner, "by": by, "reason": why}


def text(choice: dict) -> str:
    """``weighed: cpu 1.1 ms, gpu 0.9 ms, split 1.4 ms; gpu alone wins: ...``."""
    c = choice["candidates"]
    pred = ", ".join(f"{n} {c[n]['seconds'] * 1e3:.3g} ms" for n in CANDIDATES if n in c)
    out = f"weighed (predicted): {pred}"
    meas = {n: v.get("measured") for n, v in c.items() if v.get("measured") is not None}
    if meas:
        out += "; measured: " + ", ".join(f"{n} {meas[n] * 1e3:.3g} ms"
                                          for n in CANDIDATES if n in meas)
    w = choice["winner"]
    return out + f"; {'the split' if w == 'split' else w + ' alone'} wins: {choice['reason']}"


# ------------------------------------------------------------------ the trial


def trial(work, pair, plans: dict, options=None, repeats: int = 2,
          params: dict | None = None) -> dict:
    """One measured run of each candidate: its engine built, the app's warm-up, then the
    least of ``repeats`` runs with the run's ``params`` (None: the app's defaults; the
    answers dropped).

    Parameters
    ----------
    plans : dict
        ``{name: Plan}``.

    Returns
    -------
    dict
        ``{name: seconds}`` (a candidate whose run raised: left out).
    """
    from ..errors import FineParError
    params = work.app.check_params(work.graph, dict(params or {}))
    out = {}
    for name, plan in plans.items():
        try:
            eng = work.engine(pair, plan, options)
            work.app.warmup(eng, work.graph, **params)
            pair.settle()
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                work.app.run(eng, work.graph, **params)
                eng.drain()
                best = min(best, time.perf_counter() - t0)
            out[name] = best
            del eng
        except (FineParError, MemoryError):  # a candidate that cannot run is not chosen
            continue
    return out


def measured(choice: dict, seconds: dict) -> dict:
    """``choice`` decided by the measured runs ``seconds`` of its candidates
    (:func:`trial`), the predictions kept."""
    for name, s in seconds.items():
        if name in choice["candidates"]:
            choice["candidates"][name]["measured"] = float(s)
    out = _winner({n: c for n, c in choice["candidates"].items() if "measured" in c},
                  "measured", key="measured")
    out["candidates"] = choice["candidates"]
    out["predicted_winner"] = choice["winner"]
    return out


# ------------------------------------------------------------------ a run's choice


def inputs_of(work, pair, options=None) -> Inputs:
    """:class:`Inputs` for ``work`` on ``pair``: the measured host costs, the app's row
    operations (its default parameters), and for a frontier app its level profile and,
    where it walks, the walk's measured seconds an edge."""
    from ..engine.frontier import FrontierApp
    from ..engine.walk import WALK_EDGE_SECONDS, measured_rates
    app, m = work.app, work.matrix
    try:
        steps = float(app.row_steps(work.graph, {}))
    except (KeyError, TypeError, ValueError):  # an app whose estimate needs parameters
        steps = 1.0
    inp = Inputs(costs=host_costs(pair), steps=steps, nnz=int(m.nnz), n=int(m.n),
                 bytes_per_nnz=8 if app.weighted else 4)
    if isinstance(app, FrontierApp):
        inp.levels = level_profile(work.graph)
        walk = getattr(options, "walk", "auto") if options is not None else "auto"
        if getattr(app, "walk_sources", None) and walk != "none":
            rates = measured_rates(pair)
            inp.walk_edge_seconds = float(max(rates.values(), default=WALK_EDGE_SECONDS))
            inp.vector_bytes = 2 * 4 * work.graph.n
    return inp


def whole_run(work, pair, tuning: dict, plan_of, options=None,
              params: dict | None = None) -> dict:
    """The whole-run choice for ``work`` on ``pair`` after the tuner's ``tuning``: every
    candidate weighed (:func:`weigh`), and for a frontier app on an input of at most
    :data:`TRIAL_NNZ` entries each candidate's run measured (:func:`trial`) and the
    measured times deciding. ``plan_of(name, grouping)`` builds a candidate's plan.

    Returns
    -------
    dict
        :func:`weigh`'s record, with ``text`` (the report's line), ``levels`` (the
        profile's levels and how it was found), ``host_costs`` and ``seconds`` (this
        choice's own time, measured runs included).
    """
    t0 = time.perf_counter()
    inp = inputs_of(work, pair, options)
    choice = weigh(tuning, inp)
    if inp.levels is not None and inp.nnz <= TRIAL_NNZ and len(choice["candidates"]) > 1:
        plans = {n: plan_of(n, c["grouping"]) for n, c in choice["candidates"].items()}
        seconds = trial(work, pair, plans, options, params=params)
        if seconds:
            choice = measured(choice, seconds)
    if inp.levels is not None:
        choice["levels"] = {"levels": inp.levels.levels, "how": inp.levels.how,
                            "seconds": inp.levels.seconds}
    choice["host_costs"] = inp.costs.to_dict()
    choice["seconds"] = time.perf_counter() - t0
    choice["text"] = text(choice)
    return choice


def remeasured(choice: dict, measured_step: float, scale: dict | None, steps: float,
               predicted_step: float) -> dict:
    """``choice`` weighed again after one measured step of the split (FinePar's measured
    correction, :func:`finepar.split.choose.correction`): the split's steps at the
    measured ``measured_step`` seconds instead of ``predicted_step``, each device alone's
    steps scaled by its measured over predicted ratio (``scale``, None: as predicted).
    The predictions before are kept as ``before``."""
    cands = {}
    for name, c in choice["candidates"].items():
        parts = dict(c["parts"])
        if name == "split":
            ratio = measured_step / predicted_step if predicted_step > 0 else 1.0
        else:
            ratio = (scale or {}).get(name, 1.0)
        parts["steps"] *= ratio
        cands[name] = dict(c, parts=parts, seconds=float(sum(parts.values())))
    out = _winner(cands, "corrected")
    out["before"] = {n: c["seconds"] for n, c in choice["candidates"].items()}
    for k in ("levels", "host_costs", "seconds"):
        if k in choice:
            out[k] = choice[k]
    out["text"] = text(out)
    return out
