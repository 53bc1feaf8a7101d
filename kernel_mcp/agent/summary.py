"""A run's outcome in numbers, read from its folder alone (journal and run.json; no GPU, no lock): what
``optimize`` prints at the end, ``--json`` emits, and the report starts from. Works on a run still in
progress or killed (it reads what was made durable)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel

from kernel_mcp.agent.islands import lower_bound
from kernel_mcp.agent.run_folder import RunConfig
from kernel_mcp.agent.runlog import Record, read
from kernel_mcp.agent.state import RunState, derive


class Kernel(BaseModel):
    hash: str
    file: str  # the candidate's source in the run folder
    island: str = "0"
    speedup: float | None = None  # over the problem's reference
    speedup_ci: list[float] | None = None
    roofline_percent: float | None = None  # of speed-of-light, where the device has ceilings
    how: str = ""  # baseline, tune, proposal, migrated...


class RunSummary(BaseModel):
    run: str
    problem: str
    agent: str
    islands: int
    finished: str | None  # why it ended; None while running or after a crash (resume it)
    evaluations: int
    failed: int  # evaluations whose verdict was not a pass
    verdicts: dict[str, int]
    promotions: int  # confirmed improvements (baseline and migrations not counted)
    restarts: int
    baseline: Kernel | None
    best: Kernel | None
    gain_over_baseline: float | None  # best / baseline speedup over the reference
    spend_usd: float
    unpriced_turns: int
    turns: int
    tokens: dict[str, int]
    elapsed_s: float
    usd_per_improvement: float | None


def kernel_of(run: Path, state: RunState, key: str, island: str = "0", how: str = "") -> Kernel:
    done = state.evaluated.get(key, {})
    return Kernel(hash=key, file=str(run / "workspace" / "candidates" / f"{key}.py"), island=island,
                  speedup=done.get("speedup"), speedup_ci=done.get("speedup_ci"),
                  roofline_percent=done.get("roofline_percent"), how=how)


def best_kernel(run: Path, records: list[Record], state: RunState) -> Kernel | None:
    """Of every incumbent the run ever had, the one with the highest lower confidence bound."""
    promoted = [r.model_extra for r in records if r.kind == "promotion"]
    if not promoted:
        return None
    top = max(promoted, key=lambda p: lower_bound(state.evaluated.get(p["candidate_hash"])))
    return kernel_of(run, state, top["candidate_hash"], str(top["island"]), top.get("how", ""))


def summarize(run: str | Path) -> RunSummary:
    run = Path(run)
    config = RunConfig.model_validate_json((run / "run.json").read_text())
    records = read(run / "journal.jsonl")
    state = derive(records)
    done = list(state.evaluated.values())
    gains = [r for r in records if r.kind == "promotion" and r.model_extra.get("how") in ("proposal", "tune")]
    baseline = kernel_of(run, state, state.baseline_hash, how="baseline") if state.baseline_hash else None
    best = best_kernel(run, records, state)
    gain = (best.speedup / baseline.speedup if best and baseline and best.speedup and baseline.speedup else None)
    return RunSummary(
        run=str(run), problem=config.problem, agent=config.agent, islands=config.islands, finished=state.finished,
        evaluations=len(done), failed=sum(not d.get("passed") for d in done),
        verdicts=dict(Counter(d.get("verdict", "?") for d in done)), promotions=len(gains),
        restarts=len(state.restarts), baseline=baseline, best=best, gain_over_baseline=gain,
        spend_usd=round(state.spend_usd, 6), unpriced_turns=state.unpriced_turns, turns=state.turns,
        tokens=state.tokens, elapsed_s=round(state.active_s, 1),
        usd_per_improvement=round(state.spend_usd / len(gains), 6) if gains and state.turns else None)
