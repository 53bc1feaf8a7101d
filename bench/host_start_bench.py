"""Cold one-shot checks with candidate hosts forked from the judge (worker/host_factory.py) and started as
fresh interpreters (KERNEL_MCP_FORK_HOSTS=0), alternated in one run: wall time and the CPU time the whole
machine spent, per check.

    python bench/host_start_bench.py [--problem problems/vector_add] [--device cpu] [--runs 5]

CPU time is read from /proc/stat around each check (all processes: the CLI, its judge, the hosts, which
are re-parented to the judge and never waited for by the CLI); run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def machine_cpu_s() -> float:
    """Seconds of CPU the whole machine has spent (user, nice, system, irq, softirq), from /proc/stat."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def one_check(problem: Path, device: str, fork: bool) -> tuple[float, float]:
    """(wall s, machine CPU s) of one `kernel-mcp check` of the problem's baseline; fails loudly otherwise."""
    env = dict(os.environ, KERNEL_MCP_FORK_HOSTS="1" if fork else "0")
    cpu, wall = machine_cpu_s(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kernel_mcp", "check", str(problem), str(problem / "baseline.py"),
                           "--device", device, "--json"], capture_output=True, text=True, env=env, cwd=REPO)
    wall, cpu = time.perf_counter() - wall, machine_cpu_s() - cpu
    if done.returncode != 0:
        raise SystemExit(f"the check failed (fork={fork}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", type=Path, default=REPO / "problems" / "vector_add")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--runs", type=int, default=5, help="checks per mode, alternated")
    args = parser.parse_args()
    figures: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for run in range(args.runs):
        for fork in (False, True):
            figures[fork].append(one_check(args.problem, args.device, fork))
            wall, cpu = figures[fork][-1]
            print(f"run {run + 1} {'forked' if fork else 'exec-ed'}: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    for fork in (False, True):
        walls, cpus = zip(*figures[fork])
        print(f"{'forked hosts' if fork else 'exec-ed hosts'}: median {statistics.median(walls):.2f} s wall, "
              f"{statistics.median(cpus):.2f} s CPU per check ({args.runs} checks)")


if __name__ == "__main__":
    main()
