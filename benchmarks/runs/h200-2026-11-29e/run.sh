#!/usr/bin/env bash
# One H200, this session's code (a cut row folded inside its launch; a given vector checked
# before the timed run; CuPy's peers timed by the host's clock): (1) issue 29's table,
# best_device.py on the seven small real graphs, soc-Slashdot0902, cnr-2000 and Graph500
# scales 18 and 20, 5 runs after a warm-up, every answer checked; (2) apps.py at Graph500 scale 24, BFS, CC, PageRank and SpMV, beside
# CuPy and cuSPARSE (issue 29's "scale 24 keeps its figures", issue 31's table). Run from
# the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
timeout 320 python3 best_device.py \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,soc-Slashdot0902,cnr-2000 \
  --scales 18,20 --repeats 5 --budget-s 290 --json "$OUT/best.json" > "$OUT/best.log" 2>&1
grep -e '^- ' -e 'below' "$OUT/best.log" | tail -30
timeout 290 python3 apps.py --scales 24 --real none --apps bfs,cc,pagerank,spmv \
  --no-graphblas --scipy-max-nnz 2e8 --json "$OUT/apps-s24.json" --md "$OUT/apps-s24.md" \
  > "$OUT/apps-s24.log" 2>&1
grep -h -e "s24" -e "met\|MISS" "$OUT/apps-s24.log" | tail -20
cd "$OUT" && gzip -f best.json && tar czf all.tgz best.json.gz *.log apps-s24.json apps-s24.md \
  && rm -f best.json.gz *.log apps-s24.json apps-s24.md
