#!/usr/bin/env bash
# One H200, the session's landed code: apps.py at Graph500 scales 22 and 24 (BFS, CC,
# PageRank, SpMV beside CuPy and cuSPARSE; scipy left out at these sizes), every answer
# checked. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 400 python3 apps.py --scales 22,24 --real none --apps bfs,cc,pagerank,spmv \
  --no-graphblas --scipy-max-nnz 1e8 --json "$OUT/apps.json" --md "$OUT/apps.md" \
  > "$OUT/apps.log" 2>&1
grep -h -e "s2[24]" -e "met\|MISS" "$OUT/apps.log" | tail -20
cd "$OUT" && tar czf all.tgz *.json *.log *.md 2>/dev/null && rm -f *.json *.log *.md
