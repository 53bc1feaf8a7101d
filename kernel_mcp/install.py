"""Wire kernel_mcp into coding agents: Claude Code, Codex and Cursor (``kernel-mcp install <client>``).

Each client gets the MCP server (named ``kernel-mcp``) and the skills from ``kernel_mcp/skills/*/SKILL.md``,
the one source of the agent texts. Config files are merged, never replaced: other servers, keys, comments and
the user's own text survive, and running the install twice writes the same bytes. A file this module cannot
merge safely (malformed JSON/TOML, a skill of the same name written by someone else) stops the install with a
UsageError that says what to fix, before anything is written.

``python -m kernel_mcp.install --generate`` rewrites the checked-in derived files (AGENTS.md, .cursor/rules,
the Claude Code plugin and marketplace; see agent_files.py) from the skills; ``--check`` fails when stale.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from kernel_mcp.agent_files import (BLOCK_RE, GENERATED_MARKER, REPO_ROOT, SERVER_NAME, SKILL_MARKER,
                                    dump_json, load_skills, render_agents_block, render_claude_skill,
                                    render_cursor_rule, stale_generated, write_generated)
from kernel_mcp.results import UsageError

CLIENTS = ("claude-code", "codex", "cursor")
SCOPES = ("project", "user")

# evaluate = compile + check + timed profile + roofline; with a 60 s timing budget and slow first compiles it
# can take several minutes, far past Codex's 60 s default tool timeout.
CODEX_TOOL_TIMEOUT_S = 1800
CODEX_STARTUP_TIMEOUT_S = 60

class InstallResult(BaseModel):
    """What an install did: every file it manages (written or already up to date) and what to know next."""

    client: Literal["claude-code", "codex", "cursor"]
    scope: Literal["project", "user"]
    root: str  # the workspace the server serves (every tool path is relative to it)
    command: list[str]  # the server command written into the client's config
    files: list[str] = Field(default_factory=list)  # absolute paths of the files it manages
    changed: list[str] = Field(default_factory=list)  # the subset whose content changed (empty on a rerun)
    notes: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------- merging files without losing anything

class _Plan:
    """Files to write, computed completely before the first write so a refusal leaves everything as it was."""

    def __init__(self) -> None:
        self.contents: dict[Path, str] = {}

    def put(self, path: Path, text: str) -> None:
        self.contents[path] = text

    def current(self, path: Path) -> str | None:
        if path in self.contents:
            return self.contents[path]
        return path.read_text(encoding="utf-8") if path.exists() else None

    def apply(self, result: InstallResult) -> InstallResult:
        for path, text in self.contents.items():
            old = path.read_text(encoding="utf-8") if path.exists() else None
            if old != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(path.name + ".kernel-mcp.tmp")
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)  # atomic: a crash never leaves a half-written config
                result.changed.append(str(path))
            result.files.append(str(path))
        return result


def _load_json_object(text: str | None, path: Path) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc}); fix or move it, then rerun the install") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} holds JSON that is not an object; fix or move it, then rerun the install")
    return data


def _merge_json(plan: _Plan, path: Path, edit) -> None:
    """Load path's JSON object (or {}), let edit(data) change it in place, and plan the result."""
    data = _load_json_object(plan.current(path), path)
    edit(data)
    plan.put(path, dump_json(data))


