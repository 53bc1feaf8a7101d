"""The agent texts: skills loaded from ``skills/<name>/SKILL.md`` (the one source; kernel_mcp.files) and rendered
for each client (Claude Code skills, Cursor rules, the Codex AGENTS.md block, the Claude Code plugin).

The repository's derived copies (AGENTS.md, .cursor/rules, plugins/kernel-mcp, .claude-plugin) are
``generated_files()``; ``python -m kernel_mcp.install --generate`` rewrites them and a test keeps them fresh.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kernel_mcp import SERVER_NAME, __version__
from kernel_mcp.errors import UsageError
from kernel_mcp.files import skills_dir

SKILL_ORDER = ("kernel-optimization-loop", "reading-kernel-results", "kernel-evaluation-integrity",
               "triton-kernels", "cuda-cpp-kernels", "hip-kernels")
REPO_ROOT = Path(__file__).resolve().parents[2]

# Claude Code names an MCP tool mcp__<server>__<tool>; a plugin's server is "plugin:<plugin>:<server>", and
# characters outside [A-Za-z0-9_-] become "_" -> mcp__plugin_kernel-mcp_kernel-mcp__<tool>.
CLAUDE_TOOL_PREFIX = f"mcp__{SERVER_NAME}__"
PLUGIN_NAME = "kernel-mcp"
PLUGIN_TOOL_PREFIX = f"mcp__plugin_{PLUGIN_NAME}_{SERVER_NAME}__"

# Marks text kernel_mcp wrote, so a rerun may replace it and nothing else.
SKILL_MARKER = "<!-- kernel-mcp: written by `kernel-mcp install`; a rerun overwrites this file -->"
GENERATED_MARKER = "<!-- kernel-mcp: generated from skills/ by `python -m kernel_mcp.install --generate` -->"
BLOCK_BEGIN = "<!-- kernel-mcp:begin (managed by `kernel-mcp install codex`; a rerun replaces this block) -->"
BLOCK_END = "<!-- kernel-mcp:end -->"
BLOCK_RE = re.compile(re.escape("<!-- kernel-mcp:begin") + r".*?" + re.escape(BLOCK_END) + r"\n?", re.S)


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    allowed_tools: list[str]
    body: str  # markdown after the frontmatter, starting with its first heading

    @property
    def title(self) -> str:
        first = self.body.lstrip().splitlines()[0] if self.body.strip() else self.name
        return first.lstrip("# ").strip()


def _split_frontmatter(text: str, source: Path) -> tuple[dict[str, Any], str]:
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    if not match:
        raise UsageError(f"{source}: a SKILL.md starts with a '---' YAML frontmatter block")
    meta = yaml.safe_load(match.group(1)) or {}
    if not isinstance(meta, dict):
        raise UsageError(f"{source}: the frontmatter must be a YAML mapping")
    return meta, text[match.end():]


def load_skills(folder: Path | None = None) -> list[Skill]:
    """Every skills/<name>/SKILL.md (in SKILL_ORDER); the folder name must equal the frontmatter name."""
    folder = folder or skills_dir()
    skills = []
    for path in sorted(folder.glob("*/SKILL.md")):
        meta, body = _split_frontmatter(path.read_text(encoding="utf-8"), path)
        name, description = meta.get("name"), meta.get("description")
        if name != path.parent.name or not isinstance(description, str) or not description.strip():
            raise UsageError(f"{path}: frontmatter needs name: {path.parent.name} and a description")
        tools = meta.get("allowed-tools") or []
        tools = tools.replace(",", " ").split() if isinstance(tools, str) else list(tools)
        skills.append(Skill(name, " ".join(description.split()), tools, body.lstrip("\n")))
    if not skills:
        raise UsageError(f"no skills found in {folder}")
    # the loop first: it is what an agent reads before the rest (AGENTS.md shows them in this order)
    rank = {name: i for i, name in enumerate(SKILL_ORDER)}
    return sorted(skills, key=lambda s: (rank.get(s.name, len(rank)), s.name))


def _frontmatter(fields: dict[str, Any]) -> str:
    return "---\n" + yaml.safe_dump(fields, sort_keys=False, allow_unicode=True, width=10_000) + "---\n"


def render_claude_skill(skill: Skill, marker: str, tool_prefix: str = CLAUDE_TOOL_PREFIX) -> str:
    """A SKILL.md for Claude Code, its allowed-tools named as Claude Code names them under tool_prefix."""
    fields: dict[str, Any] = {"name": skill.name, "description": skill.description}
    if skill.allowed_tools:
        fields["allowed-tools"] = " ".join(t.replace(CLAUDE_TOOL_PREFIX, tool_prefix) for t in skill.allowed_tools)
    return _frontmatter(fields) + "\n" + marker + "\n\n" + skill.body


def render_cursor_rule(skill: Skill) -> str:
    """A Cursor rule (.mdc) the agent pulls in when the description matches the task."""
    fields = {"description": skill.description, "alwaysApply": False}
    return _frontmatter(fields) + "\n" + GENERATED_MARKER + "\n\n" + skill.body


def _demote_headings(markdown: str) -> str:
    """Every markdown heading one level deeper; lines inside ``` fences (code comments) are left alone."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#+ ", line):
            line = "#" + line
        lines.append(line)
    return "\n".join(lines)


def render_agents_block(skills: list[Skill]) -> str:
    """The delimited AGENTS.md block for Codex: every skill, headings pushed one level down under one title."""
    parts = [BLOCK_BEGIN, "", "# GPU kernels with kernel_mcp", "",
             "The `kernel-mcp` MCP server gives you compile, check, profile, roofline, evaluate and snapshot "
             "tools over this workspace. The sections below say how to use them.", ""]
    for skill in skills:
        parts += [_demote_headings(skill.body.strip()), ""]
    parts.append(BLOCK_END)
    return "\n".join(parts) + "\n"


def plugin_files(skills: list[Skill]) -> dict[str, str]:
    """The Claude Code plugin (plugins/kernel-mcp) and the marketplace that lists it, by repo-relative path."""
    description = ("GPU kernel instruments over MCP: compile, check, profile, roofline, evaluate and snapshot "
                   "tools, with skills for the Triton/CUDA/HIP optimization loop")
    plugin = {"name": PLUGIN_NAME, "version": __version__, "description": description,
              "author": {"name": "kernel_mcp developers"}, "license": "Apache-2.0",
              "keywords": ["gpu", "kernels", "triton", "cuda", "hip", "mcp", "profiling"]}
    # ${CLAUDE_PROJECT_DIR} is the session's project: the workspace the tools' paths are relative to.
    mcp = {"mcpServers": {SERVER_NAME: {"command": "kernel-mcp",
                                        "args": ["serve", "--root", "${CLAUDE_PROJECT_DIR}"]}}}
    marketplace = {"name": "kernel-mcp", "owner": {"name": "kernel_mcp developers"},
                   "metadata": {"description": "The kernel_mcp plugin for Claude Code"},
                   "plugins": [{"name": PLUGIN_NAME, "source": "./plugins/kernel-mcp", "description": description,
                                "version": __version__}]}
    files = {"plugins/kernel-mcp/.claude-plugin/plugin.json": dump_json(plugin),
             "plugins/kernel-mcp/.mcp.json": dump_json(mcp),
             ".claude-plugin/marketplace.json": dump_json(marketplace)}
    for skill in skills:
        files[f"plugins/kernel-mcp/skills/{skill.name}/SKILL.md"] = render_claude_skill(
            skill, GENERATED_MARKER, PLUGIN_TOOL_PREFIX)
    return files


def generated_files() -> dict[str, str]:
    """Every derived file checked into the repository, by repo-relative path."""
    skills = load_skills()
    files = {"AGENTS.md": render_agents_block(skills)}
    for skill in skills:
        files[f".cursor/rules/kernel-mcp-{skill.name}.mdc"] = render_cursor_rule(skill)
    files.update(plugin_files(skills))
    return files


def stale_generated(repo: Path = REPO_ROOT) -> list[str]:
    """Generated paths whose checked-in copy is missing or differs from a fresh generation."""
    return [rel for rel, text in generated_files().items()
            if not (repo / rel).exists() or (repo / rel).read_text(encoding="utf-8") != text]


def write_generated(repo: Path = REPO_ROOT) -> list[str]:
    """(Re)write the generated files under repo; returns the paths that changed."""
    changed = stale_generated(repo)
    files = generated_files()
    for rel in changed:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(files[rel], encoding="utf-8")
    return changed

