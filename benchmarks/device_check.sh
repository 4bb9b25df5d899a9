#!/usr/bin/env bash
# Check a machine's OpenCL set-up as FinePar sees it, then a short correctness run.
# Meant for the lent GPU machine (no network): run from the repo root after
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site:$PWD
# Usage: benchmarks/device_check.sh [SCALE]
set -u
scale=${1:-18}
echo "== host"
nproc; python3 --version
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -2
echo "== OpenCL ICD registrations"
ls -la /etc/OpenCL/vendors 2>&1
for f in /etc/OpenCL/vendors/*.icd; do [ -f "$f" ] && echo "$f: $(cat "$f")"; done
ldconfig -p 2>/dev/null | grep -i -E "opencl|pocl" | head
echo "== python packages"
python3 - <<'PY'
import importlib
for m in ("numpy", "scipy", "sklearn", "networkx", "matplotlib", "tqdm", "pyopencl",
          "fast_matrix_market", "cupy", "graphblas", "pymetis"):
    try:
        mod = importlib.import_module(m)
        print(f"{m:20s} {getattr(mod, '__version__', getattr(mod, 'VERSION_TEXT', '?'))}")
    except Exception as exc:  # noqa: BLE001
        print(f"{m:20s} MISSING ({type(exc).__name__})")
PY
echo "== finepar devices"
python3 -m finepar devices
echo "== correctness on graph500:$scale (split memory, both devices)"
python3 benchmarks/check_apps.py --scale "$scale"
