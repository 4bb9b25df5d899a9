#!/usr/bin/env bash
# One H200: the scale-24 product's prototype with L1 kept for x (issue 31): the column
# indices' stream evict-first or not allocated in L1, the gathers past the hottest H
# columns not allocated either; timed (probe_spmv_bound.py), then read once under Nsight
# Compute (--set full).
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
cd benchmarks
timeout 300 python3 probe_spmv_bound.py --scale 24 --json "$OUT/bound.json" > "$OUT/bound.log" 2>&1
tail -32 "$OUT/bound.log" | cut -c1-130
timeout 240 ncu --clock-control none --set full -k 'regex:short_|long_|csrmv' --launch-count 40 \
  -o "$OUT/bound" python3 probe_spmv_bound.py --scale 24 --once --json "$OUT/once.json" > "$OUT/ncu.log" 2>&1
echo "ncu rc=$?"; tail -3 "$OUT/ncu.log" | cut -c1-200
if [ -f "$OUT/bound.ncu-rep" ]; then
  ncu -i "$OUT/bound.ncu-rep" --page raw --csv > "$OUT/ncu-raw.csv" 2> "$OUT/ncu-import.log"
fi
cd "$OUT" && tar czf all.tgz *.json *.log *.csv 2>/dev/null && rm -f *.json *.log *.csv bound.ncu-rep
ls -la
