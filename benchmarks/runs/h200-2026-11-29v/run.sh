#!/usr/bin/env bash
# One H200, the session's final code (scalar arguments by their bytes): issue 29's table in
# one run, best_device.py on the seven small real graphs, soc-Slashdot0902, cnr-2000 and
# Graph500 scales 18 and 20, 5 runs after a warm-up, every answer checked.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 380 python3 best_device.py \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,soc-Slashdot0902,cnr-2000 \
  --scales 18,20 --repeats 5 --budget-s 340 --json "$OUT/best.json" > "$OUT/best.log" 2>&1
grep -e '^- ' -e 'below' "$OUT/best.log" | tail -14
cd "$OUT" && gzip -f best.json && tar czf all.tgz best.json.gz *.log && rm -f best.json.gz *.log
