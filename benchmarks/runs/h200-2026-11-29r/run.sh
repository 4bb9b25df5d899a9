#!/usr/bin/env bash
# One H200, the landed head. Where a small input's step spends the host's time:
# probe_enqueue.py (a bare enqueue on a profiling and a plain queue; SpMV's products on
# adder_dcop_05 and luxembourg, 1,000 a run, the GPU alone, cProfile's busiest functions,
# pyopencl's C calls among them) and probe_host.py --profile on PageRank on luxembourg. Then
# Graph500 scales 22 and 24 (apps.py: BFS, CC, PageRank, SpMV, every answer checked).
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 120 python3 probe_enqueue.py --graphs adder_dcop_05.mtx,luxembourg.mtx --repeat 1000 \
  --devices gpu --json "$OUT/enq.json" > "$OUT/enq.log" 2>&1
tail -5 "$OUT/enq.log" | cut -c1-200
timeout 90 python3 probe_host.py --app pagerank --graph ../.data/luxembourg.mtx --devices gpu \
  --no-where --profile --repeats 5 --budget-s 60 --json "$OUT/ph-pr-lux.json" \
  > "$OUT/ph-pr-lux.log" 2>&1
grep 'runs' "$OUT/ph-pr-lux.log" | cut -c1-300
timeout 330 python3 apps.py --scales 22,24 --real none --apps bfs,cc,pagerank,spmv \
  --no-graphblas --scipy-max-nnz 1e8 --json "$OUT/apps.json" --md "$OUT/apps.md" \
  > "$OUT/apps.log" 2>&1
grep -h -e "s2[24]" -e "met\|MISS" "$OUT/apps.log" | tail -20
cd "$OUT" && tar czf all.tgz *.json *.log *.md 2>/dev/null && rm -f *.json *.log *.md
