#!/usr/bin/env bash
# One H200: what a warm GPU-alone call waits for (its warm-up took 80-290 ms a call in call
# zc, the default's 1 ms): probe_builds.py, 6 calls each of --devices gpu and the default, in
# turn, every build job and settle stamped; PageRank and BFS on USPowerGrid. Run from the
# root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
for app in pagerank bfs; do
  timeout 200 python3 probe_builds.py --app $app --graph USPowerGrid --calls 6 \
    --json "$OUT/builds-$app.json" > "$OUT/builds-$app.log" 2>&1
  grep -v -e Warn -e lambda "$OUT/builds-$app.log" | cut -c1-700
done
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
