"""The ``kernel-mcp`` command's first step (``python -m kernel_mcp`` too): make the process non-dumpable; for
a ``check``, start its judge before the command-line framework (typer, rich) and the result models are
imported, so the judge's own start-up runs alongside those imports. Measured on the H200 machine
(2026-12-01): the CLI reached its ``check`` function 0.6-0.8 s after launch; the judge starts within ~0.1 s
of it from here.

Only ``--device`` is read from the command line here, loosely: if this reading disagrees with typer's, the
judge started here is not claimed (worker/launch/judge.py ends it at exit) and the command starts its own.
"""
from __future__ import annotations

import sys

from kernel_mcp.worker import harden_trusted_process, prestart_judge

# imports inside functions: the command line is imported after a one-shot check's judge is started, so the
# judge's boot runs alongside those imports


def check_device(args: list[str]) -> str | None:
    """The device a ``check`` command line asks for ("auto" if it names none); None for anything else."""
    if not args or args[0] != "check" or "--help" in args:
        return None
    device = "auto"
    for i, arg in enumerate(args):
        if arg == "--device" and i + 1 < len(args):
            device = args[i + 1]
        elif arg.startswith("--device="):
            device = arg.partition("=")[2]
    return device


def main() -> None:
    # before anything else: not dumpable, so no same-user process (a candidate's compile step, a process
    # another agent runs) can read this one's environment (API keys) or memory through /proc
    harden_trusted_process(reaper=False)
    device = check_device(sys.argv[1:])
    if device is not None:
        prestart_judge(device)
    from kernel_mcp.cli.main import main as cli_main
    cli_main()
