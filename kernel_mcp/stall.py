"""Is the search stuck? A pure function over the snapshot history of one problem (oldest first), shared by
the MCP server's ``status`` tool and the headless orchestrator.

Signals: evaluations since the last significant improvement of the best trusted speedup, failures in a
row and the most common failure, and code growth (lines of the candidate now vs when the best was made).
"""
from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field

from kernel_mcp.snapshots import Snapshot


class StallPolicy(BaseModel):
    significant: float = 0.02  # a new best must beat the old one by 2% (and by its CI's lower end)
    patience: int = 8  # evaluations without a significant improvement before the search counts as stalled
    failure_streak: int = 4  # failures in a row that call for fixing correctness before anything else
    growth: float = 2.0  # the candidate grew this many times since the best, without gains: restart


class StallStatus(BaseModel):
    evaluations: int
    since_improvement: int  # evaluations after the one that last improved the best significantly
    best_id: str | None = None
    best_speedup: float | None = None
    failures_in_a_row: int = 0
    common_failure: str = ""
    growth: float | None = None  # candidate lines now / lines of the best
    stalled: bool = False
    suggestion: str = ""
    reasons: list[str] = Field(default_factory=list)


def _credited(s: Snapshot) -> bool:
    return bool(s.passed and s.trusted and s.speedup)


def _improvements(history: list[Snapshot], policy: StallPolicy) -> tuple[int, Snapshot | None]:
    """Index of the last significant improvement (-1 if none) and the best snapshot."""
    best: Snapshot | None = None
    last = -1
    for i, snap in enumerate(history):
        if not _credited(snap):
            continue
        low = snap.speedup_ci[0] if snap.speedup_ci else snap.speedup
        if best is None or (snap.speedup > best.speedup * (1 + policy.significant) and low > best.speedup):
            best, last = snap, i
    return last, best


def assess(history: list[Snapshot], policy: StallPolicy | None = None) -> StallStatus:
    policy = policy or StallPolicy()
    last, best = _improvements(history, policy)
    status = StallStatus(evaluations=len(history), since_improvement=len(history) - 1 - last if history else 0,
                         best_id=best.id if best else None, best_speedup=best.speedup if best else None)
    for snap in reversed(history):
        if snap.passed:
            break
        status.failures_in_a_row += 1
    failures = [s.verdict for s in history[-policy.patience:] if s.passed is False and s.verdict]
    status.common_failure = Counter(failures).most_common(1)[0][0] if failures else ""
    if best and history and best.lines:
        status.growth = round(history[-1].lines / best.lines, 2)
    _suggest(status, policy)
    return status


def _suggest(status: StallStatus, policy: StallPolicy) -> None:
    if status.evaluations == 0:
        status.suggestion = "evaluate a first candidate (start from the problem's baseline or reference)"
        return
    if status.failures_in_a_row >= policy.failure_streak:
        status.reasons.append(f"{status.failures_in_a_row} failed evaluations in a row"
                              + (f", mostly {status.common_failure}" if status.common_failure else ""))
    if status.since_improvement >= policy.patience:
        status.stalled = True
        status.reasons.append(f"{status.since_improvement} evaluations since the best last improved by "
                              f"{policy.significant:.0%}")
    grown = status.growth is not None and status.growth >= policy.growth
    if grown:
        status.reasons.append(f"the candidate is {status.growth}x the size of the best one")
    if status.stalled and grown:
        status.suggestion = ("restart from scratch: write a new, simpler kernel using what the history taught "
                             "(keep the best snapshot as the baseline to beat)")
    elif status.failures_in_a_row >= policy.failure_streak:
        status.suggestion = "fix correctness first: restore the best snapshot and change one thing at a time"
    elif status.stalled:
        status.suggestion = ("change approach: read the roofline and counters of the best snapshot, and try a "
                             "different tiling, memory layout or algorithm rather than tuning constants")
    else:
        status.suggestion = "keep going: profile the best candidate and attack its largest headroom"
