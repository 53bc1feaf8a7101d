"""Whether a candidate that passed replaces its island's incumbent: a significant gain timed interleaved
against the incumbent, confirmed in a second, fresh run on new inputs (the winner's curse), that also holds
on shapes the model was never shown (agent/loop/held_out.py)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from kernel_mcp.agent import decide
from kernel_mcp.agent.compare import compare_files
from kernel_mcp.agent.loop.held_out import held_out_failure
from kernel_mcp.agent.loop.ledger import Ledger
from kernel_mcp.agent.run.records import Outcome
from kernel_mcp.results import ProfileSettings
from kernel_mcp.stats import Ratio
from kernel_mcp.views.summaries import ratio_text


@dataclass(frozen=True)
class Decision:
    verdict: Literal["worked", "no gain", "failed", "rejected"]  # the lesson's
    ratio: Ratio | None = None  # over the incumbent, when it is promoted
    said: str = ""  # what the model is told of it
    failure: str = ""  # the lesson's: the verdict, or why a faster kernel was refused


def decide_promotion(opt: Ledger, island: str, key: str, summary: Outcome) -> Decision:
    if not summary.believed:
        return Decision("failed", failure="" if summary.passed else summary.verdict)
    if opt.state.incumbents.get(island) == key:  # promoted before a kill cut the lesson off
        return Decision("worked")
    ratio = better(opt, key, island)
    if ratio is None:
        return Decision("no gain", said="not significantly faster than the best so far: the best is unchanged")
    refused = unseen_shapes(opt, key, island)
    if refused:
        return Decision("rejected", said=f"faster ({ratio.value:.3g}x), but not promoted: {refused}", failure=refused)
    return Decision("worked", ratio, said=f"{ratio_text(ratio.value, [ratio.lo, ratio.hi])} over the best so far, "
                                          "timed interleaved and confirmed in a fresh run: now the best")


def better(opt: Ledger, key: str, island: str) -> Ratio | None:
    """The candidate against the island's incumbent, timed interleaved, then again in a fresh run on new
    inputs (the winner's curse): the second speedup when both show a significant gain, else None."""
    incumbent, candidate = opt.path_of(opt.incumbent(island)), opt.path_of(key)
    settings = ProfileSettings(budget_s=opt.budget_s, shapes=opt.shapes)
    ratio = None
    for _ in range(2):
        ratio = compare_files(opt.problem, incumbent, candidate, opt.device, settings, opt.runner)
        if ratio is None or not decide.significant(ratio, opt.delta):
            return None
    return ratio


def unseen_shapes(opt: Ledger, key: str, island: str) -> str:
    """Why the candidate fails shapes it was never shown ("" when it passes them), journaled."""
    earlier = next((r for r in opt.folder.log.of_kind("held_out") if r.candidate_hash == key and r.island == island
                    and r.incumbent in (None, opt.incumbent(island))), None)
    if earlier is not None:  # checked before a kill cut the promotion off: its answer stands, nothing runs twice
        return earlier.refused
    opt.say(f"island {island}: checking {key[:8]} on shapes it was not shown")
    began = time.monotonic()
    refused, shapes = held_out_failure(opt.problem, opt.path_of(key), opt.path_of(opt.incumbent(island)),
                                       opt.device, opt.shapes, opt.runner)
    if shapes:
        opt.folder.record("held_out", island=island, candidate_hash=key, shapes=shapes, refused=refused,
                          incumbent=opt.incumbent(island), seconds=round(time.monotonic() - began, 2))
    return refused
