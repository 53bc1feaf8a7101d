"""The orchestrator's commands on the ``kernel-mcp`` app: ``optimize`` (an unattended search, live progress
on stderr, a summary at the end), ``steer`` (a person's hint to a running search) and ``report`` (a run
rendered as Markdown and HTML with plots)."""
from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from kernel_mcp.cli.app import CLUSTER_OPT, GPUS_OPT, JSON_OPT, _usage_error, app, err
from kernel_mcp.errors import UsageError

# imports inside functions: a command imports the orchestrator when it runs (the CLI's start-up: see
# launch.py)


@app.command()
def optimize(problem: Optional[Path] = typer.Argument(None, help="problem folder or KernelBench .py "
                                                      "(not with --resume)"),
             candidate: Optional[Path] = typer.Option(None, help="starting kernel "
                                                      "(default: the problem's baseline.py)"),
             agent: str = typer.Option("tune", help="tune | anthropic:MODEL | openai:MODEL | "
                                       "openai-compatible:URL#MODEL | claude-code[:MODEL] | codex[:MODEL]"),
             islands: int = typer.Option(1, help="lineages searched at once (model agents)"),
             budget: str = typer.Option("30m", help="30m | 90s | 2h | 200evals | 5usd, several joined by commas"),
             until_sol: Optional[float] = typer.Option(None, help="stop once the best reaches this share of "
                                                       "speed-of-light (e.g. 0.9)"),
             run: Optional[Path] = typer.Option(None, help="run folder to create (default: runs/PROBLEM-TIME)"),
             resume: Optional[Path] = typer.Option(None, help="carry on a run folder after a stop or a crash"),
             device: str = typer.Option("auto", help="auto | cpu | cuda"),
             timing: float = typer.Option(10.0, help="timing budget of one evaluation, seconds"),
             shapes: Optional[str] = typer.Option(None, help="benchmarks | tests (default: tests on a CPU)"),
             gpus: Optional[str] = GPUS_OPT, cluster: Optional[str] = CLUSTER_OPT,
             as_json: bool = JSON_OPT) -> None:
    """Search for a faster kernel unattended: baseline, tune, model proposals; each checked, timed, kept.
    Exit 0 when the run ends with a checked best kernel, 1 otherwise, 2 on usage errors."""
    from kernel_mcp.agent.command import OpenedRun, OptimizeRequest
    from kernel_mcp.agent.report.progress import LiveView
    if (problem is None) == (resume is None):
        _usage_error(UsageError("give a PROBLEM, or --resume RUN (not both)"))
    request = OptimizeRequest(problem=str(problem or ""), candidate=str(candidate) if candidate else None, agent=agent,
                              islands=islands, budget=budget, until_sol=until_sol, run=str(run) if run else None,
                              resume=str(resume) if resume else None, device=device, timing_s=timing, shapes=shapes,
                              gpus=gpus, cluster=cluster)
    try:  # every usage error is found here, before the live view draws anything
        opened = OpenedRun(request)
    except UsageError as exc:
        _usage_error(exc)
    interrupted = _catch_ctrl_c()
    with opened:
        try:
            if as_json:
                summary = opened.drive()
            else:
                with LiveView(err) as view:
                    summary = opened.drive(say=view.say, listeners=[view.on_record])
        except KeyboardInterrupt:
            interrupted.set()
        if interrupted.is_set():
            opened.close()  # its processes end before the report reads the folder
            _interrupted(opened.path)
    written = _report(summary.run)
    if as_json:
        sys.stdout.write(summary.model_dump_json(indent=1) + "\n")
    else:
        print_summary(summary, written, Console())
    raise typer.Exit(0 if summary.best and summary.best.speedup else 1)


def _catch_ctrl_c() -> threading.Event:
    """SIGINT raises KeyboardInterrupt as usual, and is also remembered: raised where Python ignores
    exceptions (a finalizer, an at-fork hook: seen in a loaded test run) it would be lost, and the run would
    go on to its end as if never interrupted."""
    interrupted = threading.Event()

    def on_sigint(signum, frame):
        interrupted.set()
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, on_sigint)
    return interrupted


def _report(run: str | Path) -> Path:
    from kernel_mcp.agent.report.report import report as write_report
    return write_report(run)


