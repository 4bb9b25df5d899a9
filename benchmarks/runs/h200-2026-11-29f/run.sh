#!/usr/bin/env bash
# One H200, this session's code: probe_host.py on the small runs whose time is mostly not
# their kernels (BFS on adder_dcop_05: 0.26 ms for 0.055 ms of kernel; SpMV at Graph500
# scale 18: 0.2 ms over the device's span), each with the stack walk (who made each
# command) and without (the gaps as they are). Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
P="timeout 60 python3 probe_host.py --devices auto --repeats 5"
$P --graph ../.data/adder_dcop_05.mtx --app bfs --json "$OUT/adder-bfs.json" > "$OUT/adder-bfs.log" 2>&1
$P --graph ../.data/adder_dcop_05.mtx --app bfs --no-where --json "$OUT/adder-bfs-nw.json" > "$OUT/adder-bfs-nw.log" 2>&1
$P --graph ../.data/USPowerGrid.mtx --app sssp --no-where --json "$OUT/usp-sssp-nw.json" > "$OUT/usp-sssp-nw.log" 2>&1
$P --scale 18 --app spmv --json "$OUT/s18-spmv.json" > "$OUT/s18-spmv.log" 2>&1
$P --scale 18 --app spmv --no-where --json "$OUT/s18-spmv-nw.json" > "$OUT/s18-spmv-nw.log" 2>&1
tail -n 25 "$OUT"/adder-bfs.log "$OUT"/adder-bfs-nw.log "$OUT"/s18-spmv-nw.log | cut -c1-150
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
