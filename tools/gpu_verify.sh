#!/usr/bin/env bash
# Run on the GPU machine (device tool) from the repo root: installs the carried wheels, then runs the
# whole test suite (GPU-marked tests included) and checks every bundled candidate on the device.
# Usage: bash tools/gpu_verify.sh [pytest args...]; logs go to $OUT (or ./gpu-out).
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name())'; } | tee "$OUT/env.txt"
start=$(date +%s)
# timing tests run alone afterwards: tests sharing the GPU would disturb their measurements
python3 -m pytest -q -p no:cacheprovider -n 8 --ignore tests/test_gpu_profile.py "$@" 2>&1 | tee "$OUT/pytest.txt" | tail -30
echo "pytest wall: $(( $(date +%s) - start )) s" | tee -a "$OUT/pytest.txt"
start=$(date +%s)
python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu_profile.py 2>&1 | tee "$OUT/pytest_gpu_profile.txt" | tail -30
echo "timing tests wall: $(( $(date +%s) - start )) s" | tee -a "$OUT/pytest_gpu_profile.txt"
check_one() {
  p=$(echo "$1" | cut -d/ -f1-2)
  v=$(python3 -m kernel_mcp check "$p" "$1" --device cuda --json 2>/dev/null | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["verdict"], "|", round(r["seconds"],1), "s |", ",".join(f["code"] for f in r["findings"]))')
  printf '%-66s %s\n' "$1" "$v"
}
export -f check_one
[ "${SKIP_TABLE:-0}" = 1 ] || ls problems/*/baseline.py problems/*/solutions/*/*.py | xargs -P 8 -I{} bash -c 'check_one {}' | sort | tee "$OUT/candidates.txt"
[ "${SKIP_DEMO:-0}" = 1 ] || python3 -m kernel_mcp demo --device cuda 2>&1 | tee "$OUT/demo.txt" | tail -12
