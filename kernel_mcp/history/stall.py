"""Is the search stuck, and what next? Pure functions over a problem's evaluations (its snapshots, oldest
first), shared by the MCP server's ``status`` tool and the headless orchestrator, so an IDE agent and the
orchestrator see one truth (docs/orchestrator.md, "Stall signals", "The restart ladder").

Signals, each computed from the history (and, for the ones only a run knows, from ``RunFacts``):

* S1 no progress: no significant improvement within a window of valid evaluations sized from the rate of
  improvement seen so far, W = clamp(ceil(ln 10 / rate), 6, 24) with rate = (gains + 1) / (valid + 2)
  (a window in which a search improving at that rate would have improved with 90% probability);
* S2 failure streak: 5 failed evaluations in a row, or the last 3 failing the same way;
* S3 code rot: the best candidate is >= 2.5x the baseline's lines while its speedup is < 1.1x;
* S4 mode collapse: at least half of the last 10 proposals duplicate an earlier one (``novelty``);
* S5 integrity: the last evaluation was caught cheating or its timing was not trusted;
* S6 liveness: the agent silent for 10 minutes while no tool runs (run facts);
* S7 success: the best candidate reached the requested share of speed-of-light (run facts);
* S8 budget: spent plus committed (evaluations in flight at their mean cost) reaches the cap (run facts).

An improvement is significant when the new speedup's 95% CI lower end beats the best by more than
``delta`` (1%, or twice the spread of an A/A run when the orchestrator measured one).

The ladder: L0 keep going; L1 nudge (re-profile, lessons in the next prompt); L2 soft restart (a fresh
session on the best candidate, with lessons); L3 hard restart from scratch (the baseline, lessons only, a
different strategy axis); L4 stop. Each new stall climbs one rung above the last one taken since the last
improvement; code rot, or a hard stall below 50% of speed-of-light, goes straight to L3.
"""
from __future__ import annotations

import math
from collections import Counter

from pydantic import BaseModel, Field

from kernel_mcp.history import novelty
from kernel_mcp.history.snapshots import Snapshot
from kernel_mcp.results import Verdict

LEVELS = {0: "keep going", 1: "nudge", 2: "soft restart", 3: "hard restart", 4: "stop"}
INTEGRITY_FAILURES = {"tampering", "alias", "mutation", "forged", "timer_inconsistent"}


class StallPolicy(BaseModel):
    delta: float = 0.01  # a significant gain: CI lower end above best x (1 + delta)
    window_min: int = 6
    window_max: int = 24
    failure_streak: int = 5
    same_failure_streak: int = 3
    rot_growth: float = 2.5  # S3: the best grew this much over the baseline...
    rot_speedup: float = 1.1  # ...while its speedup stays below this
    collapse_window: int = 10  # S4: of the last this many proposals...
    collapse_share: float = 0.5  # ...at least this share duplicates
    idle_s: float = 600.0  # S6
    low_sol: float = 0.5  # below this share of speed-of-light a hard stall goes straight to L3


class RunFacts(BaseModel):
    """What only a run knows (the orchestrator fills it; the IDE's status tool has none of it)."""

    sources: list[str] | None = None  # candidate sources aligned with the history (S4)
    idle_s: float | None = None  # seconds since the agent's last event while no tool runs
    until_sol: float | None = None  # requested share of speed-of-light
    spend_usd: float = 0.0
    committed_usd: float = 0.0  # evaluations and turns in flight at their mean cost
    budget_usd: float | None = None
    last_level: int = 0  # highest rung taken since the last improvement
    epochs_without_gain: int = 0  # hard restarts that ended without beating the global best


class Signal(BaseModel):
    code: str  # S1..S8
    detail: str


class StallStatus(BaseModel):
    evaluations: int
    valid: int = 0  # evaluations that passed with trusted timing
    since_improvement: int = 0  # valid evaluations after the last significant improvement
    window: int = 0  # S1's window
    best_id: str | None = None
    best_speedup: float | None = None
    failures_in_a_row: int = 0
    common_failure: str = ""
    growth: float | None = None  # lines of the best / lines of the first evaluation
    signals: list[Signal] = Field(default_factory=list)
    level: int = 0  # the ladder's rung: 0 keep going .. 4 stop
    action: str = "keep going"
    stalled: bool = False  # S1, S3 or S4
    suggestion: str = ""


def _valid(s: Snapshot) -> bool:
    return bool(s.passed and s.trusted and s.speedup)


def _failure_kind(verdict: str) -> str:
    """'fail: mismatch while timing' -> 'mismatch'."""
    kind = Verdict.read(verdict).reason or verdict
    return kind.replace(" while timing", "").replace(" on import", "").strip()


def progress(history: list[Snapshot], delta: float) -> tuple[Snapshot | None, int, int, int]:
    """The best valid snapshot, how many significant gains, valid evaluations, and valid evaluations
    since the last gain."""
    best, gains, valid, since = None, 0, 0, 0
    for snap in history:
        if not _valid(snap):
            continue
        valid += 1
        low = snap.speedup_ci[0] if snap.speedup_ci else snap.speedup
        if best is None or low > best.speedup * (1 + delta):
            best, gains, since = snap, gains + 1, 0
        else:
            since += 1
    return best, gains, valid, since


def window(gains: int, valid: int, policy: StallPolicy) -> int:
    rate = (gains + 1) / (valid + 2)
    return max(policy.window_min, min(policy.window_max, math.ceil(math.log(10) / rate)))


