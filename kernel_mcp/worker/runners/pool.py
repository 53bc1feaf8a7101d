"""A warm worker per GPU with a queue in front: evaluations of several islands or MCP clients at once.

A *worker* is a LocalRunner pinned to one GPU (its processes see only that GPU, as cuda:0, through
CUDA_VISIBLE_DEVICES, or HIP_VISIBLE_DEVICES on AMD) keeping its own spare judges booted. It evaluates one
request at a time, so timing on a GPU is never shared (the device's lease, lease.py, guarantees it across
processes too). Requests wait in one first-come queue for a free worker; a request for ``cuda:N`` waits for
GPU N's worker, ``auto``/``cuda`` for any. CPU workers (unpinned) serve the tests and the benchmarks.

A fault is a judge that ended without a trustworthy result (the ``judge_failed`` finding: it crashed, hung
or was killed): its worker is recycled (spares ended, fresh ones booted) and the evaluation runs again,
once, on another worker where there is one. Every request gets exactly one result; the retried one says
so in an ``info`` finding. Any other exception also recycles the worker before it propagates.

Compile steps run beside the workers on CPU slots (as many as cores); a step that runs the candidate on a
GPU (recording) runs pinned to that GPU, under its lease, without taking its worker.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernel_mcp.errors import UsageError
from kernel_mcp.problem import Problem
from kernel_mcp.results import CheckResult, Finding, ProfileResult
from kernel_mcp.worker.protocol import Device, JudgeRequest, ProgressFn, StepReply, parse_device
from kernel_mcp.worker.resolve import resolve
from kernel_mcp.worker.runners.base import OnThisMachine
from kernel_mcp.worker.runners.local import LocalRunner
from kernel_mcp.worker.runners.ray import RayRunner

REPEAT_S = 30.0  # a request still queued is said again this often
RETRIED = "retried_after_worker_fault"  # finding on a result that came from a second worker


@dataclass
class Worker:
    label: str  # "gpu 3", "cpu 1"
    device: str  # what its judges are asked for: "cuda" (its one visible GPU) or "cpu"
    index: int | None  # the GPU as this process numbers it (cuda:N); None for a CPU worker
    pin: dict[str, str]
    runner: LocalRunner
    busy: bool = False
    served: int = 0  # evaluations it returned
    faults: int = 0  # times it was recycled


@dataclass
class _Waiter:
    fits: Callable[[Worker], bool]
    ticket: object = field(default_factory=object)


class PoolRunner(OnThisMachine):
    """Several workers behind the Runner methods (base.Runner). Use ``gpu_pool`` or ``cpu_pool``."""
    local_builds = True  # its workers' checks fill from this machine's kernel store, as its steps keep into it

    def __init__(self, workers: list[tuple[str, str, int | None, dict[str, str]]], warm: bool = True,
                 spares: int = 1, retries: int = 1):
        if not workers:
            raise UsageError("a pool needs at least one worker")
        self.warm, self.spares, self.retries = warm, spares, retries
        threads = _thread_share(len(workers))
        self.workers = [Worker(label, device, index, pin | threads, self._runner(pin | threads))
                        for label, device, index, pin in workers]
        self._local = LocalRunner(warm=warm, spares=0)  # compile steps (warm step hosts), calibrate, cpu on GPUs
        self._cond = threading.Condition()
        self._queue: list[_Waiter] = []
        self._cpu_slots = threading.BoundedSemaphore(os.cpu_count() or 1)
        self._last = threading.local()  # the worker of this thread's last judge (profile's counters follow it)
        if warm:
            for worker in self.workers:
                worker.runner.prewarm(worker.device)

    @property
    def parallel(self) -> int:
        return len(self.workers)

    def _runner(self, pin: dict[str, str]) -> LocalRunner:
        return LocalRunner(warm=self.warm, spares=self.spares, pin=pin, step_hosts=False)  # steps: self._local

    # --- judges ---------------------------------------------------------------------------------------
    def judge(self, request: JudgeRequest, device: str = "auto", on_progress: ProgressFn | None = None,
              problem: Problem | None = None) -> CheckResult | ProfileResult:
        """Queue for a worker that can serve ``device``; run there; recycle and retry once on a fault."""
        say = on_progress or (lambda *_: None)
        fits = self._fits(parse_device(device))
        if fits is None:
            return self._local.judge(request, device, on_progress, problem)
        tried: list[tuple[Worker, str]] = []  # workers whose judge ended without a result, and why
        while True:
            worker = self._acquire(self._prefer_untried(fits, tried), say)
            try:
                result = worker.runner.judge(request, worker.device, say, problem)
            except UsageError:
                self._release(worker)
                raise
            except BaseException:
                self._recycle(worker)
                self._release(worker)
                raise
            faulted = _fault(result)
            if faulted:
                self._recycle(worker)
            else:
                worker.served += 1
            self._release(worker)
            self._last.worker = worker
            if faulted is None or len(tried) >= self.retries:
                return _noting_retry(result, tried, worker.label)
            tried.append((worker, faulted))
            say(f"{worker.label}: the judge ended without a result; evaluating again on another worker", 0, 0)

    def _fits(self, device: str) -> Callable[[Worker], bool] | None:
        """Which workers may serve ``device``; None: none of them (the pool's local runner does)."""
        gpus = any(w.index is not None for w in self.workers)
        if device == "cpu":
            return (lambda w: True) if not gpus else None
        if device.startswith("cuda:"):
            wanted = int(device.split(":")[1])
            if not any(w.index == wanted for w in self.workers):
                raise UsageError(f"--device {device}: this pool has {', '.join(w.label for w in self.workers)}")
            return lambda w: w.index == wanted
        if device == "cuda" and not gpus:
            raise UsageError("--device cuda asked for, but this pool has CPU workers only")
        return lambda w: True

    def _prefer_untried(self, fits: Callable[[Worker], bool],
                        tried: list[tuple[Worker, str]]) -> Callable[[Worker], bool]:
        """A retry goes to a worker that has not failed this request, unless every one that fits has."""
        failed = [w for w, _ in tried]
        untried = [w for w in self.workers if fits(w) and w not in failed]
        return (lambda w: fits(w) and w not in failed) if untried else fits

    def _acquire(self, fits: Callable[[Worker], bool], say: ProgressFn) -> Worker:
        """A free worker for which no earlier request in the queue also waits (first come, first served)."""
        me = _Waiter(fits)
        started, said = time.monotonic(), None
        with self._cond:
            self._queue.append(me)
            try:
                while True:
                    ahead = self._queue[:self._queue.index(me)]
                    for worker in self.workers:
                        if not worker.busy and fits(worker) and not any(w.fits(worker) for w in ahead):
                            worker.busy = True
                            # a later request that woke first and left a free worker to us may take it now
                            self._cond.notify_all()
                            return worker
                    waited = time.monotonic() - started
                    if said is None or waited - said >= REPEAT_S:
                        busy = sum(w.busy for w in self.workers)
                        say(f"queued for a worker: {busy} of {len(self.workers)} busy, {len(ahead)} ahead"
                            + (f", {waited:.0f} s so far" if said is not None else ""), 0, 0)
                        said = waited
                    self._cond.wait(timeout=REPEAT_S)
            finally:
                self._queue.remove(me)

    def _release(self, worker: Worker) -> None:
        with self._cond:
            worker.busy = False
            self._cond.notify_all()

    def _recycle(self, worker: Worker) -> None:
        """End a faulted worker's processes and boot fresh ones (the worker stays held meanwhile)."""
        old, worker.runner = worker.runner, self._runner(worker.pin)
        worker.faults += 1
        old.close()
        if self.warm:
            worker.runner.prewarm(worker.device)

    # --- the rest of the Runner methods ----------------------------------------------------------------
    def step(self, request, problem: Problem, timeout_s: float, device: Device | None = None) -> StepReply:
        """A compile step on a CPU slot; one that runs the candidate on a GPU is pinned to that GPU."""
        owner = next((w for w in self.workers if device is not None and device.is_gpu and w.index == device.index),
                     None)
        with self._cpu_slots:
            if owner is None:
                return self._local.step(request, problem, timeout_s, device)
            return owner.runner.step(request, problem, timeout_s, owner.runner.resolved(owner.device) or device)

    def counters(self, result: ProfileResult, problem: Problem, candidate: Path, device: Device | None,
                 shape: int = 0) -> None:
        """On the worker (its GPU, as it sees it) that ran this thread's last profile."""
        worker = getattr(self._last, "worker", None)
        (worker.runner if worker else self._local).counters(result, problem, candidate, device, shape)

    def resolved(self, device: str) -> Device | None:
        """The device this thread's last judge ran on, as its worker sees it (cuda:0 when pinned)."""
        worker = getattr(self._last, "worker", None)
        return worker.runner.resolved(worker.device) if worker else self._local.resolved(device)

    def local_gpu(self) -> Device | None:
        """The pool's first GPU as this process numbers it (None for a CPU pool). Imports torch."""
        first = next((w.index for w in self.workers if w.index is not None), None)
        return None if first is None else resolve(f"cuda:{first}")[0]

    def warm_processes(self) -> dict[str, int]:
        return {f"{w.label}: {name}": pid for w in self.workers for name, pid in w.runner.warm_processes().items()}

    def describe(self) -> str:
        return f"{len(self.workers)} workers ({', '.join(w.label for w in self.workers)})"

    def close(self) -> None:
        for worker in self.workers:
            worker.runner.close()
        self._local.close()


def _thread_share(workers: int) -> dict[str, str]:
    """Each worker's share of the cores for torch's and OpenMP's thread pools, unless the user set one: a
    judge and its host each start as many threads as there are cores, and N workers side by side then run
    N times too many, spinning against each other (on the 16-core H200 host, 8 CPU workers checked 0.6x as
    fast as one; on 2 cores, 2 workers 0.87x, and 2.08x once each had one thread: BENCHMARKS.md)."""
    if os.environ.get("OMP_NUM_THREADS"):
        return {}
    return {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // workers))}


def _fault(result: CheckResult | ProfileResult) -> str | None:
    """Why the judge ended without a result (its judge_failed finding), or None for a real verdict."""
    if result.verdict != "error: harness":
        return None
    return next((f.message.splitlines()[0] for f in result.findings if f.code == "judge_failed"), None)


def _noting_retry(result, tried: list[tuple[Worker, str]], label: str):
    if tried:
        failed = "; ".join(f"{worker.label} ({why})" for worker, why in tried)
        result.findings.append(Finding(code=RETRIED, severity="info", message=(
            f"evaluated on {label} after {failed} ended without a result (that worker was recycled)")))
    return result


def cpu_pool(workers: int, warm: bool = True, spares: int = 1) -> PoolRunner:
    """``workers`` CPU workers (tests, benchmarks, a machine without a GPU)."""
    if workers < 1:
        raise UsageError(f"a pool needs at least one worker, not {workers}")
    return PoolRunner([(f"cpu {i}", "cpu", None, {}) for i in range(workers)], warm=warm, spares=spares)


def gpu_pool(gpus: str, warm: bool = True, spares: int = 1) -> PoolRunner:
    """A worker per GPU of ``gpus`` ("0,1,3" as this process numbers them, or "all")."""
    count, vendor = visible_gpus()
    indices = parse_gpus(gpus, count)
    return PoolRunner([(f"gpu {i}", "cuda", i, pin_for(i, vendor)) for i in indices], warm=warm, spares=spares)


def parse_gpus(text: str, count: int) -> list[int]:
    """"all" or comma-separated indices below ``count``, each once; a UsageError says what is wrong."""
    value = (text or "").strip().lower()
    if count < 1:
        raise UsageError(f"--gpus {text}: no GPU is visible here (torch sees none)")
    if value == "all":
        return list(range(count))
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise UsageError(f"--gpus {text!r}: give GPU indices like 0,1,3 or 'all'")
    indices = [int(p) for p in parts]
    if len(set(indices)) != len(indices):
        raise UsageError(f"--gpus {text}: each GPU once")
    wrong = [i for i in indices if i >= count]
    if wrong:
        raise UsageError(f"--gpus {text}: {count} GPU(s) visible here (0-{count - 1}); no GPU {wrong[0]}")
    return indices


def pin_for(index: int, vendor: str) -> dict[str, str]:
    """The variable that shows a worker only GPU ``index`` (as this process numbers it): through the list
    this process was given, if any, so that index 1 of CUDA_VISIBLE_DEVICES=2,3 is GPU 3. On AMD, the
    variable this process was given (HIP's or CUDA's), else HIP_VISIBLE_DEVICES (unverified on hardware)."""
    names = ("CUDA_VISIBLE_DEVICES",) if vendor == "nvidia" else ("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
    name = next((n for n in names if os.environ.get(n, "").strip()), names[0])
    given = [p.strip() for p in os.environ.get(name, "").split(",") if p.strip()]
    return {name: given[index] if index < len(given) else str(index)}


def visible_gpus() -> tuple[int, str]:
    """(how many GPUs torch sees here, "nvidia" or "amd"). Imports torch; creates no context."""
    import torch
    return torch.cuda.device_count(), "amd" if getattr(torch.version, "hip", None) else "nvidia"


def runner_for(gpus: str | None = None, cluster: str | None = None, spares: int = 1) -> object:
    """The runner a long-lived command (serve, optimize) asked for: a GPU pool, a Ray cluster, or this
    machine's LocalRunner, each keeping ``spares`` judges booted per worker."""
    if gpus and cluster:
        raise UsageError("--gpus picks this machine's GPUs, --cluster sends evaluations to a Ray cluster: "
                         "give one or the other")
    if cluster:
        return RayRunner(cluster, spares=spares)
    if gpus:
        return gpu_pool(gpus, spares=spares)
    return LocalRunner(warm=True, spares=spares)
