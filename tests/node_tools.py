"""Node command-line tools for tests (Claude Code, Codex...), installed from npm into one cache folder.

Shared by the install tests (``claude plugin validate``) and the real-client tests (``claude -p``, ``codex exec``).
The cache is ``$KERNEL_MCP_NODE_DIR`` (default ``~/.cache/kernel_mcp/node``); a package already there is reused,
so only the first run pays for the download.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

NPM_TIMEOUT_S = 600


def node_dir() -> Path:
    """The npm prefix that holds the test tools."""
    return Path(os.environ.get("KERNEL_MCP_NODE_DIR", Path.home() / ".cache" / "kernel_mcp" / "node")).expanduser()


def _installed(prefix: Path, binary: str) -> Path | None:
    path = prefix / "node_modules" / ".bin" / binary
    return path if path.exists() else None


def node_cli(package: str, binary: str) -> Path | None:
    """Path of ``binary`` from npm ``package`` (installed into node_dir() on first use); None without node/npm.

    None also when the install fails (no network), so callers can skip with a reason instead of erroring.
    """
    prefix = node_dir()
    found = _installed(prefix, binary)
    if found:
        return found
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return None
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), package],
                       check=True, capture_output=True, text=True, timeout=NPM_TIMEOUT_S)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
        return None
    return _installed(prefix, binary)


def skip_reason(package: str, binary: str) -> str:
    """Why node_cli() returned None, for pytest.skip messages."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        return f"{binary}: needs node and npm on PATH to install {package}"
    return f"{binary}: `npm install {package}` into {node_dir()} failed (offline?)"


def node_cli_or_skip(package: str, binary: str) -> Path:
    """node_cli(), or skip the calling test with the reason it is missing."""
    import pytest
    path = node_cli(package, binary)
    if path is None:
        pytest.skip(skip_reason(package, binary))
    return path
