"""The server itself: one MCPServer per workspace with every tool, resource and prompt registered, served over
stdio by ``main`` (http.py serves the same server over streamable HTTP)."""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from mcp.server import MCPServer

from kernel_mcp.files import load_prompt
from kernel_mcp.server.common import ToolSpace
from kernel_mcp.server.instruments import register_instruments
from kernel_mcp.server.job_tools import register_job_tools
from kernel_mcp.server.jobs import JobBoard
from kernel_mcp.server.resources import register_resources, resource_name
from kernel_mcp.server.run_tools import register_run_tools
from kernel_mcp.server.snapshot_tools import register_snapshot_tools
from kernel_mcp.worker import LocalRunner, Runner, harden_trusted_process

INSTRUCTIONS = ("Instruments for GPU kernels. Loop: compile (fast feedback) -> evaluate (check, profile, roofline "
                "and a snapshot in one call) -> status (is the search stuck?). A call expected to take over ~45 s "
                "(evaluate, profile or roofline on benchmark shapes) goes as evaluate_start / profile_start / "
                "roofline_start, then job_wait until it ends. Paths are relative to the workspace. "
                "Results are compact summaries; pass detail=true for the full report.")


def build_server(root: str | Path = ".", runner: Runner | None = None) -> MCPServer:
    """The server for one workspace. Its runner keeps a judge and step hosts booted ahead of need (from
    the first tool call on), so each call after the first finds interpreter, torch and device ready."""
    space = ToolSpace(root)
    runner = runner or LocalRunner(warm=True)
    server = MCPServer("kernel_mcp", instructions=INSTRUCTIONS)
    register_instruments(server, space, runner)
    register_job_tools(server, space, runner, JobBoard())
    register_snapshot_tools(server, space)
    register_run_tools(server, space)
    register_resources(server, space)
    _register_prompts(server, space)
    return server


def _register_prompts(server: MCPServer, space: ToolSpace) -> None:
    optimize = load_prompt("optimize_kernel")  # read once: a missing file fails the start, not a session

    @server.prompt(title="Optimize a GPU kernel")
    def optimize_kernel(problem: str, candidate: str) -> str:
        """The iteration loop for one problem: compile, evaluate (or its job form), read the roofline and
        findings, status."""
        # the tools take the problem as given; the resources' URIs name it as the README documents them
        return optimize.format(problem=problem, candidate=candidate, name=resource_name(space, problem))


def main(root: str = ".", runner: Runner | None = None) -> None:
    """Serve over stdio with ``runner`` (default: this machine's, warm; a pool or a Ray cluster: serve's
    --gpus / --cluster)."""
    harden_trusted_process(reaper=False)  # before any tool runs (kernel_mcp.cli.launch did it too, if it started us)
    runner = runner or LocalRunner(warm=True)
    # Ctrl-C: asyncio would cancel the server and then wait for the thread blocked reading stdin (until
    # Enter); stop here instead, the warm processes first
    signal.signal(signal.SIGINT, lambda *_: _stop(runner))
    try:
        build_server(root, runner).run()  # stdio
    finally:
        runner.close()  # the warm processes would end with their pipes anyway; this is sooner


def _stop(runner: Runner) -> None:
    try:
        runner.close()
    finally:
        sys.stderr.flush()
        os._exit(0)
