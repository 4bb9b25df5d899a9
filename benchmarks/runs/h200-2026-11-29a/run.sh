#!/usr/bin/env bash
# One H200, the session's start (49b2e5d) plus probe_rowblocks.py: SpMV's CSR-adaptive
# product launch by launch under seven work-group geometries, beside cuSPARSE, on cnr-2000,
# soc-Slashdot0902 and Graph500 scales 18 and 20. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
FINEPAR_CACHE_DIR=/tmp/cache-rb timeout 400 python3 probe_rowblocks.py \
  --graphs cnr-2000.mtx.gz,soc-Slashdot0902.txt.gz,graph500:18,graph500:20 \
  --json "$OUT/rowblocks.json" > "$OUT/rowblocks.log" 2>&1
grep -v -e Warn -e lambda "$OUT/rowblocks.log"
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
