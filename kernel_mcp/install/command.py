"""Wire kernel_mcp into coding agents: Claude Code, Codex and Cursor (``kernel-mcp install <client>``).

Each client gets the MCP server (named ``kernel-mcp``) and the skills from ``skills/*/SKILL.md``,
the one source of the agent texts. Config files are merged, never replaced (install/files.py): other servers,
keys, comments and the user's own text survive, and running the install twice writes the same bytes. A file this
module cannot merge safely (malformed JSON/TOML, a skill of the same name written by someone else) stops the
install with a UsageError that says what to fix, before anything is written. What each client gets is in
install/clients.py.

``python -m kernel_mcp.install --generate`` rewrites the checked-in derived files (AGENTS.md, .cursor/rules,
the Claude Code plugin and marketplace; see install/agent_files.py) from the skills; ``--check`` fails when stale.
"""
from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from kernel_mcp.errors import UsageError
from kernel_mcp.install.agent_files import REPO_ROOT, stale_generated, write_generated
from kernel_mcp.install.clients import claude_code, codex, codex_home, cursor
from kernel_mcp.install.files import (CODEX_STARTUP_TIMEOUT_S, CODEX_TOOL_TIMEOUT_S, Plan, codex_server_table,
                                      merge_codex_config)
from kernel_mcp.problem import bundled_names, bundled_problem, workspace_problems

__all__ = ["CLIENTS", "CODEX_STARTUP_TIMEOUT_S", "CODEX_TOOL_TIMEOUT_S", "SCOPES", "InstallResult", "codex_home",
           "codex_server_table", "install", "merge_codex_config", "server_command"]

CLIENTS = ("claude-code", "codex", "cursor")
SCOPES = ("project", "user")
PROBLEMS_LISTED = 20  # problems an install names at most (a quick look, said in one note)


class InstallResult(BaseModel):
    """What an install did: every file it manages (written or already up to date) and what to know next."""

    client: Literal["claude-code", "codex", "cursor"]
    scope: Literal["project", "user"]
    root: str  # the workspace the server serves (every tool path is relative to it)
    command: list[str]  # the server command written into the client's config
    files: list[str] = Field(default_factory=list)  # absolute paths of the files it manages
    changed: list[str] = Field(default_factory=list)  # the subset whose content changed (empty on a rerun)
    notes: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)  # the problems root holds, relative to it (as tools take them)


def server_command(root: Path) -> list[str]:
    """The server as this Python runs it, so the install works without the console script on PATH."""
    return [sys.executable, "-m", "kernel_mcp", "serve", "--root", str(root)]


def install(client: str, scope: str = "project", root: Path | str | None = None,
            home: Path | str | None = None) -> InstallResult:
    """Configure `client` to run the kernel_mcp server on `root` (default: cwd) and give it the skills.

    scope "project" writes into root (shared with the repository where the client supports it); "user" writes
    into home (default ~). Raises UsageError (nothing written) for a bad client, scope or unmergeable file.
    """
    if client not in CLIENTS:
        raise UsageError(f"unknown client {client!r}; choose one of: {', '.join(CLIENTS)}")
    if scope not in SCOPES:
        raise UsageError(f"unknown scope {scope!r}; choose one of: {', '.join(SCOPES)}")
    root_path = Path(root if root is not None else Path.cwd()).expanduser().resolve()
    if not root_path.is_dir():
        raise UsageError(f"--root {root_path} is not a directory")
    home_path = Path(home).expanduser().resolve() if home is not None else None
    command = server_command(root_path)
    plan, notes = Plan(), []
    if client == "claude-code":
        claude_code(plan, scope, root_path, home_path or Path.home(), command, notes)
    elif client == "codex":
        codex(plan, scope, root_path, home_path, command, notes)
    else:
        cursor(plan, scope, root_path, home_path or Path.home(), command, notes)
    if scope == "user":
        notes.append(f"the server serves {root_path} in every session; tool paths are relative to it")
    files, changed = plan.apply()
    problems = workspace_problems(root_path, limit=PROBLEMS_LISTED)
    notes.append(workspace_note(root_path, problems))
    return InstallResult(client=client, scope=scope, root=str(root_path), command=command, files=files,
                         changed=changed, notes=notes, problems=problems)


def workspace_note(root: Path, problems: list[str]) -> str:
    """What the served workspace holds: in a fresh project, nothing, and an agent told only that every path
    is relative to the workspace would not know that the bundled problems are reachable by name."""
    names = ", ".join(bundled_names())
    if problems:
        first = " (the first found)" if len(problems) >= PROBLEMS_LISTED else ""
        return (f"the workspace holds {len(problems)} problem(s){first}: {', '.join(problems)}; the tools take "
                f"these paths, and a bundled problem's name ({names})")
    example = bundled_problem("vector_add")
    copy = f" (e.g. `cp -r {shlex.quote(str(example))} my_problem`, then edit it)" if example else ""
    return (f"the workspace {root} holds no problem yet (no folder with task.yml and reference.py, no KernelBench "
            f".py file): the tools still reach the bundled problems by name ({names}; e.g. problem \"vector_add\"); "
            f"to add your own, make a folder here with task.yml and reference.py{copy}")


def main(argv: list[str]) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m kernel_mcp.install",
                                     description="Regenerate the agent files derived from skills/.")
    parser.add_argument("--generate", action="store_true", help="rewrite AGENTS.md, .cursor/rules, the plugin")
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file is stale")
    parser.add_argument("--repo", type=Path, default=REPO_ROOT, help="repository root (default: this checkout)")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_generated(args.repo)
        for rel in stale:
            print(f"stale: {rel}")
        return 1 if stale else 0
    if args.generate:
        for rel in write_generated(args.repo):
            print(f"wrote {rel}")
        return 0
    parser.print_help()
    return 2

