#!/usr/bin/env bash
# One H200: BFS and SSSP on the usual path (Graph500 scales 18, 20, 22) and PageRank at
# scale 20, by the session's start (3a70eb9, from the device copy's history, today's probe
# beside it) and by the launches bound on the engine's own kernels, in turn twice:
# probe_group.py, FinePar's default beside scipy, 9 rounds. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data FINEPAR_CACHE=/tmp/finepar-cache
rm -rf /tmp/base && mkdir -p /tmp/base && git archive 3a70eb9 | tar -x -C /tmp/base
cp benchmarks/probe_group.py /tmp/base/benchmarks/
ln -s "$PWD/.data" /tmp/base/.data
probe() {  # label, code root, args
  local label=$1 root=$2; shift 2
  (cd "$root/benchmarks" && PYTHONPATH=/tmp/site:$root timeout 200 python3 probe_group.py \
    --real none --repeats 9 "$@" --json "$OUT/$label.json" > "$OUT/$label.log" 2>&1)
  grep -v -e Warn -e lambda -e generat "$OUT/$label.log"
}
for i in 1 2; do
  probe new$i "$PWD" --scales 18,20,22 --apps bfs,sssp
  probe base$i /tmp/base --scales 18,20,22 --apps bfs,sssp
done
probe pr-new "$PWD" --scales 20 --apps pagerank
probe pr-base /tmp/base --scales 20 --apps pagerank
cd "$OUT" && tar czf all.tgz *.json *.log && rm -f *.json *.log
