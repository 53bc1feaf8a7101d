"""Where a one-shot CLI check's seconds go (developer script; on the GPU machine, from the repo root).

    python3 tools/cli_timeline.py RUNS [cuda|cpu] [problem]

Runs ``kernel-mcp check PROBLEM PROBLEM/baseline.py`` RUNS times with KERNEL_MCP_TRACE set and prints, per
run, the phase marks of the CLI and its judge (worker/trace.py) as seconds from the moment the command was
launched, and the wall time of each run.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def one_run(problem: Path, device: str) -> tuple[float, list[tuple[float, str]]]:
    with tempfile.NamedTemporaryFile("r", suffix=".trace") as trace_file:
        env = dict(os.environ, KERNEL_MCP_TRACE=trace_file.name)
        launched = time.time()
        done = subprocess.run([sys.executable, "-m", "kernel_mcp", "check", str(problem), str(problem / "baseline.py"),
                               "--device", device, "--json"], env=env, cwd=REPO, capture_output=True, text=True)
        wall = time.time() - launched
        verdict = json.loads(done.stdout)["verdict"] if done.stdout.startswith("{") else done.stderr[-300:]
        marks = [(wall, f"{'':>7} verdict: {verdict}")]
        for line in trace_file.read().splitlines():
            stamp, pid, label = line.split(" ", 2)
            marks.append((float(stamp) - launched, f"{pid:>7} {label}"))
    return wall, sorted(marks)


HOST_BOOT = r"""
import os, sys, tempfile, time
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()  # a fresh cache, as a candidate host has
t0 = time.perf_counter()
def step(name):
    print(f"{time.perf_counter() - t0:7.3f} bare host: {name}", flush=True)
import torch; step("import torch")
import triton; step("import triton")
if torch.cuda.is_available():
    from triton.runtime import driver
    driver.active.utils; step("triton driver stub (gcc, fresh cache)")
    torch.zeros(1, device="cuda"); torch.cuda.synchronize(); step("CUDA context")
    driver.active.get_current_device(); step("triton current device")
"""


def main() -> None:
    subprocess.run([sys.executable, "-c", HOST_BOOT], check=False)
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    device = sys.argv[2] if len(sys.argv) > 2 else "cuda"
    problem = REPO / "problems" / (sys.argv[3] if len(sys.argv) > 3 else "vector_add")
    walls = []
    for run in range(runs):
        wall, marks = one_run(problem, device)
        walls.append(wall)
        print(f"--- run {run}: {wall:.2f} s wall", flush=True)
        for offset, label in marks:
            if "Progress test" not in label or "test 0" in label:
                print(f"{offset:7.3f} {label}", flush=True)
    print("walls:", " ".join(f"{w:.2f}" for w in walls), "median:", f"{sorted(walls)[len(walls) // 2]:.2f}")


if __name__ == "__main__":
    main()
