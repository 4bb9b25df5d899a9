#!/usr/bin/env bash
# One H200, the session's final code: issue 29's table at Graph500 scales 22 and 24
# (best_device.py; 3 runs after a warm-up), every answer checked.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 470 python3 best_device.py --real none --scales 22,24 --repeats 3 --budget-s 420 \
  --json "$OUT/best-large.json" > "$OUT/best-large.log" 2>&1
grep -e '^- ' -e 'below' -e 'budget' "$OUT/best-large.log" | tail -16
cd "$OUT" && gzip -f best-large.json && tar czf all.tgz *.json.gz *.log && rm -f *.json.gz *.log
