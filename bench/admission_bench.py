"""How many checks an hour the device's memory admission lets through, with and without backfill (issue 38).

    python bench/admission_bench.py [--checks 120] [--jobs 12] [--repeats 3] [--large-share 0.25] [--scale 50]

The real lease (kernel_mcp/worker/lease.py: its lock files and ledger) on a stand-in GPU of 80 GiB, so it runs on
any machine: ``--jobs`` threads take checks from one queue, as a batch's slots do, and each holds the lease shared
with its check's memory reserved for its check's time. The mix: a ``--large-share`` of the checks need 24 GiB
(a level-1 KernelBench problem at its published size: 4_Matrix_vector_multiplication_'s check took 26 GiB on an
H100), the rest 3 GiB; a large check holds the device 30 s, a small one 15 s (``cases`` and the reference's runs on
an H100, thirty-second session), all divided by ``--scale``. Run with the backfill off (``BACKFILL_S`` 0: a check
waiting for memory keeps the turnstile, and every check behind it waits) and on (60 s, divided by ``--scale``),
alternated, ``--repeats`` times each. Prints checks an hour in real time (the scale undone) and the share of the
device's memory budget reserved on average. The order of the checks is the same in every run (seeded).
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernel_mcp.worker import lease  # noqa: E402
from kernel_mcp.worker.protocol import Device  # noqa: E402

GIB = 1 << 30
GPU = Device(kind="cuda", index=0, vendor="nvidia", name="stand-in 80 GiB GPU", uuid="GPU-admission-bench",
             total_memory_bytes=80 * GIB)  # no such GPU: NVML reports nothing, the ledger alone admits
LARGE, SMALL = (24 * GIB, 30.0), (3 * GIB, 15.0)  # need, seconds held


def workload(checks: int, large_share: float, seed: int = 38) -> list[tuple[int, float]]:
    rng = random.Random(seed)
    return [LARGE if rng.random() < large_share else SMALL for _ in range(checks)]


def run(checks: list[tuple[int, float]], jobs: int, scale: float, backfill_s: float) -> dict:
    """Every check through the lease, ``jobs`` at a time; the wall time and the reserved memory over it."""
    lease.BACKFILL_S = backfill_s
    todo: queue.SimpleQueue = queue.SimpleQueue()
    for check in checks:
        todo.put(check)
    lock, spans = threading.Lock(), []  # (start, end, bytes) of each hold

    def slot() -> None:
        while True:
            try:
                need, seconds = todo.get_nowait()
            except queue.Empty:
                return
            with lease.hold(GPU, exclusive=False, need_bytes=need):
                began = time.monotonic()
                time.sleep(seconds / scale)
                with lock:
                    spans.append((began, time.monotonic(), need))

    began = time.monotonic()
    threads = [threading.Thread(target=slot) for _ in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - began
    budget = lease.MEMORY_BUDGET * GPU.total_memory_bytes
    used = sum((end - start) * need for start, end, need in spans) / (wall * budget)
    return {"wall_s": round(wall, 2), "per_hour": round(3600 * len(checks) / (wall * scale)),
            "memory_budget_used": round(used, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", type=int, default=120)
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--large-share", type=float, default=0.25)
    parser.add_argument("--scale", type=float, default=50.0, help="times faster than real time")
    args = parser.parse_args()
    os.environ["KERNEL_MCP_CACHE"] = tempfile.mkdtemp(prefix="kmcp-admission-")  # a lease of its own
    checks = workload(args.checks, args.large_share)
    results: dict[str, list[dict]] = {"off": [], "on": []}
    for _ in range(args.repeats):
        for name, backfill in (("off", 0.0), ("on", 60.0 / args.scale)):
            results[name].append(run(checks, args.jobs, args.scale, backfill))
            print(name, results[name][-1], flush=True)
    summary = {name: {"per_hour_median": statistics.median(r["per_hour"] for r in runs),
                      "memory_budget_used_median": statistics.median(r["memory_budget_used"] for r in runs)}
               for name, runs in results.items()}
    summary["ratio_on_over_off"] = round(summary["on"]["per_hour_median"] / summary["off"]["per_hour_median"], 2)
    summary["settings"] = vars(args) | {"large": sum(c == LARGE for c in checks), "small": sum(c == SMALL for c in checks)}
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
