"""The ``kernel-mcp`` command line (also ``python -m kernel_mcp``). Exit codes: 0 pass, 1 fail, 2 usage."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from rich.console import Console

# results (pydantic) and render are imported inside the commands: a one-shot check starts its judge before
# paying for them (worker/client.prestart), and that judge's own start-up then runs alongside those imports

# rich_markup_mode=None: click's plain help, where a flag reads `--json`, not `--json <bool>`
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Instruments for writing GPU kernels with AI agents: check, compile, profile, roofline, calibrate.")
err = Console(stderr=True)


def _print_version(asked: bool) -> None:
    if asked:
        from kernel_mcp import __version__
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

    from kernel_mcp.results import UsageError
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


@app.command()
def check(problem: Path = typer.Argument(..., help="problem folder (task.yml + reference.py) or KernelBench .py"),
          candidate: Path = typer.Argument(..., help="Python file defining custom_kernel(data) (or ModelNew)"),
          device: str = typer.Option("auto", help="auto | cpu | cuda"),
          fresh_seeds: Optional[int] = typer.Option(None, help="secret-seeded copies of each test (default: task's)"),
          timeout: Optional[float] = TIMEOUT_OPT,
          as_json: bool = typer.Option(False, "--json", help="print one JSON object")) -> None:
    """Check a candidate kernel against a problem's reference. Exit 0 pass, 1 fail, 2 usage error."""
    from kernel_mcp.worker import client, trace
    trace.mark("cli: check command starts")
    client.prestart(device)
    from kernel_mcp.render import print_check
    from kernel_mcp.tools.check import check as run
    result = _emit(lambda progress: run(problem, candidate, device=device, fresh_seeds=fresh_seeds,
                                        on_progress=progress, call_timeout_s=timeout), print_check, as_json)
    trace.mark("cli: result printed")
    raise typer.Exit(_exit_code(result.passed, result.verdict))


def _settings(target_ci: float, budget: float, shapes: str, device: str, quiet: bool):
    from kernel_mcp.tools.profile import settings_from
    if shapes == "auto":  # a CPU times the benchmark shapes in minutes, or not at all within the budget
        from kernel_mcp.worker.resolve import default_shapes
        shapes = default_shapes(device)
        if shapes == "tests" and not quiet:
            err.print("[dim]timing the problem's test shapes: this is a CPU, where the benchmark shapes would take "
                      "minutes (--shapes benchmarks to time them anyway)[/dim]")
    return settings_from(target_ci=target_ci, budget_s=budget, shapes=shapes)


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


@app.command()
def profile(problem: Path = PROBLEM_ARG, candidate: Path = CANDIDATE_ARG,
            baseline: Optional[Path] = typer.Option(None, help="another candidate to compare with (e.g. the best)"),
            device: str = DEVICE_OPT, target_ci: float = TARGET_CI_OPT, budget: float = BUDGET_OPT,
            shapes: str = SHAPES_OPT,
            counters: bool = typer.Option(False, help="add hardware counters (ncu / rocprofv3) on one shape"),
            timeout: Optional[float] = TIMEOUT_OPT, as_json: bool = JSON_OPT) -> None:
    """Check, then time the candidate against the reference. Exit 0 pass and trusted, 1 otherwise, 2 usage."""
    from kernel_mcp.render import print_profile
    from kernel_mcp.tools.profile import profile as run
    result = _emit(lambda progress: run(problem, candidate, baseline=baseline, device=device, counters=counters,
                                        call_timeout_s=timeout,
                                        settings=_settings(target_ci, budget, shapes, device, as_json),
                                        on_progress=progress), print_profile, as_json)
    raise typer.Exit(_exit_code(result.passed and result.trusted, result.verdict))


@app.command()
def roofline(problem: Path = PROBLEM_ARG, candidate: Path = CANDIDATE_ARG, device: str = DEVICE_OPT,
             png: Optional[Path] = typer.Option(None, help="write the roofline chart to this .png file"),
             target_ci: float = TARGET_CI_OPT, budget: float = BUDGET_OPT, shapes: str = SHAPES_OPT,
             as_json: bool = JSON_OPT) -> None:
    """Profile, then place candidate and reference under the device's roofs (memory, compute)."""
    from kernel_mcp.worker.resolve import guess_kind
    if guess_kind(device) == "cpu":  # said before minutes of timing, not after
        from kernel_mcp.results import UsageError
        _usage_error(UsageError("no roofline on a CPU: the roofs are a GPU's (its datasheet, or `kernel-mcp "
                                "calibrate` on it); `kernel-mcp profile` times the kernel here"))
    from kernel_mcp.render import print_roofline
    from kernel_mcp.tools.roofline import roofline as run
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
    from kernel_mcp.render import print_compile
    from kernel_mcp.tools.compile import compile as run
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
    from kernel_mcp.results import UsageError
    if not root.is_dir():
        _usage_error(UsageError(f"--root {root} is not a directory"))
    from kernel_mcp.server import parse_listen, serve_http
    try:
        if http:
            parse_listen(http)
        runner = None
        if gpus or cluster:
            from kernel_mcp.worker.pool import runner_for
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
    from kernel_mcp.install import install as run
    from kernel_mcp.results import UsageError
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
    from kernel_mcp.render import FitTable
    from kernel_mcp.results import UsageError
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


from kernel_mcp import cli_demo, cli_optimize, cli_snapshots  # noqa: E402,F401  (register their commands)


def main() -> None:
    app()
