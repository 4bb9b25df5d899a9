#!/usr/bin/env bash
# One H200, this session's last code (devices' facts listed once a process, digests in
# 1-MiB pieces, no guesses for a restored run, vectors compared by content): probe_calls.py,
# a library user's repeated calls, every app on seven real graphs given as the loaded Graph,
# then three given as scipy CSRs. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
FINEPAR_CACHE_DIR=/tmp/cache-calls timeout 150 python3 probe_calls.py --repeats 8 \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,wiki-Vote,memplus,luxembourg,cnr-2000 \
  --json "$OUT/calls.json" > "$OUT/calls.log" 2>&1
FINEPAR_CACHE_DIR=/tmp/cache-calls-scipy timeout 60 python3 probe_calls.py --repeats 8 --as scipy \
  --real ca-GrQc,luxembourg,cnr-2000 --json "$OUT/calls-scipy.json" > "$OUT/calls-scipy.log" 2>&1
grep -v -e Warn -e lambda "$OUT/calls.log" "$OUT/calls-scipy.log"
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