def assess(history: list[Snapshot], policy: StallPolicy | None = None, facts: RunFacts | None = None) -> StallStatus:
    policy, facts = policy or StallPolicy(), facts or RunFacts()
    best, gains, valid, since = progress(history, policy.delta)
    status = StallStatus(evaluations=len(history), valid=valid, since_improvement=since,
                         window=window(gains, valid, policy), best_id=best.id if best else None,
                         best_speedup=best.speedup if best else None)
    for snap in reversed(history):
        if snap.passed:
            break
        status.failures_in_a_row += 1
    failures = [s.verdict for s in history[-status.window:] if s.passed is False and s.verdict]
    status.common_failure = Counter(failures).most_common(1)[0][0] if failures else ""
    if best and history and history[0].lines and best.lines:
        status.growth = round(best.lines / history[0].lines, 2)
    status.signals = signals(history, status, best, policy, facts)
    codes = {s.code for s in status.signals}
    status.stalled = bool(codes & {"S1", "S3", "S4"})
    status.level = ladder(codes, best, policy, facts)
    status.action = LEVELS[status.level]
    status.suggestion = _suggestion(status, codes)
    return status


def signals(history: list[Snapshot], status: StallStatus, best: Snapshot | None, policy: StallPolicy,
            facts: RunFacts) -> list[Signal]:
    found = []
    if status.since_improvement >= status.window:
        found.append(Signal(code="S1", detail=f"{status.since_improvement} valid evaluations without a gain of "
                                              f"{policy.delta:.0%} (window {status.window})"))
    recent = [_failure_kind(s.verdict) for s in history[-policy.same_failure_streak:]]
    same = status.failures_in_a_row >= policy.same_failure_streak and len(set(recent)) == 1
    if status.failures_in_a_row >= policy.failure_streak or same:
        found.append(Signal(code="S2", detail=f"{status.failures_in_a_row} failed in a row"
                                              + (f", the last ones all {recent[0]}" if same else "")))
    if best and status.growth and status.growth >= policy.rot_growth and best.speedup < policy.rot_speedup:
        found.append(Signal(code="S3", detail=f"the best is {status.growth}x the baseline's size for "
                                              f"{best.speedup:.2f}x"))
    if facts.sources:
        tail = range(max(1, len(facts.sources) - policy.collapse_window), len(facts.sources))
        dupes = sum(novelty.duplicate_of(facts.sources[i], facts.sources[:i]) is not None for i in tail)
        if tail and dupes >= policy.collapse_share * policy.collapse_window:
            found.append(Signal(code="S4", detail=f"{dupes} of the last {len(tail)} proposals repeat earlier ones"))
    last = history[-1] if history else None
    if last and (_failure_kind(last.verdict) in INTEGRITY_FAILURES or (last.passed and last.trusted is False)):
        found.append(Signal(code="S5", detail=f"the last evaluation: {history[-1].verdict}"))
    if facts.idle_s is not None and facts.idle_s >= policy.idle_s:
        found.append(Signal(code="S6", detail=f"the agent silent for {facts.idle_s:.0f} s"))
    sol = _sol(best)
    if facts.until_sol and sol is not None and sol >= facts.until_sol:
        found.append(Signal(code="S7", detail=f"the best at {sol:.0%} of speed-of-light (asked {facts.until_sol:.0%})"))
    if facts.budget_usd is not None and facts.spend_usd + facts.committed_usd >= facts.budget_usd:
        found.append(Signal(code="S8", detail=f"${facts.spend_usd + facts.committed_usd:.2f} spent or committed "
                                              f"of ${facts.budget_usd:.2f}"))
    return found


def _sol(best: Snapshot | None) -> float | None:
    return best.roofline_percent / 100 if best and best.roofline_percent is not None else None


def ladder(codes: set[str], best: Snapshot | None, policy: StallPolicy, facts: RunFacts) -> int:
    """The rung to take now (see the module's docstring)."""
    if codes & {"S7", "S8"} or facts.epochs_without_gain >= 2:
        return 4
    if "S3" in codes:
        return 3
    hard = bool(codes & {"S1", "S4"})
    sol = _sol(best)
    if hard and sol is not None and sol < policy.low_sol:
        return 3
    if not (hard or codes & {"S2", "S6"}):
        return 0
    rung = min(3, facts.last_level + 1)  # each new stall one rung above the last taken since a gain
    return max(rung, 2) if "S6" in codes else rung  # a silent agent's session is not worth nudging


def _suggestion(status: StallStatus, codes: set[str]) -> str:
    if status.evaluations == 0:
        return "evaluate a first candidate (start from the problem's baseline or reference)"
    integrity = " The last candidate was rejected for integrity: do not build on it." if "S5" in codes else ""
    by_level = {
        0: "keep going: profile the best candidate and attack its largest headroom",
        1: ("fix correctness first: restore the best snapshot and change one thing at a time" if codes == {"S2"}
            or codes == {"S2", "S5"} else
            "change approach: read the roofline and counters of the best snapshot, and try a different tiling, "
            "memory layout or algorithm rather than tuning constants"),
        2: "start a fresh session from the best snapshot, with a summary of what was tried and what it gave",
        3: ("restart from scratch: write a new, simpler kernel from the baseline using what the history taught, "
            "on a different axis (algorithm, language, decomposition); keep the best snapshot as the one to beat"),
        4: "stop: " + ("the target share of speed-of-light is reached" if "S7" in codes else
                       "the budget is spent" if "S8" in codes else "restarts from scratch no longer gain"),
    }
    return by_level[status.level] + integrity
