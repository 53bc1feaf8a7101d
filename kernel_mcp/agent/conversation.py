"""A model agent's episodes on one island, and the restart ladder between them (kernel_mcp/stall.py):

* L1 nudge: the ladder's suggestion goes with the next tool results, in the same session;
* L2 soft restart: a fresh session on the best kernel, with the lessons brief;
* L3 hard restart: a fresh session from the *baseline* with the brief and no code of this run (a new epoch);
* L4 stop (speed-of-light reached, budget spent, or restarts no longer gain).

A rung is given CLIMB_AFTER proposals before the ladder climbs past it; a promotion resets it. Every
model turn's usage and cost is journaled before the loop acts on it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kernel_mcp.agent.providers.base import ToolResult, Turn
from kernel_mcp.assets import load_prompt

if TYPE_CHECKING:
    from kernel_mcp.agent.loop import Optimizer

MAX_TURNS = 12  # per session, before the loop takes stock
IDLE_EPISODES = 2  # sessions in a row that end without proposing anything: the agent has nothing more
CLIMB_AFTER = 3  # proposals a rung is given to work before the ladder climbs past it


class Conversation:
    def __init__(self, optimizer: Optimizer):
        self.opt = optimizer
        self.rung, self.since_rung = 0, 0  # the ladder's rung since the last promotion; proposals since
        self.incumbent = optimizer.state.incumbents.get("0")

    def run(self) -> str:
        from kernel_mcp.agent.loop import PROPOSE
        opening, idle = self._opening(0, ""), 0
        while True:
            session = self.opt.open_session(self.opt.agent, self.opt.system_prompt(), [PROPOSE])
            self.opt.folder.record("episode_started", island="0", rung=self.rung)
            outcome, proposed = self._episode(session, opening)
            idle = 0 if proposed else idle + 1
            if outcome.startswith("stop"):
                return outcome
            if idle >= IDLE_EPISODES:
                return "stop: the agent proposed nothing in its last sessions"
            level = int(outcome[1]) if outcome.startswith("L") else 2  # a session that ended: a fresh one
            why = outcome.split(": ", 1)[1] if ": " in outcome else "The previous session ended without a new best."
            self.opt.folder.record("restart", island="0", level=level, why=why)
            if level == 3:
                self.opt.folder.record("epoch_started", island="0")
            opening = self._opening(level, why)

    def _opening(self, level: int, why: str) -> str:
        brief = self.opt.brief()
        brief = f"What this run has learnt so far:\n\n{brief}" if brief else ""
        if level == 0:
            return load_prompt("iterate").format(source=self.opt.incumbent_source(), brief=brief)
        source = self.opt.start_source if level == 3 else self.opt.incumbent_source()  # L3: no code of the run
        return load_prompt("restart").format(why=why, brief=brief, source=source)

    def _send(self, session, text: str | None = None, results: list[ToolResult] | None = None) -> Turn:
        turn = session.send(text, results)
        self.opt.record_turn(turn)
        return turn

    def _episode(self, session, opening: str) -> tuple[str, bool]:
        """Turns until the model stops proposing, the ladder climbs to a restart or a stop, or MAX_TURNS.
        Returns ('stop: why' | 'L2: why' | 'L3: why' | 'ended', whether anything was proposed)."""
        turn, proposed = self._send(session, opening), False
        for _ in range(MAX_TURNS):
            if not turn.tool_calls:
                return "ended", proposed
            results = []
            for call in turn.tool_calls:
                if call.name != "propose":
                    results.append(ToolResult(call_id=call.id, content=f"no tool {call.name!r}: use propose",
                                              is_error=True))
                    continue
                text, error = self.opt.propose(str(call.arguments.get("edit", "")),
                                               str(call.arguments.get("idea", "")))
                proposed = True
                results.append(ToolResult(call_id=call.id, content=text, is_error=error))
            spent = self.opt.out_of_budget()
            if spent:
                return f"stop: {spent}", proposed
            action = self._climb()
            if action.startswith(("stop", "L2", "L3")):
                return action, proposed
            turn = self._send(session, action or None, results)
        return "ended", proposed

    def _climb(self) -> str:
        """The ladder after a proposal: '' (keep going), a nudge's text (L1), 'L2: why', 'L3: why' or
        'stop: why'."""
        from kernel_mcp.tools.snapshot import status
        if self.opt.state.incumbents.get("0") != self.incumbent:
            self.incumbent, self.rung, self.since_rung = self.opt.state.incumbents.get("0"), 0, 0
        self.since_rung += 1
        facts = self.opt.facts().model_copy(update={"last_level": self.rung})
        ladder = status(self.opt.workspace, self.opt.problem.name, facts=facts)
        if ladder.level >= 4:
            return f"stop: {ladder.suggestion}"
        if ladder.level <= self.rung or (self.rung and self.since_rung < CLIMB_AFTER):
            return ""
        self.rung, self.since_rung = ladder.level, 0
        self.opt.folder.record("stall", island="0", level=ladder.level, signals=[x.code for x in ladder.signals])
        return ladder.suggestion if ladder.level == 1 else f"L{ladder.level}: {ladder.suggestion}"
