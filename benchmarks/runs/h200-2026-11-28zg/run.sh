#!/usr/bin/env bash
# One H200: a library user's repeated finepar.run calls (nothing passed) by the session's
# start (6ddcd15: a pair opened per call, no kept engine) and by the new code (the process
# keeps its pairs; each thread the prepared engines of small inputs), in turn: new, base,
# new. probe_calls.py, every app, seven real graphs, 8 calls after the first. Each process
# has its own FINEPAR_CACHE_DIR. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data
rm -rf /tmp/base && mkdir -p /tmp/base && git archive 6ddcd15 | tar -x -C /tmp/base
cp benchmarks/probe_calls.py /tmp/base/benchmarks/
ln -s "$PWD/.data" /tmp/base/.data
git rev-parse HEAD > "$OUT/commit.txt"  # the device copy: the session start; see commit.txt
probe() {  # label, code root, seconds
  (cd "$2/benchmarks" && FINEPAR_CACHE_DIR=/tmp/cache-$1 PYTHONPATH=/tmp/site:$2 \
    timeout "$3" python3 probe_calls.py --repeats 8 \
    --real USPowerGrid,adder_dcop_05,ca-GrQc,wiki-Vote,memplus,luxembourg,cnr-2000 \
    --json "$OUT/$1.json" > "$OUT/$1.log" 2>&1)
  echo "== $1 rc=$?"; grep -v -e Warn -e lambda "$OUT/$1.log"
}
probe new1 "$PWD" 110
probe base1 /tmp/base 250
probe new2 "$PWD" 110
cd "$OUT" && tar czf all.tgz *.json *.log commit.txt && rm -f *.json *.log
