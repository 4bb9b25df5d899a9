#!/usr/bin/env bash
# One H200, the session's final code (only the GPU alone on its plain queue; rowop's
# trimmed arguments): probe_queues.py on three small graphs and luxembourg (SSSP there runs
# the CPU's walk), then issue 29's table (best_device.py, as calls v, x and zd), every
# answer checked.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 90 python3 probe_queues.py --real USPowerGrid,adder_dcop_05,rajat01,luxembourg \
  --scales '' --repeats 5 --json "$OUT/queues.json" > "$OUT/queues.log" 2>&1
tail -20 "$OUT/queues.log" | cut -c1-170
timeout 330 python3 best_device.py \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,soc-Slashdot0902,cnr-2000 \
  --scales 18,20 --repeats 5 --budget-s 300 --json "$OUT/best.json" > "$OUT/best.log" 2>&1
grep -e '^- ' -e 'below' "$OUT/best.log" | tail -16
cd "$OUT" && gzip -f best.json queues.json && tar czf all.tgz *.json.gz *.log && rm -f *.json.gz *.log
