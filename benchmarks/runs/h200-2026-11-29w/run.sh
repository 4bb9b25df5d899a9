#!/usr/bin/env bash
# One H200: what NVIDIA's enqueue costs a kernel argument (probe_enqueue.py part one alone):
# 22 arguments bound to buffers against the same kernel with 17 of its 18 pointers NULL.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 90 python3 probe_enqueue.py --graphs none --launches 2000 --json "$OUT/enq.json" \
  > "$OUT/enq.log" 2>&1
grep gpu "$OUT/enq.log" | cut -c1-120
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
