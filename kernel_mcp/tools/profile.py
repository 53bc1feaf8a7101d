"""profile: how fast is the candidate, against the reference (and a baseline), and can the number be
believed? Correctness first (a full check in the same run), then timing: worker/judge/profile.py."""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.problem import Problem, load_problem
from kernel_mcp.results import ProfileResult, ProfileSettings
from kernel_mcp.tools._request import judge_request, resolve_candidate
from kernel_mcp.worker import Runner, default_runner
from kernel_mcp.worker.protocol import ProgressFn, parse_device


def profile(problem: str | Path | Problem, candidate: str | Path, baseline: str | Path | None = None,
            device: str = "auto", settings: ProfileSettings | None = None, counters: bool = False,
            on_progress: ProgressFn | None = None, runner: Runner | None = None,
            call_timeout_s: float | None = None) -> ProfileResult:
    """Check ``candidate``, then time it against the reference on every benchmark shape of ``problem``
    (its tests when it lists no benchmarks), optionally also against ``baseline`` (another candidate,
    e.g. the best so far). Raises UsageError for bad paths or settings."""
    device = parse_device(device)
    runner = runner or default_runner()
    prob = load_problem(problem)
    path = resolve_candidate(candidate)
    request = judge_request(mode="profile", problem=str(prob.path), candidate=str(path),
                            baseline=str(resolve_candidate(baseline)) if baseline else None,
                            settings=settings or ProfileSettings(), call_timeout_s=call_timeout_s)
    result = runner.judge(request, device, on_progress, prob)
    assert isinstance(result, ProfileResult)
    if counters:
        runner.counters(result, prob, path, runner.resolved(device))
    return result
