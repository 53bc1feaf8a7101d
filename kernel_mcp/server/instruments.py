"""The instruments as one-call tools: check, compile, sanitize, profile, roofline, evaluate.

profile, roofline and evaluate can take minutes; each is built here as a ``Work`` (arguments validated
first, so misuse is refused before anything runs) that the one-call tool runs while sending progress
notifications, and that job_tools.py runs as a job for clients that drop long calls.
"""
from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from kernel_mcp.backends.sanitizer import SanitizeResult
from kernel_mcp.results import CheckResult, ProfileSettings
from kernel_mcp.server.common import READ_ONLY, WRITES_SNAPSHOTS, Shapes, ToolSpace, run_blocking, tool_errors
from kernel_mcp.server.jobs import Work
from kernel_mcp.tools._request import evaluate_request, settings_from
from kernel_mcp.tools.check import check as run_check
from kernel_mcp.tools.compile import compile as run_compile
from kernel_mcp.tools.evaluate import evaluate
from kernel_mcp.tools.profile import profile
from kernel_mcp.tools.roofline import roofline
from kernel_mcp.tools.sanitize import sanitize as run_sanitize
from kernel_mcp.views.summaries import (CompileSummary, EvaluateSummary, ProfileSummary, RooflineSummary,
                                        summarize_compile, summarize_evaluate, summarize_profile, summarize_roofline)
from kernel_mcp.worker import Runner
from kernel_mcp.worker.protocol import parse_device

# What each long instrument does: the description of its one-call tool and of its job form (job_tools.py).
DOES = {
    "profile": "Check, then time the candidate against the reference (and a baseline) on every benchmark shape: "
               "medians with 95% CIs, speedup, and integrity findings ('trusted' says whether to believe it). "
               "Compact summary; detail=true adds the full result under `detail`.",
    "roofline": "Profile, then place candidate and reference under the device's memory and compute roofs: % of the "
                "binding roof and bound class per shape; optionally a PNG chart written in the workspace. Compact "
                "summary; detail=true adds the full result (headroom, achieved TFLOP/s and GB/s...) under `detail`.",
    "evaluate": "The one call per attempt: compile -> check -> profile -> roofline -> snapshot (kept in git with its "
                "numbers; `parent` is the snapshot this attempt started from); sanitize=true adds Compute Sanitizer "
                "(slow). Compact summary with the snapshot id; detail=true adds the full result under `detail`.",
}


def one_call(name: str) -> str:
    """The one-call tool's description: what it does, and when to take the job form instead."""
    return (f"{DOES[name]} Can take minutes: when the call may exceed ~45 s (benchmark shapes, a GPU) or where tool "
            f"calls are dropped after ~60 s (Claude Code, Codex), use {name}_start + job_wait instead.")


def _settings(device: str, budget_s: float, shapes: Shapes) -> ProfileSettings:
    """The timing settings; a bad device or setting is refused now, before a job would start on it."""
    with tool_errors():
        parse_device(device)
        return settings_from(budget_s=budget_s, shapes=shapes)


def profile_call(space: ToolSpace, runner: Runner, *, problem: str, candidate: str, baseline: str | None,
                 device: str, budget_s: float, shapes: Shapes, detail: bool) -> Work:
    prob, cand = space.problem(problem), space.path(candidate)
    base = space.path(baseline) if baseline else None
    settings = _settings(device, budget_s, shapes)

    def work(progress) -> ProfileSummary:
        result = profile(prob, cand, baseline=base, device=device, settings=settings, on_progress=progress,
                         runner=runner)
        return summarize_profile(result, detail)
    return work


def roofline_call(space: ToolSpace, runner: Runner, *, problem: str, candidate: str, device: str,
                  png: str | None, budget_s: float, shapes: Shapes, detail: bool) -> Work:
    prob, cand = space.problem(problem), space.path(candidate)
    chart = space.path(png, must_exist=False) if png else None
    settings = _settings(device, budget_s, shapes)

    def work(progress) -> RooflineSummary:
        result = roofline(prob, cand, device=device, png=chart, settings=settings, on_progress=progress,
                          runner=runner)
        return summarize_roofline(result, detail)
    return work


def evaluate_call(space: ToolSpace, runner: Runner, *, problem: str, candidate: str, detail: bool,
                  **fields) -> Work:
    """``fields``: the rest of an EvaluateRequest (device, budget_s, shapes, author, note, parent, sanitize), checked
    now."""
    with tool_errors():
        request = evaluate_request(root=space.root, problem=space.problem(problem), candidate=space.path(candidate),
                                   **fields)

    def work(progress) -> EvaluateSummary:
        return summarize_evaluate(evaluate(request, runner, progress), detail)
    return work


