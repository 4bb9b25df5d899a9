#!/usr/bin/env bash
# Two H200s, Graph500 scale 26, the session's last code against its start (4173c59, from
# the device copy's history, run by today's probes copied beside it): BFS nine runs in one
# process then nine over two ranks, alternated new, base, new, base; BFS's timeline at
# two ranks (new); dist.py's single runs of BFS, CC and PageRank (new), whose one timed
# run is the first after the warm-up. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .whl/mpi/*.whl
site=$(python3 -c "import sysconfig; print(sysconfig.get_path('purelib', vars={'base': '/tmp/mpi', 'platbase': '/tmp/mpi'}))")
export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
rm -rf /tmp/base && mkdir -p /tmp/base && git archive 4173c59 | tar -x -C /tmp/base
cp benchmarks/probe_ccranks.py /tmp/base/benchmarks/
probe() {  # label, code root
  (cd "$2/benchmarks" && PYTHONPATH=$site:/tmp/site:$2 timeout 150 python3 probe_ccranks.py \
    graph500:26 --app bfs --ranks 2 --runs 9 --mpiexec /tmp/mpi/bin/mpiexec \
    --json "$OUT/$1.json" > "$OUT/$1.log" 2>&1)
  grep -v -e Warn -e lambda "$OUT/$1.log" | tail -2
}
probe bfs-new1 "$PWD"
probe bfs-base1 /tmp/base
probe bfs-new2 "$PWD"
probe bfs-base2 /tmp/base
(cd benchmarks && PYTHONPATH=$site:/tmp/site:$PWD/.. timeout 90 mpiexec -n 2 python3 \
  probe_bfsranks.py graph500:26 --timeline --json "$OUT/timeline.json" > "$OUT/timeline.log" 2>&1)
grep -v -e Warn -e lambda "$OUT/timeline.log" | head -9
PYTHONPATH=$site:/tmp/site:$PWD timeout 240 python3 benchmarks/dist.py --scales 26 --ranks 2 \
  --apps bfs,cc,pagerank --check one-process --mpiexec /tmp/mpi/bin/mpiexec \
  --json "$OUT/dist.json" --md "$OUT/dist.md" > "$OUT/dist.log" 2>&1
grep -e ' ms' -e 'graph500-s26' "$OUT/dist.log" | grep -v '  rank' | tail -8
gzip -f "$OUT"/*.json
tar czf /tmp/all.tgz -C "$OUT" . && find "$OUT" -type f -delete && mv /tmp/all.tgz "$OUT/"
