#!/usr/bin/env bash
# One H200: PageRank on one device, its step's sums folded by the last work-group (FOLD_SUMS)
# against a reduce launch of their own (one pass, and two past 2,048 groups: the loop as
# before), beside the look-ahead and page-locked reads, on soc-Slashdot0902, cnr-2000 and
# Graph500 scales 18, 20, 22 and 24 (probe_pagerank.py: runs, timelines, the gaps at the
# reads). Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
for g in ../.data/soc-Slashdot0902.txt.gz ../.data/cnr-2000.mtx.gz graph500:18 graph500:20 graph500:22 graph500:24; do
  n=$(basename $g); n=${n%%.*}; n=${n/:/-}
  timeout 150 python3 probe_pagerank.py --graph $g --variants 2 --no-cupy --repeats 5 \
    --json "$OUT/pr-$n.json" > "$OUT/pr-$n.log" 2>&1
  grep -h "iteration / SpMV" "$OUT/pr-$n.log" | sed "s/^/$n: /"
done
cd "$OUT" && tar czf all.tgz *.json *.log 2>/dev/null && rm -f *.json *.log
