"""``profile`` inside the judge: a full check, then reference, candidate (and baseline) timed in turns.

Who measures what, and why it can be believed:
* The reference is timed *here*, in the trusted judge, with every candidate process stopped (SIGSTOP), so
  no candidate can slow it down to fake a speedup; it is also timed before any candidate is loaded (a later
  median far above that one means it was disturbed).
* The candidate is timed in its own process by host/timing.py, whose clocks were bound before the candidate was
  imported; the caches are flushed here (judge/flush.py). Every timed call gets inputs from a fresh secret seed,
  and every output is validated here against the float64 reference: no cache keyed on anything serves it.
* The output is copied here first, with every candidate process stopped, and its digest must be the one
  taken right after the call: an answer a thread or stream finished off the clock fails, and so does a
  call that left a hook or mode behind to run code later (host/aftercall.py).
* What the candidate's process reports is checked against what it cannot control: the judge's wall clock
  around the call, the physical floor of the shape (bytes / bandwidth, flops / peak), a wait in a
  device-wide sync after the end event, and CUPTI's device busy time.
"""
from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path
from typing import Any

import torch

from kernel_mcp import stats
from kernel_mcp.hardware.devices import present_device
from kernel_mcp.results import Finding, ProfileResult, ProfileSettings
from kernel_mcp.worker import tensors
from kernel_mcp.worker.host import aftercall, factory, timing
from kernel_mcp.worker.isolation import proctree
from kernel_mcp.worker.judge import flush
from kernel_mcp.worker.judge.check import check_on, prepare
from kernel_mcp.worker.judge.context import Judging
from kernel_mcp.worker.judge.outputs import Answer, judge_values, output_integrity
from kernel_mcp.worker.judge.parking import release_device_memory
from kernel_mcp.worker.judge.reference import CaseData, ReferenceRuntime
from kernel_mcp.worker.judge.session import CandidateSession
from kernel_mcp.worker.judge.verdict import Contestant, decide, serve_unlisted_size, time_all_shapes
from kernel_mcp.worker.protocol import Device

WALL_SLACK_MS = 0.05  # the judge's wall clock around a call may round below the events by this much


