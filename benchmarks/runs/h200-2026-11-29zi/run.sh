#!/usr/bin/env bash
# One H200: Graph500 scale 24 at the session's code (the row operation's entries loaded
# evict-first): apps.py for BFS, SSSP, CC, PageRank and SpMV beside CuPy / cuSPARSE, every
# answer checked (issue 31's targets; issue 29: scale 24 keeps its figures). First, what
# NVIDIA's compiler says about the row operation with PTX_LOADS.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
PYOPENCL_COMPILER_OUTPUT=1 timeout 60 python3 -m finepar run spmv graph500:14 --devices gpu \
  > "$OUT/compiler.log" 2>&1
grep -i -B2 -A6 "warn" "$OUT/compiler.log" | cut -c1-200 | head -30
cd benchmarks
timeout 500 python3 apps.py --scales 24 --real none --apps bfs,cc,pagerank,spmv,sssp \
  --no-graphblas --scipy-max-nnz 1e8 --json "$OUT/apps-s24.json" --md "$OUT/apps-s24.md" \
  > "$OUT/apps-s24.log" 2>&1
grep -h -e "s24" -e "met\|MISS" "$OUT/apps-s24.log" | tail -20
cd "$OUT" && tar czf all.tgz *.json *.log *.md 2>/dev/null && rm -f *.json *.log *.md
