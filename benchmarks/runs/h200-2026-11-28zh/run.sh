#!/usr/bin/env bash
# One H200, this session's code: (1) probe_calls.py, a library user's repeated calls with the
# process's kept pairs, workloads and engines, every app on seven real graphs given as the
# loaded Graph, then three of them given as a scipy CSR (hashed each call); (2) issue 29's
# table, best_device.py: FinePar's default beside the CPU alone and the GPU alone (each now
# with the model's fastest grouping), scipy and CuPy, on the seven small real graphs,
# soc-Slashdot0902, cnr-2000 and Graph500 scales 18 and 20, 5 runs after a warm-up, every
# answer checked; the budget stops new graphs past 320 s. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
(cd benchmarks && FINEPAR_CACHE_DIR=/tmp/cache-calls timeout 90 python3 probe_calls.py --repeats 8 \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,wiki-Vote,memplus,luxembourg,cnr-2000 \
  --json "$OUT/calls.json" > "$OUT/calls.log" 2>&1
 FINEPAR_CACHE_DIR=/tmp/cache-calls-scipy timeout 40 python3 probe_calls.py --repeats 8 --as scipy \
  --real ca-GrQc,luxembourg,cnr-2000 --json "$OUT/calls-scipy.json" > "$OUT/calls-scipy.log" 2>&1)
grep -v -e Warn -e lambda "$OUT/calls.log" "$OUT/calls-scipy.log"
timeout 400 python3 benchmarks/best_device.py \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,soc-Slashdot0902,cnr-2000 \
  --scales 18,20 --repeats 5 --budget-s 320 --json "$OUT/best.json" > "$OUT/best.log" 2>&1
grep -e '^- ' -e 'below' "$OUT/best.log" | tail -30
cd "$OUT" && gzip -f best.json && tar czf all.tgz best.json.gz *.log calls*.json && rm -f best.json.gz *.log calls*.json
