"""``finepar run`` over several ranks: ``mpiexec -n P python -m finepar run APP GRAPH ...``
(DESIGN.md §3, "mpi").

The run path takes this branch when the MPI launcher started several processes, or
when ``--distributed`` asks for it on one. Every rank parses the same command line and
runs its part; rank 0 alone prints the report and writes the outputs. An error any rank
meets before the run (a bad file, option or device) stops every rank with one line from
rank 0; an error during the run ends every rank at once (``MPI_Abort``).
"""

from __future__ import annotations

import sys
import traceback

from ..errors import FineParError
from ..mpi.comm import RankFailure, launched_size
from ..mpi.partition import PARTITIONS
from ..mpi.peers import MODES


def add_options(parser) -> None:
    """The distributed run's options of ``finepar run APP``."""
    g = parser.add_argument_group(
        "distributed runs (mpiexec -n P python -m finepar run APP GRAPH ...)")
    g.add_argument("--distributed", action="store_true",
                   help="take the distributed path even on one rank (it is taken whenever "
                        "mpiexec starts several)")
    g.add_argument("--partition", choices=PARTITIONS, default="nnz",
                   help="rows over the ranks: contiguous ranges of about equal entries (nnz, "
                        "the default: each rank reads only its rows), or METIS's parts "
                        "(metis, through pymetis: fewer cut edges, smaller halos; rank 0 "
                        "reads the whole graph)")
    g.add_argument("--check", action="store_true",
                   help="check the answer by range, each rank against its own rows (bfs: "
                        "Graph500's rules; pagerank: its residual under one float64 step, "
                        "whose 1/(1-d) multiple bounds the L1 error): for a graph no host "
                        "holds whole; exit status 1 where the answer fails")
    g.add_argument("--exchange", choices=MODES, default="auto",
                   help="how halos move between ranks: gpu = each rank's GPU copies from the "
                        "others' memory (NVIDIA's OpenCL with cl_khr_external_memory_opaque_fd "
                        "and CUDA's driver, every rank on one host; emulated on PoCL), BFS's "
                        "level merges too; host = through page-locked host memory and MPI; "
                        "auto (default): gpu where every rank can, else host")
    g.add_argument("--no-shared-window", action="store_true",
                   help="move halos and gathers with MPI's own collectives even when every "
                        "rank runs on one host (by default large ones go through an MPI "
                        "shared-memory window, copied by the host's threads)")


def wanted(args) -> bool:
    """Whether ``finepar run`` takes the distributed path."""
    return bool(getattr(args, "distributed", False)) or launched_size() > 1


def cmd_run(args) -> int:
    """``finepar run`` on every rank (see the module's description)."""
    from ..mpi.comm import Communicator
    comm = Communicator(shared_window=not args.no_shared_window, exchange=args.exchange)
    try:
        status = _run(args, comm)
        comm.close()
        return status
    except RankFailure as exc:
        comm.close()  # every rank raised it at the same point
        if comm.rank == 0:
            raise  # printed once, by the command line's own handler
        return 1 if exc.build else 2
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the others would wait
        what = str(exc) if isinstance(exc, FineParError) else traceback.format_exc()
        print(f"finepar: error: rank {comm.rank}: {what}", file=sys.stderr, flush=True)
        comm.abort(2 if isinstance(exc, FineParError) else 1)
        return 1


def _run(args, comm) -> int:
    from .. import apps
    from ..api import make_pair
    from ..inputs import memory_check
    from ..files import check_output
    from .options import check_outputs, cli_params, engine_options, throttle_options
    from .outputs import finish_run
    from .config import load_config
    from ..mpi.comm import checked
    from ..mpi.runner import run
    from ..mpi.setup import local_gpu
    app = checked(comm, apps.get, args.app)
    config = checked(comm, load_config, args.config)

    def outputs():
        if comm.rank == 0:
            check_outputs(args, output=(".npy",), json_=(".json",))
            if args.output:
                check_output(str(args.output)[:-4] + ".ids.npy", "--output", force=args.force)
    checked(comm, outputs)
    pair = checked(comm, lambda: make_pair(cpu=args.cpu, gpu=local_gpu(comm.local_rank, args.gpu,
                                                                       config),
                                           memory=args.memory or "auto", config=config))
    options = checked(comm, engine_options, app, 0, args, config)
    throttle = checked(comm, throttle_options, args, config)
    params = cli_params(app, args)  # vertex ids as given: mapped to rows in the run
    result, report = run(app.name, args.graph, comm=comm, pair=pair, partition=args.partition,
                         threshold=args.threshold, devices=args.devices, grouping=args.grouping,
                         warmup=not args.no_warmup, options=options, model=args.model,
                         step=(config.get("tuner") or {}).get("step", 64),
                         calibrate=False if args.no_calibrate else None, throttle=throttle,
                         drop_zeros=args.drop_zeros,
                         check_size=memory_check(app.name, pair, options,
                                                allow_isolated=args.allow_isolated),
                         input_ids=True, check=args.check, progress=not args.quiet,
                         **params)
    status = finish_run(args, result, report, report.ids) if comm.rank == 0 else 0
    chk = report.result.get("check")
    if chk and not chk["passed"]:
        if comm.rank == 0:
            print(f"finepar: error: the answer failed its check: {chk['detail']}",
                  file=sys.stderr)
        return 1
    return status
