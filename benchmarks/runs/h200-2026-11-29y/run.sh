#!/usr/bin/env bash
# One H200: where a small input's run goes before its first command (probe_host.py's
# timelines, with where app.run begins and each command's wait on the device), on the
# profiling queues and on the plain ones a default run takes; then cProfile of BFS's runs.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
for q in profiling plain; do
  for case in bfs:adder_dcop_05 bfs:rajat01 bfs:USPowerGrid cc:adder_dcop_05 sssp:ca-GrQc \
              pagerank:adder_dcop_05 spmv:adder_dcop_05 spmv:luxembourg; do
    app=${case%%:*}; g=${case#*:}
    timeout 60 python3 probe_host.py --app "$app" --graph "../.data/$g.mtx" --devices auto \
      --repeats 5 --no-where --queues "$q" --json "$OUT/ph-$q-$app-$g.json" \
      > "$OUT/ph-$q-$app-$g.log" 2>&1
    tail -n +2 "$OUT/ph-$q-$app-$g.log" | head -30 | cut -c1-140
  done
done
timeout 60 python3 probe_host.py --app bfs --graph ../.data/adder_dcop_05.mtx --devices auto \
  --repeats 200 --no-where --queues plain --profile --json "$OUT/ph-profile-bfs.json" \
  > "$OUT/ph-profile-bfs.log" 2>&1
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
