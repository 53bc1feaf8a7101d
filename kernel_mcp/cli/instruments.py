"""The instruments as commands: ``check``, ``profile``, ``roofline``, ``compile``, ``calibrate``, and ``serve``
and ``install`` for MCP clients."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from kernel_mcp.cli.app import (BUDGET_OPT, CANDIDATE_ARG, CLUSTER_OPT, DEVICE_OPT, GPUS_OPT, JSON_OPT, PROBLEM_ARG,
                                SHAPES_OPT, TARGET_CI_OPT, TIMEOUT_OPT, _emit, _exit_code, _Progress, _usage_error, app,
                                err)
from kernel_mcp.errors import UsageError
from kernel_mcp.worker import guess_kind, prestart_judge, trace_mark

# imports inside functions: a command imports its instrument when it runs, so a one-shot check's judge
# (started by launch.py) boots while they load, and --help stays fast

# results (pydantic) and render are imported inside the commands: a one-shot check starts its judge before
# paying for them (worker/launch/judge.prestart), and that judge's own start-up then runs alongside those imports


@app.command()
def check(problem: Path = typer.Argument(..., help="problem folder (task.yml + reference.py) or KernelBench .py"),
          candidate: Path = typer.Argument(..., help="Python file defining custom_kernel(data) (or ModelNew)"),
          device: str = typer.Option("auto", help="auto | cpu | cuda"),
          fresh_seeds: Optional[int] = typer.Option(None, help="secret-seeded copies of each test (default: task's)"),
          timeout: Optional[float] = TIMEOUT_OPT,
          as_json: bool = typer.Option(False, "--json", help="print one JSON object")) -> None:
    """Check a candidate kernel against a problem's reference. Exit 0 pass, 1 fail, 2 usage error."""
    trace_mark("cli: check command starts")
    prestart_judge(device)
    from kernel_mcp.tools.check import check as run
    from kernel_mcp.views.render import print_check
    result = _emit(lambda progress: run(problem, candidate, device=device, fresh_seeds=fresh_seeds,
                                        on_progress=progress, call_timeout_s=timeout), print_check, as_json)
    trace_mark("cli: result printed")
    raise typer.Exit(_exit_code(result.passed, result.verdict))


def _settings(target_ci: float, budget: float, shapes: str, device: str, quiet: bool):
    from kernel_mcp.tools._request import settings_from
    if shapes == "auto":  # a CPU times the benchmark shapes in minutes, or not at all within the budget
        from kernel_mcp.worker import default_shapes
        shapes = default_shapes(device)
        if shapes == "tests" and not quiet:
            err.print("[dim]timing the problem's test shapes: this is a CPU, where the benchmark shapes would take "
                      "minutes (--shapes benchmarks to time them anyway)[/dim]")
    return settings_from(target_ci=target_ci, budget_s=budget, shapes=shapes)


@app.command()
def profile(problem: Path = PROBLEM_ARG, candidate: Path = CANDIDATE_ARG,
            baseline: Optional[Path] = typer.Option(None, help="another candidate to compare with (e.g. the best)"),
            device: str = DEVICE_OPT, target_ci: float = TARGET_CI_OPT, budget: float = BUDGET_OPT,
            shapes: str = SHAPES_OPT,
            counters: bool = typer.Option(False, help="add hardware counters (ncu / rocprofv3) on one shape"),
            timeout: Optional[float] = TIMEOUT_OPT, as_json: bool = JSON_OPT) -> None:
    """Check, then time the candidate against the reference. Exit 0 pass and trusted, 1 otherwise, 2 usage."""
    from kernel_mcp.tools.profile import profile as run
    from kernel_mcp.views.render import print_profile
    result = _emit(lambda progress: run(problem, candidate, baseline=baseline, device=device, counters=counters,
                                        call_timeout_s=timeout,
                                        settings=_settings(target_ci, budget, shapes, device, as_json),
                                        on_progress=progress), print_profile, as_json)
    raise typer.Exit(_exit_code(result.passed and result.trusted, result.verdict))


@app.command()
def sanitize(problem: Path = PROBLEM_ARG, candidate: Path = CANDIDATE_ARG, device: str = DEVICE_OPT,
             tool: Optional[list[str]] = typer.Option(None, help="memcheck | racecheck | initcheck | synccheck "
                                                      "(repeat it; default: all four)"),
             as_json: bool = JSON_OPT) -> None:
    """The candidate's kernels on the smallest test under NVIDIA Compute Sanitizer. Exit 0 clean, 1 errors found
    or a tool could not run, 2 usage."""
    from kernel_mcp.tools.sanitize import sanitize as run
    result = _emit(lambda _: run(problem, candidate, device=device, tools=tool),
                   lambda r, out: out.print(r.message or r.summary, markup=False, highlight=False), as_json)
    raise typer.Exit(0 if result.clean else 1)


