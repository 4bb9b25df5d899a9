"""A distributed run: an app over several ranks, each a FinePar pair (DESIGN.md §3, "mpi").

Under ``mpiexec -n P``, every rank calls :func:`run` with the same arguments::

    from finepar import dist
    scores, report = dist.run("pagerank", "graph500:20")   # every rank gets the answer

Each rank reads its rows (:mod:`finepar.mpi.load`), builds its rows of the app's matrix
(:mod:`finepar.mpi.matrix`), chooses its own split (:mod:`finepar.mpi.setup`) and runs
the app's own code on a :class:`~finepar.mpi.engine.DistEngine`. The answer is whole
on every rank, in the input's vertex ids.
"""

from __future__ import annotations

import gc
import time
from dataclasses import replace
from typing import Any

import numpy as np

from .. import apps
from ..errors import FineParError, UsageError
from .comm import Communicator, checked
from .engine import DistEngine
from .load import load_rows
from .matrix import app_matrix, rank_graph
from .partition import check_method
from .rows import RankRows
from .report import DistReport, rank_record, whole_record
from .setup import local_gpu, rank_plan


def _weights(app):
    """METIS's vertex weights for ``app``: the entries of each vertex's rows of its matrix."""
    def weights(graph) -> np.ndarray:
        out = graph.out_degrees().astype(np.int64)
        inn = np.bincount(graph.indices, minlength=graph.n)
        return {"graph": out, "transpose": inn}.get(app.matrix_form, out + inn)
    return weights


def run(app: str, graph: Any, *, comm=None, pair=None, cpu: str | None = None,
        gpu: str | None = None, memory: str = "auto", config: dict | None = None,
        partition: str = "nnz", threshold: int | None = None, devices: str = "auto",
        grouping: str = "auto", warmup: bool = True, options=None, model=None, step: int = 64,
        calibrate=None, throttle=None, drop_zeros: bool = False, check_size=None,
        input_ids: bool = False, check: bool = False, progress: bool = False,
        **params: Any):
    """Run ``app`` on ``graph`` over the ranks of ``comm`` (collective).

    Parameters
    ----------
    app : str
        An app's name (:func:`finepar.apps.names`).
    graph : str or Graph
        A path or ``graph500:SCALE[:SEED]``, read rank by rank; or a Graph every rank
        holds (each keeps its rows).
    comm : Communicator or mpi4py communicator, optional
        Default: every process ``mpiexec`` started.
    pair : DevicePair, optional
        This rank's devices; default: the CPU and this rank's GPU (:func:`local_gpu`),
        in ``memory`` mode.
    partition : {'nnz', 'metis'}
        How rows are spread over the ranks (:mod:`finepar.mpi.partition`).
    threshold, devices, grouping, options, model, step, calibrate, throttle
        Each rank's split, as :func:`finepar.api.run` takes them (``throttle`` default:
        ``ThrottleOptions()``, the ``auto`` schedule).
    warmup : bool
    drop_zeros : bool
    check_size : callable, optional
        ``check_size(n, nnz)`` for each rank's rows, before they are built.
    input_ids : bool
        Vertex parameters are the input's own ids (as the command line takes them),
        not rows.
    check : bool
        Check the answer by range (:func:`finepar.mpi.verify.check_answer`, BFS and
        PageRank): the report's ``result['check']``.
    progress : bool
        Rank 0 shows a generated graph's progress on stderr.
    **params
        The app's parameters (vertex parameters are rows unless ``input_ids``).

    Returns
    -------
    (AppResult, DistReport)
        The answer (whole, on every rank) and the report of every rank.

    Raises
    ------
    RankFailure
        On every rank, when any rank met a bad input or option (one line naming it).
    """
    comm = comm if isinstance(comm, Communicator) else Communicator(comm)
    the_app = checked(comm, apps.get, app)
    checked(comm, check_method, partition)
    if check:
        checked(comm, _checkable, the_app.name)
    rows = load_rows(graph, comm, partition=partition, weights=_weights(the_app),
                     drop_zeros=drop_zeros, check_size=check_size, progress=progress)
    result, report = run_rows(app, rows, comm=comm, pair=pair, cpu=cpu, gpu=gpu,
                              memory=memory, config=config, threshold=threshold,
                              devices=devices, grouping=grouping, warmup=warmup,
                              options=options, model=model, step=step, calibrate=calibrate,
                              throttle=throttle, input_ids=input_ids, **params)
    if check:
        from .verify import check_answer
        report.result["check"] = check_answer(comm, the_app.name, rows, result)
    return result, report


def _checkable(app: str) -> None:
    """A UsageError for an app whose answer is not checked by range."""
    from .verify import CHECKED
    if app not in CHECKED:
        raise UsageError(f"--check: {app}'s answer is not checked by range (checked: "
                         f"{', '.join(CHECKED)})")


