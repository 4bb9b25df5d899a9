#!/usr/bin/env bash
# One H200: (1) what PageRank's warm calls wait for at Graph500 scale 20 (call zh: a 215-262-ms
# warm-up each call, run 5.6 ms; 1.7 ms in call zc): probe_builds.py, the default, the CPU
# alone and the GPU alone in turn, 3 calls each, every build job and settle stamped;
# (2) probe_calls.py --as scipy on luxembourg and cnr-2000 with the digest in 1-MiB pieces
# (call zh: 16-MiB pieces). Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
FINEPAR_CACHE_DIR=/tmp/cache-b timeout 240 python3 probe_builds.py --scale 20 --app pagerank \
  --devices auto,cpu,gpu --calls 3 --json "$OUT/builds.json" > "$OUT/builds.log" 2>&1
grep -v -e Warn -e lambda "$OUT/builds.log" | cut -c1-700
FINEPAR_CACHE_DIR=/tmp/cache-s timeout 90 python3 probe_calls.py --repeats 8 --as scipy \
  --real luxembourg,cnr-2000 --json "$OUT/calls-scipy.json" > "$OUT/calls-scipy.log" 2>&1
grep -v -e Warn -e lambda "$OUT/calls-scipy.log"
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
