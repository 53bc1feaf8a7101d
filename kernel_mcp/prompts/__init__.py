"""Prompt texts: one markdown file per prompt beside this module, loaded by name. They ship in the wheel
with the package (hatch packages the whole kernel_mcp folder), so an installed server finds them too."""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.results import UsageError

PROMPTS_DIR = Path(__file__).resolve().parent


def load_prompt(name: str) -> str:
    """The text of ``<name>.md``, its ``str.format`` fields ({problem}, {candidate}...) left for the caller."""
    path = PROMPTS_DIR / f"{name}.md"
    if not name.isidentifier() or not path.is_file():  # a name, never a path
        raise UsageError(f"no prompt named {name!r} in {PROMPTS_DIR}")
    return path.read_text(encoding="utf-8")
