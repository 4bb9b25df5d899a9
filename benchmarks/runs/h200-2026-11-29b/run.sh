#!/usr/bin/env bash
# One H200: probe_rowblocks.py with a cut row's slots folded inside the stream launch by its
# last segment (no apply launch), seven geometries, and the PTX of the fold's fence; then
# the session's start (49b2e5d, carried in .carry8/base) at two geometries, in the same
# call. cnr-2000, soc-Slashdot0902, Graph500 scales 18, 20 and 22. Run from the root with
# OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data
G=cnr-2000.mtx.gz,soc-Slashdot0902.txt.gz,graph500:18,graph500:20,graph500:22
cd benchmarks
PYTHONPATH=/tmp/site:$PWD/.. FINEPAR_CACHE_DIR=/tmp/cache-new timeout 280 python3 \
  probe_rowblocks.py --ptx --graphs $G \
  --variants 1024:256:8,2048:256:8,2048:128:8,1024:128:8,4096:256:8,2048:256:0,512:128:16 \
  --json "$OUT/rowblocks-fold.json" > "$OUT/rowblocks-fold.log" 2>&1
PYTHONPATH=/tmp/site:$PWD/../.carry8/base FINEPAR_CACHE_DIR=/tmp/cache-base timeout 150 \
  python3 probe_rowblocks.py --graphs $G --variants 1024:256:8,2048:256:8 --no-cupy \
  --json "$OUT/rowblocks-base.json" > "$OUT/rowblocks-base.log" 2>&1
grep -v -e Warn -e lambda "$OUT/rowblocks-fold.log" "$OUT/rowblocks-base.log"
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
