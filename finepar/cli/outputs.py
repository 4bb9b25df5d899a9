"""What ``finepar run`` writes and prints once an answer is in (the JSON report, the
answer, the text report), and the exit status of an unconverged answer."""

from __future__ import annotations

import json
import sys



#: Exit status of a run that stopped unconverged at the app's own cap.
NOT_CONVERGED = 3


def finish_run(args, result, report, ids) -> int:
    """The outputs of ``finepar run``: the report as JSON (``--json``, ``-`` for standard
    output), the result vector (``--output``, with the input's ``ids`` beside it when the
    loader compacted them) and the text report."""
    import time
    from ..files import atomic_save_npy
    if args.output:  # first: the report says what writing it took
        t0 = time.perf_counter()
        atomic_save_npy(args.output, result.values)
        if ids is not None:
            atomic_save_npy(str(args.output)[:-4] + ".ids.npy", ids)
        report.timings["answer"] = time.perf_counter() - t0
    if args.json == "-":
        print(json.dumps(report.to_dict(), indent=2))
        args.quiet = True
    elif args.json:
        report.write_json(args.json)
    if not args.quiet:
        print(report.text(title=f"finepar run {report.app}"))
        if args.output:
            extra = (f" (vertex i is input id ids[i], saved as "
                     f"{str(args.output)[:-4]}.ids.npy)" if ids is not None else "")
            print(f"  output     {args.output}{extra}")
        if args.json:
            print(f"  report     {args.json}")
    return _unconverged(args, result, report.app)


def _unconverged(args, result, app: str) -> int:
    """0, or :data:`NOT_CONVERGED` with one line on standard error where the run stopped
    at the app's own cap before its tolerance (a cap the user set is the user's)."""
    if result.converged or getattr(args, "max_iter", None) is not None:
        return 0
    sys.stdout.flush()
    why = (" (its change stopped shrinking at float32's rounding: --tol is below what "
           "float32 reaches)" if result.extra.get("stalled") else "")
    print(f"finepar: error: {app} did not converge in {result.iterations:,} iterations{why} "
          f"(the answer was written as it stands); --max-iter N runs exactly N",
          file=sys.stderr)
    return NOT_CONVERGED
