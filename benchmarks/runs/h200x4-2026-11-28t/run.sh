#!/usr/bin/env bash
# Four H200s, Graph500 scale 26, the session's last code: dist.py's one process against
# four ranks for BFS, PageRank and CC (one timed run a process, each answer checked against
# the one process's). Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .whl/mpi/*.whl
site=$(python3 -c "import sysconfig; print(sysconfig.get_path('purelib', vars={'base': '/tmp/mpi', 'platbase': '/tmp/mpi'}))")
export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
PYTHONPATH=$site:/tmp/site:$PWD timeout 470 python3 benchmarks/dist.py --scales 26 --ranks 4 \
  --apps bfs,pagerank,cc --check one-process --mpiexec /tmp/mpi/bin/mpiexec \
  --json "$OUT/dist4.json" --md "$OUT/dist4.md" > "$OUT/dist4.log" 2>&1
grep -e ' ms' -e 'graph500-s26' "$OUT/dist4.log" | grep -v '  rank' | tail -8
gzip -f "$OUT"/*.json
