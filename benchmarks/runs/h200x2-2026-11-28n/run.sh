#!/usr/bin/env bash
# Two H200s, Graph500 scale 26, the session's start (the last session's f1f17ba fixes:
# staged words-form parts, two-layout marks): BFS's timeline at two ranks with the launch's
# steps and Python's collections stamped (the 1.3-ms stall at the first bottom-up level);
# then nine BFS runs in one process against nine over two ranks. Run from the root, OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .whl/mpi/*.whl
site=$(python3 -c "import sysconfig; print(sysconfig.get_path('purelib', vars={'base': '/tmp/mpi', 'platbase': '/tmp/mpi'}))")
export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
cd benchmarks
PYTHONPATH=$site:/tmp/site:$PWD/.. timeout 150 mpiexec -n 2 python3 probe_bfsranks.py \
  graph500:26 --timeline --json "$OUT/timeline.json" > "$OUT/timeline.log" 2>&1
grep -v -e Warn -e lambda "$OUT/timeline.log" | head -20
PYTHONPATH=$site:/tmp/site:$PWD/.. timeout 250 python3 probe_ccranks.py graph500:26 --app bfs \
  --ranks 2 --runs 9 --mpiexec /tmp/mpi/bin/mpiexec --json "$OUT/bfs.json" > "$OUT/bfs.log" 2>&1
grep -v -e Warn -e lambda "$OUT/bfs.log" | tail -5
gzip -f "$OUT"/*.json
tar czf /tmp/all.tgz -C "$OUT" . && find "$OUT" -type f -delete && mv /tmp/all.tgz "$OUT/"
