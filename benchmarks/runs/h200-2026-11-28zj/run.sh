#!/usr/bin/env bash
# One H200: (1) PageRank's warm calls at Graph500 scale 20 with a restored run guessing no
# programs (call zi: 145-170 ms of settle a call): probe_builds.py, the default and the GPU
# alone in turn, 3 calls each; (2) where a small graph's repeated call spends its host time:
# probe_calls.py --profile, BFS, SpMV and PageRank on three small graphs, 20 calls after the
# first. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
FINEPAR_CACHE_DIR=/tmp/cache-b timeout 150 python3 probe_builds.py --scale 20 --app pagerank \
  --devices auto,gpu --calls 3 --json "$OUT/builds.json" > "$OUT/builds.log" 2>&1
grep -v -e Warn -e lambda "$OUT/builds.log" | cut -c1-400
FINEPAR_CACHE_DIR=/tmp/cache-p timeout 120 python3 probe_calls.py --repeats 20 --profile \
  --real USPowerGrid,adder_dcop_05,ca-GrQc --apps bfs,spmv,pagerank \
  --json "$OUT/calls-profile.json" > "$OUT/calls-profile.log" 2>&1
grep -v -e Warn -e lambda "$OUT/calls-profile.log"
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
