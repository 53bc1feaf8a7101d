"""The tools over the git store of attempts: snapshot, history, diff, restore, status (the stall signal)."""
from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from kernel_mcp.history.snapshots import Snapshot
from kernel_mcp.history.stall import StallStatus
from kernel_mcp.server.common import OVERWRITES_FILES, READ_ONLY, WRITES_SNAPSHOTS, ToolSpace, run_blocking
from kernel_mcp.tools import snapshot as snap


def register_snapshot_tools(server: MCPServer, space: ToolSpace) -> None:

    @server.tool(annotations=WRITES_SNAPSHOTS)
    async def snapshot(problem: str, candidate: str, author: str = "agent", note: str = "",
                       parent: str | None = None, *, ctx: Context) -> Snapshot:
        """Keep the candidate as a snapshot (a git commit under refs/kernel_mcp/, never on your branch),
        without metrics; `evaluate` snapshots with all its numbers."""
        space.path(candidate)
        return await run_blocking(ctx, lambda _: snap.snapshot(space.root, problem, candidate, author=author,
                                                               note=note, parent=parent))

    @server.tool(annotations=READ_ONLY)
    async def history(problem: str | None = None, passed_only: bool = False, author: str | None = None,
                      limit: int = 20, *, ctx: Context) -> list[Snapshot]:
        """The leaderboard of snapshots, best first (passed and trusted, then speedup)."""
        return await run_blocking(ctx, lambda _: snap.history(space.root, problem, passed_only, author, limit))

    @server.tool(annotations=READ_ONLY)
    async def diff(a: str, b: str | None = None, *, ctx: Context) -> str:
        """Unified diff from snapshot a to snapshot b (default: to the best snapshot of a's problem)."""
        return await run_blocking(ctx, lambda _: snap.diff(space.root, a, b))

    @server.tool(annotations=OVERWRITES_FILES)
    async def restore(snapshot_id: str, force: bool = False, *, ctx: Context) -> list[str]:
        """Write a snapshot's files into the workspace. Refuses to overwrite unsaved changes unless force."""
        return await run_blocking(ctx, lambda _: snap.restore(space.root, snapshot_id, force))

    @server.tool(annotations=READ_ONLY)
    async def status(problem: str, *, ctx: Context) -> StallStatus:
        """Is the search stuck, and what next? Stall signals S1-S8 (no significant gain within a window,
        failure streak, code rot, repeated proposals, integrity, ...) and the restart ladder's rung: 0 keep
        going, 1 nudge, 2 fresh session on the best, 3 restart from scratch with lessons, 4 stop."""
        return await run_blocking(ctx, lambda _: snap.status(space.root, problem))
