#!/usr/bin/env bash
# One H200: what bounds the scale-24 SpMV product (issue 31). probe_spmv_bound.py times the
# prototype's stages apart (the gather, the index stream alone, gathers that hit L1, gathers
# that hit L2), then runs once under Nsight Compute (--set full) for the hardware counters;
# last, whether ncu sees FinePar's OpenCL kernels at all.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data PYTHONPATH=/tmp/site:$PWD FINEPAR_CACHE_DIR=/tmp/cache
which ncu; ncu --version | tail -1
cd benchmarks
timeout 240 python3 probe_spmv_bound.py --scale 24 --json "$OUT/bound.json" > "$OUT/bound.log" 2>&1
tail -12 "$OUT/bound.log" | cut -c1-160
timeout 240 ncu --clock-control none --set full -k 'regex:short_|long_|csrmv|spmv' --launch-count 16 \
  -o "$OUT/bound" python3 probe_spmv_bound.py --scale 24 --once --json "$OUT/once.json" > "$OUT/ncu.log" 2>&1
echo "ncu rc=$?"; tail -5 "$OUT/ncu.log" | cut -c1-200
if [ -f "$OUT/bound.ncu-rep" ]; then
  ncu -i "$OUT/bound.ncu-rep" --page raw --csv > "$OUT/ncu-raw.csv" 2> "$OUT/ncu-import.log"
  ncu -i "$OUT/bound.ncu-rep" --page details --csv > "$OUT/ncu-details.csv" 2>> "$OUT/ncu-import.log"
  ls -la "$OUT"
fi
cd ..
timeout 90 ncu --clock-control none --section SpeedOfLight --launch-count 3 \
  python3 -m finepar run spmv graph500:14 --devices gpu > "$OUT/ncu-opencl.log" 2>&1
echo "opencl rc=$?"; grep -c "Section: GPU Speed Of Light" "$OUT/ncu-opencl.log"; tail -4 "$OUT/ncu-opencl.log" | cut -c1-200
cd "$OUT" && tar czf all.tgz *.json *.log *.csv 2>/dev/null && rm -f *.json *.log *.csv
gzip -f bound.ncu-rep 2>/dev/null; ls -la
