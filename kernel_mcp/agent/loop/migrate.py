"""Code moving between islands, only as a confirmed incumbent: when an island restarts softly (L2), it starts
from the best incumbent of any island, ranked by the lower end of its confirmed gain over the baseline (the
product of the paired, interleaved ratios that promoted it: run/facts.confirmed_gains, the ranking the report
uses), if that beats its own; a lucky fast reading does not win a parent's place."""
from __future__ import annotations

from kernel_mcp.agent.loop.ledger import Ledger
from kernel_mcp.agent.run.facts import confirmed_gains


def _confirmed(opt: Ledger) -> dict[str, tuple[float, float]]:
    return confirmed_gains(opt.folder.log.of_kind("promotion"))


def best_parent(opt: Ledger) -> tuple[str, str]:
    """(island, candidate hash) of the incumbent with the highest confirmed lower bound."""
    gains = _confirmed(opt)
    ranked = sorted(opt.state.incumbents.items(),
                    key=lambda item: (*reversed(gains.get(item[1], (0.0, 0.0))), -int(item[0])))
    island, key = ranked[-1]
    return island, key


def adopt_best(opt: Ledger, island: str) -> str:
    """Before a soft restart: the island takes the best incumbent of any island if it is better than its own
    (by confirmed lower bound). Returns the island it came from, or '' if it kept its own."""
    source, key = best_parent(opt)
    mine = opt.incumbent(island)
    gains = _confirmed(opt)
    if key == mine or gains.get(key, (0.0, 0.0))[1] <= gains.get(mine, (0.0, 0.0))[1]:
        return ""
    opt.promote(key, island, None, how=f"migrated from island {source}")
    return source