class Profiler:
    def __init__(self, runtime: ReferenceRuntime, settings: ProfileSettings, reporter, result: ProfileResult,
                 device: Device):
        self.rt, self.settings, self.reporter, self.result = runtime, settings, reporter, result
        self.device = runtime.device
        found = present_device(device.index) if device.is_gpu else None  # None: the CPU
        self.ceilings = found.ceilings if found else None
        self.flusher = flush.Flusher(self.device, flush.cache_bytes(self.device, found))
        self.clock = timing.Clock(self.device)  # the reference's
        self.sessions: list[CandidateSession] = []
        self.solo_reference: dict[int, stats.Summary] = {}
        self.input_dtype = ""  # of the first floating-point input last generated (for the roofline)
        self.stopped: list[int] = []
        self.scheduling = proctree.Scheduling()  # the judge's CPU affinity and priority, to notice tampering

    def guard_scheduling(self) -> None:
        """A candidate that can see the judge (no PID namespace) could pin it to one busy CPU or lower its
        priority to slow the reference down: put both back (proctree.Scheduling), and report it."""
        changed = self.scheduling.restore()
        if changed:
            self.result.findings.append(Finding(code="judge_tampered", message=(
                f"the judge's CPU affinity or priority was changed from outside ({changed}); restored, but "
                "timings taken before may be wrong")))

    # --- one timed call per contestant -------------------------------------------------------------
    def fresh_input(self, params: dict) -> Any:
        """Inputs from a fresh secret seed (signed where the problem allows: kernelbench.py), for the
        reference's own timed runs, which start from a fresh RNG seed."""
        release_device_memory(self.rt.device, thorough=False)  # inputs shared earlier, once dropped
        self.rt.rng_seed = secrets.randbits(31)
        data = self.rt.generate({**params, "seed": secrets.randbits(31)}, signed=True)
        self._note_dtype(data)
        return data

    def fresh_case(self, params: dict) -> CaseData:
        """A candidate's timed call's inputs: as a check's case (roles measured, unread inputs poisoned)."""
        release_device_memory(self.rt.device, thorough=False)
        served = self.rt.case({**params, "seed": secrets.randbits(31)}, signed=True)
        self._note_dtype(served.data)
        return served

    def _note_dtype(self, data: Any) -> None:
        floating = [t.dtype for _, t in tensors.leaves(data) if t.is_floating_point()]
        self.input_dtype = str(floating[0]).removeprefix("torch.") if floating else ""

    def sample(self, who: Contestant, params: dict, mode: str = "op") -> float | None:
        """One call on fresh inputs; returns the op time in ms (None if the call failed or was a figure)."""
        if who.session is None:
            return self._sample_reference(who, self.fresh_input(params))
        served = self.fresh_case(params)
        shared = self.rt.share_copy(served.data)  # the pristine inputs stay the judge's own
        self.flusher.flush()  # here, where the candidate cannot reach it
        self.pause_all_but(who.session)
        started = time.perf_counter()
        copied: tuple[str, str, Answer | None] = ("", "", None)
        try:
            reply = who.session.time(who.calls, shared, {"mode": mode, "rng_seed": served.rng_seed},
                                     self.rt.call_timeout)
            wall_ms = (time.perf_counter() - started) * 1e3
            if reply.kind == "output":
                # first, with the candidate stopped too: nothing it left running may write the output
                # while it is copied (the float64 reference, which takes long, comes after)
                self.pause_all_but(None)
                copied = output_integrity(reply.output, served, shared)
        finally:
            self.resume_all()
        who.calls += 1
        if reply.kind != "output":
            who.failure = f"{reply.kind}: {reply.message}"
            return None
        return self._judge_timed(who, reply, params, served, copied, wall_ms)

    def pause_all_but(self, active: CandidateSession | None) -> None:
        """SIGSTOP every process below the judge except the one being timed. Below the *judge*, not below
        each candidate host: a daemon that double-forked re-parents to the judge (a subreaper) and would
        escape a per-host stop, free to load the machine while the reference is timed."""
        keep = set() if active is None else {active.proc.pid, *proctree.descendants(active.proc.pid)}
        keep.add(factory.factory_pid())  # trusted and idle; a host may be asked of it meanwhile
        self.stopped = proctree.stop_descendants(os.getpid(), keep)

    def resume_all(self) -> None:
        proctree.signal_tree(os.getpid(), signal.SIGCONT, include_self=False)

    def _sample_reference(self, who: Contestant, data: Any) -> float:
        self.pause_all_but(None)
        self.guard_scheduling()
        try:
            torch.manual_seed(self.rt.rng_seed)  # outside the clock, as the candidate host does
            self.flusher.flush()
            _, call = timing.timed_call(self.rt.unseeded, data, self.clock)
        finally:
            self.resume_all()
        if self.device.startswith("cuda"):
            who.issue_ms.append(call.issue_ms)
        return call.op_ms

    def _judge_timed(self, who: Contestant, reply, params: dict, served: CaseData,
                     copied: tuple[str, str, Answer | None], wall_ms: float) -> float | None:
        figures = reply.figures  # keys and value ranges checked by the session (session.FIGURE_KEYS)
        who.patched.update(figures["patched"])
        failure, message, answer = copied
        if not failure:
            failure, message = aftercall.judged(figures, answer.output)
        if not failure:  # values, then the problem's own check_implementation and properties, as in check
            reference = self.rt.expected(served, params)
            failure, message, _ = judge_values(answer, reference, self.rt, params, served.data)
            if failure == "mismatch":
                message = f"an output produced while timing does not match the reference: {message}"
        if failure:
            who.failure = f"{failure}: {message}"
            return None
        op_ms = float(figures["op_ms"])
        if not (0 < op_ms <= wall_ms + WALL_SLACK_MS):
            who.failure = (f"timer_inconsistent: it reported {op_ms:.4g} ms for a call the judge saw take "
                           f"{wall_ms:.4g} ms in all")
            return None
        if "busy_us" in figures:
            who.busy_us.append(float(figures["busy_us"]))
        if self.device.startswith("cuda") and "issue_ms" in figures:
            who.issue_ms.append(float(figures["issue_ms"]))
        who.escaped += float(figures.get("tail_ms", 0.0)) > max(timing.ESCAPE_TAIL_MS,
                                                                timing.ESCAPE_TAIL_FRACTION * op_ms)
        return op_ms

    # --- one shape ---------------------------------------------------------------------------------
    def measure_solo_reference(self, shapes: list[dict]) -> None:
        """The reference's time on each shape before any candidate is loaded."""
        ref = Contestant("reference")
        for i, params in enumerate(shapes):
            for _ in range(self.settings.warmup):
                self.sample(ref, params)
            samples = [self.sample(ref, params) for _ in range(self.settings.min_samples)]
            self.solo_reference[i] = stats.summarize(samples)

    def profile_shape(self, index: int, params: dict, contestants: list[Contestant], deadline: float) -> None:
        s = self.settings
        for who in contestants:
            who.samples, who.busy_us, who.issue_ms, who.escaped = [], [], [], 0
            for _ in range(s.warmup):
                if not who.failure and time.monotonic() < deadline:
                    self.sample(who, params)
        # the budget ends sampling, but not before every contestant has min_samples; a hard stop at twice
        # the shape's budget (plus a minute) ends a contestant that never delivers usable samples
        hard_stop = deadline + max(60.0, 2 * (deadline - time.monotonic()))
        while True:
            active = [w for w in contestants if not w.failure and len(w.samples) < s.max_samples
                      and not stats.converged(w.samples, s.target_ci, s.min_samples)]
            now = time.monotonic()
            if not active or (now >= deadline and all(len(w.samples) >= s.min_samples for w in active)):
                break
            if now >= hard_stop:
                for who in active:
                    if len(who.samples) < s.min_samples:
                        who.failure = (f"too_few_samples: {len(who.samples)} usable samples in {who.calls} calls "
                                       "before the hard time limit")
                break
            for who in active:
                value = self.sample(who, params)
                if value is not None:
                    who.samples.append(value)
            self.reporter.tick(f"shape {index}: {_counts(contestants)} so far", index, 0)
        # always, and last: a log keeps one line a stage; a first running count must not be a shape's last word
        self.reporter.progress(f"shape {index} timed: {_counts(contestants)}", index, 0)
        if self.device.startswith("cuda"):
            for who in contestants:
                for _ in range(s.kernel_calls if not who.failure else 0):
                    self._busy_sample(who, params)

    def _busy_sample(self, who: Contestant, params: dict) -> None:
        if who.session is not None:
            self.sample(who, params, mode="kernel")
            return
        data = self.fresh_input(params)
        self.pause_all_but(None)
        try:
            torch.manual_seed(self.rt.rng_seed)
            self.flusher.flush()
            _, _, busy_us, _ = timing.kernel_busy_us(self.rt.unseeded, data, self.device)
        finally:
            self.resume_all()
        who.busy_us.append(busy_us)

    def graph_figure(self, who: Contestant, params: dict) -> float | None:
        try:
            if who.session is None:
                return timing.graph_replay_ms(self.rt.ref_kernel, self.fresh_input(params))
            reply = who.session.time(-1, self.rt.share_copy(self.fresh_input(params)),
                                     {"mode": "graph", "rng_seed": self.rt.rng_seed}, self.rt.call_timeout)
            return float(reply.figures["graph_ms"]) if reply.kind == "output" else None
        except Exception:  # noqa: BLE001  (capture is not possible for every kernel: then no figure)
            return None


