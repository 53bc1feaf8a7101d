"""Several lineages at once (docs/orchestrator.md, "Islands"): each island has its own model sessions, its own
incumbent and its own snapshot history (so its stall signals are its own); they share the lessons (every
brief reads all of them) and the evaluation cache (a candidate two islands reach is evaluated once).
Code moves between islands only as a confirmed incumbent (migrate.py).
"""
from __future__ import annotations

import threading

from kernel_mcp.agent.loop.conversation import CliConversation, Conversation
from kernel_mcp.agent.loop.ledger import Ledger
from kernel_mcp.agent.providers.cli_agents import is_cli_agent


def run_islands(opt: Ledger) -> str:
    """Every island's conversation until each stops; why the run ended."""
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
