"""What a wait on a shared GPU costs the CPU, spinning (CUDA's default) and asleep (worker/host/device_wait.py),
and that a timed call's figures do not change with it.

Part 1, ``waiters``: PROCS processes on one GPU, each for SECONDS making float64 matmuls and waiting for each (as a
judge waits for its float64 truth while a dozen others share the device), once spinning and once asleep: the CPU
seconds each used and the matmuls all made. Part 2, ``timing``: one process times a small kernel with
``timing.timed_call`` from a context spinning and from one asleep, interleaved: the medians of op, wall and tail
times.

    python bench/device_wait_bench.py --procs 12 --seconds 20 > device_wait.json
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _waiter(asleep: bool, seconds: float, size: int, start: float, queue) -> None:
    import torch

    from kernel_mcp.worker.host import device_wait
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    if asleep:
        device_wait.asleep("cuda")
    a = torch.randn(size, size, dtype=torch.float64, device="cuda")
    while time.time() < start:  # all begin together, contexts made
        time.sleep(0.01)
    cpu0, made = _cpu_s(), 0
    while time.time() < start + seconds:
        (a @ a).sum().item()  # the wait a comparison makes
        made += 1
    queue.put({"cpu_s": round(_cpu_s() - cpu0, 2), "matmuls": made, "mode": device_wait.scheduling()})


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def waiters(procs: int, seconds: float, size: int, asleep: bool) -> dict:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    start = time.time() + 25  # a spawned process imports torch and makes its context in a few seconds
    workers = [context.Process(target=_waiter, args=(asleep, seconds, size, start, queue)) for _ in range(procs)]
    for worker in workers:
        worker.start()
    rows = [queue.get(timeout=seconds + 120) for _ in workers]
    for worker in workers:
        worker.join()
    cpu = [row["cpu_s"] for row in rows]
    return {"asleep": asleep, "procs": procs, "seconds": seconds, "cpu_s_total": round(sum(cpu), 1),
            "cpu_s_median": statistics.median(cpu), "matmuls": sum(row["matmuls"] for row in rows),
            "modes": sorted({row["mode"] for row in rows})}


def timing(calls: int) -> dict:
    """A timed call's figures from a context spinning and from one asleep, interleaved (timed calls run in
    processes booted for timing, which keep CUDA's default: this shows what the other mode would read)."""
    import torch

    from kernel_mcp.worker.host import device_wait, timing as clocks
    torch.zeros(1, device="cuda")
    x = torch.randn(1 << 20, device="cuda")
    clock = clocks.Clock("cuda")
    modes = {"spinning": device_wait.SCHED_SPIN, "asleep": device_wait.SCHED_BLOCKING_SYNC}
    figures: dict[str, list] = {mode: [] for mode in modes}
    for i in range(len(modes) * calls):
        mode = list(modes)[i % len(modes)]
        device_wait.set_scheduling(modes[mode])
        _, call = clocks.timed_call(torch.nn.functional.gelu, x, clock)
        figures[mode].append((call.op_ms, call.wall_ms, call.tail_ms))
    median = {mode: {name: round(statistics.median(row[k] for row in rows), 4)
                     for k, name in enumerate(("op_ms", "wall_ms", "tail_ms"))} for mode, rows in figures.items()}
    return {"calls": calls, "medians": median}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--procs", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--size", type=int, default=2048, help="the matmuls' side (float64)")
    parser.add_argument("--calls", type=int, default=200, help="timed calls in each mode")
    args = parser.parse_args()
    import torch
    if not torch.cuda.is_available():
        parser.error("needs a CUDA GPU (what it measures is how a process waits for one)")
    out = {"waiters": [waiters(args.procs, args.seconds, args.size, asleep) for asleep in (False, True)],
           "timing": timing(args.calls)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
