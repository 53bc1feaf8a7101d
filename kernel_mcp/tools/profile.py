"""profile: how fast is the candidate, against the reference (and a baseline), and can the number be
believed? Correctness first (a full check in the same run), then timing: worker/profile_run.py."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernel_mcp.problem import load_problem
from kernel_mcp.results import Finding, ProfileResult, ProfileSettings, UsageError
from kernel_mcp.tools.check import judge_request, resolve_candidate
from kernel_mcp.worker import sandbox
from kernel_mcp.worker.client import ProgressFn
from kernel_mcp.worker.guard import tampering_finding
from kernel_mcp.worker.protocol import Device, parse_device
from kernel_mcp.worker.runner import Runner, default_runner


def settings_from(**values: Any) -> ProfileSettings:
    """ProfileSettings from keyword values; a bad value is a UsageError naming the setting."""
    try:
        return ProfileSettings(**values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"bad profile settings: {problems}") from None


def profile(problem: str | Path, candidate: str | Path, baseline: str | Path | None = None,
            device: str = "auto", settings: ProfileSettings | None = None, counters: bool = False,
            on_progress: ProgressFn | None = None, runner: Runner | None = None) -> ProfileResult:
    """Check ``candidate``, then time it against the reference on every benchmark shape of ``problem``
    (its tests when it lists no benchmarks), optionally also against ``baseline`` (another candidate,
    e.g. the best so far). Raises UsageError for bad paths or settings."""
    device = parse_device(device)
    runner = runner or default_runner()
    prob = load_problem(problem)
    path = resolve_candidate(candidate)
    request = judge_request(mode="profile", problem=str(prob.path), candidate=str(path),
                            baseline=str(resolve_candidate(baseline)) if baseline else None,
                            settings=settings or ProfileSettings())
    result = runner.judge(request, device, on_progress)
    assert isinstance(result, ProfileResult)
    if counters:
        add_counters(result, prob, path, runner, runner.resolved(device))
    return result


WITNESS_FRACTION = 0.9  # events time more than the kernels alone: a median below ncu's duration is forged


def add_counters(result: ProfileResult, prob, path: Path, runner: Runner, device: Device | None,
                 shape: int = 0) -> None:
    """Hardware counters on one shape, in a separate process under the vendor's profiler (the device held
    exclusively, the files guarded); its kernel duration is also an independent witness for the median."""
    from kernel_mcp.counters import CounterReport, run_counters
    if device is None or not device.is_gpu or not result.passed or not result.shapes:
        result.counters = CounterReport(message="counters need a GPU and a candidate that passed profiling")
        return
    params = prob.benchmarks[shape] if result.settings.get("shapes") != "tests" else prob.tests[shape]
    spec = json.dumps({"problem": str(prob.path), "candidate": str(path), "params": params,
                       "device": device.torch})
    with runner.guarded(prob) as tampered, runner.exclusive(device):
        report = run_counters([sys.executable, "-B", "-m", "kernel_mcp.worker.counter_target", spec],
                              sandbox.harness_env(), prob.spec.timeouts.total, device.vendor)
    result.counters = report
    if tampered:
        result.passed = result.trusted = False
        result.verdict = "fail: tampering"
        result.findings.append(tampering_finding(tampered))
    _witness(result, report)


def _witness(result: ProfileResult, report) -> None:
    timed = result.shapes[0].candidate
    durations = [k.duration_us for k in report.kernels if k.duration_us is not None]
    if timed is None or not durations:
        return
    kernels_us = sum(durations)
    if timed.median_ms * 1e3 < WITNESS_FRACTION * kernels_us:
        result.shapes[0].credited = False
        result.findings.append(Finding(code="below_profiler_witness", message=(
            f"shape 0: the reported median {timed.median_ms * 1e3:.2f} us is below the {kernels_us:.2f} us "
            f"{report.tool} measured for the candidate's own kernels")))
        from kernel_mcp.worker.profile_verdict import (
            overall,  # imports torch: only once there is a result
        )
        overall(result)
