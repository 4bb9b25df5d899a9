#!/usr/bin/env bash
# One H200, a bare machine (every build cache empty): a cold GPU-alone PageRank call on
# USPowerGrid and three warm ones, then the default, probe_builds.py: which programs the
# first call builds now that the app's one-device rule starts no hot-column program (call ze:
# the loop's and two hot-column programs, a 525-ms warm-up). Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD
cd benchmarks
timeout 120 python3 probe_builds.py --app pagerank --graph USPowerGrid --calls 4 \
  --json "$OUT/builds-pagerank.json" > "$OUT/builds-pagerank.log" 2>&1
grep -v -e Warn -e lambda "$OUT/builds-pagerank.log" | cut -c1-400
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
