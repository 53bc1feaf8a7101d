"""sanitize: the candidate's kernels under NVIDIA Compute Sanitizer (memcheck, racecheck, initcheck, synccheck)
on the problem's smallest test, in the same unsealed-but-guarded process as ``profile --counters``; findings
for a model, bounded (backends/sanitizer.py)."""
from __future__ import annotations

import math
from pathlib import Path

from kernel_mcp.backends.sanitizer import TOOLS, SanitizeResult, summary
from kernel_mcp.errors import UsageError
from kernel_mcp.problem import Problem, load_problem
from kernel_mcp.tools._request import resolve_candidate
from kernel_mcp.worker import Runner, default_runner, guess_kind
from kernel_mcp.worker.protocol import parse_device

NO_GPU = ("compute-sanitizer checks CUDA kernels, so it needs an NVIDIA GPU; this device is a CPU "
          "(`check` and `profile` run here)")
AMD = ("not on AMD GPUs yet: ROCm's AddressSanitizer needs the kernels rebuilt with -fsanitize=address on an "
       "xnack+ target, which kernel_mcp does not do (docs/gpu-verification.md)")


def sanitize(problem: str | Path | Problem, candidate: str | Path, device: str = "auto",
             tools: list[str] | None = None, runner: Runner | None = None) -> SanitizeResult:
    """Each of ``tools`` (default: all four) over the candidate on the problem's smallest test. Raises
    UsageError for bad paths or tool names; a missing GPU or tool is an answer that says so, not an error."""
    prob, path = load_problem(problem), resolve_candidate(candidate)
    chosen = tuple(tools or TOOLS)
    unknown = [t for t in chosen if t not in TOOLS]
    if unknown:
        raise UsageError(f"unknown sanitizer tool {', '.join(unknown)}: choose from {', '.join(TOOLS)}")
    params = smallest(prob)
    result = SanitizeResult(problem=prob.name, candidate=str(path), device=parse_device(device),
                            params={**params, "seed": "secret"} if "seed" in params else dict(params))
    if guess_kind(device) == "cpu":
        result.message = NO_GPU
        return result
    runner = runner or default_runner()
    gpu = runner.local_gpu()
    if gpu is None or not gpu.is_gpu:
        result.message = NO_GPU
        return result
    if gpu.vendor == "amd":
        result.message = AMD
        return result
    result.device = gpu.torch
    result.tools, tampered = runner.sanitize(prob, path, gpu, chosen, params)
    result.findings = tampered
    ran = all(r.ran for r in result.tools)
    result.clean = all(r.found_nothing for r in result.tools) if ran else None
    result.summary = summary(result.tools)
    return result


def smallest(problem: Problem) -> dict:
    """The test with the fewest elements by its integer sizes (the seed aside): sanitizers run every kernel
    many times slower."""
    def size(case: dict) -> float:
        return math.prod(v for k, v in case.items() if k != "seed" and type(v) is int and v > 0)
    return min(problem.tests, key=size) if problem.tests else {}
