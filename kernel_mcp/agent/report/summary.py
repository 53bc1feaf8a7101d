"""A run's outcome in numbers, read from its folder alone (journal and run.json; no GPU, no lock): what
``optimize`` prints at the end, ``--json`` emits, and the report starts from. Works on a run still in
progress or killed (it reads what was made durable)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel

from kernel_mcp.agent.report.decisions import Decision, decisions, why_no_gain
from kernel_mcp.agent.run.facts import confirmed_gains, gain_rank
from kernel_mcp.agent.run.folder import RunConfig
from kernel_mcp.agent.run.journal import read
from kernel_mcp.agent.run.records import Outcome, Record
from kernel_mcp.agent.run.state import RunState, derive


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
    gain_over_baseline: float | None  # the best's confirmed gain: the product of the paired ratios that
    gain_low: float | None  # promoted it along its lineage (value, and the product of their lower ends)
    spend_usd: float
    unpriced_turns: int
    turns: int
    tokens: dict[str, int]
    instrument_calls: int = 0  # a model's calls of compile, check, profile... (agent/loop/instruments.py)
    instrument_runs: int = 0  # of them, those that ran on the device (charged as evaluations)
    elapsed_s: float
    usd_per_improvement: float | None
    noise_margin: float | None = None  # delta from the A/A run: a gain counted only above 1 + delta
    decisions: list[Decision] = []  # the A/A run and every tuner comparison, with the margin each had to clear
    why_no_gain: str | None = None  # why no improvement was confirmed (None when one was)


def kernel_of(run: Path, state: RunState, key: str, island: str = "0", how: str = "") -> Kernel:
    done = state.evaluated.get(key) or Outcome()
    return Kernel(hash=key, file=str(run / "workspace" / "candidates" / f"{key}.py"), island=island,
                  speedup=done.speedup, speedup_ci=done.speedup_ci, roofline_percent=done.roofline_percent, how=how)


def best_kernel(run: Path, records: list[Record], state: RunState) -> tuple[Kernel | None, tuple[float, float] | None]:
    """Of every kernel the run ever promoted, the one with the highest confirmed lower bound; its gain."""
    gains = confirmed_gains(records)
    if not gains:
        return None, None
    key = max(gains, key=lambda k: gain_rank(gains[k]))
    first = next(r.fields() for r in records if r.kind == "promotion" and r.candidate_hash == key)
    how, island = first.get("how", ""), str(first["island"])
    return kernel_of(run, state, key, island, how), gains[key]


def summarize(run: str | Path) -> RunSummary:
    run = Path(run)
    config = RunConfig.model_validate_json((run / "run.json").read_text())
    records = read(run / "journal.jsonl")
    state = derive(records)
    done = list(state.evaluated.values())
    gains = [r for r in records if r.kind == "promotion" and r.how in ("proposal", "tune")]
    baseline = kernel_of(run, state, state.baseline_hash, how="baseline") if state.baseline_hash else None
    best, gain = best_kernel(run, records, state)
    timed = decisions(records)
    return RunSummary(
        run=str(run), problem=config.problem, agent=config.agent, islands=config.islands, finished=state.finished,
        evaluations=len(done), failed=sum(not d.passed for d in done),
        verdicts=dict(Counter(d.verdict or "?" for d in done)), promotions=len(gains),
        restarts=len(state.restarts), baseline=baseline, best=best, gain_over_baseline=gain[0] if gain else None,
        gain_low=gain[1] if gain else None,
        spend_usd=round(state.spend_usd, 6), unpriced_turns=state.unpriced_turns, turns=state.turns,
        tokens=state.tokens, instrument_calls=sum(r.kind == "probe_done" for r in records),
        instrument_runs=state.probes, elapsed_s=round(state.active_s, 1),
        usd_per_improvement=round(state.spend_usd / len(gains), 6) if gains and state.turns else None,
        noise_margin=state.delta, decisions=timed,
        why_no_gain=why_no_gain(timed, len(gains)))
