"""check: does the candidate compute the problem's function, on inputs it has never seen?"""
from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from kernel_mcp.problem import load_problem
from kernel_mcp.results import CheckResult, UsageError
from kernel_mcp.worker.protocol import JudgeRequest, ProgressFn, field_problems, parse_device
from kernel_mcp.worker.runner import Runner, default_runner


def resolve_candidate(candidate: str | Path) -> Path:
    path = Path(candidate).expanduser().resolve()
    if not path.is_file():
        raise UsageError(f"candidate not found: {candidate}")
    if path.suffix != ".py":
        raise UsageError(f"{candidate}: a candidate is a Python file defining custom_kernel(data) "
                         "(or ModelNew for a KernelBench problem)")
    return path


def judge_request(**fields) -> JudgeRequest:
    """A JudgeRequest from the tool's arguments; a bad value is a UsageError naming it."""
    try:
        return JudgeRequest(**fields)
    except ValidationError as exc:
        raise UsageError(field_problems(exc)) from None


def check(problem: str | Path, candidate: str | Path, device: str = "auto", fresh_seeds: int | None = None,
          on_progress: ProgressFn | None = None, runner: Runner | None = None,
          call_timeout_s: float | None = None) -> CheckResult:
    """Run ``candidate`` on every test of ``problem`` (plus secret-seeded copies) in a sandboxed process and
    judge each output in a separate trusted process. Raises UsageError for bad paths or problem folders."""
    device = parse_device(device)
    prob = load_problem(problem)
    request = judge_request(mode="check", problem=str(prob.path), candidate=str(resolve_candidate(candidate)),
                            fresh_seeds=fresh_seeds, call_timeout_s=call_timeout_s)
    return (runner or default_runner()).judge(request, device, on_progress)
