"""``kernel-mcp demo``: what the tool is for, in a minute and a half on any machine (no GPU, no API key):
every bundled problem's baseline kernel checked and passing, one wrong kernel per problem caught with the
reason, and what to do next."""
from __future__ import annotations

import json
import shlex
import sys
from typing import Optional

import typer
from rich.console import Console

from kernel_mcp.cli.app import _usage_error, app, err
from kernel_mcp.errors import UsageError
from kernel_mcp.files import bundled_problems

# imports inside functions: a command imports its instrument when it runs (the CLI's start-up: see launch.py)


def next_steps() -> list[str]:
    """What to do next, as commands that run where the demo ran (a fresh folder, no clone): a bundled problem
    is reached by its name; a file to copy by its bundled path."""
    from kernel_mcp.problem import bundled_problem
    folder = bundled_problem("vector_add")
    if folder is None:  # an install without its problems: the demo has shown nothing to build on
        return ["give your coding agent the tools: `kernel-mcp install claude-code` (or codex, cursor)"]
    baseline = shlex.quote(str(folder / "baseline.py"))
    return [
        f"write your own: `cp {baseline} mine.py`, change it, then `kernel-mcp check vector_add mine.py`",
        "time it: `kernel-mcp profile vector_add mine.py` (on a GPU: also `kernel-mcp roofline vector_add mine.py`)",
        "search unattended: `kernel-mcp optimize vector_add --budget 3m`",
        "give your coding agent the tools: `kernel-mcp install claude-code` (or codex, cursor)",
    ]


def demo_problems(names: list[str]) -> list:
    """The bundled problem folders to show: those named, in that order, else every one. An unknown name is a
    usage error that lists the bundled names."""
    from kernel_mcp.problem import bundled_names, bundled_problem
    if not names:
        return bundled_problems()
    unknown = [name for name in names if bundled_problem(name) is None]
    if unknown:
        _usage_error(UsageError(f"no bundled problem named {', '.join(unknown)}; "
                                f"bundled: {', '.join(bundled_names()) or 'none'}"))
    return [bundled_problem(name) for name in names]


@app.command()
def demo(names: Optional[list[str]] = typer.Argument(None, metavar="problem",
                                           help="bundled problems to show (default: every one)", show_default=False),
         device: str = typer.Option("auto", help="auto | cpu | cuda"),
         as_json: bool = typer.Option(False, "--json", help="print one JSON object: baselines and caught")) -> None:
    """Check every bundled problem's baseline kernel (or those named), and catch one wrong kernel per problem
    (no GPU or API key needed). Exit 0 when every baseline passes and every wrong kernel fails."""
    from kernel_mcp.tools.check import check as run
    from kernel_mcp.views.render import FitTable
    baselines, caught = [], []
    for folder in demo_problems(names or []):
        err.print(f"checking {folder.name}: its baseline ...")
        baselines.append(run(folder, folder / "baseline.py", device=device))
        wrong = sorted((folder / "solutions" / "wrong").glob("*.py"))[:1]
        for kernel in wrong:
            err.print(f"checking {folder.name}: a wrong kernel, {kernel.name} ...")
            caught.append(run(folder, kernel, device=device))
    good = all(r.passed for r in baselines) and not any(r.passed for r in caught)
    if as_json:
        sys.stdout.write(json.dumps({"baselines": [r.model_dump() for r in baselines],
                                     "caught": [r.model_dump() for r in caught]}, indent=1) + "\n")
        raise typer.Exit(0 if good else 1)
    out = Console()
    table = FitTable("problem", "baseline", "device", "cases", "worst err / bound", "seconds", prose=("problem",),
                     title="baselines (must pass)")
    for r in baselines:
        worst = max((c.max_error_in_bounds for case in r.cases for c in case.comparisons), default=0.0)
        table.add_row(r.problem, f"[{'green' if r.passed else 'red'}]{r.verdict}[/]", r.device,
                      f"{sum(c.passed for c in r.cases)}/{len(r.cases)}", f"{worst:.3g}", f"{r.seconds:.1f}")
    out.print(table)
    table = FitTable("problem", "wrong kernel", "verdict", "why", prose=("problem", "wrong kernel", "verdict", "why"),
                     title="wrong kernels (must be caught)")
    for r in caught:
        why = next((f.message for f in r.findings if f.severity == "error"), "")
        table.add_row(r.problem, r.candidate.rsplit("/", 1)[-1], f"[{'red' if r.passed else 'green'}]{r.verdict}[/]",
                      why[:160])
    out.print(table)
    out.print("next:")
    for step in next_steps():
        out.print(f"  - {step}", markup=False, soft_wrap=True)  # not cut into lines: each command is copied whole
    raise typer.Exit(0 if good else 1)
