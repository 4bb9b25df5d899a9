#!/usr/bin/env bash
# One stage of the measurements on the lent GPU machine (no network; see DEVELOPERS.md).
# Run from the repo root with the wheels in .whl/, the real inputs in .data/ and (for the
# apps stage's previous FinePar) `git archive 8f3c88e` in .prev/ carried:
#   bash benchmarks/run_gpu.sh STAGE [extra args for the stage's script]
# Stages: check, train, throttle, apps, best_device, pipeline, peers, suite, sweep, probe,
# probe_pagerank, probe_sssp, probe_bfs, probe_spmv_tile and probe_spmv_bound (CuPy), probe_host, probe_group, probe_builds, probe_calls and probe_rowblocks (carry .data), probe_ccgroup (carry .data), probe_pinned, probe_p2p, probe_extmem, probe_halo, probe_bfsranks and probe_ccranks (under mpiexec), e2e, profile, dist,
# dist_range (a Graph500 graph generated rank by rank, answers checked by range),
# nxbackend (with the wheels of .whl/nx/), tiling.
# Everything a stage writes goes to $OUT (RESULTS.md with the stage's section, JSON, models,
# training measurements) as it goes, so a stage cut off by its time limit still returns what
# it finished. The benchmark stages stop starting new work after $BUDGET_S seconds (default
# 480, inside the 600 s a command may run; a --budget-s among the extra args wins).
# Graph500 graphs are generated once and cached under $FINEPAR_CACHE (default
# /tmp/finepar-cache): later stages of the same call (or of later calls while the machine
# stays warm) read them, and their references, from there.
# Training resumes from training/ in the checkout.
set -u
stage=${1:?stage: check, train, throttle, apps, best_device, pipeline, peers, suite, sweep, probe, e2e, profile, dist, nxbackend or tiling}; shift
out=${OUT:-/tmp/finepar-out}
mkdir -p "$out"
extra=()
[ "$stage" = nxbackend ] && extra=(.whl/nx/*.whl)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl "${extra[@]}" || exit 1
# Byte-compile the checkout and the packages every process imports, once, as `pip install`
# does for a user: the machine sets PYTHONDONTWRITEBYTECODE and ships numpy and scipy without
# byte code, so otherwise every fresh process compiles every module it imports (0.95 s of
# each `finepar run` at scale 24 on the H100, 2026-11-25; CuPy's jobs alike)
python3 -m compileall -q -j 0 finepar benchmarks $(python3 -c "
import importlib.util as u, os
for m in ('numpy', 'scipy', 'cupy', 'cupyx', 'fastrlock'):
    s = u.find_spec(m)
    if s and s.origin: print(os.path.dirname(s.origin))") > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 FINEPAR_DATA=$PWD/.data
export FINEPAR_CACHE=${FINEPAR_CACHE:-/tmp/finepar-cache}
budget=(--budget-s "${BUDGET_S:-480}")
# PoCL there offers the CPU 1 GiB per allocation (POCL_MEMORY_LIMIT can only lower it);
# FinePar keeps each share within its device's limit
# stages of one command share $out/RESULTS.md: start from the checkout's only once
case $stage in
  sweep|suite|peers|throttle|apps|best_device|pipeline|dist|dist_range|e2e|nxbackend|tiling)
    [ -f "$out/RESULTS.md" ] || cp benchmarks/RESULTS.md "$out/RESULTS.md" ;;
esac
platform=$(python3 -c "from finepar.api import make_pair; from finepar.split.perfmodel import platform_name; print(platform_name(make_pair().selection))")
echo "platform: $platform"
md=(--md "$out/RESULTS.md")
case $stage in
  check)
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader
    python3 -m finepar devices | tee "$out/devices.txt"
    python3 benchmarks/check_apps.py --scale "${1:-20}" | tee "$out/check.txt"
    for devices in both gpu; do
      python3 -m finepar run pagerank graph500:22 --devices "$devices" \
        --json "$out/pagerank-s22-$devices.json" -o "/tmp/pagerank-s22-$devices.npy" \
        | tee -a "$out/check.txt"
    done
    python3 -c "
import numpy as np, sys
sys.path.insert(0, '.')
from finepar.io.graph500 import kronecker
from finepar.apps.pagerank import reference_pagerank
g = kronecker(22)
ref = reference_pagerank(g)
for d in ('both', 'gpu'):
    pr = np.load('/tmp/pagerank-s22-%s.npy' % d)
    print('pagerank graph500:22 --devices %s: L1 to the float64 reference %.2e' % (d, np.abs(pr - ref).sum()))
" | tee -a "$out/check.txt" ;;
  train)
    # measurements, train.log and the model under $OUT (progress: one line per matrix on stderr)
    mkdir -p "$out/training" "$out/models"
    [ -d "training/$platform" ] && cp -r "training/$platform" "$out/training/"
    python3 -m finepar train --recipe "${1:-full}" --platform "$platform" \
      --training-dir "$out/training" --models-dir "$out/models" ;;
  throttle) python3 benchmarks/throttle.py "${md[@]}" --json "$out/throttle.json" "${budget[@]}" "$@" ;;
  apps) python3 benchmarks/apps.py "${md[@]}" --json "$out/apps.json" "${budget[@]}" "$@" ;;
  best_device) python3 benchmarks/best_device.py "${md[@]}" --json "$out/best_device.json" "${budget[@]}" "$@" ;;
  pipeline) python3 benchmarks/pipeline.py "${md[@]}" --json "$out/pipeline.json" "${budget[@]}" "$@" ;;
  peers) python3 benchmarks/peers.py "${md[@]}" --json "$out/peers.json" "${budget[@]}" "$@" ;;
  suite) python3 benchmarks/suite.py "${md[@]}" --json "$out/compare.json" "${budget[@]}" "$@" ;;
  sweep) python3 benchmarks/sweep.py "${md[@]}" --json "$out/sweep.json" "${budget[@]}" "$@" ;;
  nxbackend) python3 benchmarks/nxbackend.py "${md[@]}" --json "$out/nxbackend.json" "${budget[@]}" "$@" ;;
  tiling) python3 benchmarks/tiling.py "${md[@]}" --json "$out/tiling.json" "${budget[@]}" "$@" ;;
  probe) python3 benchmarks/probe.py --json "$out/probe.json" "$@" ;;
  probe_pagerank) python3 benchmarks/probe_pagerank.py --json "$out/probe_pagerank.json" "${budget[@]}" "$@" ;;
  probe_sssp) python3 benchmarks/probe_sssp.py --json "$out/probe_sssp.json" "${budget[@]}" "$@" ;;
  probe_bfs) python3 benchmarks/probe_bfs.py --json "$out/probe_bfs.json" "${budget[@]}" "$@" ;;
  probe_spmv_tile) python3 benchmarks/probe_spmv_tile.py --json "$out/probe_spmv_tile.json" "$@" ;;
  probe_spmv_bound) python3 benchmarks/probe_spmv_bound.py --json "$out/probe_spmv_bound.json" "$@" ;;
  probe_host) python3 benchmarks/probe_host.py --json "$out/probe_host.json" "${budget[@]}" "$@" ;;
  probe_ccgroup) python3 benchmarks/probe_ccgroup.py --json "$out/probe_ccgroup.json" "$@" ;;
  probe_group) python3 benchmarks/probe_group.py --json "$out/probe_group.json" "$@" ;;
  probe_builds) python3 benchmarks/probe_builds.py --json "$out/probe_builds.json" "$@" ;;
  probe_calls) python3 benchmarks/probe_calls.py --json "$out/probe_calls.json" "$@" ;;
  probe_rowblocks) python3 benchmarks/probe_rowblocks.py --json "$out/probe_rowblocks.json" "$@" ;;
  probe_pinned) python3 benchmarks/probe_pinned.py --json "$out/probe_pinned.json" "$@" ;;
  probe_p2p) python3 benchmarks/probe_p2p.py --json "$out/probe_p2p.json" "$@" ;;
  probe_extmem) python3 benchmarks/probe_extmem.py --json "$out/probe_extmem.json" "$@" ;;
  e2e) python3 benchmarks/e2e.py "${md[@]}" --json "$out/e2e.json" "${budget[@]}" "$@" ;;
  profile)
    # cProfile of `finepar run` per app on Graph500 scale ${1:-24} (generated into the cache)
    scale=${1:-24}; shift || true
    python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from inputs import load_input; load_input('graph500:$scale')"
    python3 benchmarks/profile_prep.py "$(ls "$FINEPAR_CACHE"/graph500-s$scale-ef16-seed0-*.npz | head -1)" \
      --again --keep /tmp/pstats --json "$out/profile.json" "$@"
    tar czf "$out/pstats.tgz" -C /tmp pstats ;;
  dist|dist_range|probe_halo|probe_bfsranks|probe_ccranks)
    # MPI from the wheels in .whl/mpi/ (mpich, and mpi4py for this Python), installed under a
    # prefix: pip --target drops MPICH's lib/, which mpi4py loads libmpi from
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --prefix /tmp/mpi \
      .whl/mpi/*.whl || exit 1
    site=$(python3 -c "import sysconfig; print(sysconfig.get_path('purelib', vars={'base': '/tmp/mpi', 'platbase': '/tmp/mpi'}))")
    export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-} \
      PYTHONPATH=$site:$PYTHONPATH
    if [ "$stage" = probe_halo ]; then  # mpiexec -n ${RANKS:-2}; args: GRAPH [--variants ...]
      mpiexec -n "${RANKS:-2}" python3 benchmarks/probe_halo.py "$@" --json "$out/probe_halo.json"
    elif [ "$stage" = probe_bfsranks ]; then  # mpiexec -n ${RANKS:-2}; args: GRAPH
      mpiexec -n "${RANKS:-2}" python3 benchmarks/probe_bfsranks.py "$@" --json "$out/probe_bfsranks.json"
    elif [ "$stage" = probe_ccranks ]; then  # args: GRAPH [--ranks P --runs R --exchange X]
      python3 benchmarks/probe_ccranks.py "$@" --mpiexec /tmp/mpi/bin/mpiexec \
        --json "$out/probe_ccranks.json"
    elif [ "$stage" = dist ]; then
      python3 benchmarks/dist.py "${md[@]}" --json "$out/dist.json" \
        --mpiexec /tmp/mpi/bin/mpiexec "${budget[@]}" "$@"
    else  # the graph generated rank by rank: no budget between stages, --timeout-s bounds it
      python3 benchmarks/dist_range.py "${md[@]}" --json "$out/dist_range.json" \
        --mpiexec /tmp/mpi/bin/mpiexec "$@"
    fi ;;
  *) echo "unknown stage $stage"; exit 2 ;;
esac
