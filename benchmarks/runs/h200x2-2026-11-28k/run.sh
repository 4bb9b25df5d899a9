#!/usr/bin/env bash
# The session's start (927ef52, from the device copy's history) then the staged parts
# with the marks a work-item a vertex, each probe_bfsranks.py at Graph500 scale 26 on two
# ranks, one GPU each; their timeline; then dist.py's one process against two ranks. Run from the checkout's root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .whl/mpi/*.whl
site=$(python3 -c "import sysconfig; print(sysconfig.get_path('purelib', vars={'base': '/tmp/mpi', 'platbase': '/tmp/mpi'}))")
export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
rm -rf /tmp/base && mkdir -p /tmp/base && git archive 927ef52 | tar -x -C /tmp/base
probe() {  # label, code root, extra args
  (cd "$2/benchmarks" && PYTHONPATH=$site:/tmp/site:$2 timeout 200 mpiexec -n 2 python3 \
    probe_bfsranks.py graph500:26 ${3:-} --json "$OUT/$1.json" > "$OUT/$1.log" 2>&1)
  python3 -c "import json; print('$1', json.load(open('$OUT/$1.json'))['run_s'])"
}
for round in 1 2; do
  probe base$round /tmp/base
  probe new$round "$PWD"
done
probe timeline "$PWD" --timeline
grep -v -e Warn -e lambda "$OUT/timeline.log"
rm -f "$OUT"/*.prof
PYTHONPATH=$site:/tmp/site:$PWD timeout 330 python3 benchmarks/dist.py --scales 26 --ranks 2 \
  --apps bfs --check one-process --mpiexec /tmp/mpi/bin/mpiexec --json "$OUT/dist.json" \
  --md "$OUT/dist.md" > "$OUT/dist.log" 2>&1
tail -25 "$OUT/dist.log"
gzip -f "$OUT"/*.json
tar czf "$OUT/all.tgz" -C "$OUT" --exclude all.tgz --exclude commit.txt .
find "$OUT" -type f ! -name all.tgz ! -name commit.txt -delete