def _interrupted(run: Path) -> None:
    """Ctrl-C: what the run kept is in its folder; say how to carry on, and write its report as it stands."""
    err.print(f"\n[yellow]interrupted[/yellow]: resume with  kernel-mcp optimize --resume {run}", soft_wrap=True)
    try:
        err.print(f"report as it stands: {_report(run)}", soft_wrap=True)
    except Exception as exc:  # noqa: BLE001 - a report that cannot be drawn must not hide how to resume
        err.print(f"(no report: {exc})")
    raise typer.Exit(130)


def print_summary(summary, written: Path, out: Console) -> None:
    from kernel_mcp.views.summaries import ratio_text
    out.print(f"[bold]{Path(summary.problem).name}[/bold]: {summary.finished or 'stopped'}")
    for name, kernel in (("baseline", summary.baseline), ("best", summary.best)):
        if kernel:
            sol = f", {kernel.roofline_percent:.0f}% of speed-of-light" if kernel.roofline_percent else ""
            out.print(f"  {name:<9}{ratio_text(kernel.speedup, kernel.speedup_ci)} over the reference{sol}")
            out.print(f"           {kernel.file}", soft_wrap=True, style="dim")
    print_decisions(summary, out)
    if summary.promotions:
        out.print(f"  best / baseline: {summary.gain_over_baseline:.3g}x (95% lower end {summary.gain_low:.3g}x), "
                  f"{summary.promotions} confirmed improvement(s)")
    if summary.why_no_gain:
        out.print(f"  no confirmed improvement: {summary.why_no_gain}")
    out.print(f"  {summary.evaluations} evaluations ({summary.failed} failed), ${summary.spend_usd:.4f}, "
              f"{summary.elapsed_s:.0f} s")
    out.print(f"  report: {written}  (and report.html beside it)", soft_wrap=True)


SHOWN_DECISIONS = 12  # the console shows the latest; the report has them all


def print_decisions(summary, out: Console) -> None:
    """What the search timed: the A/A run that set the margin, then each comparison with its interval
    against the lower end it needed, and whether it counted."""
    from kernel_mcp.agent.report.decisions import cells
    from kernel_mcp.views.render import FitTable
    found = summary.decisions
    if not found:
        return
    shown = found if len(found) <= SHOWN_DECISIONS else [found[0], *found[-(SHOWN_DECISIONS - 1):]]
    table = FitTable("#", "what", "change", "speedup [95% CI]", "needs", "result", prose=["change", "result"],
                     title="timing decisions" + (f" (the latest {len(shown)} of {len(found)}: all in the report)"
                                                 if len(shown) < len(found) else ""), title_justify="left",
                     caption="a gain counts when its 95% lower end exceeds what it needs: 1 + the margin the "
                             "A/A run (the baseline against itself) set", caption_justify="left")
    for d in shown:
        table.add_row(str(d.step), d.what, d.change, *cells(d))
    out.print(table)


@app.command()
def steer(run: Path = typer.Argument(..., help="a run folder (from optimize), running or stopped"),
          text: str = typer.Argument(..., help="the hint, e.g. \"stop trying larger tiles; try a split-K\"")) -> None:
    """Give a running search a hint: every island hears it on its next model turn, and the report shows what
    followed it. A stopped run hears it when resumed (optimize --resume RUN)."""
    from kernel_mcp.agent.run.steer import post_hint
    try:
        post_hint(run, text)
    except UsageError as exc:
        _usage_error(exc)
    err.print(f"left for {run}: every island hears it on its next turn (a stopped run: when resumed)")


@app.command()
def report(run: Path = typer.Argument(..., help="a run folder (from optimize)"), as_json: bool = JSON_OPT) -> None:
    """Render a run (finished, running or killed): RUN/report/report.md, report.html and plots."""
    from kernel_mcp.agent.report.report import report as write_report
    from kernel_mcp.agent.report.summary import summarize
    try:
        written = write_report(run)
    except (FileNotFoundError, ValueError) as exc:
        _usage_error(exc)
    summary = summarize(run)
    if as_json:
        sys.stdout.write(summary.model_dump_json(indent=1) + "\n")
    else:
        print_summary(summary, written, Console())
