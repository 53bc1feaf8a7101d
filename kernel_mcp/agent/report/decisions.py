"""Every timing decision a run made, read from its journal: the A/A run that set the noise margin, and each
of the tune agent's comparisons (a configuration against the search's current point, or its winner timed
again against the start), with its interval, the margin it had to clear, and whether it counted.

A run that ends with "best / baseline: 1x" owes its user the reason: these are what the summary, the
console and the report show, so a gain measured but under the margin (1.26x [1.11, 1.42] against a margin
of 1.26x on a noisy CPU) is seen, not only kept in journal.jsonl.
"""
from __future__ import annotations

from pydantic import BaseModel

from kernel_mcp.agent.decide import MIN_DELTA
from kernel_mcp.agent.run.records import Record
from kernel_mcp.agent.tune.params import change_between

# The records that are a step of the search, numbered alike here and in the report's plots: each evaluation,
# the A/A run, each tuner comparison or measurement.
STEP_KINDS = ("done", "noise", "tune_step")


class Decision(BaseModel):
    step: int  # 1-based position among the run's evaluations and timing decisions, in journal order
    at_s: float  # seconds since the run's first record
    island: str = "0"
    what: str  # noise (the A/A run) | compare | confirm | measure (a configuration timed alone)
    change: str  # "BLOCK 1024 -> 2048"; "baseline against itself" for the A/A run
    ratio: list[float] | None = None  # [value, 95% low, 95% high]: speedup over what it was compared with
    ms: float | None = None  # measure: the configuration's geometric-mean time alone
    needs: float | None = None  # the 95% low end a gain must exceed (1 + the run's margin); None for noise
    counted: bool = False  # a gain that cleared the margin (noise and measure never count)
    failed: bool = False  # the configuration failed its check or its timing was not trusted
    seconds: float | None = None  # how long it took


def decisions(records: list[Record]) -> list[Decision]:
    """The run's timing decisions in order, each with the margin in force when it was made (the A/A
    run's, or the 1% floor before it)."""
    start = records[0].at if records else 0.0
    delta, step, found = MIN_DELTA, 0, []
    for record in records:
        fields = record.fields()
        step += record.kind in STEP_KINDS
        if record.kind == "noise":
            delta = fields.get("delta", delta)
            found.append(Decision(step=step, at_s=record.at - start, what="noise", change="baseline against itself",
                                  ratio=fields.get("ratio"), failed=fields.get("ratio") is None))
        elif record.kind == "tune_step":
            found.append(_tune_step(fields, step, record.at - start, delta))
    return found


def _tune_step(fields: dict, step: int, at_s: float, delta: float) -> Decision:
    what, ratio = fields.get("what", "compare"), fields.get("ratio")
    config, against = fields.get("config") or {}, fields.get("against")
    if what == "measure":
        change = ", ".join(f"{k} {v}" for k, v in config.items())
        return Decision(step=step, at_s=at_s, island=str(fields.get("island", "0")), what=what, change=change,
                        ms=fields.get("ms"), failed=fields.get("ms") is None, seconds=fields.get("seconds"))
    needs = 1 + delta
    return Decision(step=step, at_s=at_s, island=str(fields.get("island", "0")), what=what,
                    change=change_between(against or {}, config), ratio=ratio, needs=needs,
                    counted=bool(ratio) and ratio[1] > needs, failed=ratio is None, seconds=fields.get("seconds"))


def verdict_of(decision: Decision) -> str:
    """'counted', 'under the margin', 'failed' or, for the A/A run, the margin it set."""
    if decision.what == "noise":
        return "sets the margin" if decision.ratio else "not timed: the 1% floor"
    if decision.failed:
        return "failed (check or timing)"
    if decision.what == "measure":
        return "timed alone"
    return "counted" if decision.counted else "under the margin"


def why_no_gain(found: list[Decision], promotions: int) -> str | None:
    """Why a run ended without a confirmed improvement, in a sentence; None when it has one."""
    if promotions:
        return None
    gains = [d for d in found if d.what in ("compare", "confirm") and d.ratio]
    if not gains:
        failed = sum(d.failed for d in found if d.what != "noise")
        return ("no configuration was compared" if not failed else
                f"every configuration compared failed its check or timing ({failed})")
    best = max(gains, key=lambda d: d.ratio[1])
    if best.counted:  # a step counted but its winner did not hold up when timed again
        return (f"the search's best step, {best.change} ({ratio_text(best.ratio)}), was not confirmed when timed "
                f"again against the start")
    return (f"no gain cleared the noise margin: the best comparison, {best.change}, measured "
            f"{ratio_text(best.ratio)}, and a gain counts only when its 95% lower end exceeds {best.needs:.3g}x")


def cells(decision: Decision) -> tuple[str, str, str]:
    """What the console's and the report's tables show of a decision: what was measured, the lower end it
    needed, and its result."""
    d = decision
    measured = ratio_text(d.ratio) if d.ratio else (f"{d.ms:.4g} ms" if d.ms else "-")
    return measured, f">{d.needs:.3g}x" if d.needs else "-", verdict_of(d)


def ratio_text(ratio: list[float] | None) -> str:
    return f"{ratio[0]:.3g}x [{ratio[1]:.3g}, {ratio[2]:.3g}]" if ratio else "-"
