"""The whole command line: the frame with every command module registered on it. Imported by ``launch.py``
once a one-shot check's judge is on its way (this package's ``__init__`` stays empty for that reason)."""
from __future__ import annotations

from kernel_mcp.cli import demo, instruments, judge, optimize, snapshots  # noqa: F401  (each registers its commands)
from kernel_mcp.cli.app import app


def main() -> None:
    app()
