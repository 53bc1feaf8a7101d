"""What a check costs with its processes forked from copies that have imported torch, against fresh
interpreters, alternated in one run: wall time and the CPU time the whole machine spent, per check.

    python bench/host_start_bench.py [--problem problems/vector_add] [--device cpu] [--runs 5]
                                     [--sequence 0] [--modes exec,hosts,forked]

Modes: ``exec`` (KERNEL_MCP_FORK_SERVER=0, KERNEL_MCP_FORK_HOSTS=0: every judge and host a fresh
interpreter), ``hosts`` (candidate hosts forked from their judge: worker/host/factory.py; judges exec'd),
``forked`` (the default: judges and step hosts from the caller's fork server too: worker/launch/fork_server.py).

Without ``--sequence``, each run is one cold `kernel-mcp check` (a one-shot CLI: nothing to reuse between
checks). With ``--sequence K``, each run is one caller process making K checks in a row, as an MCP server
or an optimize run does; the figures are per check, over the checks after the first.

CPU time is read from /proc/stat around each check or sequence (all processes: the caller, the fork
server, judges, hosts, which are not all the caller's children); run it on an otherwise idle machine.
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
MODES = {"exec": {"KERNEL_MCP_FORK_SERVER": "0", "KERNEL_MCP_FORK_HOSTS": "0"},
         "hosts": {"KERNEL_MCP_FORK_SERVER": "0", "KERNEL_MCP_FORK_HOSTS": "1"},
         "forked": {"KERNEL_MCP_FORK_SERVER": "1", "KERNEL_MCP_FORK_HOSTS": "1"}}
# one caller, K checks: prints "wall cpu" of each check after the first (the first pays the starts)
SEQUENCE = """
import os, sys, time
from pathlib import Path
from kernel_mcp.tools.check import check
def machine_cpu_s():
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")
problem, device, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(count):
    cpu, wall = machine_cpu_s(), time.perf_counter()
    result = check(problem, problem / "baseline.py", device=device)
    wall, cpu = time.perf_counter() - wall, machine_cpu_s() - cpu
    assert result.passed, result.verdict
    if i:
        print(wall, cpu, flush=True)
"""


def machine_cpu_s() -> float:
    """Seconds of CPU the whole machine has spent (user, nice, system, irq, softirq), from /proc/stat."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def one_check(problem: Path, device: str, mode: str) -> list[tuple[float, float]]:
    """[(wall s, machine CPU s)] of one `kernel-mcp check` of the problem's baseline; fails loudly otherwise."""
    cpu, wall = machine_cpu_s(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kernel_mcp", "check", str(problem), str(problem / "baseline.py"),
                           "--device", device, "--json"], capture_output=True, text=True,
                          env=dict(os.environ, **MODES[mode]), cwd=REPO)
    wall, cpu = time.perf_counter() - wall, machine_cpu_s() - cpu
    if done.returncode != 0:
        raise SystemExit(f"the check failed ({mode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return [(wall, cpu)]


def sequence(problem: Path, device: str, mode: str, count: int) -> list[tuple[float, float]]:
    """[(wall s, machine CPU s)] of each check after the first of ``count`` made by one caller process."""
    done = subprocess.run([sys.executable, "-c", SEQUENCE, str(problem), device, str(count)], capture_output=True,
                          text=True, env=dict(os.environ, **MODES[mode]), cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"the sequence failed ({mode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return [tuple(float(v) for v in line.split()) for line in done.stdout.splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", type=Path, default=REPO / "problems" / "vector_add")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--runs", type=int, default=5, help="checks (or sequences) per mode, alternated")
    parser.add_argument("--sequence", type=int, default=0, help="K checks per caller process (0: one-shot CLI)")
    parser.add_argument("--modes", default="exec,hosts,forked")
    args = parser.parse_args()
    modes = args.modes.split(",")
    figures: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    for run in range(args.runs):
        for mode in modes:
            got = sequence(args.problem, args.device, mode, args.sequence) if args.sequence \
                else one_check(args.problem, args.device, mode)
            figures[mode] += got
            print(f"run {run + 1} {mode}: " + ", ".join(f"{w:.2f} s wall {c:.2f} s CPU" for w, c in got), flush=True)
    what = f"per check after the first of {args.sequence} in one caller" if args.sequence else "per cold one-shot check"
    for mode in modes:
        walls, cpus = zip(*figures[mode])
        print(f"{mode}: median {statistics.median(walls):.2f} s wall, {statistics.median(cpus):.2f} s CPU {what} "
              f"({len(walls)} checks)")


if __name__ == "__main__":
    main()
