"""What ``kernel-mcp install`` writes for each client (Claude Code, Codex, Cursor), into a Plan (install/files.py)
that install.install() applies; the notes say what the user still has to know or do."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kernel_mcp import SERVER_NAME
from kernel_mcp.install.agent_files import (GENERATED_MARKER, SKILL_MARKER, load_skills, render_agents_block,
                                            render_claude_skill, render_cursor_rule)
from kernel_mcp.install.files import (Plan, add_to_list, codex_trusted, merge_codex_config, merge_json, object_at,
                                      put_agents_block, put_owned_file, put_server)

_CLAUDE_ALLOW_RULE = f"mcp__{SERVER_NAME}"  # Claude Code's permission rule for every tool of the server


def in_git_worktree(root: Path) -> bool:
    """Whether root lies inside a git work tree (what ``git rev-parse --is-inside-work-tree`` answers), read
    from the repository's files by GitPython."""
    try:
        import git  # GitPython takes ~0.2 s to import: only an install needs it
    except ImportError:  # GitPython refuses to import without a git executable: then no git shows anything
        return False
    try:
        return not git.Repo(root, search_parent_directories=True).bare
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return False


def claude_code(plan: Plan, scope: str, root: Path, home: Path, command: list[str], notes: list[str]) -> None:
    entry = {"type": "stdio", "command": command[0], "args": command[1:]}
    if scope == "project":
        put_server(plan, root / ".mcp.json", entry)
        _claude_project_approval(plan, root / ".claude" / "settings.local.json")
        skills_dir = root / ".claude" / "skills"
        notes.append(".mcp.json names this machine's Python; a teammate who shares it reruns the install")
        notes.append(_claude_project_note(root))
    else:
        put_server(plan, home / ".claude.json", entry)
        settings = home / ".claude" / "settings.json"
        merge_json(plan, settings, lambda data: add_to_list(object_at(data, "permissions", settings), "allow",
                                                            _CLAUDE_ALLOW_RULE, settings))
        skills_dir = home / ".claude" / "skills"
    for skill in load_skills():
        put_owned_file(plan, skills_dir / skill.name / "SKILL.md", render_claude_skill(skill, SKILL_MARKER),
                       SKILL_MARKER)
    notes.append("check it: `claude mcp get kernel-mcp` should say Connected; in a session, /mcp lists its tools")


def _claude_project_approval(plan: Plan, settings: Path) -> None:
    def approve(data: dict[str, Any]) -> None:
        add_to_list(data, "enabledMcpjsonServers", SERVER_NAME, settings)  # else "pending approval"
        add_to_list(object_at(data, "permissions", settings), "allow", _CLAUDE_ALLOW_RULE, settings)
    merge_json(plan, settings, approve)


def _claude_project_note(root: Path) -> str:
    if in_git_worktree(root):
        return ".claude/settings.local.json (yours, not committed) approves the .mcp.json server and allows its tools"
    # Claude Code trusts settings.local.json only where git shows it is not committed.
    return (f"{root} is not a git repository, so Claude Code ignores .claude/settings.local.json until you "
            f"trust the folder: the first interactive `claude` there asks to approve kernel-mcp; `claude -p` "
            f"runs the server but needs --allowedTools mcp__kernel-mcp (or `git init` the folder, or install "
            f"with --scope user)")


def codex_home(home: Path | None) -> Path:
    if home is None and os.environ.get("CODEX_HOME"):
        return Path(os.environ["CODEX_HOME"]).expanduser().resolve()
    return (home or Path.home()) / ".codex"


def codex(plan: Plan, scope: str, root: Path, home: Path | None, command: list[str], notes: list[str]) -> None:
    user_dir = codex_home(home)
    config = (root / ".codex" if scope == "project" else user_dir) / "config.toml"
    plan.put(config, merge_codex_config(plan.current(config), command, config))
    put_agents_block(plan, (root if scope == "project" else user_dir) / "AGENTS.md",
                     render_agents_block(load_skills()))
    if scope == "project" and not codex_trusted(plan.current(user_dir / "config.toml"), root):
        notes.append(f"Codex reads {config} only in a trusted project, and {root} is not marked trusted in "
                     f"{user_dir / 'config.toml'}: trust it when Codex asks, or add [projects.\"{root}\"] "
                     f"trust_level = \"trusted\" there, or install with --scope user")
    notes.append("check it: `codex mcp get kernel-mcp` (run in the workspace for project scope)")


def cursor(plan: Plan, scope: str, root: Path, home: Path, command: list[str], notes: list[str]) -> None:
    entry = {"command": command[0], "args": command[1:]}  # the form of Cursor's documented examples
    put_server(plan, (root if scope == "project" else home) / ".cursor" / "mcp.json", entry)
    if scope == "project":
        for skill in load_skills():
            path = root / ".cursor" / "rules" / f"kernel-mcp-{skill.name}.mdc"
            put_owned_file(plan, path, render_cursor_rule(skill), GENERATED_MARKER)
    else:
        notes.append("Cursor keeps user rules in its settings, not in files: for the kernel rules, also run "
                     "`kernel-mcp install cursor` in the project (it writes .cursor/rules/kernel-mcp-*.mdc)")
    notes.append("Cursor may list a new MCP server switched off: turn kernel-mcp on in Cursor's MCP settings, "
                 "then restart Cursor")
