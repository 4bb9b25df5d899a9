#!/usr/bin/env bash
# Two H200s, Graph500 scale 26: BFS's timeline at two ranks, Python's default thread switch
# interval then 1 s (is the first bottom-up level's 1-ms stall in own_part's binding a
# hand-over of the GIL to another Python thread?), each set_arg of 20 us or more stamped,
# the live Python threads listed. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .whl/mpi/*.whl
site=$(python3 -c "import sysconfig; print(sysconfig.get_path('purelib', vars={'base': '/tmp/mpi', 'platbase': '/tmp/mpi'}))")
export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
cd benchmarks
for opt in default 1; do
  extra=""; [ $opt != default ] && extra="--switch-interval $opt"
  PYTHONPATH=$site:/tmp/site:$PWD/.. timeout 150 mpiexec -n 2 python3 probe_bfsranks.py \
    graph500:26 --timeline $extra --json "$OUT/timeline-$opt.json" > "$OUT/timeline-$opt.log" 2>&1
  python3 -c "
import json; d=json.load(open('$OUT/timeline-$opt.json'))
print('$opt', 'run ms', round(d['run_s'] * 1e3, 2), 'threads', d['threads'])
for r, t in enumerate(d['timeline']):
    print(r, [(s[0], round(s[2] - s[1], 3)) for s in t['spans'] if s[2] - s[1] > 0.3 and s[0] in ('bind', 'launch', 'kernel', 'zero_hdr', 'stage', 'fill')
              or s[0].startswith(('set_arg', 'alloc', 'gc'))][:30])"
done
gzip -f "$OUT"/*.json
