"""``kernel-mcp demo``: what the tool is for, in a minute and a half on any machine (no GPU, no API key):
every bundled problem's baseline kernel checked and passing, one wrong kernel per problem caught with the
reason, and what to do next."""
from __future__ import annotations

import json
import sys

import typer
from rich.console import Console
from rich.table import Table

from kernel_mcp.cli import app, err

NEXT_STEPS = (
    "write your own: copy problems/vector_add/baseline.py, change it, `kernel-mcp check problems/vector_add YOURS.py`",
    "time it: `kernel-mcp profile problems/vector_add YOURS.py` (on a GPU: also `kernel-mcp roofline`)",
    "search unattended: `kernel-mcp optimize problems/vector_add --budget 5m`",
    "give your coding agent the tools: `kernel-mcp install claude-code` (or codex, cursor)",
)


@app.command()
def demo(device: str = typer.Option("auto", help="auto | cpu | cuda"),
         as_json: bool = typer.Option(False, "--json", help="print one JSON object: baselines and caught")) -> None:
    """Check every bundled problem's baseline kernel, and catch one wrong kernel per problem (no GPU or API
    key needed). Exit 0 when every baseline passes and every wrong kernel fails."""
    from kernel_mcp.assets import bundled_problems
    from kernel_mcp.tools.check import check as run
    baselines, caught = [], []
    for folder in bundled_problems():
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
    table = Table("problem", "baseline", "device", "cases", "worst err / bound", "seconds", title="baselines (must pass)")
    for r in baselines:
        worst = max((c.max_error_in_bounds for case in r.cases for c in case.comparisons), default=0.0)
        table.add_row(r.problem, f"[{'green' if r.passed else 'red'}]{r.verdict}[/]", r.device,
                      f"{sum(c.passed for c in r.cases)}/{len(r.cases)}", f"{worst:.3g}", f"{r.seconds:.1f}")
    out.print(table)
    table = Table("problem", "wrong kernel", "verdict", "why", title="wrong kernels (must be caught)")
    for r in caught:
        why = next((f.message for f in r.findings if f.severity == "error"), "")
        table.add_row(r.problem, r.candidate.rsplit("/", 1)[-1], f"[{'red' if r.passed else 'green'}]{r.verdict}[/]",
                      why[:160])
    out.print(table)
    out.print("next:")
    for step in NEXT_STEPS:
        out.print(f"  - {step}", markup=False)
    raise typer.Exit(0 if good else 1)
