#!/usr/bin/env bash
# One H200: issue 29's table at this session's last code. best_device.py, every app, FinePar's
# default beside the CPU alone, the GPU alone, scipy and CuPy, on the seven small real graphs,
# soc-Slashdot0902, cnr-2000 and Graph500 scales 18 and 20, 5 runs after a warm-up, every
# answer checked; the budget stops new graphs past 330 s. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
timeout 420 python3 benchmarks/best_device.py \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,soc-Slashdot0902,cnr-2000 \
  --scales 18,20 --repeats 5 --budget-s 330 --json "$OUT/best.json" > "$OUT/best.log" 2>&1
grep -e '^- ' -e 'below' "$OUT/best.log" | tail -30
cd "$OUT" && gzip -f best.json && tar czf all.tgz best.json.gz best.log && rm -f best.json.gz best.log
