#!/usr/bin/env bash
# One H200: a small input's BFS and SSSP (one work-group's levels) by the session's start
# (3a70eb9, from the device copy's history, with today's probe copied beside it) and by
# the new kernel, in turn twice: probe_group.py, FinePar's default beside scipy, 15 rounds.
# Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data
rm -rf /tmp/base && mkdir -p /tmp/base && git archive 3a70eb9 | tar -x -C /tmp/base
cp benchmarks/probe_group.py /tmp/base/benchmarks/
ln -s "$PWD/.data" /tmp/base/.data
probe() {  # label, code root
  (cd "$2/benchmarks" && PYTHONPATH=/tmp/site:$2 timeout 120 python3 probe_group.py \
    --real USPowerGrid,adder_dcop_05,ca-GrQc,rajat01,wiki-Vote,memplus,luxembourg \
    --json "$OUT/$1.json" > "$OUT/$1.log" 2>&1)
  grep -v -e Warn -e lambda "$OUT/$1.log"
}
probe new1 "$PWD"
probe base1 /tmp/base
probe new2 "$PWD"
probe base2 /tmp/base
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
