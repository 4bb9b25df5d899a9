#!/usr/bin/env bash
# BFS at Graph500 scale 26, nine timed runs in one process then over two ranks (one H200
# each), the session's last code, then the session's start (927ef52, from the device
# copy's history, run by the same probe copied beside it). Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .whl/mpi/*.whl
site=$(python3 -c "import sysconfig; print(sysconfig.get_path('purelib', vars={'base': '/tmp/mpi', 'platbase': '/tmp/mpi'}))")
export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
rm -rf /tmp/base && mkdir -p /tmp/base && git archive 927ef52 | tar -x -C /tmp/base
cp benchmarks/probe_ccranks.py /tmp/base/benchmarks/
probe() {  # label, code root
  (cd "$2/benchmarks" && PYTHONPATH=$site:/tmp/site:$2 timeout 170 python3 probe_ccranks.py \
    graph500:26 --app bfs --ranks 2 --runs 9 --mpiexec /tmp/mpi/bin/mpiexec \
    --json "$OUT/$1.json" > "$OUT/$1.log" 2>&1)
  grep -v -e Warn -e lambda "$OUT/$1.log" | tail -4
}
probe new "$PWD"
probe base /tmp/base
gzip -f "$OUT"/*.json
