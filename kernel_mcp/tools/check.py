"""check: does the candidate compute the problem's function, on inputs it has never seen?"""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.problem import Problem, load_problem
from kernel_mcp.results import CheckResult
from kernel_mcp.tools._request import judge_request, resolve_candidate
from kernel_mcp.worker import Runner, default_runner
from kernel_mcp.worker.protocol import ProgressFn, SharedReference, parse_device


def check(problem: str | Path | Problem, candidate: str | Path, device: str = "auto", fresh_seeds: int | None = None,
          on_progress: ProgressFn | None = None, runner: Runner | None = None,
          call_timeout_s: float | None = None, tests: list[dict] | None = None,
          shared: SharedReference | None = None) -> CheckResult:
    """Run ``candidate`` on every test of ``problem`` (plus secret-seeded copies) in a sandboxed process and
    judge each output in a separate trusted process; ``tests``: other shapes in place of the task's tests
    (held-out shapes); ``shared``: a batch's inputs and float64 truths (batch/judging.py). Raises UsageError
    for bad paths or problem folders."""
    device = parse_device(device)
    prob = load_problem(problem)
    request = judge_request(mode="check", problem=str(prob.path), candidate=str(resolve_candidate(candidate)),
                            fresh_seeds=fresh_seeds, call_timeout_s=call_timeout_s, tests=tests, shared=shared)
    return (runner or default_runner()).judge(request, device, on_progress, prob)
