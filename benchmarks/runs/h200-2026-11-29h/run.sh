#!/usr/bin/env bash
# One H200: teams and work-groups that reduce with PTX's warp shuffles (SG_SHFL=1) against
# the tree in local memory (EngineOptions.shuffles='none'), in the same call: SpMV's
# CSR-adaptive product at two work-group sizes on two real graphs and Graph500 scales 18
# and 20 (probe_rowblocks.py, the compiled shuffles recorded), PageRank's step against
# SpMV's product at scale 24 either way (probe_pagerank.py), then apps.py at scale 24.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site FINEPAR_CACHE_DIR=/tmp/cache
git rev-parse HEAD 2>/dev/null > "$OUT/commit-seen.txt"
cd benchmarks
V=1024:256:8:none,1024:256:8,1024:128:8:none,1024:128:8
timeout 140 python3 probe_rowblocks.py --ptx --variants $V \
  --graphs cnr-2000.mtx.gz,soc-Slashdot0902.txt.gz,graph500:18,graph500:20 \
  --json "$OUT/rb.json" > "$OUT/rb.log" 2>&1
grep -v -e Warn -e lambda "$OUT/rb.log" | tail -30
timeout 150 python3 probe_pagerank.py --graph graph500:24 --variants 2 \
  --json "$OUT/pr-shfl.json" > "$OUT/pr-shfl.log" 2>&1
timeout 90 python3 probe_pagerank.py --graph graph500:24 --variants 2 --no-cupy --shuffles none \
  --json "$OUT/pr-tree.json" > "$OUT/pr-tree.log" 2>&1
grep -h -i -e "iteration\|spmv\|error" "$OUT"/pr-*.log | grep -v Warn | tail -16
timeout 190 python3 apps.py --scales 24 --real none --apps bfs,cc,pagerank,spmv \
  --no-graphblas --scipy-max-nnz 2e8 --json "$OUT/apps-s24.json" --md "$OUT/apps-s24.md" \
  > "$OUT/apps-s24.log" 2>&1
grep -h -e "s24" -e "met\|MISS" "$OUT/apps-s24.log" | tail -20
cd "$OUT" && tar czf all.tgz *.json *.log *.md 2>/dev/null && rm -f *.json *.log *.md
