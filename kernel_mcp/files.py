"""Where kernel_mcp's files live: what outlives a run (compile results, calibrations, leases, kernel builds)
under the cache root, and what ships with the package but is not code (the bundled example problems, the
skills and the prompts).

The shipped folders have one copy each at the repository's top level (``problems/``, ``skills/``,
``prompts/``); the wheel carries them inside the package (pyproject's force-include), so they are found the
same way whether kernel_mcp is installed or run from a checkout."""
from __future__ import annotations

import os
from pathlib import Path

from kernel_mcp.errors import UsageError

CACHE_VAR = "KERNEL_MCP_CACHE"  # moves everything below (tests point it at a temporary folder)
_PACKAGE = Path(__file__).resolve().parent


def cache_root() -> Path:
    """``$KERNEL_MCP_CACHE``, else ``~/.cache/kernel_mcp``. Processes that run candidate code get a scratch
    HOME, so the variable is set for them explicitly (worker/isolation/sandbox.py)."""
    value = os.environ.get(CACHE_VAR)
    return Path(value) if value else Path.home() / ".cache" / "kernel_mcp"


def asset_dir(name: str) -> Path:
    """``<package>/<name>`` when installed from a wheel, else ``<checkout>/<name>``."""
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"kernel_mcp's {name}/ not found (neither in the package nor beside it)")


def problems_dir() -> Path:
    return asset_dir("problems")


def bundled_problems() -> list[Path]:
    return sorted(p for p in problems_dir().iterdir() if (p / "task.yml").is_file())


def skills_dir() -> Path:
    return asset_dir("skills")


def prompts_dir() -> Path:
    return asset_dir("prompts")


def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.md``, its ``str.format`` fields ({problem}, {candidate}...) left for the
    caller."""
    folder = prompts_dir()
    path = folder / f"{name}.md"
    if not name.isidentifier() or not path.is_file():  # a name, never a path
        raise UsageError(f"no prompt named {name!r} in {folder}")
    return path.read_text(encoding="utf-8")
