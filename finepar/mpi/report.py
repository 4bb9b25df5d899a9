"""The report of a distributed run: every rank's rows, halo, exchange and compute, and
the whole run's time (DESIGN.md §3, "mpi").

Per rank: the rows and entries of the app's matrix it owns, its plan (its own CPU and
GPU shares), the halo entries it sends and receives per exchange and the bytes per
iteration, the bytes of its frontier merges (BFS's bottom-up bits, top-down claims and
the claims' parents routed to their owners) and vector gathers per iteration, the
bytes it sent and received in all, whether its devices' columns were renumbered hottest
first, the rows and entries that read no other rank's column, the time
of its exchanges between ranks (halos: pack, pinned copies, MPI, unpack; merges;
gathers), its time in MPI, its devices' compute time (the longer device's kernels per
step, summed) and its run's wall time. The whole run's time is the slowest rank's.
"""

from __future__ import annotations

import platform as _platform
from dataclasses import dataclass

from ..report import Stamped, format_table


def rank_record(comm, eng, rs: dict, rows, result, times: dict, source: str, tuning) -> dict:
    """This rank's part of the report (small, picklable); ``rs`` is the engine's
    :meth:`~finepar.mpi.engine.DistEngine.rank_summary` of the timed run."""
    summ = eng.summary()
    halo = rs["halo"]
    iters = max(int(result.iterations), 1)
    plan = eng.plan
    st = plan.stats
    compute = sum(max(r.span.values(), default=0.0) for r in eng.records)
    exchange = halo["seconds"] + rs["merge_seconds"] + rs["gather_seconds"]
    other = rs["merge_bytes"] + rs["claim_bytes"] + rs["routed_bytes"] + rs["gather_bytes"]
    return {
        "rank": comm.rank, "local_rank": comm.local_rank, "host": _platform.node(),
        "devices": eng.pair.describe(), "emulated": eng.pair.emulated, "memory": eng.pair.mode,
        "gpu": eng.pair.selection.gpu.name, "gpu_address": eng.pair.selection.gpu.address,
        "cpu": eng.pair.selection.cpu.name,
        "rows": int(eng.partition.count(comm.rank)), "nnz": int(eng.matrix.nnz),
        "input_rows": int(rows.hi - rows.lo), "input_nnz": int(rows.indices.size),
        "plan": {"label": plan.label, "threshold": plan.threshold, "source": source,
                 "grouping": plan.grouping, "cpu_rows": st.get("cpu_rows", 0),
                 "cpu_nnz": st.get("cpu_nnz", 0), "gpu_rows": st.get("gpu_rows", 0),
                 "gpu_nnz": st.get("gpu_nnz", 0)},
        "halo": {"sent": halo["sent"], "received": halo["received"],
                 "exchanges": halo["exchanges"], "pipelined": halo["pipelined"],
                 "order": halo["order"],
                 "pack_kernel_seconds": halo["pack_kernel_seconds"],
                 "unpack_kernel_seconds": halo["unpack_kernel_seconds"],
                 "bytes_sent_per_iteration": halo["bytes_sent"] / iters,
                 "bytes_received_per_iteration": halo["bytes_received"] / iters,
                 "seconds": halo["seconds"], "mpi_seconds": halo["mpi_seconds"],
                 "renumbered": halo["renumbered"], "split": halo["split"],
                 "path": halo["path"], "path_reason": halo["path_reason"]},
        "columns": _columns(summ["columns"]),
        "frontier": {"merges": rs["merges"], "as_list": rs["as_list"],
                     "as_pairs": rs["as_pairs"], "as_words": rs["as_words"],
                     "claims": rs["claims"], "claim_lists": rs["claim_lists"],
                     "routed": rs["routed"], "path": rs.get("merge_path", "host"),
                     "bytes_sent": rs["merge_bytes"] + rs["claim_bytes"] + rs["routed_bytes"],
                     "bytes_received": rs["merge_bytes_received"],
                     "seconds": rs["merge_seconds"]},
        "gathers": {"count": rs["gathers"], "seconds": rs["gather_seconds"],
                    "bytes_sent": rs["gather_bytes"]},
        "other_bytes_sent_per_iteration": other / iters,
        "bytes_sent": halo["bytes_sent"] + other,
        "bytes_received": halo["bytes_received"] + rs["merge_bytes_received"],
        "window_moves": rs["window_moves"],
        "timings": {**times, "compute": compute, "kernel": summ["kernel_s"],
                    "pair_exchange": summ["exchange_s"], "exchange": exchange,
                    "mpi": rs["mpi_seconds"], "steps": summ["steps"],
                    "exchange_fraction": exchange / times["run"] if times["run"] > 0 else 0.0},
        "tuning": tuning,
        # a frontier app's record of each level on this rank (BFS: apps/bfsranks.py)
        "levels": result.extra.get("rank_levels", []),
    }