def _counts(contestants: list[Contestant]) -> str:  # the usable samples: what the table shows as n
    return ", ".join(f"{w.role} {len(w.samples)} sample{'' if len(w.samples) == 1 else 's'}" for w in contestants)


def run_profile(judging: Judging) -> ProfileResult:
    request = judging.request
    if request.baseline:
        judging.hosts.prestart()  # boots between the reference's samples and while the candidate is checked
    check, runtime = prepare(judging)
    result = ProfileResult(passed=False, trusted=False, verdict="", problem=check.problem,
                           candidate=request.candidate, baseline=request.baseline or "",
                           device=check.device, settings=request.settings.model_dump())
    result.check = check
    if runtime is None:
        result.verdict = check.verdict
        return result
    if judging.device.is_gpu:
        result.device_name = judging.device.name
    profiler = Profiler(runtime, request.settings, judging.reporter, result, judging.device)
    shapes = runtime.problem.tests if request.settings.shapes == "tests" else runtime.problem.benchmarks
    judging.reporter.progress("timing the reference alone", 0, len(shapes))
    profiler.measure_solo_reference(shapes)
    candidate = Contestant("candidate", judging.open_session(runtime))
    profiler.sessions.append(candidate.session)
    contestants = [Contestant("reference"), candidate]
    try:
        if request.baseline:
            contestants.append(Contestant("baseline", judging.open_session(runtime, Path(request.baseline))))
            profiler.sessions.append(contestants[-1].session)
            _start_baseline(contestants[-1], runtime, result)
        check_on(candidate.session, runtime, judging, check)
        if check.passed and request.settings.shapes != "tests":  # the benchmarks are timed: a size near them
            serve_unlisted_size(profiler, candidate)
        if check.passed and not candidate.failure:
            time_all_shapes(profiler, shapes, contestants)
    finally:
        check.log_tail = result.log_tail = candidate.session.log_tail()
        for session in profiler.sessions:
            session.close()
    decide(result, check, contestants)
    return result


def _start_baseline(who: Contestant, runtime: ReferenceRuntime, result: ProfileResult) -> None:
    failure = who.session.start(runtime.problem.spec.timeouts.import_)
    if failure:
        who.failure = f"{failure.kind}: {failure.message}"
        result.findings.append(Finding(code="baseline_failed", severity="warning",
                                       message=f"the baseline could not be imported: {failure.message[:1500]}"))

