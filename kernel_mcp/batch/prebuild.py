"""Candidates' torch extensions built ahead of their checks, with no device memory reserved (issue 38).

A load_inline candidate spends most of its check building (a median of 46 s of its 64 s on an H100, thirtieth
session), and a check holds its lease, with its device memory reserved, from before the reference runs until
its last case: the GPU waited on compilers while later checks waited for memory (3 of 9 waited 30-43 s; the
CPUs were 28 % busy). Here ``builds`` step hosts import each such candidate first (worker/steps/prebuild.py);
the runner keeps what they build for that candidate alone (worker/isolation/kernel_cache.py), and the check
loads it. The checks take candidates in the order their builds end, so one slow build holds up no other check.

A build that fails or times out here costs time, never a verdict: the check builds it again and says what happens.
At most ``ahead`` candidates (never more than a quarter of the entries the kernel store keeps:
worker/isolation/kernel_cache.py, KEEP_ENTRIES) are built and not yet checked, so a build is not pruned before its
check loads it unless other runs fill the same store meanwhile (then the check builds it, as before).
"""
from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

from kernel_mcp.batch.sources import Item
from kernel_mcp.problem import Problem, load_problem
from kernel_mcp.worker import KEPT_BUILDS, Runner, resolve_device, sealed_for_candidates
from kernel_mcp.worker.protocol import Device, PrebuildRequest

# what marks a candidate that builds a torch extension when imported (read as text, as header_cache does)
BUILD_MARKERS = ("load_inline", "cpp_extension")


def builds_on_import(candidate: Path) -> bool:
    try:
        source = candidate.read_text(errors="replace")
    except OSError:
        return False  # its check says what is wrong with the file
    return any(marker in source for marker in BUILD_MARKERS)


class Prebuilds:
    """Hands out a batch's candidates (``take``), each once its build is done: ``builds`` build at once, in the
    order given, at most ``ahead`` of the checks. ``builds`` 0: handed out in order, nothing built ahead. They start
    at once, beside the precompiled headers' own build (a build made before its entry existed keeps its flags when
    its check loads it: header_cache.kept_without)."""

    def __init__(self, items: list[Item], runner: Runner, builds: int, ahead: int, device: Device | None = None):
        self._todo = queue.SimpleQueue()
        for item in items:
            self._todo.put(item)
        self._ready: queue.SimpleQueue[tuple[Item, float]] = queue.SimpleQueue()
        self._left, self._lock = len(items), threading.Lock()
        self._window = threading.BoundedSemaphore(max(1, min(ahead, KEPT_BUILDS // 4)))
        self._stop = threading.Event()
        self._runner, self._device = runner, device
        self._threads = [threading.Thread(target=self._build_loop, name=f"prebuild-{k}") for k in range(builds)]
        if not self._threads:
            while not self._todo.empty():
                self._ready.put((self._todo.get(), 0.0))
        for thread in self._threads:
            thread.start()

    def take(self) -> tuple[Item, float] | None:
        """The next candidate whose build is done and the seconds its build took (0: nothing built ahead);
        None once every candidate was handed out. Blocks while builds run."""
        with self._lock:
            if self._left == 0:
                return None
            self._left -= 1
        item, seconds = self._ready.get()
        if self._threads:
            self._window.release()
        return item, seconds

    def close(self) -> None:
        """No new build starts; those running end (each within its import timeout)."""
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def _build_loop(self) -> None:
        while not self._stop.is_set():
            if not self._window.acquire(timeout=0.5):
                continue
            try:
                item = self._todo.get_nowait()
            except queue.Empty:
                self._window.release()
                return
            began = time.monotonic()
            try:
                if builds_on_import(item.candidate) and not self._stop.is_set():
                    self._build(item)
            except Exception:  # noqa: BLE001  (never a lost candidate: its check builds and judges it)
                pass
            finally:
                self._ready.put((item, round(time.monotonic() - began, 2)))

    def _build(self, item: Item) -> None:
        try:
            problem = load_problem(item.problem)
        except Exception:  # noqa: BLE001  (a broken problem: the check says so)
            return
        build_ahead(item.candidate, problem, self._runner, self._device)


def build_ahead(candidate: Path, problem: Problem, runner: Runner, device: Device | None) -> None:
    """Import ``candidate`` in a step host of ``runner`` (no secret, no input), and for a KernelBench problem construct
    its ModelNew where the import built nothing; the runner keeps what it builds for the candidate's check; returns
    when it ends. It holds ``device``'s lease shared with no memory reserved: no
    timing (an exclusive hold) runs beside the compilers. Never raises: a build ahead only saves time, and the
    check builds, judges and says why where this failed."""
    request = PrebuildRequest(candidate=str(candidate), problem_dirs=[str(problem.folder), str(problem.folder.parent)],
                              kernelbench_problem=str(problem.path) if problem.kind == "kernelbench" else "")
    try:
        runner.step(request, problem, problem.spec.timeouts.import_, device)
    except Exception:  # noqa: BLE001
        pass


def builds_allowed(runner: Runner, builds: int) -> int:
    """``builds``, or 0 where a build ahead would not be loaded or not be safe: a runner whose checks run on other
    machines (a Ray cluster's nodes keep their own builds), or a machine where candidate processes get no mount
    namespace (a kept torch build is then built again anyway, and nothing would hide other candidates' folders
    from the build's host)."""
    if builds <= 0 or not getattr(runner, "local_builds", False):
        return 0
    return builds if sealed_for_candidates((str(Path(__file__).parent),)) else 0


def lease_device(device: str) -> Device | None:
    """The device a batch's builds ahead hold shared (None where it cannot be told: its checks say why)."""
    try:
        return resolve_device(device)[0]
    except Exception:  # noqa: BLE001
        return None
