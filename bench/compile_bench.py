"""Compile latency for BENCHMARKS.md (issue 4): each bundled baseline for six targets, cold (empty caches:
ours and Triton's) and then a cache hit. Run from the repo root: ``python bench/compile_bench.py``."""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TARGETS = ["sm_80", "sm_90a", "sm_100", "gfx90a", "gfx942", "gfx950"]


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["KERNEL_MCP_CACHE"] = cache
        from kernel_mcp.tools.compile import compile
        print("| problem | kernels x targets | cold s | cache hit ms (median of 5) |\n|---|---|---|---|")
        for folder in sorted(p for p in (REPO / "problems").iterdir() if (p / "task.yml").exists()):
            started = time.perf_counter()
            result = compile(folder / "baseline.py", targets=TARGETS)
            cold = time.perf_counter() - started
            hits = []
            for _ in range(5):
                started = time.perf_counter()
                again = compile(folder / "baseline.py", targets=TARGETS)
                hits.append((time.perf_counter() - started) * 1e3)
                assert again.cached
            print(f"| {folder.name} | {len(result.builds)} | {cold:.2f} | {statistics.median(hits):.1f} |", flush=True)


if __name__ == "__main__":
    main()
