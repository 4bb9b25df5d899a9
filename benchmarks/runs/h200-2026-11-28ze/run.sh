#!/usr/bin/env bash
# One H200: a GPU-alone call after the fix (prepare takes the app's one-device rule for
# --devices gpu): probe_builds.py, 4 calls each of --devices gpu and the default, PageRank
# and BFS on USPowerGrid; then probe_group.py with the default and devices='gpu' in turn,
# 9 rounds, on three small graphs. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
for app in pagerank bfs; do
  timeout 120 python3 probe_builds.py --app $app --graph USPowerGrid --calls 4 \
    --json "$OUT/builds-$app.json" > "$OUT/builds-$app.log" 2>&1
  grep -v -e Warn -e lambda "$OUT/builds-$app.log" | cut -c1-300
done
timeout 200 python3 probe_group.py --real USPowerGrid,adder_dcop_05,wiki-Vote \
  --apps bfs,pagerank --configs default,gpu --repeats 9 --json "$OUT/gpu.json" \
  > "$OUT/gpu.log" 2>&1
grep -v -e Warn -e lambda "$OUT/gpu.log"
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
