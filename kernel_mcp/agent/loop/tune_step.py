"""The tune agent inside the loop: an island's incumbent searched over its parameters (agent/tune), the
winner evaluated like any candidate and promoted on the tuner's own confirmation (its search found the
gain, a fresh interleaved run confirmed it). Each incumbent is tuned at most once per run; every
comparison is kept in the run folder's cache, so a tune cut short by ``kill -9`` replays what it measured
and times only the rest.
"""
from __future__ import annotations

from kernel_mcp.agent.loop.ledger import Ledger
from kernel_mcp.agent.loop.lessons import Lesson
from kernel_mcp.agent.tune.driver import Tuner
from kernel_mcp.agent.tune.params import change_between
from kernel_mcp.results import ProfileSettings


def tune_incumbent(opt: Ledger, island: str) -> str:
    """Tune the island's incumbent once; what changed ('BLOCK 1024 -> 8192, 3.1x') or '' if nothing did."""
    with opt.folder.lock:  # two islands holding the same kernel tune it once
        start = opt.incumbent(island)
        if start in opt.state.tuned or start in opt.tuning or opt.out_of_budget():
            return ""
        opt.tuning.add(start)
    tuner = Tuner(opt.problem, opt.path_of(start), opt.folder.path / "workspace" / "tune", device=opt.device,
                  settings=ProfileSettings(budget_s=opt.budget_s, shapes=opt.shapes), runner=opt.runner,
                  on_progress=lambda text: opt.say(f"island {island}: {text}"), memo=opt.folder,
                  stop=lambda: bool(opt.out_of_budget()),
                  on_step=lambda **step: opt.folder.record("tune_step", island=island, start_hash=start, **step))
    if not tuner.params:
        opt.folder.record("tuned", island=island, start_hash=start, best_hash=start, params={}, speedup=None,
                          note="no tunable parameters found in the source")
        return ""
    opt.say(f"island {island}: tuning {', '.join(p.name for p in tuner.params)}")
    result = tuner.run(delta=opt.delta)
    best_hash, change = start, ""
    if result.speedup:
        change = change_between(result.start, result.best)
        key, summary = opt.evaluate(open(result.best_file).read(), "tuned", island, idea=f"tune: {change}")
        if summary.believed:
            best_hash = key
    # the decision first, then the promotion: a kill in between is mended on resume (loop.finish_what_was_in_flight)
    opt.folder.record("tuned", island=island, start_hash=start, best_hash=best_hash, params=result.params,
                      start=result.start, best=result.best, speedup=result.speedup, comparisons=result.comparisons,
                      measured=result.measured, failed=result.failed)
    if best_hash == start:
        return ""
    promote_winner(opt, island, best_hash, result.speedup, change)
    return f"{change}, {result.speedup[0]:.3g}x"


def promote_winner(opt: Ledger, island: str, winner: str, speedup: list[float], change: str) -> None:
    """The tune's winner becomes the island's incumbent, with its lesson (also when a resume mends a kill
    that fell between the ``tuned`` record and the promotion)."""
    opt.promote(winner, island, speedup, how="tune")
    opt.folder.record("lesson", island=island, **Lesson(
        hypothesis="the kernel's parameters were not at their best", change=change, verdict="worked",
        speedup=speedup[0], speedup_ci=speedup[1:], evaluation=len(opt.state.evaluated)).model_dump())
