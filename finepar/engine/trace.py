"""What a frontier loop did, level by level (:class:`FrontierTrace`), and its summary lines:
the push role, the launches, the levels by device and the walk's hand-overs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class FrontierTrace:
    """What a frontier loop did, iteration by iteration.

    Attributes
    ----------
    steps : list of dict
        ``iteration``, ``direction`` ('push' or 'pull'), ``where`` (the role
        that ran it, or 'both'), ``frontier`` (vertices), ``frontier_edges``,
        ``found`` (vertices the step added to the next frontier), ``found_edges``,
        ``launch`` (index into ``launches``), ``seconds`` (its share of the launch's
        wall time, the direction change included). Built on first use from the levels
        :meth:`add` kept (:meth:`step_view` defers even that).
    launches : list of dict
        ``mode`` ('pull', 'chain', 'local', 'batch' or 'step'), ``levels`` run, ``enqueued`` and
        ``stop`` (:class:`PushRun`): one entry per host round trip of the loop.
    """

    launches: list = field(default_factory=list)
    #: Hand-overs between the CPU's walk and the push side (:mod:`finepar.engine.walk`):
    #: ``to_walk``, ``from_walk`` and their ``seconds``; empty without a walk.
    handovers: dict = field(default_factory=dict)
    #: Steps by ``direction on where``, kept as launches are added (:meth:`counts`).
    _counts: dict = field(default_factory=dict, repr=False)
    #: Sums over the steps kept as launches are added (:meth:`totals`).
    _totals: dict = field(default_factory=lambda: {"found": 0, "found_edges": 0,
                                                   "frontier_edges": 0, "depth": 0},
                          repr=False)
    #: What :meth:`add` was given, a launch each, until :attr:`steps` builds its dicts.
    _blocks: list = field(default_factory=list, repr=False)
    _steps: list = field(default_factory=list, repr=False)
    n_steps: int = 0

    @property
    def steps(self) -> list:
        """The steps as dicts (see the class), built from the levels kept so far."""
        for block in self._blocks:
            self._steps.extend([_step(block, i) for i in range(len(block[-1]))])
        self._blocks.clear()
        return self._steps

    def last(self) -> dict | None:
        """The last step as :attr:`steps` gives it (None before any), its dict alone built."""
        for block in reversed(self._blocks):
            if block[-1]:
                return _step(block, len(block[-1]) - 1)
        return self._steps[-1] if self._steps else None

    def step_view(self) -> "Steps":
        """:attr:`steps` as a sequence that builds them when first read: a walk of a
        thousand levels whose per-level record nobody reads costs no dicts (0.45 ms of
        luxembourg's BFS on the 2-core box)."""
        return Steps(self)

    def by_device(self) -> dict:
        """Levels by the device that ran them: ``cpu``, ``gpu``, or ``both`` (a pull over
        the plan); the CPU's walk counts as the CPU."""
        out: dict[str, int] = {}
        for k, n in self._counts.items():
            dev = k.split(" on ", 1)[1].split(" ")[0]
            out[dev] = out.get(dev, 0) + n
        return out

    def counts(self) -> dict:
        """Steps by ``direction on where``, e.g. ``{'pull on both': 3, 'push on gpu': 4}``."""
        return dict(self._counts)

    def totals(self) -> dict:
        """Over every step: vertices ``found``, their out-edges ``found_edges``, the
        frontiers' ``frontier_edges``, and ``depth`` (the steps that found something)."""
        return dict(self._totals)

    def add(self, mode: str, levels: list, enqueued: int, seconds: float, stop: str = "",
            first: int = 0, direction: str = "push", where: str = "both") -> None:
        """Record one launch (or batch) and its levels: ``levels`` as tuples of Python ints
        ``(frontier, frontier_edges, found, found_edges)``, the first iteration ``first``,
        each run ``direction`` on ``where``; the levels are kept as given, their dicts
        built when :attr:`steps` is read."""
        li = len(self.launches)
        self.launches.append({"mode": mode, "levels": len(levels), "enqueued": int(enqueued),
                              "stop": stop})
        self._blocks.append((first, direction, where, li, seconds / max(len(levels), 1),
                             levels))
        self.n_steps += len(levels)
        if levels:
            key = f"{direction} on {where}"
            self._counts[key] = self._counts.get(key, 0) + len(levels)
            _, edges, found, found_edges = zip(*levels)
            t = self._totals
            t["found"] += sum(found)
            t["found_edges"] += sum(found_edges)
            t["frontier_edges"] += sum(edges)
            t["depth"] += len(found) - found.count(0)

    def per_launch(self) -> dict:
        """Levels per launch by mode, and levels per host round trip of the loop."""
        out = {"round_trips": len(self.launches),
               "levels_per_round_trip": self.n_steps / max(len(self.launches), 1)}
        for mode in ("local", "batch", "chain", "walk"):
            ls = [x["levels"] for x in self.launches if x["mode"] == mode]
            if ls:
                out[f"{mode}_launches"] = len(ls)
                out[f"levels_per_{mode}_launch"] = sum(ls) / len(ls)
        return out


def _step(block: tuple, i: int) -> dict:
    """Level ``i`` of a block :meth:`FrontierTrace.add` kept, as a step's dict."""
    first, direction, where, li, each, levels = block
    s, e, f, fe = levels[i]
    return {"iteration": first + i, "direction": direction, "where": where, "frontier": s,
            "frontier_edges": e, "found": f, "found_edges": fe, "launch": li, "seconds": each}


class Steps(Sequence):
    """A :class:`FrontierTrace`'s steps, built as dicts when first read (an app's
    ``extra['trace']``); ``len`` needs no dicts. Reports turn it into a list
    (:func:`finepar.files.jsonable`)."""

    def __init__(self, trace: FrontierTrace):
        self._trace = trace

    def __len__(self) -> int:
        return self._trace.n_steps

    def __getitem__(self, i):
        return self._trace.steps[i]

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return f"Steps({self._trace.n_steps} steps)"

    def __deepcopy__(self, memo):
        return list(self._trace.steps)  # a report's copy is a plain list


def push_line(role: str | None, costs: dict) -> str:
    """The push role and what each candidate measured, as one summary line."""
    if role is None:
        return "none (no device holds the whole CSR): every level pulls"
    if not costs:
        return f"{role} (the only candidate)"
    return f"{role} (" + ", ".join(f"{r} {1e6 * v:,.0f} us" for r, v in costs.items()) + \
        " a level's round trip and a switch's moves)"


def launch_line(per: dict) -> str:
    """:meth:`FrontierTrace.per_launch` as one summary line."""
    parts = [f"{per['round_trips']:,} host round trips, "
             f"{per['levels_per_round_trip']:.1f} levels each"]
    for mode, what in (("local", "work-group-local launches"), ("batch", "batches"),
                       ("chain", "chains of pull steps"), ("walk", "walks on one CPU work-item")):
        if f"{mode}_launches" in per:
            parts.append(f"{per[f'{mode}_launches']:,} {what} of "
                         f"{per[f'levels_per_{mode}_launch']:.1f} levels")
    return "; ".join(parts)


def by_device_line(counts: dict, handovers: dict | None) -> str:
    """Levels by device (:meth:`FrontierTrace.by_device`) and the walk's hand-overs, as one
    summary line."""
    line = ", ".join(f"{k} {v:,} levels" for k, v in counts.items()) or "no levels"
    if handovers:
        line += (f"; {handovers['from_walk']} hand-overs from the CPU's walk, "
                 f"{handovers['to_walk']} back to it ({1e3 * handovers['seconds']:.2f} ms)")
    return line
