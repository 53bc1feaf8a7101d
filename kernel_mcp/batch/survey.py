"""Each problem of a batch measured once, before its checks, so that they are admitted to the device with what they
need (issue 38).

A check of a problem this machine never measured is admitted with a first share of the device, a quarter of it
(worker/needs.py, FIRST_SHARE), until its judge has measured the reference: then at most three such checks run on a
GPU at once, however many slots are free. A batch of new problems is mostly such checks (on an H100, 13 of 24 and 17
of 25 checks waited for the device's memory, until a median of 61 s and 71 s into their check; thirty-first
session), while its load_inline candidates spend a minute building ahead (batch/prebuild.py). Here a judge runs each
problem's reference alone meanwhile (``mode="measure"``: the first step of a check, and no candidate), and the runner
records the need it models (needs.record_need); a check that comes after is admitted with that need.

Only what the admission reads is made here: no input or answer a candidate sees (a check draws its own secret inputs
or its lane's, batch/sharing.py). A measure that fails costs nothing but time: the problem's checks are then first
runs, as before, and say what is wrong with it.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path

from kernel_mcp.problem import load_problem
from kernel_mcp.worker import FIRST_SHARE, MEMORY_BUDGET, Runner, measured_need, problem_key
from kernel_mcp.worker.protocol import Device, JudgeRequest


def default_width(runner: Runner) -> int:
    """Measures at once: as many first shares as fit the budget of one device (three), per device of the runner."""
    return max(1, int(MEMORY_BUDGET / FIRST_SHARE)) * max(1, getattr(runner, "parallel", 1))


class Survey:
    """Measures ``problems`` (each with a candidate path its request names; no candidate code runs) ``width`` at a
    time, in the order given, skipping those whose need ``device`` already knows. ``claim`` hands a problem to
    its check: after its measure if one is running, or at once, taking it off the list if none has started."""

    def __init__(self, problems: Iterable[tuple[Path, Path]], runner: Runner, device: str, resolved: Device | None,
                 width: int):
        self._runner, self._device, self._resolved = runner, device, resolved
        self._lock = threading.Lock()
        # on a GPU, and only where the checks run on this machine (local_builds: the runner's checks use this
        # machine's caches), since the needs are recorded where they ran
        here = resolved is not None and resolved.is_gpu and getattr(runner, "local_builds", False)
        self._queue = list(dict(problems).items()) if here else []
        self._running: dict[Path, threading.Event] = {}
        self._threads = [threading.Thread(target=self._loop, name=f"survey-{k}", daemon=True)
                         for k in range(min(width, len(self._queue)))]
        for thread in self._threads:
            thread.start()

    def claim(self, problem: Path) -> float:
        """Before a check of ``problem``: wait for its measure if one is under way; a measure not yet started is
        dropped (the check measures it itself, no sooner than this would). Returns the seconds waited."""
        with self._lock:
            self._queue = [(p, c) for p, c in self._queue if p != problem]
            running = self._running.get(problem)
        if running is None or running.is_set():
            return 0.0
        began = time.monotonic()
        running.wait()
        return round(time.monotonic() - began, 2)

    def close(self) -> None:
        """No new measure starts; those under way end (each within its problem's timeouts)."""
        with self._lock:
            self._queue = []
        for thread in self._threads:
            thread.join()

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    return
                problem, candidate = self._queue.pop(0)
                done = self._running[problem] = threading.Event()
            try:
                self._measure(problem, candidate)
            except Exception:  # noqa: BLE001  (a measure only saves time: the checks measure and say why)
                pass
            finally:
                done.set()

    def _measure(self, problem: Path, candidate: Path) -> None:
        loaded = load_problem(problem)
        if measured_need(self._resolved, problem_key(loaded)) is not None:
            return  # another run measured it meanwhile
        request = JudgeRequest(mode="measure", problem=str(loaded.path), candidate=str(candidate.resolve()))
        self._runner.judge(request, self._device, None, loaded)  # the runner records the need (needs.record_need)
