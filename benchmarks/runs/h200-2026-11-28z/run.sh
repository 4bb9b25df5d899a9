#!/usr/bin/env bash
# One H200: where the one work-group's forms should stand. probe_group.py with FinePar's
# default and the GPU's loop forced (group_loop='always'), in turn, 9 rounds: PageRank on
# the real graphs from 13 K to 3.2 M entries (its loop's rule stops at 65,536), and BFS and
# SSSP past their rule's 1 M entries and on the graphs the rule leaves to the usual path.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
probe() {  # label, args
  local label=$1; shift
  timeout 250 python3 probe_group.py --configs default,loop --repeats 9 "$@" \
    --json "$OUT/$label.json" > "$OUT/$label.log" 2>&1
  grep -v -e Warn -e lambda "$OUT/$label.log"
}
probe pagerank --apps pagerank \
  --real USPowerGrid,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,soc-Slashdot0902,cnr-2000
probe levels --apps bfs,sssp --real soc-Slashdot0902,cnr-2000 --scales 18,20
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
