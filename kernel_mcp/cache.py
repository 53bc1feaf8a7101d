"""Where kernel_mcp keeps what outlives a run: compile results, calibrations, leases, kernel builds."""
from __future__ import annotations

import os
from pathlib import Path

CACHE_VAR = "KERNEL_MCP_CACHE"  # moves everything below (tests point it at a temporary folder)


def cache_root() -> Path:
    """``$KERNEL_MCP_CACHE``, else ``~/.cache/kernel_mcp``. Processes that run candidate code get a scratch
    HOME, so the variable is set for them explicitly (worker/sandbox.py)."""
    value = os.environ.get(CACHE_VAR)
    return Path(value) if value else Path.home() / ".cache" / "kernel_mcp"
