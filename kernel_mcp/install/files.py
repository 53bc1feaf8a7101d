"""Merging the files ``kernel-mcp install`` writes (JSON configs, Codex's config.toml, an AGENTS.md block) without
losing anything: other servers, keys, comments and the user's own text survive, and a second run writes the
same bytes. A file that cannot be merged safely raises UsageError before anything is written (see Plan)."""
from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel_mcp import SERVER_NAME
from kernel_mcp.errors import UsageError
from kernel_mcp.install.agent_files import BLOCK_RE, dump_json

# evaluate = compile + check + timed profile + roofline; with a 60 s timing budget and slow first compiles it
# can take several minutes, far past Codex's 60 s default tool timeout.
CODEX_TOOL_TIMEOUT_S = 1800
CODEX_STARTUP_TIMEOUT_S = 60


class Plan:
    """Files to write, computed completely before the first write so a refusal leaves everything as it was."""

    def __init__(self) -> None:
        self.contents: dict[Path, str] = {}

    def put(self, path: Path, text: str) -> None:
        self.contents[path] = text

    def current(self, path: Path) -> str | None:
        if path in self.contents:
            return self.contents[path]
        return path.read_text(encoding="utf-8") if path.exists() else None

    def apply(self) -> tuple[list[str], list[str]]:
        """Write the planned files; (every planned path, the paths whose content changed)."""
        files, changed = [], []
        for path, text in self.contents.items():
            old = path.read_text(encoding="utf-8") if path.exists() else None
            if old != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(path.name + ".kernel-mcp.tmp")
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)  # atomic: a crash never leaves a half-written config
                changed.append(str(path))
            files.append(str(path))
        return files, changed


# ---------------------------------------------------------------- JSON (Claude Code, Cursor)

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


def merge_json(plan: Plan, path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Load path's JSON object (or {}), let edit(data) change it in place, and plan the result."""
    data = _load_json_object(plan.current(path), path)
    edit(data)
    plan.put(path, dump_json(data))


def object_at(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise UsageError(f"{path}: '{key}' should be a JSON object; fix it, then rerun the install")
    return value


def add_to_list(data: dict[str, Any], key: str, item: str, path: Path) -> None:
    value = data.setdefault(key, [])
    if not isinstance(value, list):
        raise UsageError(f"{path}: '{key}' should be a JSON list; fix it, then rerun the install")
    if item not in value:
        value.append(item)


def put_server(plan: Plan, path: Path, entry: dict[str, Any]) -> None:
    merge_json(plan, path, lambda data: object_at(data, "mcpServers", path).__setitem__(SERVER_NAME, entry))


def put_owned_file(plan: Plan, path: Path, text: str, marker: str) -> None:
    """Write a file this module owns; refuse to replace one that someone else wrote."""
    old = plan.current(path)
    if old is not None and old != text and marker not in old:
        raise UsageError(f"{path} exists and was not written by kernel-mcp; move it away, then rerun the install")
    plan.put(path, text)


def put_agents_block(plan: Plan, path: Path, block: str) -> None:
    """Replace kernel-mcp's marked block in AGENTS.md (or append it); the user's text around it is kept."""
    old = plan.current(path) or ""
    if BLOCK_RE.search(old):
        new = BLOCK_RE.sub(lambda _: block, old, count=1)
    else:
        new = (old.rstrip("\n") + "\n\n" if old.strip() else "") + block
    plan.put(path, new)


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


def codex_trusted(config_text: str | None, root: Path) -> bool:
    """Whether Codex's user config marks root (or a folder above it) as a trusted project."""
    if not config_text:
        return False
    try:
        projects = tomllib.loads(config_text).get("projects", {})
    except tomllib.TOMLDecodeError:
        return False
    trusted = {Path(p) for p, v in projects.items() if isinstance(v, dict) and v.get("trust_level") == "trusted"}
    return any(folder in trusted for folder in (root, *root.parents))
