"""Path confinement: the folder every path an agent names must stay inside (the MCP server's workspace,
the orchestrator's run). Plain Python: the server turns its UsageError into a tool error."""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.errors import UsageError, shown

MAX_PATH = 4096  # Linux's PATH_MAX, in bytes: no longer path can name a file


class Workspace:
    """The directory every path argument must stay inside."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()

    def path(self, name: str, must_exist: bool = True) -> Path:
        """``name`` (relative to the root) as an absolute path inside the root. Refused: empty names, a
        leading '-' (it would read as an option), absolute or '..' paths and symlinks that lead out."""
        if not name or name.startswith("-"):
            raise UsageError(f"bad path {shown(name)}: give a path relative to the workspace {self.root}")
        if len(name.encode(errors="replace")) > MAX_PATH:
            raise UsageError(f"path {shown(name)} is too long (at most {MAX_PATH} bytes)")
        try:
            full = (self.root / name).resolve()  # resolves symlinks: a link out of the workspace is caught here
        except OSError as exc:  # a component over the file system's name limit, a loop of links
            raise UsageError(f"bad path {shown(name)}: {exc.strerror}") from None
        if not full.is_relative_to(self.root):
            raise UsageError(f"{shown(name)} is outside the workspace {self.root}; paths must stay inside it")
        if must_exist and not full.exists():
            raise UsageError(f"{shown(name)} does not exist in the workspace {self.root}")
        return full
