"""The contract every runner keeps (``Runner``), the margins it allows a judge, and the result of a run that
ended without a trustworthy verdict."""
from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from kernel_mcp.problem import Problem
from kernel_mcp.results import CheckResult, Finding, ProfileResult
from kernel_mcp.worker.protocol import Device, JudgeRequest, ProgressFn, StepReply

HARNESS_MARGIN_S = 120  # judge start-up, reference computation and clean-up on top of the task's timeouts
BOOT_TIMEOUT_S = 300  # a judge's boot: interpreter, torch, device context, CUPTI, its first host


def harness_error(model: type[CheckResult] | type[ProfileResult], problem: Problem, request: JudgeRequest,
                  code: str, message: str) -> CheckResult | ProfileResult:
    """The result of a run that ended without a trustworthy verdict (``code`` says where it broke)."""
    untrusted = {"trusted": False} if model is ProfileResult else {}
    return model(passed=False, verdict="error: harness", problem=problem.name, candidate=request.candidate,
                 findings=[Finding(code=code, message=message)], **untrusted)


class OnThisMachine:
    """What a pool and a Ray runner both do with this machine's own runner (``_local``): the device held alone
    for work in the caller (calibrate), and the sanitizer, which needs the GPU held alone as counters do."""

    _local: Runner

    def exclusive(self, device: Device, on_progress: ProgressFn | None = None) -> AbstractContextManager:
        return self._local.exclusive(device, on_progress)

    def sanitize(self, problem: Problem, candidate: Path, device: Device, tools: tuple[str, ...],
                 params: dict) -> tuple[list, list[str]]:
        return self._local.sanitize(problem, candidate, device, tools, params)


class Runner(Protocol):
    """What tools ask of a runner: LocalRunner (local.py), PoolRunner (runners/pool.py), RayRunner (ray.py)."""
    parallel: int  # evaluations worth running at once
    local_builds: bool  # its checks load the builds kept on this machine (a build made here ahead is used)

    def judge(self, request: JudgeRequest, device: str = "auto", on_progress: ProgressFn | None = None,
              problem: Problem | None = None) -> CheckResult | ProfileResult: ...
    def step(self, request, problem: Problem, timeout_s: float, device: Device | None = None) -> StepReply: ...
    def counters(self, result: ProfileResult, problem: Problem, candidate: Path, device: Device | None,
                 shape: int = 0) -> None: ...
    def sanitize(self, problem: Problem, candidate: Path, device: Device, tools: tuple[str, ...],
                 params: dict) -> tuple[list, list[str]]: ...
    def exclusive(self, device: Device, on_progress: ProgressFn | None = None) -> AbstractContextManager: ...
    def local_gpu(self) -> Device | None: ...
    def resolved(self, device: str) -> Device | None: ...
    def describe(self) -> str: ...
    def close(self) -> None: ...
