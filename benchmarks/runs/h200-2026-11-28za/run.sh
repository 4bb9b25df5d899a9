#!/usr/bin/env bash
# One H200: where BFS's time goes at Graph500 scales 18 and 20 (2.8 ms on the usual path,
# where scale 24 takes 2.6 ms on an H100): probe_host.py --no-where on the default plan and
# the GPU alone, every command with its host stamp and device times. Run from the root
# with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
ph() {  # label, scale, devices
  timeout 120 python3 probe_host.py --scale "$2" --app bfs --devices "$3" \
    --repeats 7 --no-where --json "$OUT/$1.json" > "$OUT/$1.log" 2>&1
  grep -v -e Warn -e lambda "$OUT/$1.log" | sed -n 2,3p
}
ph bfs-s20 20 auto
ph bfs-s20-gpu 20 gpu
ph bfs-s18 18 auto
ph bfs-s22 22 gpu
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
