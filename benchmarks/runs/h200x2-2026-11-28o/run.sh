#!/usr/bin/env bash
# Two H200s, Graph500 scale 26: BFS, nine runs in one process against nine over two ranks,
# at the kernels-per-engine change (bindings kept across runs), then at the session's
# start (33db28f: not in the device copy's history, so that probe did not run; call p ran
# 4173c59 instead) in the same lease; CC the same way at
# the change; BFS's timeline at two ranks. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .whl/mpi/*.whl
site=$(python3 -c "import sysconfig; print(sysconfig.get_path('purelib', vars={'base': '/tmp/mpi', 'platbase': '/tmp/mpi'}))")
export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
rm -rf /tmp/base && mkdir -p /tmp/base && git archive 33db28f | tar -x -C /tmp/base
probe() {  # label, code root, app
  (cd "$2/benchmarks" && PYTHONPATH=$site:/tmp/site:$2 timeout 200 python3 probe_ccranks.py \
    graph500:26 --app "$3" --ranks 2 --runs 9 --mpiexec /tmp/mpi/bin/mpiexec \
    --json "$OUT/$1.json" > "$OUT/$1.log" 2>&1)
  grep -v -e Warn -e lambda "$OUT/$1.log" | tail -3
}
probe bfs-new "$PWD" bfs
probe bfs-base /tmp/base bfs
probe cc-new "$PWD" cc
(cd benchmarks && PYTHONPATH=$site:/tmp/site:$PWD/.. timeout 100 mpiexec -n 2 python3 \
  probe_bfsranks.py graph500:26 --timeline --json "$OUT/timeline.json" > "$OUT/timeline.log" 2>&1)
grep -v -e Warn -e lambda "$OUT/timeline.log" | head -16
gzip -f "$OUT"/*.json
tar czf /tmp/all.tgz -C "$OUT" . && find "$OUT" -type f -delete && mv /tmp/all.tgz "$OUT/"