@app.command()
def roofline(problem: Path = PROBLEM_ARG, candidate: Path = CANDIDATE_ARG, device: str = DEVICE_OPT,
             png: Optional[Path] = typer.Option(None, help="write the roofline chart to this .png file"),
             target_ci: float = TARGET_CI_OPT, budget: float = BUDGET_OPT, shapes: str = SHAPES_OPT,
             as_json: bool = JSON_OPT) -> None:
    """Profile, then place candidate and reference under the device's roofs (memory, compute)."""
    if guess_kind(device) == "cpu":  # said before minutes of timing, not after
        from kernel_mcp.errors import UsageError
        _usage_error(UsageError("no roofline on a CPU: the roofs are a GPU's (its datasheet, or `kernel-mcp "
                                "calibrate` on it); `kernel-mcp profile` times the kernel here"))
    from kernel_mcp.tools.roofline import roofline as run
    from kernel_mcp.views.render import print_roofline
    result = _emit(lambda progress: run(problem, candidate, device=device, png=png, on_progress=progress,
                                        settings=_settings(target_ci, budget, shapes, device, as_json)),
                   print_roofline, as_json)
    raise typer.Exit(_exit_code(bool(result.profile.passed and result.shapes), result.profile.verdict))


@app.command(name="compile")
def compile_(candidate: Path = CANDIDATE_ARG,
             problem: Optional[Path] = typer.Option(None, help="problem folder (default: the one the candidate is in)"),
             target: Optional[list[str]] = typer.Option(None, help="sm_80, sm_90a, sm_100, gfx90a, gfx942, gfx950... "
                                                        "(repeatable; default: this GPU, else a standard set)"),
             asm: bool = typer.Option(False, help="add an assembly excerpt around each kernel's main loop"),
             as_json: bool = JSON_OPT) -> None:
    """Compile the candidate's kernels for NVIDIA/AMD targets: errors, registers, spills, shared memory, occupancy."""
    from kernel_mcp.tools.compile import compile as run
    from kernel_mcp.views.render import print_compile
    result = _emit(lambda progress: run(candidate, problem=problem, targets=target, asm=asm, on_progress=progress),
                   print_compile, as_json)
    raise typer.Exit(0 if result.ok else 1)


@app.command()
def serve(root: Path = typer.Option(Path("."), help="workspace root: every path argument must stay inside it"),
          http: Optional[str] = typer.Option(None, help="serve streamable HTTP on HOST:PORT (or PORT: 127.0.0.1) "
                                             "at /mcp instead of stdio"),
          token: Optional[str] = typer.Option(None, envvar="KERNEL_MCP_TOKEN", show_envvar=True,
                                              help="bearer token HTTP clients must send (default: a new "
                                              "one, printed to stderr; stdio ignores it)"),
          gpus: Optional[str] = GPUS_OPT, cluster: Optional[str] = CLUSTER_OPT) -> None:
    """Run the MCP server: stdio by default, or streamable HTTP behind a bearer token with --http."""
    if not root.is_dir():
        _usage_error(UsageError(f"--root {root} is not a directory"))
    from kernel_mcp.server import parse_listen, serve_http
    try:
        if http:
            parse_listen(http)
        runner = None
        if gpus or cluster:
            from kernel_mcp.worker import runner_for
            runner = runner_for(gpus, cluster)
    except UsageError as exc:
        _usage_error(exc)
    if runner is not None:
        err.print(f"kernel_mcp: evaluations go to {runner.describe()}")
    if not http:
        from kernel_mcp.server import main as run
        err.print(f"kernel_mcp: serving MCP over stdio for the workspace {root.resolve()} (an MCP client starts "
                  "this command and talks on its stdin/stdout; Ctrl-C stops it)")
        run(str(root), runner)
        return
    serve_http(str(root), http, token or None, runner)


@app.command()
def install(client: str = typer.Argument(..., help="claude-code | codex | cursor"),
            scope: str = typer.Option("project", help="project (files in --root) | user (files in your home)"),
            root: Optional[Path] = typer.Option(None, help="workspace the server serves (default: current folder)"),
            home: Optional[Path] = typer.Option(None, help="use this folder instead of your home (user scope)"),
            as_json: bool = JSON_OPT) -> None:
    """Configure a coding agent to run the kernel_mcp server on --root, with the kernel skills/rules."""
    from kernel_mcp.install.command import install as run
    try:
        result = run(client, scope=scope, root=root, home=home)
    except UsageError as exc:
        _usage_error(exc)
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=1) + "\n")
        return
    out = Console()
    out.print(f"kernel-mcp installed for {result.client} ({result.scope} scope), serving {result.root}")
    for path in result.files:
        out.print(f"  {'wrote    ' if path in result.changed else 'unchanged'} {path}")
    for note in result.notes:
        out.print(f"[dim]note:[/dim] {note}")


@app.command()
def calibrate(as_json: bool = JSON_OPT) -> None:
    """Measure this GPU's memory bandwidth (best of three read/write mixes) and matmul rates (random data)
    and cache them for the roofline."""
    from kernel_mcp.tools.calibrate import cache_file
    from kernel_mcp.tools.calibrate import calibrate as run
    from kernel_mcp.views.render import FitTable
    try:
        result = run(on_progress=None if as_json else _Progress())
    except UsageError as exc:
        _usage_error(exc)
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=1) + "\n")
        return
    table = FitTable("ceiling", "measured")
    for mix, rate in result.bandwidth_by_mix.items():
        best = " (the roof)" if rate == result.bandwidth_bytes_per_s else ""
        table.add_row(f"bandwidth, {mix}", f"{rate / 1e12:.2f} TB/s{best}")
    for unit, rate in result.matmul_flops_per_s.items():
        table.add_row(f"matmul {unit}", f"{rate / 1e12:.1f} TFLOP/s")
    Console().print(f"{result.device_name} (cached in {cache_file()})")
    Console().print(table)
