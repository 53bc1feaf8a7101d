"""Where the bundled example problems live: inside the installed wheel, or at the repository root."""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def problems_dir() -> Path:
    for candidate in (_PACKAGE / "problems", _PACKAGE.parent / "problems"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("bundled problems not found (neither in the package nor beside it)")


def bundled_problems() -> list[Path]:
    return sorted(p for p in problems_dir().iterdir() if (p / "task.yml").is_file())
