"""The seam between the loop's driver (optimizer.py: the one ``Optimizer`` of a run) and the parts that act
for an island (conversation.py, islands.py, migrate.py, tune_step.py, providers/cli_agents.py): what they
may read of the run and the calls they may make on it. They are typed against this Protocol, never against
the Optimizer, so none of them imports the driver and the driver imports all of them."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from kernel_mcp.agent.providers.base import Turn
from kernel_mcp.agent.run.folder import RunFolder
from kernel_mcp.agent.run.records import Outcome
from kernel_mcp.agent.run.state import RunState
from kernel_mcp.history.stall import RunFacts
from kernel_mcp.problem import Problem
from kernel_mcp.stats import Ratio


class Ledger(Protocol):
    # the run's settings
    folder: RunFolder  # the journal (record), its lock, the evaluation cache
    problem: Problem  # loaded once per run
    agent: str  # "tune" or a provider spec
    islands: list[str]
    device: str
    budget_s: float  # per evaluation's timing
    shapes: str
    runner: Any  # a worker Runner, or None for this machine's
    tuning: set[str]  # incumbents being tuned now (by any island)
    open_session: Callable[..., Any]  # a model session (providers.open_session)
    say: Callable[[str], None]  # progress for people

    @property
    def state(self) -> RunState: ...

    @property
    def delta(self) -> float: ...

    # what an island sees of its own lineage
    def incumbent(self, island: str) -> str: ...
    def incumbent_source(self, island: str) -> str: ...
    def path_of(self, key: str) -> Path: ...
    def workspace(self, island: str) -> Path: ...
    def start_of_epoch(self) -> str: ...
    def brief(self) -> str: ...
    def facts(self, island: str = "0") -> RunFacts: ...
    def system_prompt(self) -> str: ...
    def out_of_budget(self) -> str: ...

    # the calls that change the run (each journaled by the Optimizer)
    def evaluate(self, source: str, role: str, island: str, idea: str = "") -> tuple[str, Outcome]: ...
    def propose(self, island: str, edit: str, idea: str) -> tuple[str, bool]: ...
    def promote(self, key: str, island: str, speedup: Ratio | list[float] | None, how: str = "") -> None: ...
    def record_turn(self, turn: Turn, island: str) -> None: ...