def _columns(orders: dict | None) -> dict:
    """Per role of the rank, whether its share's columns were renumbered hottest first
    (:mod:`finepar.engine.columns`) and why; empty where the app reads no vector by
    column."""
    return {role: {"renumbered": bool(c["applied"]), "reason": c["reason"],
                   "hot_share": c["hot_share"], "seconds": c["seconds"]}
            for role, c in (orders or {}).items()}


def whole_record(app, rows, result, ranks: list, summary: list) -> dict:
    """The run's fields of :class:`DistReport` from every rank's record."""
    run = max(r["timings"]["run"] for r in ranks)
    iters = max(int(result.iterations), 1)
    rate = result.work_edges / run if run > 0 else 0.0
    throughput = {"teps" if app.rate_unit == "TEPS" else "nnz_per_s": rate,
                  "edges": int(result.work_edges)}
    return {
        "graph": {"name": rows.name, "source": rows.source, "n": rows.n, "nnz": rows.nnz,
                  "matrix_nnz": int(sum(r["nnz"] for r in ranks)), "loaded": rows.how,
                  "notes": list(rows.notes)},
        "partition": rows.partition.describe(),
        "timings": {"run": run, "per_iteration": run / iters,
                    "load": max(r["timings"]["load"] for r in ranks),
                    "exchange": max(r["timings"]["exchange"] for r in ranks),
                    "exchange_fraction": max(r["timings"]["exchange_fraction"] for r in ranks)},
        "throughput": throughput,
        "result": {"iterations": int(result.iterations), "converged": bool(result.converged),
                   "summary": summary},
    }


