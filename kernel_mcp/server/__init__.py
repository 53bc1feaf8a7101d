"""The MCP server: a thin shell over kernel_mcp.tools (this package is the only one that imports ``mcp``).

Transports: stdio (default, ``main``), or streamable HTTP behind a bearer token (``http.serve_http``).

Every path argument is relative to the workspace root (the directory the server starts in, or --root)
and must resolve inside it (workspace.py). Long instruments run in a worker thread and report progress,
or run as jobs (start -> id, job_wait) for clients that drop tool calls beyond ~60 s.
The server's runner (worker/runners/local.py) keeps processes booted ahead of need and takes each device's
lease, so several agents' calls share a GPU without disturbing each other's numbers.
Misuse becomes a ToolError whose message says what to do; an expected failure (a wrong kernel) is data.

  app.py             build_server (every tool, resource and prompt registered) and ``main`` (stdio)
  common.py          annotations, the workspace with tool errors, running a blocking call off the loop
  instruments.py     check, compile, profile, roofline, evaluate (one call each, with progress)
  job_tools.py       evaluate_start, profile_start, roofline_start, job_wait (over kernel_mcp/server/jobs.py)
  snapshot_tools.py  snapshot, history, diff, restore, status
  resources.py       kernel://problems/... and kernel://charts/...
  http.py            streamable HTTP: bearer token, listen address
"""
from __future__ import annotations

from kernel_mcp.server.app import INSTRUCTIONS, build_server, main
from kernel_mcp.server.http import BearerAuth, is_loopback, parse_listen, serve_http
from kernel_mcp.server.resources import PNG_MAGIC, PROBLEM_URI

__all__ = ["INSTRUCTIONS", "PNG_MAGIC", "PROBLEM_URI", "BearerAuth", "build_server", "is_loopback", "main",
           "parse_listen", "serve_http"]
