"""The runner of this machine: every process that runs candidate code here is started by it.

A runner owns the file guard, the per-device lease, process launch and the result channels. Tools take one
(``runner=``) and never touch processes; the CLI and the MCP server each build one. ``LocalRunner`` runs everything on
this machine; with ``warm=True`` (a long-lived server) it keeps a judge, with its candidate host, booted ahead of need
per device asked for (``spares`` of them, topped up in batches once half are used), and a step host per kind, so an
agent's next call finds interpreter, torch and device context ready. Each is used once: a candidate always gets a
process that has run no other candidate's code, and the judge never imports candidate code. ``pin``: a pool worker's
environment for every process it starts (``CUDA_VISIBLE_DEVICES=3``, its thread share). Also: pool.py, ray.py.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from kernel_mcp.errors import UsageError
from kernel_mcp.problem import Problem, load_problem
from kernel_mcp.results import CheckResult, ProfileResult
from kernel_mcp.worker import lease, needs
from kernel_mcp.worker.launch.judge import JudgeFailure, JudgeProcess
from kernel_mcp.worker.launch.judge import claim as claim_prestarted
from kernel_mcp.worker.launch.step import StepProcess
from kernel_mcp.worker.protocol import Device, JudgeRequest, ProgressFn, StepReply
from kernel_mcp.worker.resolve import guess_kind, resolve
from kernel_mcp.worker.runners.base import BOOT_TIMEOUT_S, HARNESS_MARGIN_S, harness_error
from kernel_mcp.worker.runners.guard import apply_tampering, guard_for, sealed
from kernel_mcp.worker.runners.redact import Redactor
from kernel_mcp.worker.runners.unsealed import UnsealedTargets


class LocalRunner(UnsealedTargets):
    """Judges, step hosts and the toolchain's heavy users on this machine (``warm``: keep spares booted)."""
    parallel = 1  # evaluations worth running at once (a pool: one per worker)
    local_builds = True  # its checks fill their build caches from this machine's kernel store

    def __init__(self, warm: bool = False, spares: int = 1, pin: dict[str, str] | None = None,
                 step_hosts: bool = True):
        if spares < 0:
            raise ValueError("spares: how many judges to keep booted (0: none)")
        self.warm, self.spares, self.pin, self.step_hosts = warm, spares, dict(pin or {}), step_hosts
        self._lock = threading.Lock()
        self._judges: dict[str, list[JudgeProcess]] = {}  # device asked for -> booted judges waiting, oldest first
        self._steps: dict[bool, StepProcess] = {}  # interpret? -> a booted step host waiting
        self._in_flight = 0
        self._closed = False
        self._devices: dict[str, Device] = {}  # device asked for -> what it resolved to
        self._first_runs: dict[str, threading.Event] = {}  # needs.need_key -> its first run here, until it measured
        self._redactor = Redactor()  # the secrets this process holds, kept out of every result

    # --- judges: check and profile ------------------------------------------------------------------
    def judge(self, request: JudgeRequest, device: str = "auto", on_progress: ProgressFn | None = None,
              problem: Problem | None = None) -> CheckResult | ProfileResult:
        """Run one check or profile in a judge, under the guard and the device's lease. A judge that ends
        without a trustworthy result gives an ``error: harness`` result; tampering fails the result.
        ``problem``: request.problem as the caller loaded it (loaded here when not given)."""
        problem = problem or load_problem(request.problem)
        model = ProfileResult if request.mode == "profile" else CheckResult
        timeout = problem.spec.timeouts.total + HARNESS_MARGIN_S
        if request.mode == "profile":
            timeout += 2 * request.settings.budget_s  # may overrun by a sample per shape; reference timed alone
        say = on_progress or (lambda *_: None)
        guarded = request.mode != "measure"  # no candidate runs: a restore would take a finding of a check beside it
        with self._guarded(problem, Path(request.candidate)) if guarded else nullcontext([]) as tampered:
            judge = self._take_judge(device, request.mode, say)
            try:
                result = self._run_judge(judge, request, model, problem, device, timeout, say)
            except JudgeFailure as exc:
                result = harness_error(model, problem, request, "judge_failed", str(exc))
            finally:
                judge.close()
        return self._redactor.model(apply_tampering(result, tampered))

    def _run_judge(self, judge: JudgeProcess, request: JudgeRequest, model: type[CheckResult] | type[ProfileResult],
                   problem: Problem, device: str, timeout: float, say: ProgressFn) -> CheckResult | ProfileResult:
        """Boot, admission to the device, the run. A check shares the device (``_shared``); one whose judge ran out
        of device memory there before any candidate was sent an input (``needs.ran_short``) runs again alone."""
        ready = judge.wait_ready(BOOT_TIMEOUT_S, say)
        if ready.device is None:
            raise UsageError(ready.error)
        self._devices[device] = ready.device
        key = needs.problem_key(problem)
        if request.mode == "profile":
            return self._admitted(judge, request, model, ready.device, key, True, 0, timeout, say)
        result = self._shared(judge, request, model, ready.device, key, device, timeout, say)
        if not (ready.device.is_gpu and needs.ran_short(result)) or request.mode == "measure":
            return result  # (a measure that ran short leaves the problem to its checks)
        say("it ran out of device memory beside other runs: running it again alone on the device", 0, 0)
        judge.close()  # its processes and their memory gone before the device is held alone
        return self._again(device, request, model, ready.device, key, True, 0, timeout, say)

    def _shared(self, judge: JudgeProcess, request: JudgeRequest, model: type[CheckResult], resolved: Device,
                key: str, device: str, timeout: float, say: ProgressFn) -> CheckResult:
        """A check beside others. One of a problem never measured on this device is admitted with a first share
        of it (its judge held to that share); if the measured need is larger, it runs again, admitted with that
        need (or alone when the reference itself outgrew the share). A measure ends after its first run: the need,
        when its judge could tell it, is recorded then."""
        need, measuring = self._first_run_or_wait(resolved, key, say)
        if measuring is None:
            return self._admitted(judge, request, model, resolved, key, False, need, timeout, say)
        first = needs.first_need(resolved)
        try:
            result = self._admitted(judge, request.model_copy(update={"memory_cap_bytes": first}), model,
                                    resolved, key, False, first, timeout, say, measuring.set)
            outgrew = next((f for f in result.findings if f.code == needs.OUTGREW), None)
            if outgrew is None or request.mode == "measure":
                return result
            say(f"{outgrew.message}: admitting it again", 0, 0)
            measured = result.memory.check_need_bytes if result.memory else None
            need = needs.need_from_measure(measured) if measured else needs.memory_need(resolved, key)
            return self._again(device, request, model, resolved, key, False, need, timeout, say, measuring.set)
        finally:  # the checks waiting for it go on: with the need recorded, or one of them measures next
            with self._lock:
                self._first_runs.pop(needs.need_key(resolved, key), None)
            measuring.set()

    def _first_run_or_wait(self, device: Device, key: str, say: ProgressFn) -> tuple[int, threading.Event | None]:
        """(its need, None) once known, after waiting for a first run of the problem under way in this runner (an RL
        client's rollouts of a new problem come together); else (0, the event to set once this first run measured)."""
        while True:
            with self._lock:
                need = needs.measured_need(device, key)
                if need is not None:
                    return need, None
                running = self._first_runs.get(needs.need_key(device, key))
                if running is None:
                    running = self._first_runs[needs.need_key(device, key)] = threading.Event()
                    return 0, running
            say("waiting for another check of this problem to measure what it needs", 0, 0)
            running.wait()

    def _again(self, device: str, request: JudgeRequest, model: type[CheckResult], resolved: Device, key: str,
               exclusive: bool, need: int, timeout: float, say: ProgressFn,
               measured: Callable[[], None] | None = None) -> CheckResult:
        """The check once more, in a fresh judge (a judge serves one request)."""
        again = JudgeProcess(device, pin=self.pin)
        try:
            again.wait_ready(BOOT_TIMEOUT_S, say)
            return self._admitted(again, request, model, resolved, key, exclusive, need, timeout, say, measured)
        finally:
            again.close()

    def _admitted(self, judge: JudgeProcess, request: JudgeRequest, model: type[CheckResult] | type[ProfileResult],
                  device: Device, key: str, exclusive: bool, need: int, timeout: float,
                  say: ProgressFn, measured: Callable[[], None] | None = None) -> CheckResult | ProfileResult:
        """The run, under the device's lease (exclusive, or shared with ``need`` bytes reserved). Once its judge has
        measured the reference, the reservation takes that need, recorded at once for the next runs (``measured``)."""
        def on_need(measured_bytes: int) -> None:
            reservation.resize(need_now := needs.need_from_measure(measured_bytes))
            needs.record_need(device, key, need_now)
            if measured:
                measured()

        with lease.hold(device, exclusive, need, on_wait=lambda message: say(message, 0, 0)) as reservation:
            judge.on_memory_need = on_need
            final = judge.run(request, timeout, say)
        try:
            result = model.model_validate(final.result)
        except ValueError as exc:
            raise JudgeFailure(f"the judge's result does not fit {model.__name__}: {exc}") from None
        if request.mode != "measure":  # (a measure's need was recorded when its judge sent it; no check ran)
            # a device-wide reading counts the neighbours' allocations too: only a run alone is read so
            needs.record_peak(device, key, final.own_peak_bytes if reservation.crowded else final.peak_memory_bytes)
        return result

    def _take_judge(self, device: str, mode: str, say: ProgressFn) -> JudgeProcess:
        if mode == "measure":  # no candidate runs: no candidate host (each boots torch and a device context)
            return JudgeProcess(device, hosts=0, pin=self.pin)
        with self._lock:
            waiting = self._judges.get(device) or []
            spare = waiting.pop(0) if waiting else None if self.pin else claim_prestarted(device, mode == "profile")
        if spare is not None:
            if spare.alive and spare.unchanged(BOOT_TIMEOUT_S, say):
                return spare
            spare.close()
        return JudgeProcess(device, warm_profiler=mode == "profile", pin=self.pin)

    # --- compile steps --------------------------------------------------------------------------------
    def step(self, request, problem: Problem, timeout_s: float, device: Device | None = None) -> StepReply:
        """One compile step in its own untrusted process, under the guard; ``device``: the GPU its candidate
        code runs on (recording), held shared. A build ahead (``prebuild``) holds ``device`` shared with no memory
        reserved, whatever its kind, so no timing runs beside its compilers; other builds never hold a device."""
        interpret = getattr(request, "device", "") == "cpu"
        reply = None
        with self._guarded(problem, Path(request.candidate)) as tampered:
            process = self._take_step(interpret)
            ahead = request.kind == "prebuild" and device is not None
            on_gpu = device is not None and device.is_gpu and not ahead
            need = needs.memory_need(device, needs.problem_key(problem)) if on_gpu else 0
            held = lease.hold(device, exclusive=False, need_bytes=need) if on_gpu or ahead else nullcontext()
            try:
                with held:
                    reply = process.run(request, Path(request.candidate), timeout_s)
            finally:
                process.close(keep=not (reply is not None and reply.timed_out))
        if tampered:
            reply = reply.model_copy(update={"ok": False, "tampered": list(tampered)})
        return self._redactor.model(reply)

    def _take_step(self, interpret: bool) -> StepProcess:
        with self._lock:
            spare = self._steps.pop(interpret, None)
        if spare is not None and spare.alive:
            return spare
        if spare is not None:
            spare.close()
        return StepProcess(interpret, self.pin)

    @contextmanager
    def exclusive(self, device: Device, on_progress: ProgressFn | None = None) -> Iterator[None]:
        """The device alone, for work in this process (calibrate)."""
        say = on_progress or (lambda *_: None)
        with lease.hold(device, exclusive=True, on_wait=lambda message: say(message, 0, 0)):
            yield

    def local_gpu(self) -> Device | None:
        """This machine's first GPU as torch sees it (imports torch here), or None."""
        device, _ = resolve("cuda")
        return device

    # --- bookkeeping ----------------------------------------------------------------------------------
    @contextmanager
    def _guarded(self, problem: Problem, candidate: Path, in_namespace: bool = True) -> Iterator[list[str]]:
        """Guard the files the harness relies on for the block, unless candidates started ``in_namespace``
        see them read-only (mounts.seal_file_systems): then the workspace is never guarded, reverted or
        quarantined, and agents and editors may change it at any time. The list yielded receives what
        was tampered with once the block ends. Warm processes are started again only when no candidate of
        this runner is running, so none imports a file a candidate has changed and the guard not yet
        restored."""
        tampered: list[str] = []
        guard = None if in_namespace and sealed(problem, candidate) else guard_for(problem)
        with self._lock:
            self._in_flight += 1
        try:
            yield tampered
        finally:
            if guard is not None:
                tampered.extend(guard.restore())
            with self._lock:
                self._in_flight -= 1
                idle = self._in_flight == 0
            if idle and self.warm:
                self._refill()

    def prewarm(self, device: str) -> None:
        """Boot spares for ``device`` now, as after a run (a pool's new worker)."""
        with self._lock:
            self._judges.setdefault(device, [])
        self._refill()

    def _refill(self) -> None:
        with self._lock:
            if self._closed or self._in_flight:  # a run began meanwhile: refill when it ends
                return
            for device in dict.fromkeys([*self._devices, *self._judges]) or ["auto"]:
                waiting = self._judges.setdefault(device, [])
                # in batches: warm-ups (5-7 s on the H200) hold the device's lease; together they pause once
                if self.spares and len(waiting) < max(1, self.spares // 2):
                    waiting.extend(JudgeProcess(device, warm_profiler=True, pin=self.pin)
                                   for _ in range(self.spares - len(waiting)))
            # builds and captures never interpret; recording does where there is no GPU
            for interpret in {False, guess_kind("auto") == "cpu"} if self.step_hosts else ():
                if interpret not in self._steps:
                    self._steps[interpret] = StepProcess(interpret, self.pin)

    def resolved(self, device: str) -> Device | None:
        """What a device asked for resolved to in an earlier judge (None before any)."""
        return self._devices.get(device)

    def describe(self) -> str:
        return "this machine"

    def warm_processes(self) -> dict[str, int]:
        """The pid of each process kept warm, by what it serves ("judge auto", "step record-interpreted")."""
        with self._lock:
            found = {f"judge {device}" + (f" {i + 1}" if i else ""): p.proc.pid
                     for device, waiting in self._judges.items() for i, p in enumerate(waiting)}
            found.update({f"step {'record-interpreted' if i else 'build'}": p.proc.pid for i, p in self._steps.items()})
        return found

    def close(self) -> None:
        with self._lock:
            self._closed = True
            spares = [p for waiting in self._judges.values() for p in waiting] + list(self._steps.values())
            self._judges, self._steps = {}, {}
        for process in spares:
            process.close()


_default: LocalRunner | None = None


def default_runner() -> LocalRunner:
    """The runner of a one-shot call (CLI, Python API without ``runner=``): nothing kept warm."""
    global _default
    if _default is None:
        _default = LocalRunner(warm=False)
    return _default

