#!/usr/bin/env bash
# Two H200s, Graph500 scale 26: BFS's timeline at two ranks with each slow set_arg stamped
# (which argument's set stalls the first bottom-up level's own_part until the device
# idles), twice. Run from the root with OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --prefix /tmp/mpi .whl/mpi/*.whl
site=$(python3 -c "import sysconfig; print(sysconfig.get_path('purelib', vars={'base': '/tmp/mpi', 'platbase': '/tmp/mpi'}))")
export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
cd benchmarks
for i in 1 2; do
  PYTHONPATH=$site:/tmp/site:$PWD/.. timeout 150 mpiexec -n 2 python3 probe_bfsranks.py \
    graph500:26 --timeline --json "$OUT/timeline$i.json" > "$OUT/timeline$i.log" 2>&1
  grep -v -e Warn -e lambda "$OUT/timeline$i.log" | head -3
  python3 -c "
import json; d=json.load(open('$OUT/timeline$i.json'))
for r, t in enumerate(d['timeline']):
    print(r, [(s[0], round(s[2] - s[1], 3)) for s in t['spans'] if s[0].startswith(('set_arg', 'alloc', 'gc'))])"
done
gzip -f "$OUT"/*.json
