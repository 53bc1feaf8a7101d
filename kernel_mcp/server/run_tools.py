"""The tools over an unattended search's run folder (``kernel-mcp optimize``): ``steer``, a person's hint."""
from __future__ import annotations

from mcp.server import MCPServer

from kernel_mcp.agent.run.steer import post_hint
from kernel_mcp.server.common import WRITES_SNAPSHOTS, ToolSpace, tool_errors


def register_run_tools(server: MCPServer, space: ToolSpace) -> None:

    @server.tool(annotations=WRITES_SNAPSHOTS)
    def steer(run: str, text: str) -> str:
        """Give a running `kernel-mcp optimize` search a hint ("stop trying larger tiles; try split-K"): every
        island hears it on its next model turn, it is kept in the run's journal, and the run's report shows
        what followed it. `run` is the run folder, inside the workspace; a stopped run hears it on resume."""
        folder = space.path(run)
        with tool_errors():
            post_hint(folder, text)
        return f"left for {run}: every island hears it on its next turn"
