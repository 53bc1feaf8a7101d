"""check: does the candidate compute the problem's function, on inputs it has never seen?"""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.problem import Problem, load_problem
from kernel_mcp.results import CheckResult, Finding, ProfileResult, UsageError
from kernel_mcp.worker.client import JudgeFailure, ProgressFn, run_judge
from kernel_mcp.worker.guard import guard_for, tampering_finding

DEVICES = ("auto", "cpu", "cuda")
HARNESS_MARGIN_S = 120  # judge start-up, reference computation and clean-up on top of the task's timeouts


def resolve_candidate(candidate: str | Path) -> Path:
    path = Path(candidate).expanduser().resolve()
    if not path.is_file():
        raise UsageError(f"candidate not found: {candidate}")
    if path.suffix != ".py":
        raise UsageError(f"{candidate}: a candidate is a Python file defining custom_kernel(data) "
                         "(or ModelNew for a KernelBench problem)")
    return path


def check(problem: str | Path, candidate: str | Path, device: str = "auto", fresh_seeds: int | None = None,
          on_progress: ProgressFn | None = None) -> CheckResult:
    """Run ``candidate`` on every test of ``problem`` (plus secret-seeded copies) in a sandboxed process and
    judge each output in a separate trusted process. Raises UsageError for bad paths or problem folders."""
    if device not in DEVICES and not device.startswith("cuda:"):
        raise UsageError(f"unknown device {device!r}; use one of {', '.join(DEVICES)}")
    prob = load_problem(problem)
    path = resolve_candidate(candidate)
    request = {"mode": "check", "problem": str(prob.path), "candidate": str(path), "device": device,
               "fresh_seeds": fresh_seeds}
    return run_guarded(prob, path, request, on_progress)


def run_guarded(prob: Problem, path: Path, request: dict, on_progress: ProgressFn | None,
                model: type[CheckResult] | type[ProfileResult] = CheckResult,
                extra_time_s: float = 0.0) -> CheckResult | ProfileResult:
    """Run one judge request with the problem's and harness's files guarded; tampering fails the result."""
    guard = guard_for(prob)
    try:
        body = run_judge(request, prob.spec.timeouts.total + extra_time_s + HARNESS_MARGIN_S, on_progress)
        result = model.model_validate(body)
    except JudgeFailure as exc:
        extra = {"trusted": False} if model is ProfileResult else {}
        result = model(passed=False, verdict="error: harness", problem=prob.name, candidate=str(path),
                       findings=[Finding(code="judge_failed", message=str(exc))], **extra)
    tampered = guard.restore()
    if tampered:
        result.passed = False
        result.verdict = "fail: tampering"
        if isinstance(result, ProfileResult):
            result.trusted = False
        result.findings.append(tampering_finding(tampered))
    return result
