#!/usr/bin/env bash
# One H200, this session's code: e2e.py at Graph500 scale 24, the time a user waits from
# the file to the answer for BFS, CC, PageRank and SpMV: a new input (FinePar's cache
# empty, the drivers' filled), warm, served, and CuPy's job beside; 3 fresh processes
# each, every answer checked. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
timeout 470 python3 benchmarks/e2e.py --scales 24 --real none --apps bfs,cc,pagerank,spmv \
  --systems finepar-new-input,finepar-warm,finepar-served,cupy --repeats 3 --budget-s 400 \
  --json "$OUT/e2e-s24.json" --md "$OUT/e2e-s24.md" > "$OUT/e2e-s24.log" 2>&1
grep -v -e Warn -e lambda "$OUT/e2e-s24.log" | tail -40
cd "$OUT" && tar czf all.tgz e2e-s24.* && rm -f e2e-s24.*
