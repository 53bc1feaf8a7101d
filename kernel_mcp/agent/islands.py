"""Several lineages at once (ORCHESTRATOR.md, "Islands"): each island has its own model sessions, its own
incumbent and its own snapshot history (so its stall signals are its own); they share the lessons (every
brief reads all of them) and the evaluation cache (a candidate two islands reach is evaluated once).

Code moves between islands only as a confirmed incumbent: when an island restarts softly (L2), it starts
from the best incumbent of any island, ranked by the lower end of its confirmed gain over the baseline (the
product of the paired, interleaved ratios that promoted it, summary.confirmed_gains: the ranking the report
uses), if that beats its own; a lucky fast reading does not win a parent's place.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernel_mcp.agent.loop import Optimizer


def _confirmed(opt: Optimizer) -> dict[str, tuple[float, float]]:
    from kernel_mcp.agent.summary import confirmed_gains
    return confirmed_gains(opt.folder.log.of_kind("promotion"))


def best_parent(opt: Optimizer) -> tuple[str, str]:
    """(island, candidate hash) of the incumbent with the highest confirmed lower bound."""
    gains = _confirmed(opt)
    ranked = sorted(opt.state.incumbents.items(),
                    key=lambda item: (*reversed(gains.get(item[1], (0.0, 0.0))), -int(item[0])))
    island, key = ranked[-1]
    return island, key


def adopt_best(opt: Optimizer, island: str) -> str:
    """Before a soft restart: the island takes the best incumbent of any island if it is better than its own
    (by confirmed lower bound). Returns the island it came from, or '' if it kept its own."""
    source, key = best_parent(opt)
    mine = opt.incumbent(island)
    gains = _confirmed(opt)
    if key == mine or gains.get(key, (0.0, 0.0))[1] <= gains.get(mine, (0.0, 0.0))[1]:
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
