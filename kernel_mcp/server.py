"""The MCP server: a thin shell over kernel_mcp.tools (the only module that imports ``mcp``).

Every path argument is relative to the workspace root (the directory the server starts in, or --root)
and must resolve inside it. Long instruments run in a worker thread and report progress; timing holds a
per-machine GPU lease so that several agents' calls queue instead of disturbing each other's numbers.
Misuse becomes a ToolError whose message says what to do; an expected failure (a wrong kernel) is data.
"""
from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from kernel_mcp.results import CheckResult, CompileResult, ProfileResult, RooflineResult, UsageError
from kernel_mcp.snapshots import Snapshot
from kernel_mcp.stall import StallStatus
from kernel_mcp.tools.evaluate import EvaluateResult

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
WRITES_SNAPSHOTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
OVERWRITES_FILES = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
INSTRUCTIONS = ("Instruments for GPU kernels. Loop: compile (fast feedback) -> evaluate (check, profile, roofline "
                "and a snapshot in one call) -> status (is the search stuck?). Paths are relative to the workspace.")


class Workspace:
    """The directory every path argument must stay inside."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()

    def path(self, name: str, must_exist: bool = True) -> Path:
        if not name or name.startswith("-"):
            raise ToolError(f"bad path {name!r}: give a path relative to the workspace {self.root}")
        full = (self.root / name).resolve()  # resolves symlinks: a link out of the workspace is caught here
        if not full.is_relative_to(self.root):
            raise ToolError(f"{name} is outside the workspace {self.root}; paths must stay inside it")
        if must_exist and not full.exists():
            raise ToolError(f"{name} does not exist in the workspace {self.root}")
        return full


@contextmanager
def gpu_lease():
    """One timing run at a time on this machine (a file lock, so separate server processes queue too)."""
    lock_dir = Path(os.environ.get("KERNEL_MCP_CACHE", Path.home() / ".cache" / "kernel_mcp"))
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / "gpu.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


async def _run(ctx: Context | None, work: Callable[[Callable], Any]) -> Any:
    """Run a blocking instrument in a worker thread, forwarding its progress; UsageError -> ToolError."""
    def progress(message: str, done: int = 0, total: int = 0) -> None:
        if ctx is not None:
            anyio.from_thread.run(ctx.report_progress, float(done), float(total) if total else None, message)

    try:
        return await anyio.to_thread.run_sync(lambda: work(progress))
    except UsageError as exc:
        raise ToolError(str(exc)) from None


def build_server(root: str | Path = ".") -> MCPServer:
    space = Workspace(root)
    server = MCPServer("kernel_mcp", instructions=INSTRUCTIONS)

    @server.tool(annotations=READ_ONLY)
    async def check(problem: str, candidate: str, device: str = "auto", *, ctx: Context) -> CheckResult:
        """Does the candidate compute the problem's function? Runs every test plus secret-seeded copies in a
        sandbox and judges each output against a float64 reference with derived tolerances."""
        from kernel_mcp.tools.check import check as run
        prob, cand = space.path(problem), space.path(candidate)
        return await _run(ctx, lambda progress: run(prob, cand, device=device, on_progress=progress))

    @server.tool(annotations=READ_ONLY)
    async def compile(candidate: str, problem: str | None = None, targets: list[str] | None = None,  # noqa: A001
                      asm: bool = False, *, ctx: Context) -> CompileResult:
        """Compile the candidate's kernels for NVIDIA/AMD targets (sm_80, sm_90a, sm_100, gfx90a, gfx942,
        gfx950...): errors with file and line, registers, spills, shared memory/LDS, occupancy, instructions."""
        from kernel_mcp.tools.compile import compile as run
        cand = space.path(candidate)
        prob = space.path(problem) if problem else None
        return await _run(ctx, lambda progress: run(cand, problem=prob, targets=targets, asm=asm,
                                                    on_progress=progress))

    @server.tool(annotations=READ_ONLY)
    async def profile(problem: str, candidate: str, baseline: str | None = None, device: str = "auto",
                      budget_s: float = 60.0, *, ctx: Context) -> ProfileResult:
        """Check, then time the candidate against the reference (and a baseline) on every benchmark shape:
        medians with 95% CIs, speedup, and integrity findings ('trusted' says whether to believe it)."""
        from kernel_mcp.tools.profile import profile as run
        from kernel_mcp.tools.profile import settings_from
        prob, cand = space.path(problem), space.path(candidate)
        base = space.path(baseline) if baseline else None

        def work(progress):
            with gpu_lease():
                return run(prob, cand, baseline=base, device=device, settings=settings_from(budget_s=budget_s),
                           on_progress=progress)
        return await _run(ctx, work)

    @server.tool(annotations=READ_ONLY)
    async def roofline(problem: str, candidate: str, device: str = "auto", png: str | None = None,
                       budget_s: float = 60.0, *, ctx: Context) -> RooflineResult:
        """Profile, then place candidate and reference under the device's memory and compute roofs: % of the
        binding roof, bound class and headroom per shape; optionally a PNG chart written in the workspace."""
        from kernel_mcp.tools.profile import settings_from
        from kernel_mcp.tools.roofline import roofline as run
        prob, cand = space.path(problem), space.path(candidate)
        chart = space.path(png, must_exist=False) if png else None

        def work(progress):
            with gpu_lease():
                return run(prob, cand, device=device, settings=settings_from(budget_s=budget_s), png=chart,
                           on_progress=progress)
        return await _run(ctx, work)

    @server.tool(annotations=WRITES_SNAPSHOTS)
    async def evaluate(problem: str, candidate: str, device: str = "auto", budget_s: float = 60.0,
                       author: str = "agent", note: str = "", parent: str | None = None,
                       *, ctx: Context) -> EvaluateResult:
        """The one call per attempt: compile -> check -> profile -> roofline -> snapshot (kept in git with
        its numbers; `parent` is the snapshot this attempt started from)."""
        from kernel_mcp.tools.evaluate import evaluate as run
        prob, cand = space.path(problem), space.path(candidate)

        def work(progress):
            with gpu_lease():
                return run(space.root, prob, cand, device=device, budget_s=budget_s, author=author, note=note,
                           parent=parent, on_progress=progress)
        return await _run(ctx, work)

    _snapshot_tools(server, space)
    return server


def _snapshot_tools(server: MCPServer, space: Workspace) -> None:
    from kernel_mcp.tools import snapshot as snap

    @server.tool(annotations=WRITES_SNAPSHOTS)
    async def snapshot(problem: str, candidate: str, author: str = "agent", note: str = "",
                       parent: str | None = None, *, ctx: Context) -> Snapshot:
        """Keep the candidate as a snapshot (a git commit under refs/kernel_mcp/, never on your branch),
        without metrics; `evaluate` snapshots with all its numbers."""
        space.path(candidate)
        return await _run(ctx, lambda _: snap.snapshot(space.root, problem, candidate, author=author, note=note,
                                                       parent=parent))

    @server.tool(annotations=READ_ONLY)
    async def history(problem: str | None = None, passed_only: bool = False, author: str | None = None,
                      limit: int = 20, *, ctx: Context) -> list[Snapshot]:
        """The leaderboard of snapshots, best first (passed and trusted, then speedup)."""
        return await _run(ctx, lambda _: snap.history(space.root, problem, passed_only, author, limit))

    @server.tool(annotations=READ_ONLY)
    async def diff(a: str, b: str | None = None, *, ctx: Context) -> str:
        """Unified diff from snapshot a to snapshot b (default: to the best snapshot of a's problem)."""
        return await _run(ctx, lambda _: snap.diff(space.root, a, b))

    @server.tool(annotations=OVERWRITES_FILES)
    async def restore(snapshot_id: str, force: bool = False, *, ctx: Context) -> list[str]:
        """Write a snapshot's files into the workspace. Refuses to overwrite unsaved changes unless force."""
        return await _run(ctx, lambda _: snap.restore(space.root, snapshot_id, force))

    @server.tool(annotations=READ_ONLY)
    async def status(problem: str, *, ctx: Context) -> StallStatus:
        """Is the search stuck? Evaluations since the last significant improvement, failures in a row, code
        growth, and a suggested next move (up to 'restart from scratch')."""
        return await _run(ctx, lambda _: snap.status(space.root, problem))


def main(root: str = ".") -> None:
    build_server(root).run()  # stdio
