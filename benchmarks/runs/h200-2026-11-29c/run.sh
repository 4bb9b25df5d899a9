#!/usr/bin/env bash
# One H200: a cut row's slots folded inside the stream launch (no apply launch), fenced
# with PTX's membar.gl, against the session's start (49b2e5d, carried whole in
# .carry8/base) in the same call: probe_rowblocks.py at the default geometry on cnr-2000
# and Graph500 scales 18 and 20 (the fold's PTX recorded), then apps.py's SpMV and
# PageRank at scale 24 from each tree. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site
G=cnr-2000.mtx.gz,graph500:18,graph500:20
NEW=$PWD/benchmarks BASE=$PWD/.carry8/base/benchmarks
cd $NEW && FINEPAR_CACHE_DIR=/tmp/cache-new timeout 100 python3 probe_rowblocks.py --ptx \
  --graphs $G --variants 1024:256:8 --json "$OUT/rb-new.json" > "$OUT/rb-new.log" 2>&1
cd $BASE && FINEPAR_CACHE_DIR=/tmp/cache-base timeout 100 python3 probe_rowblocks.py \
  --graphs $G --variants 1024:256:8 --no-cupy --json "$OUT/rb-base.json" > "$OUT/rb-base.log" 2>&1
A="--scales 24 --real none --apps spmv,pagerank --no-graphblas --scipy-max-nnz 2e8"
cd $NEW && FINEPAR_CACHE_DIR=/tmp/cache-new timeout 170 python3 apps.py $A \
  --json "$OUT/apps-new.json" --md "$OUT/apps-new.md" > "$OUT/apps-new.log" 2>&1
cd $BASE && FINEPAR_CACHE_DIR=/tmp/cache-base timeout 150 python3 apps.py $A --array-peers none \
  --json "$OUT/apps-base.json" --md "$OUT/apps-base.md" > "$OUT/apps-base.log" 2>&1
grep -v -e Warn -e lambda "$OUT"/rb-*.log; grep -h -i -e "spmv\|pagerank\|error" "$OUT"/apps-*.log | tail -30
cd "$OUT" && tar czf all.tgz *.json *.log *.md && rm -f *.json *.log *.md
