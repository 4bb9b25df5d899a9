#!/usr/bin/env bash
# One H200, the landed head of the twenty-first session (never run on a device: the
# work-group's pair sum as one macro, SG_PAIR_SUM, in its PTX form). First, where a small
# input's run goes: probe_host.py's timeline (each command's host time, its device start and
# run from profiling events) for SpMV on adder_dcop_05, USPowerGrid and luxembourg, BFS and
# CC on adder_dcop_05, PageRank on luxembourg. Then issue 29's table on the seven small real
# graphs (best_device.py, 5 runs each, every answer checked). Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
for c in spmv:adder_dcop_05 spmv:USPowerGrid spmv:luxembourg bfs:adder_dcop_05 \
         cc:adder_dcop_05 pagerank:luxembourg; do
  app=${c%%:*}; g=${c#*:}
  timeout 90 python3 probe_host.py --app "$app" --graph "../.data/$g.mtx" --devices auto \
    --no-where --repeats 5 --budget-s 60 --json "$OUT/ph-$app-$g.json" \
    > "$OUT/ph-$app-$g.log" 2>&1
  tail -14 "$OUT/ph-$app-$g.log" | cut -c1-160
done
timeout 300 python3 best_device.py \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg \
  --scales '' --repeats 5 --budget-s 270 --json "$OUT/best.json" > "$OUT/best.log" 2>&1
grep -e '^- ' -e 'below' "$OUT/best.log" | tail -20
cd "$OUT" && gzip -f best.json && tar czf all.tgz best.json.gz *.json *.log \
  && rm -f best.json.gz *.json *.log
