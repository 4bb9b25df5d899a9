#!/usr/bin/env bash
# One H200: where a small graph's run spends its time. probe_host.py --no-where on the
# default plan (and the CPU alone for BFS): every OpenCL command of a run with its host
# stamp and its device times. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data
cd benchmarks
ph() {  # label, app, graph, devices
  timeout 60 python3 probe_host.py --graph "../.data/$3" --app "$2" --devices "$4" \
    --repeats 7 --no-where --json "$OUT/$1.json" > "$OUT/$1.log" 2>&1
  grep -v -e Warn -e lambda "$OUT/$1.log" | sed -n 2p
}
ph bfs-adder bfs adder_dcop_05.mtx auto
ph bfs-adder-cpu bfs adder_dcop_05.mtx cpu
ph bfs-power bfs USPowerGrid.mtx auto
ph bfs-rajat bfs rajat01.mtx auto
ph cc-adder cc adder_dcop_05.mtx auto
ph cc-lux cc luxembourg.mtx auto
ph sssp-adder sssp adder_dcop_05.mtx auto
ph pr-wiki pagerank wiki-Vote.txt auto
ph spmv-adder spmv adder_dcop_05.mtx auto
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
