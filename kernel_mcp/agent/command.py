"""``kernel-mcp optimize``: start (or resume) a run folder and drive the loop to its end.

A new run fixes its configuration in RUN/run.json; ``--resume RUN`` takes that configuration and ignores
new arguments except the device, so a run means the same thing however often it is resumed. Anything the
user got wrong (an unknown agent, a missing API key, a bad budget, a folder that already holds a run) is a
``UsageError`` before any work.
"""
from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from kernel_mcp.agent.loop.optimizer import Optimizer
from kernel_mcp.agent.providers.cli_agents import BINARIES, binary_of, is_cli_agent
from kernel_mcp.agent.report.summary import summarize
from kernel_mcp.agent.run.budget import Budget
from kernel_mcp.agent.run.budget import parse as parse_budget
from kernel_mcp.agent.run.folder import RunBusy, RunConfig, RunFolder
from kernel_mcp.errors import UsageError
from kernel_mcp.problem import load_problem, resolve_problem_path
from kernel_mcp.worker import default_shapes, guess_kind, runner_for

API_KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
AGENTS = "tune, anthropic:MODEL, openai:MODEL, openai-compatible:URL#MODEL, claude-code[:MODEL], codex[:MODEL]"
INSTALL_CLI = {"claude-code": "npm install -g @anthropic-ai/claude-code", "codex": "npm install -g @openai/codex"}


class OptimizeRequest(BaseModel):
    problem: str = ""
    candidate: str | None = None  # the starting kernel (default: the problem's baseline.py)
    agent: str = "tune"
    islands: int = 1
    budget: str = "30m"
    until_sol: float | None = None  # stop once the best reaches this share of speed-of-light
    run: str | None = None  # the run folder to create (default: runs/<problem>-<time>)
    resume: str | None = None
    device: str = "auto"
    timing_s: float = 10.0  # timing budget of one evaluation
    shapes: str | None = None  # benchmarks | tests (default: tests on a CPU, benchmarks on a GPU)
    gpus: str | None = None  # a warm worker per GPU ("0,1,3" | "all"): worker/runners/pool.py
    cluster: str | None = None  # a Ray cluster ("ray://HOST:PORT" | "auto"): worker/runners/ray.py


def check_agent(agent: str) -> None:
    kind, _, rest = agent.partition(":")
    if agent == "tune":
        return
    if is_cli_agent(agent):
        if not binary_of(agent):
            raise UsageError(f"agent {agent} needs its CLI on PATH ({INSTALL_CLI[kind]}), or its path in "
                             f"{BINARIES[kind][1]}")
        return
    if kind not in ("anthropic", "openai", "openai-compatible") or not rest or (kind == "openai-compatible"
                                                                                 and "#" not in rest):
        raise UsageError(f"unknown agent {agent!r}: use one of {AGENTS}")
    if kind in API_KEYS and not os.environ.get(API_KEYS[kind]):
        raise UsageError(f"agent {agent} needs {API_KEYS[kind]} in the environment")


def problem_hash(problem: Path) -> str:
    files = load_problem(problem).guarded_files()
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def start_file(problem: Path, candidate: str | None, folder: Path) -> Path:
    """The kernel the run starts from: the one given, the problem's baseline.py, or for a KernelBench file
    its own Model as ModelNew (the reference, which the agent is to beat)."""
    if candidate:
        if not Path(candidate).is_file():
            raise UsageError(f"candidate {candidate} is not a file")
        return Path(candidate)
    if problem.is_dir() and (problem / "baseline.py").is_file():
        return problem / "baseline.py"
    if problem.is_file():
        start = folder / "start.py"
        start.write_text(problem.read_text() + "\n\nModelNew = Model\n")
        return start
    raise UsageError(f"{problem} has no baseline.py: give the starting kernel with --candidate")