@dataclass
class DistReport(Stamped):
    """Everything about one distributed run (what ``mpiexec ... finepar run`` prints and
    its ``--json`` writes).

    Attributes
    ----------
    app : str
    graph : dict
        ``name``, ``source``, ``n``, ``nnz``, ``matrix_nnz`` (the app's matrix over all
        ranks), ``loaded`` (how the ranks read it), loader ``notes``.
    partition : dict
        ``method``, ``ranks``, ``bounds`` (rank ``r`` owns vertices ``bounds[r]`` to
        ``bounds[r+1]``).
    timings : dict
        Seconds: ``run`` (the slowest rank's), ``per_iteration``, ``load``,
        ``exchange`` (the largest rank's) and ``exchange_fraction`` of the run.
    throughput : dict
    result : dict
        ``iterations``, ``converged``, the app's ``summary`` lines; ``check`` where the
        answer was checked by range (:func:`finepar.mpi.verify.check_answer`).
    ranks : list of dict
        One per rank (:func:`rank_record`): ``rows``, ``nnz``, ``plan``, ``halo``
        (entries per exchange, bytes per iteration, seconds, ``pipelined``: exchanges
        packed behind their step's kernels, the packing and unpacking kernels' device
        seconds, the received entries' ``order``), ``frontier`` (bottom-up
        ``merges`` by form, top-down ``claims`` and those merged as lists, parents
        ``routed``, bytes sent and received), ``bytes_sent`` and ``bytes_received`` (every
        exchange between ranks), ``levels`` (BFS: each level's direction, frontier,
        part, kernel, exchange and MPI seconds, bytes, host synchronisations), ``timings``
        (``load``, ``matrix``, ``partition``, ``setup``, ``warmup``, ``run``,
        ``collect``, ``compute``, ``exchange``, ``mpi``, ...), ``devices``; ``columns``
        (per role: whether its share's columns were renumbered hottest first, and why);
        the halo's ``path`` (``gpu``, ``emulated`` or ``host``:
        :func:`finepar.mpi.peers.choose`) and ``path_reason``, its ``renumbered`` (per
        role: whether it packed or unpacked entries at renumbered columns) and ``split`` (the rows and entries that read no other rank's
        column: :func:`finepar.mpi.halo.row_split`).
    """

    app: str
    graph: dict
    partition: dict
    timings: dict
    throughput: dict
    result: dict
    ranks: list

    def text(self, title: str | None = None) -> str:
        """The summary rank 0 prints, headed ``title`` (default ``finepar.mpi.run APP``,
        the API's call; the command line passes ``finepar run APP``)."""
        g, t, p = self.graph, self.timings, self.partition
        head = title or f"finepar.mpi.run {self.app}"
        lines = [f"{head} on {g['name']}: {g['n']:,} vertices, {g['nnz']:,} nnz, "
                 f"{p['ranks']} ranks ({p['method']} partition)",
                 f"  loading    {g['loaded']}"]
        if any(r["emulated"] for r in self.ranks):
            lines.append("  devices    EMULATED pairs on some ranks: timings say nothing about "
                         "a real GPU")
        head = ["rank", "devices", "rows", "nnz", "plan", "halo out/it", "halo in/it",
                "other out/it", "sent", "exchange s", "MPI s", "compute s", "run s"]
        rows = []
        for r in self.ranks:
            h = r["halo"]
            rows.append([r["rank"], _device(r), f"{r['rows']:,}", f"{r['nnz']:,}",
                         r["plan"]["label"], _bytes(h["bytes_sent_per_iteration"]),
                         _bytes(h["bytes_received_per_iteration"]),
                         _bytes(r["other_bytes_sent_per_iteration"]), _bytes(r["bytes_sent"]),
                         f"{r['timings']['exchange']:.4f}", f"{r['timings']['mpi']:.4f}",
                         f"{r['timings']['compute']:.4f}", f"{r['timings']['run']:.4f}"])
        lines += ["  " + ln for ln in format_table(head, rows, align="rlrrlrrrrrrrr").split("\n")]
        lines.append(f"  time       run {t['run']:.4f} s, the slowest rank "
                     f"({t['per_iteration'] * 1e3:.3f} ms/iter); exchange between ranks up to "
                     f"{100 * t['exchange_fraction']:.1f}% of a rank's run; load {t['load']:.3f} s")
        cols = [f"rank {r['rank']}: " + ", ".join(
                    f"{role} {'renumbered' if c['renumbered'] else 'kept'}"
                    for role, c in r["columns"].items())
                for r in self.ranks if r.get("columns")]
        if cols:
            lines.append("  columns    " + "; ".join(cols))
        moves = max((r.get("window_moves", 0) for r in self.ranks), default=0)
        lines.append("  transport  " + (f"the ranks' shared-memory window ({moves} large "
                                        f"collectives of the run; the rest through MPI)"
                                        if moves else "MPI's collectives"))
        halo = self.ranks[0]["halo"]
        if halo.get("path"):
            piped = (f"; {halo['pipelined']} of {halo['exchanges']} packed behind their "
                     f"step's kernels" if halo.get("pipelined") else "")
            lines.append(f"  halo       {_PATHS[halo['path']]} ({halo['path_reason']}{piped})")
        thr = self.throughput
        rate = (f"{thr['teps'] / 1e9:.4f} GTEPS" if "teps" in thr
                else f"{thr['nnz_per_s'] / 1e9:.4f} Gnnz/s")
        lines.append(f"  rate       {rate}")
        for label, value in self.result.get("summary", []):
            lines.append(f"  {label:<10} {value}")
        chk = self.result.get("check")
        if chk:
            lines.append(f"  check      {'passed' if chk['passed'] else 'FAILED'}: "
                         f"{chk['detail']} ({chk['by']}, {chk['seconds']:.1f} s)")
        return "\n".join(lines)


#: How the report names each path of the halo's exchanges (:func:`finepar.mpi.peers.choose`).
_PATHS = {"gpu": "GPU to GPU: each rank's GPU copies from the others' memory",
          "emulated": "GPU to GPU's layout, emulated through host memory",
          "host": "through page-locked host memory and MPI"}


def _device(r: dict) -> str:
    """The rank's GPU (or that it is emulated) and memory mode, for the table."""
    gpu = "emulated" if r["emulated"] else r["gpu"][:28]
    return f"{gpu}, {r['memory']}"


def _bytes(b: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= size:
            return f"{b / size:.1f} {unit}"
    return f"{b:.0f} B"
