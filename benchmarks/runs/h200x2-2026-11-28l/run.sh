#!/usr/bin/env bash
# The session's last code on two H200s at Graph500 scale 26: dist.py's one process
# against two ranks for BFS, CC and PageRank (issue 32's table); BFS's timeline at two
# ranks; then the session's start (927ef52, from the device copy's history) for BFS in
# the same lease. Run from the checkout's root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .whl/mpi/*.whl
site=$(python3 -c "import sysconfig; print(sysconfig.get_path('purelib', vars={'base': '/tmp/mpi', 'platbase': '/tmp/mpi'}))")
export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
rm -rf /tmp/base && mkdir -p /tmp/base && git archive 927ef52 | tar -x -C /tmp/base
dist() {  # label, code root, apps, time limit
  PYTHONPATH=$site:/tmp/site:$2 timeout "$4" python3 "$2/benchmarks/dist.py" --scales 26 \
    --ranks 2 --apps "$3" --check one-process --mpiexec /tmp/mpi/bin/mpiexec \
    --json "$OUT/$1.json" --md "$OUT/$1.md" > "$OUT/$1.log" 2>&1
  grep -e ' ms' -e 'graph500-s26' "$OUT/$1.log" | grep -v '  rank' | tail -8
}
dist dist-new "$PWD" bfs,cc,pagerank 300
(cd benchmarks && PYTHONPATH=$site:/tmp/site:$PWD/.. timeout 120 mpiexec -n 2 python3 \
  probe_bfsranks.py graph500:26 --timeline --json "$OUT/timeline.json" > "$OUT/timeline.log" 2>&1)
grep -v -e Warn -e lambda "$OUT/timeline.log" | head -20
dist dist-base /tmp/base bfs 150
gzip -f "$OUT"/*.json
tar czf /tmp/all.tgz -C "$OUT" . && find "$OUT" -type f -delete && mv /tmp/all.tgz "$OUT/"
