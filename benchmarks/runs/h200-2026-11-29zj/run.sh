#!/usr/bin/env bash
# One H200, the session's final code (the row operation's entries loaded evict-first):
# issue 29's table (best_device.py, as calls v, x, zd and ze: the seven small real graphs,
# soc-Slashdot0902, cnr-2000, Graph500 scales 18 and 20; 5 runs after a warm-up), every
# answer checked.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 340 python3 best_device.py \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,soc-Slashdot0902,cnr-2000 \
  --scales 18,20 --repeats 5 --budget-s 300 --json "$OUT/best.json" > "$OUT/best.log" 2>&1
grep -e '^- ' -e 'below' "$OUT/best.log" | tail -16
cd "$OUT" && gzip -f best.json && tar czf all.tgz *.json.gz *.log && rm -f *.json.gz *.log
