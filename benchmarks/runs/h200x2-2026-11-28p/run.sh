#!/usr/bin/env bash
# Call p (the machine of call o, still warm): BFS nine runs in one process then nine over
# two ranks, the session's start (4173c59, from the device copy's history, with today's
# probe_ccranks.py copied beside it) then the kernels-per-engine change (1ee7651).
# As run (one line in the device tool); OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .whl/mpi/*.whl
site=$(python3 -c "import sysconfig; print(sysconfig.get_path('purelib', vars={'base': '/tmp/mpi', 'platbase': '/tmp/mpi'}))")
export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
rm -rf /tmp/base && mkdir -p /tmp/base && git archive 4173c59 | tar -x -C /tmp/base
cp benchmarks/probe_ccranks.py /tmp/base/benchmarks/
for lab in base new; do
  root=$PWD; [ $lab = base ] && root=/tmp/base
  (cd $root/benchmarks && PYTHONPATH=$site:/tmp/site:$root timeout 150 python3 probe_ccranks.py \
    graph500:26 --app bfs --ranks 2 --runs 9 --mpiexec /tmp/mpi/bin/mpiexec \
    --json "$OUT/bfs-$lab.json" > "$OUT/bfs-$lab.log" 2>&1)
  grep -v -e Warn -e lambda "$OUT/bfs-$lab.log" | tail -2
done
gzip -f $OUT/*.json
