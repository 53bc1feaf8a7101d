"""``kernel-mcp judge``: candidates by the hundred or thousand, each through the same check and timing as the
one-shot commands; a row per candidate appended to OUT/results.jsonl as each ends (run it again on the same
OUT to carry on after a stop), then OUT/summary.md and OUT/index.html. Progress with counts and an ETA on
stderr."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from kernel_mcp.cli.app import CLUSTER_OPT, GPUS_OPT, JSON_OPT, SHAPES_OPT, _usage_error, app, err
from kernel_mcp.errors import UsageError

# imports inside functions: the batch and its runners load when the command runs (the CLI's start-up: see
# launch.py)


@app.command()
def judge(problems: Path = typer.Argument(..., help="a problem (folder or KernelBench .py), or a KernelBench root "
                                          "(level1/, level2/, ...)"),
          candidates: list[Path] = typer.Argument(..., help="candidate files, folders of them, or manifests "
                                                  "(.jsonl: id, level, problem, candidate)"),
          out: Path = typer.Option(Path("judged"), help="folder for results.jsonl, summary.md, index.html; "
                                   "an existing one is carried on (its judged candidates are skipped)"),
          jobs: int = typer.Option(4, min=1, help="candidates judged at once"),
          device: str = typer.Option("auto", help="auto | cpu | cuda"),
          timed: bool = typer.Option(True, "--time/--no-time", help="time every candidate that passes, against "
                                     "eager and torch.compile of the reference"),
          budget: float = typer.Option(2.0, help="timing budget per candidate, seconds"),
          builds: Optional[int] = typer.Option(None, min=0, help="load_inline candidates built at once ahead of "
                                               "their checks, with no device memory reserved (default: one per "
                                               "core; 0: each builds inside its check)"),
          share: bool = typer.Option(True, "--share/--no-share", help="a problem's candidates get the same secret "
                                     "inputs (fresh per run) and one float64 truth, computed once"),
          shapes: str = SHAPES_OPT, gpus: Optional[str] = GPUS_OPT, cluster: Optional[str] = CLUSTER_OPT,
          as_json: bool = JSON_OPT) -> None:
    """Judge many candidates: verdict and cause, KernelBench's own rule, speedups over eager and torch.compile,
    fast_p per level. Exit 0 when every candidate was judged (pass or fail), 2 on usage errors."""
    from kernel_mcp.batch.judging import judge_batch, settled
    from kernel_mcp.batch.sources import find_items
    from kernel_mcp.batch.summary import markdown, write_summary
    from kernel_mcp.batch.ledger import read_rows
    from kernel_mcp.worker import runner_for
    from kernel_mcp.worker.protocol import parse_device
    try:
        device = parse_device(device)
        items = find_items(problems, candidates)
        runner = runner_for(gpus, cluster, spares=min(jobs, 4))
    except UsageError as exc:
        _usage_error(exc)
    if not items:
        _usage_error(UsageError(f"no candidates (.py files) found in {', '.join(map(str, candidates))}"))
    judged = {row.id: row for row in read_rows(out / "results.jsonl")}
    progress = _BatchProgress(sum(not settled(judged.get(item.id)) for item in items), quiet=as_json)
    try:
        ledger = judge_batch(items, out, runner, device=device, jobs=jobs, timed=timed, budget_s=budget,
                             shapes=None if shapes == "auto" else shapes, on_row=progress.row,
                             share=share, builds=builds)
    finally:
        progress.close()
        close = getattr(runner, "close", None)
        if close:
            close()
    rows = [ledger.rows[item.id] for item in items]
    md, page = write_summary(rows, out, f"kernel-mcp judge: {problems.name}")
    if as_json:
        sys.stdout.write("[" + ",\n".join(row.model_dump_json() for row in rows) + "]\n")
    else:
        Console().print(markdown(rows))
        Console().print(f"rows: {ledger.path}\nsummary: {md}\npage: {page}")


class _BatchProgress:
    """Counts and an ETA: a bar in a terminal, a line per candidate in a log."""

    def __init__(self, total: int, quiet: bool):
        self.total, self.quiet, self.done, self.began = total, quiet, 0, time.monotonic()
        self.bar = self.task = None
        if not quiet and err.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
            self.bar = Progress("{task.description}", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                console=err, transient=True)
            self.bar.start()
            self.task = self.bar.add_task("judging", total=total)

    def row(self, row) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=f"{row.id[:40]}: {row.verdict}")
        elif not self.quiet:
            rate = self.done / max(time.monotonic() - self.began, 1e-9)
            err.print(f"[dim]  {self.done}/{self.total} {row.id}: {row.verdict} ({row.seconds:.0f} s; "
                      f"about {(self.total - self.done) / rate:.0f} s left)[/dim]")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
