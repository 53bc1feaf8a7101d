"""The run's own MCP server for a CLI agent (``claude -p``, ``codex exec``): the read-only instruments over one
island's workspace (check, compile, profile, roofline, history, diff, status; not evaluate, snapshot or
restore), plus ``propose``, which goes straight into the orchestrator's loop (the same decision path as an
API agent's proposals). It is served over streamable HTTP, in this process, on 127.0.0.1 at a free port,
behind a fresh bearer token: the CLI starts no server of its own, and every proposal is judged on the run's
ledger, never on what the agent says.
"""
from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable

from kernel_mcp.agent.edits import PROPOSE
from kernel_mcp.server import BearerAuth, build_server
from kernel_mcp.server.common import run_blocking

# Tools that would try code or change files outside the loop's decisions and budget (the agent proposes),
# and steer (a person's hint, never the agent's own)
WITHHELD = ("evaluate", "evaluate_start", "snapshot", "restore", "steer")
START_TIMEOUT_S = 30.0


class RunEndpoint:
    """``with RunEndpoint(root, runner, on_propose) as endpoint:`` endpoint.url, endpoint.token, endpoint.tools."""

    def __init__(self, root, runner, on_propose: Callable[[str, str], str]):
        server = build_server(root, runner)

        @server.tool(name="propose", description=PROPOSE.description)
        async def propose(edit: str, idea: str) -> str:
            return await run_blocking(None, lambda _progress: on_propose(edit, idea))

        for name in WITHHELD:
            server.remove_tool(name)
        self.tools = sorted(tool.name for tool in server._tool_manager.list_tools())
        self.token = secrets.token_urlsafe(32)
        self.app = BearerAuth(server.streamable_http_app(host="127.0.0.1"), self.token)
        self.server = None
        self.thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> RunEndpoint:
        import uvicorn
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="run endpoint", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the run's MCP endpoint did not start")
            time.sleep(0.05)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc) -> None:
        if self.server is not None:
            self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)
