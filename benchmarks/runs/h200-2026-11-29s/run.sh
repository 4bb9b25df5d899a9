#!/usr/bin/env bash
# One H200, the landed head. Issue 29's table on the larger inputs (best_device.py:
# soc-Slashdot0902, cnr-2000, Graph500 scales 18 and 20, 5 runs each, every answer checked);
# SSSP at scale 24 (apps.py); BFS at scale 26 (apps.py, issue 31's 150 GTEPS on one H200).
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 240 python3 best_device.py --real soc-Slashdot0902,cnr-2000 --scales 18,20 \
  --repeats 5 --budget-s 220 --json "$OUT/best.json" > "$OUT/best.log" 2>&1
grep -e '^- ' -e 'below' "$OUT/best.log" | tail -12
timeout 120 python3 apps.py --scales 24 --real none --apps sssp --no-graphblas \
  --scipy-max-nnz 1e8 --json "$OUT/apps-s24-sssp.json" --md "$OUT/apps-s24-sssp.md" \
  > "$OUT/apps-s24-sssp.log" 2>&1
grep -h -e "s24" -e "met\|MISS" "$OUT/apps-s24-sssp.log" | tail -4
timeout 200 python3 apps.py --scales 26 --real none --apps bfs --no-graphblas \
  --scipy-max-nnz 1e8 --json "$OUT/apps-s26-bfs.json" --md "$OUT/apps-s26-bfs.md" \
  > "$OUT/apps-s26-bfs.log" 2>&1
grep -h -e "s26" -e "met\|MISS" "$OUT/apps-s26-bfs.log" | tail -4
cd "$OUT" && gzip -f best.json && tar czf all.tgz best.json.gz *.json *.log *.md 2>/dev/null \
  && rm -f best.json.gz *.json *.log *.md