def run_rows(app: str, rows: RankRows, *, comm=None, pair=None, cpu: str | None = None,
             gpu: str | None = None, memory: str = "auto", config: dict | None = None,
             threshold: int | None = None, devices: str = "auto", grouping: str = "auto",
             warmup: bool = True, runs: int = 1, options=None, model=None, step: int = 64,
             calibrate=None, throttle=None, input_ids: bool = False, **params: Any):
    """Run ``app`` on rows the ranks already hold (collective): :func:`run` after its
    load, so that several apps share one load (a generated graph, most of all).

    Parameters
    ----------
    rows : RankRows
        This rank's rows (:func:`finepar.mpi.load.load_rows`); they are not changed.
    runs : int
        Timed runs after the warm-up, on one engine (the report's ``timings['runs']``,
        seconds each; ``timings['run']`` and the records are the last run's).
    app, comm, pair, cpu, gpu, memory, config, threshold, devices, grouping, warmup, \
options, model, step, calibrate, throttle, input_ids, **params
        As :func:`run` takes them.

    Returns
    -------
    (AppResult, DistReport)

    Raises
    ------
    RankFailure
        On every rank, when any rank met a bad option.
    """
    from ..throttle.plan import ThrottleOptions
    comm = comm if isinstance(comm, Communicator) else Communicator(comm)
    the_app = checked(comm, apps.get, app)
    throttle = checked(comm, (throttle or ThrottleOptions()).check)
    if options is not None:  # every rank keeps whole vectors
        options = replace(options, reserve_bytes=max(options.reserve_bytes,
                                                     the_app.state_bytes(rows.n)))
    t0 = time.perf_counter()
    rgraph = rank_graph(rows)
    matrix, part = checked(comm, app_matrix, rows, the_app.matrix_form, comm, rgraph)
    matrix_s = time.perf_counter() - t0
    params = checked(comm, _params, the_app, rgraph, rows.perm, params, input_ids)
    if pair is None:
        from ..api import make_pair
        pair = checked(comm, lambda: make_pair(  # a pair of its own (open_pair's keep)
            cpu=cpu, gpu=local_gpu(comm.local_rank, gpu, config), memory=memory, config=config,
            keep=False))
    owned = part.owned(comm.rank)
    t0 = time.perf_counter()
    plan, source, tuning = checked(comm, rank_plan, the_app, matrix, owned, pair,
                                   threshold=threshold, devices=devices, grouping=grouping,
                                   model=model, step=step, calibrate=calibrate,
                                   options=options, throttle=throttle,
                                   steps=the_app.row_steps(rgraph, params))
    plan_s = time.perf_counter() - t0
    eng = checked(comm, DistEngine, pair, matrix, plan, the_app.ops, comm=comm, partition=part,
                  options=options, column_vectors=the_app.column_vectors)
    done = False
    try:
        out = _execute(comm, the_app, eng, rgraph, rows, params, warmup, runs,
                       {"load": rows.seconds, "matrix": matrix_s, "partition": plan_s},
                       source, tuning)
        done = True
        return out
    finally:
        # the engine sits in reference cycles: its device buffers go now, not at some
        # later collection (four H200s at scale 29 held BFS's 17 GB a GPU into PageRank's run);
        # after an error (maybe on this rank alone) nothing collective
        eng.close(collective=done)
        del eng
        gc.collect()


def _params(app, rgraph, perm, params: dict, input_ids: bool) -> dict:
    """The app's parameters checked against the whole graph in the input's vertex order
    (input ids mapped to rows, defaults such as BFS's root chosen there), then moved to
    the run's order."""
    view = rgraph
    if perm is not None:
        view = replace(rgraph, degrees=rgraph.degrees[perm],
                       ids=None if rgraph.ids is None else rgraph.ids[perm])
    params = dict(params)
    for p in app.params if input_ids else ():
        if p.kind == "vertex" and params.get(p.name) is not None:
            try:
                params[p.name] = view.vertex_index(params[p.name])
            except ValueError as exc:
                raise UsageError(f"{p.option} {params[p.name]}: {exc}") from None
    out = app.check_params(view, params)
    return out if perm is None else app.permute_params(out, perm)


def _execute(comm: Communicator, app, eng: DistEngine, rgraph, rows, params: dict,
             warmup: bool, runs: int, times: dict, source: str, tuning):
    """Prepare, warm up, run ``runs`` times (each timed: ``times['runs']``), collect the
    last; the answer and the report."""
    t0 = time.perf_counter()
    app.prepared(eng, rgraph)
    times["setup"] = eng.setup_seconds + time.perf_counter() - t0
    t0 = time.perf_counter()
    if warmup:
        app.warmup(eng, rgraph, **params)
    times["warmup"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    app.inputs(eng, rgraph, params)
    times["inputs"] = time.perf_counter() - t0
    times["runs"] = []
    for _ in range(max(1, runs)):  # the report keeps the last run's records
        comm.barrier()
        eng.reset_records()
        t0 = time.perf_counter()
        result = app.run(eng, rgraph, **params)
        eng.drain()
        times["runs"].append(time.perf_counter() - t0)
    times["run"] = times["runs"][-1]
    exchanges = eng.rank_summary()  # the run's, before the answer is gathered
    t0 = time.perf_counter()
    result = app.collect(eng, rgraph, result)
    times["collect"] = time.perf_counter() - t0
    if rows.perm is not None:
        result = app.unpermute(result, rows.perm)
    mine = rank_record(comm, eng, exchanges, rows, result, times, source, tuning)
    every = comm.allgather(mine)
    whole = whole_record(app, rows, result, every, _summary(app, result, rgraph, rows.perm))
    report = DistReport(app=app.name, **whole, ranks=every)
    report.ids = rows.ids if rows.perm is None or rows.ids is None else rows.ids[rows.perm]
    return result, report


def _summary(app, result, rgraph, perm) -> list:
    """The app's summary lines; where they need the whole graph (which no rank holds),
    the result's own numbers instead."""
    graph = rgraph
    if perm is not None and rgraph.ids is not None:  # the answer is in the input's ids
        graph = replace(rgraph, ids=rgraph.ids[perm])
    try:
        return app.summary(result, graph)
    except (FineParError, ValueError):
        extra = {k: v for k, v in result.extra.items()
                 if isinstance(v, (int, float, str)) and not isinstance(v, bool)}
        return [("iterations", f"{result.iterations}")] + [(k, f"{v}") for k, v in extra.items()]

