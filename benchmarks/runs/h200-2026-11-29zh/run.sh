#!/usr/bin/env bash
# One H200: the row operation's entries loaded evict-first (PTX's ld.global.cs; issue 31)
# against plain loads, in one process (probe_queues.py --plain-loads: the profiling queue,
# the plain queue, and the plain queue with plain loads, alternating): SpMV and PageRank at
# Graph500 scale 24, then every app on two small graphs. Every answer checked.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
timeout 60 python3 -m finepar run spmv graph500:14 --devices gpu 2>&1 | tail -4
cd benchmarks
timeout 360 python3 probe_queues.py --real none --scales 24 --apps spmv,pagerank --repeats 3 \
  --plain-loads --json "$OUT/loads-s24.json" > "$OUT/loads-s24.log" 2>&1
tail -4 "$OUT/loads-s24.log" | cut -c1-220
timeout 120 python3 probe_queues.py --real USPowerGrid,luxembourg --scales 18 --apps spmv,pagerank \
  --repeats 5 --plain-loads --json "$OUT/loads-small.json" > "$OUT/loads-small.log" 2>&1
tail -6 "$OUT/loads-small.log" | cut -c1-220
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
