#!/usr/bin/env bash
# One H200: call zb again in the reverse order (batch, now, start), SpMV and CC only:
# one? probe_calls.py in separate processes, in turn twice: the session's start (5662392,
# .carry_prev), the session's code, and the session's code with every engine on the
# profiling queues (batch_calls.py: no plain queue made). Every answer checked.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data
ROOT=$PWD
HERE=$ROOT/benchmarks/runs/h200-2026-11-29zb
cd benchmarks
ARGS="--real adder_dcop_05,rajat01 --apps spmv,cc --repeats 40"
for round in 1 2; do
  for who in batch now start; do
    code=$ROOT; [ "$who" = start ] && code=$ROOT/.carry_prev
    script=probe_calls.py; [ "$who" = batch ] && script=$HERE/batch_calls.py
    PYTHONPATH=/tmp/site:$code:$ROOT/benchmarks FINEPAR_CACHE_DIR=/tmp/cache-$who-$round \
      timeout 60 python3 $script $ARGS --json "$OUT/calls-$who-$round.json" \
      > "$OUT/calls-$who-$round.log" 2>&1
    echo "== $who $round"; grep " on " "$OUT/calls-$who-$round.log" | cut -c1-120
  done
done
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
