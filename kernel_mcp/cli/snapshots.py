"""The snapshot commands on the ``kernel-mcp`` app, the CLI twins of the server's tools: ``evaluate`` (every
instrument and a snapshot with its numbers), ``snapshot``, ``history``, ``diff``, ``restore`` and ``status``.
Each takes the workspace with ``--root`` (default: the current folder; its git repository keeps the
snapshots under refs/kernel_mcp/, never on a branch) and prints a table, or with ``--json`` the very result
the MCP tool returns."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from kernel_mcp.cli.app import BUDGET_OPT, CANDIDATE_ARG, DEVICE_OPT, JSON_OPT, PROBLEM_ARG, _emit, _exit_code, app, err
from kernel_mcp.worker import default_shapes

# imports inside functions: a command imports its instrument when it runs (the CLI's start-up: see launch.py)

ROOT_OPT = typer.Option(Path("."), help="the workspace whose git repository keeps the snapshots")


def _speed(s: Any) -> str:
    if not s.speedup:
        return "-"
    ci = f" [{s.speedup_ci[0]:.3g}, {s.speedup_ci[1]:.3g}]" if s.speedup_ci else ""
    return f"{s.speedup:.3g}x{ci}"


@app.command()
def evaluate(problem: Path = PROBLEM_ARG, candidate: Path = CANDIDATE_ARG, root: Path = ROOT_OPT,
             device: str = DEVICE_OPT, budget: float = BUDGET_OPT,
             shapes: str = typer.Option("auto", help="benchmarks | tests | auto: tests on a CPU, benchmarks on a GPU"),
             note: str = typer.Option("", help="what this attempt tries, kept with its snapshot"),
             author: str = typer.Option("you", help="who made it"),
             detail: bool = typer.Option(False, help="--json: add the full result under `detail`"),
             as_json: bool = JSON_OPT) -> None:
    """Compile, check, time and place on the roofline in one call, then keep a snapshot with the numbers."""
    from kernel_mcp.tools._request import evaluate_request
    from kernel_mcp.tools.evaluate import evaluate as run
    from kernel_mcp.views.summaries import summarize_evaluate
    shapes = default_shapes(device) if shapes == "auto" else shapes
    summary = _emit(lambda progress: summarize_evaluate(run(evaluate_request(
        root=root, problem=problem, candidate=candidate, device=device, budget_s=budget, shapes=shapes, author=author,
        note=note), on_progress=progress), detail), _show_evaluation, as_json)
    raise typer.Exit(_exit_code(summary.passed and summary.trusted, summary.verdict))


def _show_evaluation(s: Any, console: Console) -> None:
    colour = "green" if s.passed and s.trusted else "red"
    console.print(f"[bold {colour}]{s.verdict}[/]  speedup {_speed(s)} on {s.device or '-'}; "
                  f"snapshot {s.snapshot_id[:10]}")
    for line in (s.failures + [f"{f.severity} {f.code}: {f.message}" for f in s.findings]
                 + ([s.message] if s.message else [])):
        console.print(line[:2000])


@app.command()
def snapshot(problem: str = typer.Argument(..., help="the problem's name (or folder)"), candidate: Path = CANDIDATE_ARG,
             root: Path = ROOT_OPT, note: str = typer.Option("", help="what this attempt is"),
             author: str = typer.Option("you", help="who made it"), as_json: bool = JSON_OPT) -> None:
    """Keep the candidate as a snapshot without numbers (evaluate keeps one with them)."""
    from kernel_mcp.tools.snapshot import snapshot as run
    _emit(lambda _: run(root, problem, candidate, author=author, note=note),
          lambda s, out: out.print(f"snapshot {s.id[:10]} of {s.candidate} ({s.problem})"), as_json)


@app.command()
def history(problem: Optional[str] = typer.Argument(None, help="only this problem's snapshots"), root: Path = ROOT_OPT,
            passed_only: bool = typer.Option(False, help="only those that passed"),
            limit: int = typer.Option(20, help="at most this many, best first"), as_json: bool = JSON_OPT) -> None:
    """The leaderboard of snapshots, best first (passed and trusted, then speedup)."""
    from kernel_mcp.tools.snapshot import history as run
    _emit(lambda _: run(root, problem, passed_only, None, limit), _show_history, as_json)


def _show_history(snaps: list, console: Console) -> None:
    from kernel_mcp.views.render import FitTable
    if not snaps:
        console.print("no snapshots yet: `kernel-mcp evaluate PROBLEM CANDIDATE` makes one")
        return
    stacks = any(s.other_stack for s in snaps)  # a column only when some were measured on another stack
    table = FitTable("id", "problem", "candidate", "verdict", "speedup (95% CI)", "% of roof", "author", "note",
                     *(["stack (against the first)"] if stacks else []),
                     prose=("candidate", "verdict", "author", "note", "stack (against the first)"))
    for s in snaps:
        roof = f"{s.roofline_percent:.0f}%" if s.roofline_percent is not None else "-"
        table.add_row(s.id[:10], s.problem, s.candidate, s.verdict or "-", _speed(s), roof, s.author, s.note[:40],
                      *([", ".join(s.other_stack) or "same"] if stacks else []))
    console.print(table)


@app.command()
def diff(a: str = typer.Argument(..., help="a snapshot id (4 or more hex characters)"),
         b: Optional[str] = typer.Argument(None, help="another (default: the best of a's problem)"),
         root: Path = ROOT_OPT, as_json: bool = JSON_OPT) -> None:
    """Unified diff from snapshot a to snapshot b."""
    from kernel_mcp.tools.snapshot import diff as run
    _emit(lambda _: run(root, a, b), lambda text, out: out.print(text or "(no difference)", markup=False,
                                                                 highlight=False), as_json)


@app.command()
def restore(snapshot_id: str = typer.Argument(..., help="the snapshot to write back"), root: Path = ROOT_OPT,
            force: bool = typer.Option(False, help="overwrite unsaved changes"), as_json: bool = JSON_OPT) -> None:
    """Write a snapshot's files into the workspace (refuses to overwrite unsaved changes unless --force)."""
    from kernel_mcp.tools.snapshot import restore as run
    _emit(lambda _: run(root, snapshot_id, force), lambda files, out: out.print("restored " + ", ".join(files)),
          as_json)


@app.command()
def status(problem: str = typer.Argument(..., help="the problem's name (or folder)"), root: Path = ROOT_OPT,
           as_json: bool = JSON_OPT) -> None:
    """Is the search stuck, and what next? The stall signals and the restart ladder's rung (0 keep going .. 4 stop)."""
    from kernel_mcp.tools.snapshot import status as run
    _emit(lambda _: run(root, problem), _show_status, as_json)


def _show_status(s: Any, console: Console) -> None:
    best = f"; best {s.best_id[:10]} at {s.best_speedup:.3g}x" if s.best_id and s.best_speedup else ""
    console.print(f"{s.evaluations} evaluations ({s.valid} valid){best}: level {s.level}, {s.action}")
    for signal in s.signals:
        console.print(f"  {signal.code}: {signal.detail}")
    if err.is_terminal and s.level:
        err.print("[dim]levels: 1 nudge, 2 fresh session on the best, 3 restart from scratch, 4 stop[/dim]")
