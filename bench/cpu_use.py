"""Where a run's CPU time goes: the CPU seconds of every process under this one, by kind (a bench helper, Linux).

A batch on the GPU machine keeps its 16 cores about 80 % busy (thirty-third session), and its rate then follows
the CPU, not the GPU's memory: ``CpuUse`` says how much of that time the compilers of load_inline builds took
(nvcc's phases, GCC, the linker, ninja), how much the Python processes (judges, candidate hosts, step hosts,
the batch itself), and how much anything else.

It reads ``/proc`` every ``interval_s``: each process below the root's (any depth, whatever PID namespace it
entered: the root's view shows them all) with its user and system time. A process's last reading is what it
used, less what it had used when the block began (a process that lived less than one interval is missed;
compilers run for seconds, so this is a floor).
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
# the names /proc gives (comm, 15 characters at most) of a torch extension build's processes
COMPILERS = {"nvcc", "cicc", "cudafe++", "ptxas", "fatbinary", "nvlink", "cc1plus", "cc1", "gcc", "g++", "c++",
             "x86_64-linux-gn", "as", "ld", "collect2", "ninja"}


def kind(comm: str) -> str:
    if comm in COMPILERS:
        return "compilers"
    return "python" if comm.startswith("python") else "other"


def _stat(pid: str) -> tuple[int, str, int, int] | None:
    """(parent pid, comm, start time in ticks, user + system ticks) of ``pid``, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        # comm is in parentheses and may hold spaces or parentheses itself: the fields after it follow the last ')'
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        return int(fields[1]), comm, int(fields[19]), int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):  # gone, or a read torn by its exit: its last reading stands
        return None


class CpuUse:
    """Samples the processes below ``root`` (a pid; default this process) while the block runs."""

    def __init__(self, root: int | None = None, interval_s: float = 0.5):
        self.root, self.interval_s = root or os.getpid(), interval_s
        self._seen: dict[tuple[int, int], tuple[str, int]] = {}  # (pid, start ticks) -> (comm, cpu ticks), last read
        self._before: dict[tuple[int, int], int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cpu-use", daemon=True)

    def __enter__(self) -> CpuUse:
        self.sample()  # what the processes already running had used before: not the block's
        self._before = {key: ticks for key, (_, ticks) in self._seen.items()}
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def sample(self) -> None:
        stats = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (found := _stat(entry)) is not None:
                stats[int(entry)] = found
        children: dict[int, list[int]] = {}
        for pid, (parent, *_) in stats.items():
            children.setdefault(parent, []).append(pid)
        below, todo = [], list(children.get(self.root, []))
        while todo:
            pid = todo.pop()
            below.append(pid)
            todo.extend(children.get(pid, []))
        for pid in below:
            _, comm, start, ticks = stats[pid]
            self._seen[(pid, start)] = (comm, ticks)

    def seconds(self) -> dict[str, float]:
        """CPU seconds by kind (compilers, python, other) of the processes seen, and their total."""
        totals = {"compilers": 0.0, "python": 0.0, "other": 0.0}
        for key, (comm, ticks) in self._seen.items():
            totals[kind(comm)] += (ticks - self._before.get(key, 0)) * TICK_S
        totals = {what: round(value, 1) for what, value in totals.items()}
        return {**totals, "total": round(sum(totals.values()), 1)}

    def compiler_runs(self) -> dict[str, int]:
        """How many processes of each compiler were seen that started in the block: cicc runs once per CUDA source
        (a load_inline build with CUDA sources: one), cc1plus once per C++ file and once per nvcc host pass."""
        runs: dict[str, int] = {}
        for key, (comm, _) in self._seen.items():
            if kind(comm) == "compilers" and key not in self._before:
                runs[comm] = runs.get(comm, 0) + 1
        return dict(sorted(runs.items()))