def _object_at(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise UsageError(f"{path}: '{key}' should be a JSON object; fix it, then rerun the install")
    return value


def _add_to_list(data: dict[str, Any], key: str, item: str, path: Path) -> None:
    value = data.setdefault(key, [])
    if not isinstance(value, list):
        raise UsageError(f"{path}: '{key}' should be a JSON list; fix it, then rerun the install")
    if item not in value:
        value.append(item)


def _put_server(plan: _Plan, path: Path, entry: dict[str, Any]) -> None:
    _merge_json(plan, path, lambda data: _object_at(data, "mcpServers", path).__setitem__(SERVER_NAME, entry))


def _put_owned_file(plan: _Plan, path: Path, text: str, marker: str) -> None:
    """Write a file this module owns; refuse to replace one that someone else wrote."""
    old = plan.current(path)
    if old is not None and old != text and marker not in old:
        raise UsageError(f"{path} exists and was not written by kernel-mcp; move it away, then rerun the install")
    plan.put(path, text)


# ---------------------------------------------------------------- TOML (Codex)

def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(f"\\u{ord(c):04X}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in escaped)
    return f'"{escaped}"'


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def codex_server_table(command: list[str]) -> str:
    """The [mcp_servers.kernel-mcp] table, as Codex's config reads it."""
    fields: dict[str, Any] = {
        "command": command[0],
        "args": command[1:],
        "required": True,  # codex exec stops with an error if the server cannot start
        "startup_timeout_sec": CODEX_STARTUP_TIMEOUT_S,
        "tool_timeout_sec": CODEX_TOOL_TIMEOUT_S,
        # Without it codex exec (approval "never") cancels calls to tools not annotated read-only.
        "default_tools_approval_mode": "approve",
    }
    lines = [f"[mcp_servers.{SERVER_NAME}]"] + [f"{key} = {_toml_value(value)}" for key, value in fields.items()]
    return "\n".join(lines) + "\n"


_OUR_TABLE = re.compile(r"""^\s*\[\s*mcp_servers\s*\.\s*(?:kernel-mcp|"kernel-mcp"|'kernel-mcp')\s*[.\]]""")
_ANY_TABLE = re.compile(r"^\s*\[")


def _without_our_tables(text: str) -> str:
    """The TOML text minus [mcp_servers.kernel-mcp] and its sub-tables (comments elsewhere kept)."""
    kept, skipping = [], False
    for line in text.splitlines(keepends=True):
        if _OUR_TABLE.match(line):
            skipping = True
        elif _ANY_TABLE.match(line):  # the next table (or array of tables) ends ours
            skipping = False
        if not skipping:
            kept.append(line)
    return "".join(kept)


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path} is not valid TOML ({exc}); fix it, then rerun the install") from None


def merge_codex_config(text: str | None, command: list[str], path: Path) -> str:
    """Old config.toml text with our server table replaced (or appended); every other line kept verbatim."""
    old_text = text or ""
    before = _parse_toml(old_text, path)
    rest = _without_our_tables(old_text).rstrip("\n")
    new_text = (rest + "\n\n" if rest else "") + codex_server_table(command)
    cannot = UsageError(f"{path} defines mcp_servers.{SERVER_NAME} in a form this install cannot edit safely "
                        f"(inline or dotted keys); remove that entry, then rerun the install")
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        raise cannot from None
    # The line-based cut must have removed exactly our server: check it, rather than trust it.
    for data in (before, after):
        servers = data.get("mcp_servers", {})
        servers.pop(SERVER_NAME, None)
        if not servers:
            data.pop("mcp_servers", None)
    if before != after:
        raise cannot
    return new_text


def _codex_trusted(config_text: str | None, root: Path) -> bool:
    if not config_text:
        return False
    try:
        projects = tomllib.loads(config_text).get("projects", {})
    except tomllib.TOMLDecodeError:
        return False
    trusted = {Path(p) for p, v in projects.items() if isinstance(v, dict) and v.get("trust_level") == "trusted"}
    return any(folder in trusted for folder in (root, *root.parents))


# ---------------------------------------------------------------- the three clients

def server_command(root: Path) -> list[str]:
    """The server as this Python runs it, so the install works without the console script on PATH."""
    return [sys.executable, "-m", "kernel_mcp", "serve", "--root", str(root)]


def _in_git_worktree(root: Path) -> bool:
    git = shutil.which("git")
    if git is None:
        return False
    inside = subprocess.run([git, "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True,
                            text=True, check=False)
    return inside.stdout.strip() == "true"


def _claude_code(plan: _Plan, scope: str, root: Path, home: Path, command: list[str], notes: list[str]) -> None:
    entry = {"type": "stdio", "command": command[0], "args": command[1:]}
    allow_rule = f"mcp__{SERVER_NAME}"  # every tool of the server
    if scope == "project":
        _put_server(plan, root / ".mcp.json", entry)
        settings = root / ".claude" / "settings.local.json"

        def approve(data: dict[str, Any]) -> None:
            _add_to_list(data, "enabledMcpjsonServers", SERVER_NAME, settings)  # else "pending approval"
            _add_to_list(_object_at(data, "permissions", settings), "allow", allow_rule, settings)
        _merge_json(plan, settings, approve)
        skills_dir = root / ".claude" / "skills"
        notes.append(".mcp.json names this machine's Python; a teammate who shares it reruns the install")
        if _in_git_worktree(root):
            notes.append(".claude/settings.local.json (yours, not committed) approves the .mcp.json server and "
                         "allows its tools")
        else:
            # Claude Code trusts settings.local.json only where git shows it is not committed.
            notes.append(f"{root} is not a git repository, so Claude Code ignores .claude/settings.local.json "
                         f"until you trust the folder: the first interactive `claude` there asks to approve "
                         f"kernel-mcp; `claude -p` runs the server but needs --allowedTools mcp__kernel-mcp "
                         f"(or `git init` the folder, or install with --scope user)")
    else:
        _put_server(plan, home / ".claude.json", entry)
        settings = home / ".claude" / "settings.json"
        _merge_json(plan, settings, lambda data: _add_to_list(_object_at(data, "permissions", settings), "allow",
                                                             allow_rule, settings))
        skills_dir = home / ".claude" / "skills"
    for skill in load_skills():
        _put_owned_file(plan, skills_dir / skill.name / "SKILL.md", render_claude_skill(skill, SKILL_MARKER),
                        SKILL_MARKER)
    notes.append("check it: `claude mcp get kernel-mcp` should say Connected; in a session, /mcp lists its tools")


def codex_home(home: Path | None) -> Path:
    if home is None and os.environ.get("CODEX_HOME"):
        return Path(os.environ["CODEX_HOME"]).expanduser().resolve()
    return (home or Path.home()) / ".codex"


def _agents_md(plan: _Plan, path: Path, block: str) -> None:
    old = plan.current(path) or ""
    if BLOCK_RE.search(old):
        new = BLOCK_RE.sub(lambda _: block, old, count=1)
    else:
        new = (old.rstrip("\n") + "\n\n" if old.strip() else "") + block
    plan.put(path, new)


def _codex(plan: _Plan, scope: str, root: Path, home: Path | None, command: list[str], notes: list[str]) -> None:
    user_dir = codex_home(home)
    config = (root / ".codex" if scope == "project" else user_dir) / "config.toml"
    plan.put(config, merge_codex_config(plan.current(config), command, config))
    _agents_md(plan, (root if scope == "project" else user_dir) / "AGENTS.md", render_agents_block(load_skills()))
    if scope == "project" and not _codex_trusted(plan.current(user_dir / "config.toml"), root):
        notes.append(f"Codex reads {config} only in a trusted project, and {root} is not marked trusted in "
                     f"{user_dir / 'config.toml'}: trust it when Codex asks, or add [projects.\"{root}\"] "
                     f"trust_level = \"trusted\" there, or install with --scope user")
    notes.append("check it: `codex mcp get kernel-mcp` (run in the workspace for project scope)")


def _cursor(plan: _Plan, scope: str, root: Path, home: Path, command: list[str], notes: list[str]) -> None:
    entry = {"command": command[0], "args": command[1:]}  # the form of Cursor's documented examples
    _put_server(plan, (root if scope == "project" else home) / ".cursor" / "mcp.json", entry)
    if scope == "project":
        for skill in load_skills():
            path = root / ".cursor" / "rules" / f"kernel-mcp-{skill.name}.mdc"
            _put_owned_file(plan, path, render_cursor_rule(skill), GENERATED_MARKER)
    else:
        notes.append("Cursor keeps user rules in its settings, not in files: for the kernel rules, also run "
                     "`kernel-mcp install cursor` in the project (it writes .cursor/rules/kernel-mcp-*.mdc)")
    notes.append("Cursor may list a new MCP server switched off: turn kernel-mcp on in Cursor's MCP settings, "
                 "then restart Cursor")


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
    plan, notes = _Plan(), []
    if client == "claude-code":
        _claude_code(plan, scope, root_path, home_path or Path.home(), command, notes)
    elif client == "codex":
        _codex(plan, scope, root_path, home_path, command, notes)
    else:
        _cursor(plan, scope, root_path, home_path or Path.home(), command, notes)
    if scope == "user":
        notes.append(f"the server serves {root_path} in every session; tool paths are relative to it")
    result = InstallResult(client=client, scope=scope, root=str(root_path), command=command, notes=notes)
    return plan.apply(result)


def _main(argv: list[str]) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m kernel_mcp.install",
                                     description="Regenerate the agent files derived from kernel_mcp/skills.")
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


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
