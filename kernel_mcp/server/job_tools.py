"""The job form of the long instruments: evaluate_start, profile_start, roofline_start -> a Job with its id;
job_wait(id) -> the job as soon as it ends, or its progress after at most ~50 s.

Claude Code and Codex drop tool calls beyond ~60 s; a job keeps each call short. The arguments are
validated by the same builders as the one-call tools before the job starts, so misuse is refused at once.
Nobody is waiting on the start call, so a job's progress is kept on the job (read by job_wait), not sent as
notifications.
"""
from __future__ import annotations

import anyio
from mcp.server import MCPServer

from kernel_mcp.server.common import READ_ONLY, WRITES_SNAPSHOTS, Shapes, ToolSpace, tool_errors
from kernel_mcp.server.instruments import DOES, evaluate_call, profile_call, roofline_call
from kernel_mcp.server.jobs import Job, JobBoard
from kernel_mcp.worker import Runner

DEFAULT_WAIT_S = 45.0
MAX_WAIT_S = 50.0  # a job_wait call stays well inside the clients' ~60 s


def start_form(name: str) -> str:
    """The job form's description: when to take it, how to follow it, then what the instrument does."""
    return (f"Start `{name}` as a job and return at once with its id (same arguments, same validation). Use this "
            f"instead of `{name}` when the call may exceed ~45 s (benchmark shapes, a GPU), or where tool calls are "
            f"dropped after ~60 s (Claude Code, Codex); then call job_wait(job_id) until state is not 'running': "
            f"`result` is what `{name}` returns. {DOES[name]}")


def clamp_wait(wait_s: float) -> float:
    return min(max(wait_s, 0.0), MAX_WAIT_S)


def register_job_tools(server: MCPServer, space: ToolSpace, runner: Runner, board: JobBoard) -> None:
    def start(name: str, work) -> Job:
        with tool_errors():  # too many jobs running
            return board.start(name, work)

    @server.tool(annotations=WRITES_SNAPSHOTS, description=start_form("evaluate"))
    async def evaluate_start(problem: str, candidate: str, device: str = "auto", budget_s: float = 60.0,
                             shapes: Shapes = "benchmarks", author: str = "agent", note: str = "",
                             parent: str | None = None, sanitize: bool = False, detail: bool = False) -> Job:
        return start("evaluate", evaluate_call(space, runner, problem=problem, candidate=candidate, device=device,
                                               budget_s=budget_s, shapes=shapes, author=author, note=note,
                                               parent=parent, sanitize=sanitize, detail=detail))

    @server.tool(annotations=READ_ONLY, description=start_form("profile"))
    async def profile_start(problem: str, candidate: str, baseline: str | None = None, device: str = "auto",
                            budget_s: float = 60.0, shapes: Shapes = "benchmarks", detail: bool = False) -> Job:
        return start("profile", profile_call(space, runner, problem=problem, candidate=candidate, baseline=baseline,
                                             device=device, budget_s=budget_s, shapes=shapes, detail=detail))

    @server.tool(annotations=READ_ONLY, description=start_form("roofline"))
    async def roofline_start(problem: str, candidate: str, device: str = "auto", png: str | None = None,
                             budget_s: float = 60.0, shapes: Shapes = "benchmarks", detail: bool = False) -> Job:
        return start("roofline", roofline_call(space, runner, problem=problem, candidate=candidate, device=device,
                                               png=png, budget_s=budget_s, shapes=shapes, detail=detail))

    @server.tool(annotations=READ_ONLY)
    async def job_wait(job_id: str, wait_s: float = DEFAULT_WAIT_S) -> Job:
        """Wait for a job started by evaluate_start, profile_start or roofline_start: returns as soon as it
        ends, or after wait_s seconds (0 to 50) with its latest progress; call again while state is
        'running'. state 'done': `result` is the one-call tool's answer; 'failed': `error` says why."""
        with tool_errors():  # an unknown id
            board.get(job_id)
        # abandon_on_cancel: a client that gives up on the wait frees its call at once; the job runs on
        return await anyio.to_thread.run_sync(board.wait, job_id, clamp_wait(wait_s), abandon_on_cancel=True)
