#!/usr/bin/env bash
# One H200, the landed head: call c's last two runs again with time enough (their timeouts
# had cut them before the first run): SSSP at Graph500 scale 24 and BFS at scale 26
# (apps.py, 3 runs after a warm-up, every answer checked). Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 200 python3 apps.py --scales 24 --real none --apps sssp --no-graphblas \
  --scipy-max-nnz 1e8 --json "$OUT/apps-s24-sssp.json" --md "$OUT/apps-s24-sssp.md" \
  > "$OUT/apps-s24-sssp.log" 2>&1
grep -h -e "s24" -e "met\|MISS" "$OUT/apps-s24-sssp.log" | tail -4
rm -f /tmp/cache/graph500-s24*
timeout 360 python3 apps.py --scales 26 --real none --apps bfs --no-graphblas \
  --scipy-max-nnz 1e8 --json "$OUT/apps-s26-bfs.json" --md "$OUT/apps-s26-bfs.md" \
  > "$OUT/apps-s26-bfs.log" 2>&1
grep -h -e "s26" -e "met\|MISS" "$OUT/apps-s26-bfs.log" | tail -4
cd "$OUT" && tar czf all.tgz *.json *.log *.md 2>/dev/null && rm -f *.json *.log *.md
