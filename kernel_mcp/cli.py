"""The ``kernel-mcp`` command line (also ``python -m kernel_mcp``). Exit codes: 0 pass, 1 fail, 2 usage."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from kernel_mcp.results import CheckResult, UsageError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Instruments for writing GPU kernels with AI agents: check (more to come).")
err = Console(stderr=True)


def _progress(message: str, done: int, total: int) -> None:
    err.print(f"[dim]  {done}/{total} {message}[/dim]" if total else f"[dim]  {message}[/dim]")


def _usage_error(exc: UsageError) -> None:
    err.print(f"[red]error:[/red] {exc}")
    raise typer.Exit(2)


def print_check(result: CheckResult, console: Console) -> None:
    colour = "green" if result.passed else "red"
    console.print(f"[bold {colour}]{result.verdict}[/]  {result.problem} <- {result.candidate} "
                  f"on {result.device} ({result.seconds:.1f} s)")
    table = Table("case", "result", "max err / bound", "norm err", "detail")
    for case in result.cases:
        worst = max(case.comparisons, key=lambda c: c.max_error_in_bounds, default=None)
        table.add_row(case.name, "[green]ok[/]" if case.passed else f"[red]{case.failure}[/]",
                      f"{worst.max_error_in_bounds:.3g}" if worst else "-",
                      f"{worst.norm_error:.2e}" if worst else "-", (case.message or "")[:160])
    if result.cases:
        console.print(table)
    for finding in result.findings:
        console.print(f"[yellow]{finding.severity}[/] {finding.code}: {finding.message[:2000]}")


@app.command()
def check(problem: Path = typer.Argument(..., help="problem folder (task.yml + reference.py) or KernelBench .py"),
          candidate: Path = typer.Argument(..., help="Python file defining custom_kernel(data) (or ModelNew)"),
          device: str = typer.Option("auto", help="auto | cpu | cuda"),
          fresh_seeds: Optional[int] = typer.Option(None, help="secret-seeded copies of each test (default: task's)"),
          as_json: bool = typer.Option(False, "--json", help="print one JSON object")) -> None:
    """Check a candidate kernel against a problem's reference. Exit 0 pass, 1 fail, 2 usage error."""
    from kernel_mcp.tools.check import check as run
    try:
        result = run(problem, candidate, device=device, fresh_seeds=fresh_seeds,
                     on_progress=None if as_json else _progress)
    except UsageError as exc:
        _usage_error(exc)
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=1) + "\n")
    else:
        print_check(result, Console())
    raise typer.Exit(0 if result.passed else 1)


@app.command()
def demo(device: str = typer.Option("auto", help="auto | cpu | cuda"),
         as_json: bool = typer.Option(False, "--json", help="print one JSON list")) -> None:
    """Check every bundled problem's Triton baseline and print a table (no GPU or API key needed)."""
    from kernel_mcp.bundled import bundled_problems
    from kernel_mcp.tools.check import check as run
    results = []
    for folder in bundled_problems():
        err.print(f"checking {folder.name} ...")
        results.append(run(folder, folder / "baseline.py", device=device))
    if as_json:
        sys.stdout.write(json.dumps([r.model_dump() for r in results], indent=1) + "\n")
    else:
        table = Table("problem", "verdict", "device", "cases", "worst err / bound", "seconds")
        for r in results:
            worst = max((c.max_error_in_bounds for case in r.cases for c in case.comparisons), default=0.0)
            table.add_row(r.problem, f"[{'green' if r.passed else 'red'}]{r.verdict}[/]", r.device,
                          f"{sum(c.passed for c in r.cases)}/{len(r.cases)}", f"{worst:.3g}", f"{r.seconds:.1f}")
        Console().print(table)
    raise typer.Exit(0 if all(r.passed for r in results) else 1)


def main() -> None:
    app()
