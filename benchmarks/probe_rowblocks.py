"""Where a mid-size SpMV product's time goes on the GPU: CSR-adaptive's launches one by one,
under several work-group geometries, beside cuSPARSE (issues 29 and 31: SpMV on cnr-2000
and Graph500 scale 18 at 0.87-0.89x cuSPARSE).

For each input and each ``--variants`` entry ``BLOCK_NNZ:WG:SPLIT[:SHUFFLES]`` (the entries
a stream work-group stages, its size, the row length past which a row is cut into segments,
in blocks: ``lower_adaptive``'s split, and how a team reduces: ``EngineOptions.shuffles``,
``auto`` by default, ``none`` for the tree in local memory), the GPU alone runs the row
blocks (``grouping adaptive``) on an engine of its own: ``--products`` products enqueued in
a row, then one wait (the device's span over them, a product), and one product at a time
with each launch's own time (the ``stream`` launch, its cut rows folded inside it; the
block size fixes the work-groups at every size: ``wg_stream`` and ``wg_stream_small``).
Beside them, cuSPARSE's
product through CuPy (CUDA events over the same number of products). Every ``y`` is
checked against scipy's in float64. JSON is written as it goes.

    python benchmarks/probe_rowblocks.py --graphs cnr-2000.mtx.gz,graph500:18 \\
        --json $OUT/rowblocks.json
"""

from __future__ import annotations

import time

import numpy as np

from common import input_list, load, log, main_of, today, write_json
from measure import stats

VARIANTS = "1024:256:8,1024:256:0,2048:256:8,2048:512:8,4096:512:8,4096:1024:4,512:128:16"


def parse_args(argv=None):
    import argparse
    from finepar.errors import UsageError
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", default="cnr-2000.mtx.gz,graph500:18,graph500:20",
                    help="inputs, a comma list (files in the data folder or graph500:SCALE)")
    ap.add_argument("--variants", default=VARIANTS,
                    help="BLOCK_NNZ:WG:SPLIT[:SHUFFLES] entries, a comma list (SPLIT in "
                         "blocks, 0: no row is cut; SHUFFLES auto, local or none)")
    ap.add_argument("--products", type=int, default=100, help="products a timed batch")
    ap.add_argument("--repeats", type=int, default=5, help="timed batches a variant")
    ap.add_argument("--no-cupy", action="store_true", help="leave cuSPARSE out")
    ap.add_argument("--ptx", action="store_true",
                    help="record the fences, atomics and shuffles of the GPU's compiled "
                         "stream program with cut rows (PTX on NVIDIA)")
    ap.add_argument("--json", default="probe_rowblocks.json")
    args = ap.parse_args(argv)
    try:
        args.variants = [variant_of(s) for s in args.variants.split(",")]
    except ValueError:
        raise UsageError(f"--variants: BLOCK_NNZ:WG:SPLIT[:SHUFFLES] entries, not "
                         f"{args.variants!r}")
    if args.products < 1 or args.repeats < 1:
        raise UsageError("--products and --repeats must be at least 1")
    return args


def variant_of(text: str) -> tuple:
    """``(block_nnz, wg, split, shuffles)`` of one ``--variants`` entry; ValueError if bad."""
    parts = text.split(":")
    if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3] not in ("auto", "local",
                                                                          "none")):
        raise ValueError(text)
    block, wg, split = (int(v) for v in parts[:3])
    if block < 2 or wg < 1 or split < 0:
        raise ValueError(text)
    return block, wg, split, parts[3] if len(parts) == 4 else "auto"


def variant_case(g, x: np.ndarray, expect: np.ndarray, bound: np.ndarray, variant: tuple,
                 args) -> dict:
    """One geometry's product on ``g``: batch span and each launch's time, its answer
    checked."""
    import finepar.engine.launches as launches
    from finepar.api import Workload, make_pair
    from finepar.engine import EngineOptions
    from finepar.engine.timing import event_seconds
    from finepar.partition import single_device
    block, wg, split, shuffles = variant
    pair = make_pair(config={"launch": {"gpu": {"block_nnz": block, "wg_stream": wg,
                                                "wg_stream_small": wg}}}, keep=False)
    saved = launches.ADAPTIVE_SPLIT_BLOCKS
    launches.ADAPTIVE_SPLIT_BLOCKS = split or (1 << 40) // max(block, 1)
    try:
        wl = Workload("spmv", g)
        plan = single_device(wl.matrix.row_lengths(), "gpu", grouping="adaptive")
        eng = wl.engine(pair, plan, EngineOptions(profile="launch", shuffles=shuffles))
    finally:
        launches.ADAPTIVE_SPLIT_BLOCKS = saved
    eng.write("x", x)
    for _ in range(3):
        eng.rowop(x="x", y="y")
    y = eng.read("y")
    bad = int(np.count_nonzero(np.abs(y - expect) > bound))
    spans, walls, per_launch = [], [], {}
    q = pair.side("gpu").queue
    for _ in range(args.repeats):
        q.finish()
        t0 = time.perf_counter()
        first = last = None
        for i in range(args.products):
            eng.rowop(x="x", y="y", wait=False)
            evs = eng.pending[-1][1]["gpu"]
            first = first or evs[0]
            last = evs[-1]
        last.wait()
        walls.append((time.perf_counter() - t0) / args.products)
        spans.append((last.profile.end - first.profile.start) * 1e-9 / args.products)
        eng.drain()
    for _ in range(args.repeats):
        eng.rowop(x="x", y="y")
        for j, ev in enumerate(eng.last_events["gpu"]):
            per_launch.setdefault(j, []).append(event_seconds([ev])[0])
    y = eng.read("y")  # after every batch: a fold that raced would show here
    bad += int(np.count_nonzero(np.abs(y - expect) > bound))
    return {"variant": {"block_nnz": block, "wg_stream": wg, "split_blocks": split,
                        "shuffles": shuffles},
            "wrong_rows": bad, "launches": len(per_launch), "lowering": eng.describe()["gpu"],
            "span_per_product": stats(spans), "wall_per_product": stats(walls),
            "launch_seconds": {str(j): stats(v) for j, v in per_launch.items()}}


