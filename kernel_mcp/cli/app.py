"""The command line's frame: the typer ``app`` every command module registers on, its shared options and
argument help, progress on stderr, and how results and usage errors are printed. Exit codes: 0 pass, 1 fail,
2 usage."""
from __future__ import annotations

import sys
from typing import Any, Callable

import typer
from rich.console import Console

from kernel_mcp import __version__
from kernel_mcp.errors import UsageError

# rich_markup_mode=None: click's plain help, where a flag reads `--json`, not `--json <bool>`
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Instruments for writing GPU kernels with AI agents: check, compile, profile, roofline, "
                       "calibrate.")
err = Console(stderr=True)


def _print_version(asked: bool) -> None:
    if asked:
        sys.stdout.write(f"kernel-mcp {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="print the version and exit")) -> None:
    """Instruments for writing GPU kernels with AI agents: check, compile, profile, roofline, calibrate,
    and an unattended search (optimize). Exit codes: 0 pass, 1 fail, 2 usage error."""


class _Progress:
    """An instrument's progress on stderr: in a terminal one bar updated in place (gone when done); in a log
    (a pipe, CI) one line per stage ("shape 1", "test 2"), not one per sample."""

    def __init__(self):
        self.bar, self.task, self.stage = None, None, None

    def __call__(self, message: str, done: int = 0, total: int = 0) -> None:
        if not err.is_terminal:
            stage = message.split(":")[0]
            if stage != self.stage:
                self.stage = stage
                err.print(f"[dim]  {done}/{total} {message}[/dim]" if total else f"[dim]  {message}[/dim]")
            return
        if self.bar is None:
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
            self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                                console=err, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(message, total=None)
        self.bar.update(self.task, description=message[:100], completed=done, total=total or None)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _usage_error(exc: Exception) -> None:
    err.print(f"[red]error:[/red] {exc}")
    raise typer.Exit(2)


def _exit_code(ok: bool, verdict: str) -> int:
    """0 pass, 1 a failing kernel, 2 a problem that is broken (its reference raised): the user's to fix."""
    return 0 if ok else 2 if verdict == "error: problem" else 1


def _emit(call: Callable[[Any], Any], printer: Callable[[Any, Console], None], as_json: bool) -> Any:
    """Run an instrument or tool (progress to stderr unless --json), print its result (--json: exactly as the
    tool returns it, a model, a list or a string), return it. A usage error exits 2."""
    from pydantic import TypeAdapter

    progress = _Progress()
    try:
        try:
            result = call(None if as_json else progress)
        finally:
            progress.close()  # before anything else is printed: the bar redraws over it
    except UsageError as exc:
        _usage_error(exc)
    if as_json:
        sys.stdout.write(TypeAdapter(type(result)).dump_json(result, indent=1).decode() + "\n")
    else:
        printer(result, Console())
    return result


TIMEOUT_OPT = typer.Option(None, "--timeout", min=0.1, help="seconds one call of the candidate may take before it "
                           "fails as hanging (default: the task's, 180 s unless it says otherwise, as a first call may "
                           "compile)")
PROBLEM_ARG = typer.Argument(..., help="problem folder (task.yml + reference.py) or KernelBench .py")
CANDIDATE_ARG = typer.Argument(..., help="Python file defining custom_kernel(data) (or ModelNew)")
DEVICE_OPT = typer.Option("auto", help="auto | cpu | cuda")
TARGET_CI_OPT = typer.Option(0.01, help="stop once each median is known to +-this fraction (95% CI)")
BUDGET_OPT = typer.Option(60.0, help="timing budget in seconds for all shapes together")
SHAPES_OPT = typer.Option("auto", help="benchmarks | tests (the small test shapes) | auto: tests on a CPU, "
                          "benchmarks on a GPU")
JSON_OPT = typer.Option(False, "--json", help="print one JSON object")
GPUS_OPT = typer.Option(None, help="evaluate on a warm worker per GPU: 0,1,3 | all (cuda:N numbering)")
CLUSTER_OPT = typer.Option(None, help="evaluate as Ray tasks on an existing cluster: ray://HOST:PORT | auto | "
                           "local (starts one here) (pip install 'kernel-mcp[ray]')")
