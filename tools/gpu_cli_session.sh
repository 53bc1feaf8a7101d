#!/usr/bin/env bash
# One device call for the CLI's speed and the suite (developer script, GPU machine, repo root; wheels in .whl,
# .bench/before = commit 98e60f4's kernel_mcp, .bench/prev = the previous session's). Logs to $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
date -u | tee "$OUT/env.txt"
python3 - <<'PY' | tee "$OUT/bare.txt"
import subprocess, sys, time
for code in ("pass", "import typer, rich.console", "import pydantic", "import kernel_mcp.cli.main", "import torch",
             "import torch"):
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    print(f"bare: python -c {code!r}: {time.perf_counter() - started:.2f} s", flush=True)
PY
python3 tools/cli_timeline.py 2 cuda > "$OUT/timeline.txt" 2>&1; tail -1 "$OUT/timeline.txt"
python3 bench/agent_speed.py "$OUT/cli" --before .bench/before --device cuda --rounds 4 --parts cli 2>&1 | tail -3
start=$(date +%s)
timeout 300 python3 -m pytest -q -p no:cacheprovider -n 8 --ignore tests/test_gpu_profile.py -o console_output_style=count \
  > "$OUT/pytest.txt" 2>&1
echo "suite rc $? in $(( $(date +%s) - start )) s"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest.txt" | tail -15
timeout 140 python3 bench/agent_speed.py "$OUT/server" --before .bench/prev --device cuda --rounds 1 --parts server 2>&1 | tail -12
