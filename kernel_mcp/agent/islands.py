"""Several lineages at once (ORCHESTRATOR.md, "Islands"): each island has its own model sessions, its own
incumbent and its own snapshot history (so its stall signals are its own); they share the lessons (every
brief reads all of them) and the evaluation cache (a candidate two islands reach is evaluated once).

Code moves between islands only as a confirmed incumbent: when an island restarts softly (L2), it starts
from the best incumbent of any island, ranked by the lower end of its speedup's 95% interval against the
reference (a lucky fast reading does not win a parent's place), if that beats its own.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernel_mcp.agent.loop import Optimizer


def lower_bound(summary: dict | None) -> float:
    """The lower end of an evaluated candidate's speedup interval (0 when it has none: failed, untimed)."""
    if not summary or not summary.get("passed") or not summary.get("trusted"):
        return 0.0
    ci = summary.get("speedup_ci") or [summary.get("speedup") or 0.0]
    return float(ci[0] or 0.0)


def best_parent(opt: Optimizer) -> tuple[str, str]:
    """(island, candidate hash) of the incumbent with the highest lower confidence bound."""
    ranked = sorted(opt.state.incumbents.items(), key=lambda item: (lower_bound(opt.state.evaluated.get(item[1])),
                                                                     -int(item[0])))
    island, key = ranked[-1]
    return island, key


def adopt_best(opt: Optimizer, island: str) -> str:
    """Before a soft restart: the island takes the best incumbent of any island if it is better than its own
    (by lower confidence bound). Returns the island it came from, or '' if it kept its own."""
    source, key = best_parent(opt)
    mine = opt.incumbent(island)
    if key == mine or lower_bound(opt.state.evaluated.get(key)) <= lower_bound(opt.state.evaluated.get(mine)):
        return ""
    opt.promote(key, island, None, how=f"migrated from island {source}")
    return source


def run_islands(opt: Optimizer) -> str:
    """Every island's conversation until each stops; why the run ended."""
    from kernel_mcp.agent.cli_agents import is_cli_agent
    from kernel_mcp.agent.conversation import CliConversation, Conversation
    conversation = CliConversation if is_cli_agent(opt.agent) else Conversation
    if len(opt.islands) == 1:
        return conversation(opt, "0").run()
    reasons: dict[str, str] = {}
    failures: list[BaseException] = []

    def one(island: str) -> None:
        try:
            reasons[island] = conversation(opt, island).run()
        except BaseException as exc:  # noqa: BLE001  (re-raised in the caller's thread below)
            failures.append(exc)

    threads = [threading.Thread(target=one, args=(i,), name=f"island {i}", daemon=True) for i in opt.islands]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    spent = opt.out_of_budget()
    if spent:
        return f"stop: {spent}"
    return "; ".join(f"island {i}: {reasons[i]}" for i in opt.islands)