def fence_lines(pair) -> list[str]:
    """The fence, atomic and shuffle lines of the GPU's compiled CSR-adaptive program with
    cut rows (NVIDIA's OpenCL binaries are PTX text): what a cut row's fold is ordered by,
    and how its teams reduce."""
    from types import SimpleNamespace
    from finepar.apps.spmv import SpMV
    from finepar.engine.memory import builds_ptx, rowop_defines
    op, side = SpMV.ops[0], pair.side("gpu")
    valued = SimpleNamespace(pattern=False)  # a matrix with values: HAS_DATA=1
    defines = rowop_defines(op, valued, "stream", side.launch.wg_stream, compact=True,
                            has_slots=True, offset_type="int", ptx=builds_ptx(side),
                            BLOCK_NNZ=side.launch.block_nnz, QUEUE=0)
    prg = pair.program(side, (op.fragment, "skeleton/rowop.cl"), defines)
    text = prg.binaries[0].decode("utf-8", "replace")
    return [ln.strip() for ln in text.splitlines()
            if len(ln) < 200 and any(w in ln for w in ("membar", "fence", "atom.", "shfl"))]


def cusparse_case(g, x: np.ndarray, expect: np.ndarray, bound: np.ndarray, args) -> dict | None:
    """cuSPARSE's product through CuPy: seconds a product over batches, checked."""
    from arraypeers import ArrayGraph, backend_or_none, spmv_runs
    b = backend_or_none("cupy", "cuSPARSE")
    if b is None:
        return None
    ag = ArrayGraph(b, g)
    times, y = spmv_runs(ag, x, args.products, args.repeats)
    ag.free()
    bad = int(np.count_nonzero(np.abs(y - expect) > bound))
    return {"per_product": stats(times), "wrong_rows": bad}


def graph_case(spec: str, args) -> dict:
    from finepar.apps.spmv import reference_spmv, spmv_error_bound
    g, _ = load(spec)
    x = np.random.default_rng(0).uniform(-1.0, 1.0, g.n).astype(np.float32)
    expect, bound = reference_spmv(g, x), spmv_error_bound(g, x)
    lengths = np.diff(g.indptr)
    rec = {"graph": spec, "n": int(g.n), "nnz": int(g.nnz), "longest_row": int(lengths.max()),
           "variants": []}
    log(f"{spec}: n {g.n:,}, nnz {g.nnz:,}, longest row {rec['longest_row']:,}")
    if not args.no_cupy:
        rec["cusparse"] = cusparse_case(g, x, expect, bound, args)
        if rec["cusparse"]:
            log(f"  cusparse {1e6 * rec['cusparse']['per_product']['median']:.1f} us a product "
                f"({rec['cusparse']['wrong_rows']} rows off)")
    for variant in args.variants:
        v = variant_case(g, x, expect, bound, variant, args)
        rec["variants"].append(v)
        each = ", ".join(f"{1e6 * s['median']:.1f}" for s in v["launch_seconds"].values())
        log(f"  {':'.join(map(str, variant))}: span {1e6 * v['span_per_product']['median']:.1f}"
            f" us a product, wall {1e6 * v['wall_per_product']['median']:.1f}; launches "
            f"{each} us; {v['wrong_rows']} rows off")
    return rec


def main(argv=None) -> int:
    args = parse_args(argv)
    from finepar.api import make_pair
    out = {"script": "benchmarks/probe_rowblocks.py", "date": today(),
           "device": make_pair().describe(), "args": vars(args), "graphs": []}
    log(out["device"])
    if args.ptx:
        out["fence_lines"] = fence_lines(make_pair())
        log("fold's ordering, shuffles: " + "; ".join(out["fence_lines"]))
    for spec in input_list(args.graphs):
        out["graphs"].append(graph_case(spec, args))
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main_of(main))
