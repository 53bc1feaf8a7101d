"""Finding and ending processes through /proc: a process's whole tree (daemons that re-parented to a
subreaper included), everything that carries a run token, and stopping a tree while something is timed."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

RUN_TOKEN_VAR = "KERNEL_MCP_RUN"  # every candidate process inherits it; leftovers are found by it


def carrying(name: str, value: str) -> list[int]:
    """Every process (this one excepted) whose environment holds ``name=value``, zombies included."""
    needle, found = f"{name}={value}".encode(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def kill_by_token(token: str) -> int:
    """SIGKILL every process whose environment carries ``RUN_TOKEN_VAR=token``; return how many."""
    killed = 0
    for pid in carrying(RUN_TOKEN_VAR, token):
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            continue
    return killed


def _children_of() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int) -> list[int]:
    tree, found, stack = _children_of(), [], [pid]
    while stack:
        for child in tree.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def kill_tree(pid: int, include_self: bool = True) -> None:
    """SIGKILL ``pid`` and every descendant (including daemons that re-parented to a subreaper here)."""
    killed: set[int] = set()
    for _ in range(3):  # a fork racing with the scan is caught on the next pass
        # only processes not signalled yet: one killed on an earlier pass (a zombie until its parent
        # waits) is not a reason to scan again; the passes end as soon as one finds nothing new
        victims = [p for p in descendants(pid) + ([pid] if include_self else []) if p not in killed]
        if not victims:
            return
        for victim in victims:
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                pass
        killed.update(victims)
        time.sleep(0.05)


def signal_tree(pid: int, sig: int, include_self: bool = True) -> None:
    """Send ``sig`` to ``pid`` and its descendants (SIGSTOP/SIGCONT to pause a candidate's processes)."""
    for victim in ([pid] if include_self else []) + descendants(pid):
        try:
            os.kill(victim, sig)
        except ProcessLookupError:
            pass


def running(pids: list[int]) -> list[int]:
    """Of ``pids``, those still running: not gone, and not a zombie waiting for its parent to read it."""
    return [pid for pid in pids if _state(pid) not in ("gone", "Z")]


def status_field(pid: int | str, name: str) -> list[str] | None:
    """The values of one line of ``/proc/<pid>/status`` (``pid`` may be "self"), e.g. ``["1024", "kB"]`` for
    VmRSS; None where the process or the line is not there."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return line.split()[1:]
    except OSError:
        pass
    return None


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "gone"
    return stat[stat.rfind(")") + 2]


def stop_descendants(root: int, keep: set[int], rounds: int = 20) -> list[int]:
    """SIGSTOP every descendant of ``root`` not in ``keep`` until all of them show as stopped: a process
    that forks between the scan and the signal is caught by the next round."""
    stopped: list[int] = []
    for _ in range(rounds):
        running = [p for p in descendants(root) if p not in keep and _state(p) not in ("T", "t", "gone", "Z")]
        if not running:
            break
        for pid in running:
            try:
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.0005)
    return stopped


class Scheduling:
    """This process's CPU affinity and priority when made, to put back on every thread if someone changes
    them (a candidate that can see the judge could pin it to one busy CPU to slow the reference down)."""

    def __init__(self):
        self.affinity, self.nice = os.sched_getaffinity(0), os.getpriority(os.PRIO_PROCESS, 0)

    def restore(self) -> str:
        """Put both back where they changed; returns what changed ('' where nothing did)."""
        now = os.sched_getaffinity(0), os.getpriority(os.PRIO_PROCESS, 0)
        if now == (self.affinity, self.nice):
            return ""
        for tid in (int(t) for t in os.listdir("/proc/self/task")):
            try:
                os.sched_setaffinity(tid, self.affinity)
                os.setpriority(os.PRIO_PROCESS, tid, self.nice)
            except OSError:
                pass
        return f"{(self.affinity, self.nice)} -> {now}"
