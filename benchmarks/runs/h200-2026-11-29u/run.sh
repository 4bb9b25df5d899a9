#!/usr/bin/env bash
# One H200, scalar arguments set through pyopencl's buffer path (launches.set_arg, call).
# probe_enqueue.py: a set_arg of an int by pyopencl's Kernel.set_arg and by FinePar's, and
# SpMV's products on adder_dcop_05 (1,000 a run). probe_pagerank.py --variants 2 on four
# inputs: the default loop beside its generic_set_arg variant (FAST_SCALARS off) in the same
# process. Then issue 29's table on the seven small real graphs, soc-Slashdot0902 and
# cnr-2000 (best_device.py, 5 runs each, every answer checked). Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 60 python3 probe_enqueue.py --graphs adder_dcop_05.mtx --repeat 1000 --devices gpu \
  --json "$OUT/enq.json" > "$OUT/enq.log" 2>&1
grep -e set_arg -e 'us a product' "$OUT/enq.log" | cut -c1-160
for g in ../.data/luxembourg.mtx ../.data/soc-Slashdot0902.txt.gz ../.data/cnr-2000.mtx.gz \
         graph500:18; do
  n=$(basename $g); n=${n%%.*}; n=${n/:/-}
  timeout 75 python3 probe_pagerank.py --graph $g --variants 2 --no-cupy --repeats 5 \
    --json "$OUT/pr-$n.json" > "$OUT/pr-$n.log" 2>&1
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['pagerank']['hot columns, compensated']; m=lambda k: 1e3*(r.get(k) or {}).get('per_iteration',{}).get('median',float('nan')); print(sys.argv[2], 'ms an iteration: default %.4f, generic set_arg %.4f, no fold %.4f' % (m(None) if False else 1e3*r['per_iteration']['median'], m('generic_set_arg'), m('no_fold')))" "$OUT/pr-$n.json" "$n" 2>&1 | tail -1
done
timeout 200 python3 best_device.py \
  --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg,soc-Slashdot0902,cnr-2000 \
  --scales '' --repeats 5 --budget-s 180 --json "$OUT/best.json" > "$OUT/best.log" 2>&1
grep -e '^- ' -e 'below' "$OUT/best.log" | tail -12
cd "$OUT" && gzip -f best.json && tar czf all.tgz best.json.gz *.json *.log \
  && rm -f best.json.gz *.json *.log
