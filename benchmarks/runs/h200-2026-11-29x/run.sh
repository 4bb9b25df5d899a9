#!/usr/bin/env bash
# One H200: plain queues for a run on one device (EngineOptions.profile 'auto'). First
# probe_queues.py (the profiling queue against the default in one process, alternating), then
# issue 29's table in one run (best_device.py, as call v), every answer checked.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 170 python3 probe_queues.py \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,soc-Slashdot0902,cnr-2000 \
  --scales 18 --repeats 5 --json "$OUT/queues.json" > "$OUT/queues.log" 2>&1
tail -52 "$OUT/queues.log" | cut -c1-150
timeout 350 python3 best_device.py \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,soc-Slashdot0902,cnr-2000 \
  --scales 18,20 --repeats 5 --budget-s 320 --json "$OUT/best.json" > "$OUT/best.log" 2>&1
grep -e '^- ' -e 'below' "$OUT/best.log" | tail -16
cd "$OUT" && gzip -f best.json queues.json && tar czf all.tgz *.json.gz *.log && rm -f *.json.gz *.log
