#!/usr/bin/env bash
# One H200: a library user's repeated calls (probe_calls.py) at the session's start
# (5662392, carried as .carry_prev: `git archive 5662392 finepar opencl models
# pyproject.toml`) and at its code, in turn twice, each process with its own cold cache;
# every answer checked.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data
ROOT=$PWD
cd benchmarks
for round in 1 2; do
  for who in start now; do
    code=$ROOT; [ "$who" = start ] && code=$ROOT/.carry_prev
    PYTHONPATH=/tmp/site:$code FINEPAR_CACHE_DIR=/tmp/cache-$who-$round timeout 100 \
      python3 probe_calls.py --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,luxembourg \
      --repeats 20 --json "$OUT/calls-$who-$round.json" > "$OUT/calls-$who-$round.log" 2>&1
    echo "== $who $round"; tail -25 "$OUT/calls-$who-$round.log" | cut -c1-160
  done
done
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