def register_instruments(server: MCPServer, space: ToolSpace, runner: Runner) -> None:
    _register_check_and_compile(server, space, runner)

    @server.tool(annotations=READ_ONLY, description=one_call("profile"))
    async def profile(problem: str, candidate: str, baseline: str | None = None, device: str = "auto",
                      budget_s: float = 60.0, shapes: Shapes = "benchmarks", detail: bool = False,
                      *, ctx: Context) -> ProfileSummary:
        return await run_blocking(ctx, profile_call(space, runner, problem=problem, candidate=candidate,
                                                    baseline=baseline, device=device, budget_s=budget_s,
                                                    shapes=shapes, detail=detail))

    @server.tool(annotations=READ_ONLY, description=one_call("roofline"))
    async def roofline(problem: str, candidate: str, device: str = "auto", png: str | None = None,
                       budget_s: float = 60.0, shapes: Shapes = "benchmarks", detail: bool = False,
                       *, ctx: Context) -> RooflineSummary:
        return await run_blocking(ctx, roofline_call(space, runner, problem=problem, candidate=candidate,
                                                     device=device, png=png, budget_s=budget_s, shapes=shapes,
                                                     detail=detail))

    @server.tool(annotations=WRITES_SNAPSHOTS, description=one_call("evaluate"))
    async def evaluate(problem: str, candidate: str, device: str = "auto", budget_s: float = 60.0,
                       shapes: Shapes = "benchmarks", author: str = "agent", note: str = "",
                       parent: str | None = None, sanitize: bool = False, detail: bool = False,
                       *, ctx: Context) -> EvaluateSummary:
        return await run_blocking(ctx, evaluate_call(space, runner, problem=problem, candidate=candidate,
                                                     device=device, budget_s=budget_s, shapes=shapes, author=author,
                                                     note=note, parent=parent, sanitize=sanitize, detail=detail))


def _register_check_and_compile(server: MCPServer, space: ToolSpace, runner: Runner) -> None:
    @server.tool(annotations=READ_ONLY)
    async def check(problem: str, candidate: str, device: str = "auto", *, ctx: Context) -> CheckResult:
        """Does the candidate compute the problem's function? Runs every test plus secret-seeded copies in a
        sandbox and judges each output against a float64 reference with derived tolerances. Also reports
        whether a repeated call gives the same bits (`determinism`), judges the task's declared properties
        (deterministic, batch_invariant, random shapes) and records the device and stack (`provenance`)."""
        prob, cand = space.problem(problem), space.path(candidate)
        return await run_blocking(ctx, lambda progress: run_check(prob, cand, device=device, on_progress=progress,
                                                            runner=runner))

    @server.tool(annotations=READ_ONLY)
    async def compile(candidate: str, problem: str | None = None, targets: list[str] | None = None,  # noqa: A001
                      asm: bool = False, detail: bool = False, *, ctx: Context) -> CompileSummary:
        """Compile the candidate's kernels for NVIDIA/AMD targets (sm_80, sm_90a, sm_100, gfx90a, gfx942,
        gfx950...): errors with file and line, registers, spills, shared memory/LDS, occupancy (instruction
        counts and asm in the detail). Compact summary; detail=true adds the full result under `detail`."""
        cand = space.path(candidate)
        prob = space.problem(problem) if problem else None
        result = await run_blocking(ctx, lambda progress: run_compile(cand, problem=prob, targets=targets, asm=asm,
                                                              on_progress=progress, runner=runner))
        return summarize_compile(result, detail)

    @server.tool(annotations=READ_ONLY)
    async def sanitize(problem: str, candidate: str, device: str = "auto", tools: list[str] | None = None,
                       *, ctx: Context) -> SanitizeResult:
        """Run the candidate's kernels on the problem's smallest test under NVIDIA Compute Sanitizer: memcheck
        (out-of-bounds or misaligned accesses), racecheck (shared-memory races), initcheck (reads of
        uninitialised memory), synccheck (barrier misuse). Per tool: clean, or each kind of error with its
        kernel and source line. For a kernel that passes on some inputs and not others, or before trusting
        masks and barriers. Slow (the tools replay every kernel); needs an NVIDIA GPU and compute-sanitizer,
        and says so where they are missing."""
        prob, cand = space.problem(problem), space.path(candidate)
        return await run_blocking(ctx, lambda progress: run_sanitize(prob, cand, device=device, tools=tools,
                                                               runner=runner))
