"""How many checks an hour the device's memory admission lets through, by turnstile policy (issue 38).

    python bench/admission_bench.py [--checks 120] [--jobs 12] [--repeats 3] [--mix thirty-fifth] [--scale 50]
                                    [--cycles 1] [--policies off,backfill,bounded]

The real lease (kernel_mcp/worker/lease.py: its lock files and ledger) on a stand-in GPU of 80 GiB, so it runs on
any machine: ``--jobs`` threads take checks from one queue, as a batch's slots do, and each holds the lease shared
with its check's memory reserved for its check's time, all divided by ``--scale``. The mixes (``MIXES``):

* ``thirty-second``: a quarter of the checks need 24 GiB for 30 s (a level-1 KernelBench problem at its published
  size: 4_Matrix_vector_multiplication_'s check took 26 GiB on an H100), the rest 3 GiB for 15 s;
* ``thirty-fifth``: as seen in an H100 batch's trace (thirty-fifth session): beside those, a tenth need 46 GiB for
  40 s (1.6 G-element elementwise problems) and one in twenty is a slow candidate holding 36 GiB for 150 s;
* a JSON file of ``[[GiB, seconds], ...]`` in order, replayed as it is (``--checks`` ignored): a traced batch's
  judges, written by ``tools/trace_phases.py TRACE --mix FILE``. ``bench/data/admission_mix_h100_35.json`` is the
  thirty-fifth session's H100 batch (104 judges: checks, import failures and the survey's measures; the runs cut by
  the window's end count as far as they got).

Policies, alternated, ``--repeats`` times each: ``off`` (a check waiting for memory keeps the turnstile at once and
until admitted: every check behind it waits), ``backfill`` (checks that fit pass it for 60 s, then it keeps the
turnstile until admitted) and ``bounded`` (the lease's defaults: kept ``DRAIN_S``, then the turnstile rests 60 s,
then kept twice as long). The lease's poll (``POLL_S``, 0.2 s) is not scaled: keep ``--scale`` small (4-10) for a
replay, whose checks are often under a second. A replay's order is the order the traced run's lease admitted its
checks in, so that run's policy is in it. Prints checks an hour in real time (the scale undone): over the whole
run, and ``steady`` (between the first and the last third of the checks' ends, a stream's rate without the tail),
and the share of the device's memory budget reserved on average. The order of the checks is the same in every run (seeded).
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
SMALL = (3 * GIB, 15.0)  # need, seconds held
# each mix: (share, (need, seconds held)) for every kind but SMALL, which takes the rest
MIXES = {"thirty-second": [(0.25, (24 * GIB, 30.0))],
         "thirty-fifth": [(0.2, (24 * GIB, 30.0)), (0.1, (46 * GIB, 40.0)), (0.05, (36 * GIB, 150.0))]}
POLICIES = {"off": (0.0, float("inf")), "backfill": (60.0, float("inf")),  # (BACKFILL_S, DRAIN_S), real time
            "bounded": (lease.BACKFILL_S, lease.DRAIN_S)}


def workload(checks: int, mix: str, seed: int = 38) -> list[tuple[int, float]]:
    if mix not in MIXES:  # a traced batch's judges, in order
        return [(int(gib * GIB), float(seconds)) for gib, seconds in json.loads(Path(mix).read_text())]
    rng = random.Random(seed)
    out = []
    for _ in range(checks):
        draw, kind = rng.random(), SMALL
        for share, other in MIXES[mix]:
            if draw < share:
                kind = other
                break
            draw -= share
        out.append(kind)
    return out


def run(checks: list[tuple[int, float]], jobs: int, scale: float, policy: str) -> dict:
    """Every check through the lease, ``jobs`` at a time; the wall time and the reserved memory over it."""
    backfill_s, drain_s = POLICIES[policy]
    lease.BACKFILL_S, lease.DRAIN_S = backfill_s / scale, drain_s / scale
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
    # the rate between the first and the last third of the checks' ends: a stream's, without the last checks'
    # tail (those a policy left to the end run with few beside them)
    ends = sorted(end for _, end, _ in spans)
    first, last = len(ends) // 3, 2 * len(ends) // 3
    steady = (last - first) / max(ends[last] - ends[first], 1e-9) if last > first else None
    return {"wall_s": round(wall, 2), "per_hour": round(3600 * len(checks) / (wall * scale)),
            "steady_per_hour": round(3600 * steady / scale) if steady else None,
            "memory_budget_used": round(used, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", type=int, default=120)
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mix", default="thirty-fifth", help=f"{', '.join(MIXES)}, or a JSON file (see above)")
    parser.add_argument("--policies", default="off,backfill,bounded", help=f"of {', '.join(POLICIES)}")
    parser.add_argument("--scale", type=float, default=50.0, help="times faster than real time")
    parser.add_argument("--cycles", type=int, default=1, help="the checks this many times over, one queue")
    args = parser.parse_args()
    if args.mix not in MIXES and not Path(args.mix).is_file():
        parser.error(f"--mix: neither {', '.join(MIXES)} nor a file: {args.mix}")
    policies = args.policies.split(",")
    if unknown := set(policies) - set(POLICIES):
        parser.error(f"unknown policies: {', '.join(sorted(unknown))} (of {', '.join(POLICIES)})")
    os.environ["KERNEL_MCP_CACHE"] = tempfile.mkdtemp(prefix="kmcp-admission-")  # a lease of its own
    checks = workload(args.checks, args.mix) * args.cycles
    results: dict[str, list[dict]] = {name: [] for name in policies}
    for _ in range(args.repeats):
        for name in policies:
            results[name].append(run(checks, args.jobs, args.scale, name))
            print(name, results[name][-1], flush=True)
    summary = {name: {"per_hour_median": statistics.median(r["per_hour"] for r in runs),
                      "steady_per_hour_median": statistics.median(r["steady_per_hour"] or 0 for r in runs),
                      "memory_budget_used_median": statistics.median(r["memory_budget_used"] for r in runs)}
               for name, runs in results.items()}
    first = policies[0]
    for name in policies[1:]:
        for rate in ("per_hour_median", "steady_per_hour_median"):
            if summary[first][rate]:
                summary[f"{rate}_{name}_over_{first}"] = round(summary[name][rate] / summary[first][rate], 2)
    summary["settings"] = vars(args) | {"checks": len(checks), "gib_s": round(sum(n * t for n, t in checks) / GIB)}
    print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
