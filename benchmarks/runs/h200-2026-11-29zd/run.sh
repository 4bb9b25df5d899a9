#!/usr/bin/env bash
# One H200: rowop with only the arguments its options use. probe_queues.py --every-argument
# (profiling queues, plain queues, plain queues with rowop's whole argument list, in turn in
# one process), then issue 29's table again (best_device.py, as calls v and x), every
# answer checked.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 200 python3 probe_queues.py --every-argument \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,luxembourg,cnr-2000 \
  --scales 18 --repeats 5 --json "$OUT/queues.json" > "$OUT/queues.log" 2>&1
tail -40 "$OUT/queues.log" | cut -c1-190
timeout 330 python3 best_device.py \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,soc-Slashdot0902,cnr-2000 \
  --scales 18,20 --repeats 5 --budget-s 300 --json "$OUT/best.json" > "$OUT/best.log" 2>&1
grep -e '^- ' -e 'below' "$OUT/best.log" | tail -16
cd "$OUT" && gzip -f best.json queues.json && tar czf all.tgz *.json.gz *.log && rm -f *.json.gz *.log