def open_run(request: OptimizeRequest) -> tuple[RunFolder, Path]:
    """The run folder (created, or resumed) and the file the run starts from."""
    try:
        if request.resume:
            if not (Path(request.resume) / "run.json").is_file():
                raise UsageError(f"{request.resume} holds no run (no run.json)")
            config = RunConfig.model_validate_json((Path(request.resume) / "run.json").read_text())
            check_agent(config.agent)  # a key missing now is a usage error, not a traceback mid-run
            _same_device_kind(config, request.device)
            folder = RunFolder.resume(request.resume)
            return folder, folder.path / "start.py"
        problem = resolve_problem_path(request.problem)  # a path, or a bundled problem's name
        check_agent(request.agent)
        budget = parse_budget(request.budget)
        if request.islands < 1 or request.islands > 16:
            raise UsageError("--islands must be between 1 and 16")
        path = Path(request.run or f"runs/{problem.stem}-{time.strftime('%Y%m%d-%H%M%S')}")
        config = RunConfig(problem=str(problem.resolve()), problem_hash=problem_hash(problem), agent=request.agent,
                           islands=request.islands, budget=budget.model_dump(exclude_none=True),
                           until_sol=request.until_sol, timing_s=request.timing_s, shapes=request.shapes,
                           device_kind=_device_kind(request.device))
        path.mkdir(parents=True, exist_ok=True)
        if (path / "run.json").exists():
            raise UsageError(f"{path} already holds a run: resume it with --resume {path}, or choose another --run")
        start = start_file(problem, request.candidate, path)
        if start != path / "start.py":
            (path / "start.py").write_text(start.read_text())
        return RunFolder.create(path, config), path / "start.py"
    except (ValueError, FileNotFoundError, FileExistsError, RunBusy) as exc:
        raise UsageError(str(exc)) from None


def _device_kind(device: str) -> str:
    return guess_kind(device)


def _same_device_kind(config: RunConfig, device: str) -> None:
    """A run resumed on another kind of device would rank kernels by numbers from two machines."""
    now = _device_kind(device)
    if config.device_kind and now != config.device_kind:
        raise UsageError(f"this run was measured on {config.device_kind} and would resume on {now}: resume it "
                         f"with --device {config.device_kind} on such a machine, or start a new run")


def resolved_shapes(config: RunConfig, device: str) -> str:
    if getattr(config, "shapes", None):
        return config.shapes
    return default_shapes(device)


def judge_spares(device: str) -> int:
    """Judges kept booted ahead of the loop's calls. On the H200 a judge boots in ~9 s (torch 4 s; CUDA
    context and CUPTI 5 s, under the device's lease) while a tune measurement's work takes 3-5 s: with one
    spare every call also paid a warm-up (BENCHMARKS.md, issue 14); four, topped up three at a time, pay one
    per three calls. On a CPU the spares' boots would share the cores with the timing runs, so one."""
    return 1 if guess_kind(device) == "cpu" else 4


class OpenedRun:
    """A run ready to drive: its runner and its locked folder (close both with ``close`` or ``with``).
    Opening is where everything the user got wrong is found: before a live view draws or any work starts."""

    def __init__(self, request: OptimizeRequest):
        self.request = request
        # the runner first: a bad --gpus / --cluster is a usage error before a run folder exists
        self.runner = runner_for(request.gpus, request.cluster, spares=judge_spares(request.device))
        self.folder: RunFolder | None = None
        try:
            self.folder, self.start = open_run(request)
            self.path = self.folder.path
            config = self.folder.config
            if problem_hash(Path(config.problem)) != config.problem_hash:
                raise UsageError(f"the problem's files changed since the run started ({config.problem}): "
                                 "start a new run")
        except BaseException:
            self.close()
            raise


    def drive(self, say: Callable[[str], None] | None = None, listeners: list | None = None):
        """Run the loop to its end; the run's summary (agent/report/summary.py)."""
        folder, config, request = self.folder, self.folder.config, self.request
        folder.listeners.extend(listeners or [])
        if say and self.runner.parallel > 1:
            say(f"evaluations go to {self.runner.describe()}")
        Optimizer(folder, config.problem, self.start, config.agent, Budget.model_validate(config.budget),
                  device=request.device, budget_s=getattr(config, "timing_s", request.timing_s),
                  shapes=resolved_shapes(config, request.device), runner=self.runner, say=say,
                  until_sol=config.until_sol).run()
        return summarize(folder.path)

    def close(self) -> None:
        """Idempotent: an interrupted run is closed before its report is written, and again on leaving."""
        runner, folder, self.runner, self.folder = self.runner, self.folder, None, None
        if runner is not None:
            runner.close()
        if folder is not None:
            folder.close()

    def __enter__(self) -> OpenedRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def optimize(request: OptimizeRequest, say: Callable[[str], None] | None = None,
             listeners: list | None = None):
    """Run (or resume) an optimisation to its end; its summary (agent/report/summary.py)."""
    with OpenedRun(request) as opened:
        return opened.drive(say, listeners)
