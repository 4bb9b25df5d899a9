#!/usr/bin/env bash
# One H200, the shuffles' code (SG_SHFL=1 on NVIDIA): SpMV's CSR-adaptive product at
# Graph500 scales 22 and 24 with stream work-groups of 256 and 128 work-items (and 256 with
# the tree), PageRank's step against the product at scale 24 with groups of 128
# (call h had 256), then BFS at scale 24 with the shuffles and with the tree, in one call.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 200 python3 probe_rowblocks.py --graphs graph500:22,graph500:24 --repeats 3 \
  --variants 1024:256:8,1024:128:8,1024:256:8:none --json "$OUT/rb.json" > "$OUT/rb.log" 2>&1
grep -v -e Warn -e lambda "$OUT/rb.log" | tail -12
timeout 100 python3 probe_pagerank.py --graph graph500:24 --variants 2 --no-cupy \
  --launch wg_stream=128 --json "$OUT/pr-128.json" > "$OUT/pr-128.log" 2>&1
grep -h -i -e "iteration" "$OUT"/pr-*.log | grep -v Warn | tail -6
for s in auto none; do
  timeout 90 python3 probe_bfs.py --scale 24 --shuffles $s --json "$OUT/bfs-$s.json" \
    > "$OUT/bfs-$s.log" 2>&1
done
grep -h -e "a run" -e "^  run" "$OUT"/bfs-*.log | tail -8
cd "$OUT" && tar czf all.tgz *.json *.log 2>/dev/null && rm -f *.json *.log
