"""A model agent's episodes on one island, and the restart ladder between them (kernel_mcp/history/stall.py):

* L1 nudge: the ladder's suggestion goes with the next tool results, in the same session;
* L2 soft restart: a fresh session on the best kernel of any island (migrate.py), with the lessons brief;
* L3 hard restart: a fresh session from the *baseline* with the brief and no code of this run (a new epoch:
  the baseline becomes the island's incumbent again; the run's best is kept in the journal);
* L4 stop (speed-of-light reached, budget spent, or restarts no longer gain).

A person's hints (``kernel-mcp steer``, agent/run/steer.py) reach every island: all of them in a session's
opening prompt, and a new one with the next tool results (a CLI agent: with the next proposal's answer).

A rung is given CLIMB_AFTER proposals before the ladder climbs past it; a promotion resets it. Every
model turn's usage and cost is journaled before the loop acts on it; each episode's opening prompt and its
turns are kept under RUN/episodes/.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from kernel_mcp.agent.edits import PROPOSE
from kernel_mcp.agent.loop.instruments import NAMES as INSTRUMENT_NAMES
from kernel_mcp.agent.loop.instruments import TOOLS as INSTRUMENTS
from kernel_mcp.agent.loop.instruments import ChargedRunner, probe
from kernel_mcp.agent.loop.ledger import Ledger
from kernel_mcp.agent.loop.migrate import adopt_best
from kernel_mcp.agent.loop.run_endpoint import RunEndpoint
from kernel_mcp.agent.providers.base import ToolResult, Turn
from kernel_mcp.agent.providers.cli_agents import CliAgent, lost_turns, prepare_workspace
from kernel_mcp.agent.run.records import Hint
from kernel_mcp.agent.run.steer import take_hints
from kernel_mcp.files import load_prompt
from kernel_mcp.tools.snapshot import status

MAX_TURNS = 24  # per session, before the loop takes stock (instrument calls take turns too)
IDLE_EPISODES = 2  # sessions in a row that end without proposing anything new (nothing, edits that do not
# apply, repeats of evaluated kernels): the agent has nothing more
CLIMB_AFTER = 3  # proposals a rung is given to work before the ladder climbs past it


@dataclass(frozen=True)
class Step:
    """What the ladder says after a proposal (``continue``, a ``nudge`` whose text goes with the next tool
    results, a restart, ``stop``), or that a session ``ended`` on its own (no more tool calls, MAX_TURNS)."""

    kind: Literal["continue", "nudge", "soft_restart", "hard_restart", "stop", "ended"]
    why: str = ""

    @property
    def ends_session(self) -> bool:
        return self.kind in ("soft_restart", "hard_restart", "stop")

    @property
    def level(self) -> int:
        """The restart's rung (L2 soft, L3 hard); a session that ended on its own restarts softly."""
        return 3 if self.kind == "hard_restart" else 2

    def __str__(self) -> str:  # as episode files and answers to a CLI agent show it
        prefix = {"soft_restart": "L2: ", "hard_restart": "L3: ", "stop": "stop: "}.get(self.kind, "")
        return "" if self.kind in ("continue", "ended") else prefix + self.why


class Conversation:
    def __init__(self, optimizer: Ledger, island: str = "0"):
        self.opt, self.island = optimizer, island
        self.rung, self.since_rung = 0, 0  # the ladder's rung since the last promotion; proposals since
        self.incumbent = optimizer.state.incumbents.get(island)
        self.stream = None  # the current episode's file under RUN/episodes/
        self.heard = 0  # hints this island has been told (state.hints[:heard])

    def run(self) -> str:
        opening, idle = self._opening(0, ""), 0
        while True:
            if self.opt.out_of_budget():
                return f"stop: {self.opt.out_of_budget()}"
            session = self._session(PROPOSE)
            self._start_episode(opening)
            outcome, proposed = self._episode(session, opening)
            idle = 0 if proposed else idle + 1
            if outcome.kind == "stop":
                return str(outcome)
            if idle >= IDLE_EPISODES:
                return "stop: the agent proposed nothing in its last sessions"
            why = outcome.why if outcome.ends_session else "The previous session ended without a new best."
            self._restart(outcome.level, why)
            opening = self._opening(outcome.level, why)

    def _session(self, propose):
        return self.opt.open_session(self.opt.agent, self.opt.system_prompt(), [propose, *INSTRUMENTS])

    def _restart(self, level: int, why: str) -> None:
        self.opt.folder.record("restart", island=self.island, level=level, why=why)
        if level == 3:  # from scratch: the (tuned) baseline is the island's incumbent again
            self.opt.folder.record("epoch_started", island=self.island)
            self.opt.promote(self.opt.start_of_epoch(), self.island, None, how="hard restart")
        else:
            adopt_best(self.opt, self.island)
        self.incumbent, self.rung, self.since_rung = self.opt.state.incumbents.get(self.island), 0, 0

    def _start_episode(self, opening: str) -> None:
        record = self.opt.folder.record("episode_started", island=self.island, rung=self.rung)
        self.stream = self.opt.folder.path / "episodes" / f"island-{self.island}-{record.seq}.jsonl"
        self._keep({"prompt": opening})

    def _opening(self, level: int, why: str) -> str:
        brief = self.opt.brief()
        brief = f"What this run has learnt so far:\n\n{brief}" if brief else ""
        source = self.opt.incumbent_source(self.island)  # after an L3 restart: the baseline, no code of the run
        self.heard = 0  # a new session hears every hint so far
        hints = self._news()
        if level == 0:
            return load_prompt("iterate").format(source=source, brief=brief) + hints
        return load_prompt("restart").format(why=why, brief=brief, source=source) + hints

    def _news(self) -> str:
        """Hints not yet told to this island's session, as text to go with the next message ("" if none)."""
        take_hints(self.opt.folder)
        new = self.opt.state.hints[self.heard:]
        self.heard += len(new)
        return "".join(f"\n\n{said(hint)}" for hint in new)

    def _keep(self, entry: dict) -> None:
        with open(self.stream, "a") as handle:
            handle.write(json.dumps(entry) + "\n")

    def _send(self, session, text: str | None = None, results: list[ToolResult] | None = None) -> Turn:
        turn = session.send(text, results)
        self.opt.record_turn(turn, self.island)
        self._keep({"sent": text, "results": [r.model_dump() for r in results or []], "turn": turn.model_dump()})
        return turn

    def _episode(self, session, opening: str) -> tuple[Step, bool]:
        """Turns until the model stops proposing, the ladder climbs to a restart or a stop, or MAX_TURNS.
        Returns how the session ended, and whether anything was proposed."""
        turn, proposed = self._send(session, opening), False
        for _ in range(MAX_TURNS):
            if not turn.tool_calls:
                return Step("ended"), proposed
            results, proposing = [], False
            for call in turn.tool_calls:
                text, error = self._answer(call.name, call.arguments)
                if call.name == "propose":
                    proposing = True
                    proposed = proposed or not error  # an edit that did not apply, or a repeat, proposes nothing new
                results.append(ToolResult(call_id=call.id, content=text, is_error=error))
            spent = self.opt.out_of_budget()
            if spent:
                return Step("stop", spent), proposed
            action = self._climb() if proposing else Step("continue")  # the ladder moves on proposals only
            if action.ends_session:
                return action, proposed
            text = (action.why if action.kind == "nudge" else "") + self._news()
            turn = self._send(session, text.strip() or None, results)
        return Step("ended"), proposed

    def _answer(self, name: str, arguments: dict) -> tuple[str, bool]:
        """One tool call: a proposal (the loop's decision), an instrument (information only), or neither."""
        if name == "propose":
            return self.opt.propose(self.island, str(arguments.get("edit", "")), str(arguments.get("idea", "")))
        if name in INSTRUMENT_NAMES:
            return probe(self.opt, self.island, name, arguments)
        return f"no tool {name!r}: use propose, or an instrument ({', '.join(sorted(INSTRUMENT_NAMES))})", True

    def _climb(self) -> Step:
        """The ladder after a proposal: keep going, a nudge (L1), a soft (L2) or hard (L3) restart, or stop."""
        if self.opt.state.incumbents.get(self.island) != self.incumbent:
            self.incumbent, self.rung, self.since_rung = self.opt.state.incumbents.get(self.island), 0, 0
        self.since_rung += 1
        facts = self.opt.facts(self.island).model_copy(update={"last_level": self.rung})
        ladder = status(self.opt.workspace(self.island), self.opt.problem.name, facts=facts)
        if ladder.level >= 4:
            return Step("stop", ladder.suggestion)
        if ladder.level <= self.rung or (self.rung and self.since_rung < CLIMB_AFTER):
            return Step("continue")
        self.rung, self.since_rung = ladder.level, 0
        self.opt.folder.record("stall", island=self.island, level=ladder.level,
                               signals=[x.code for x in ladder.signals])
        kind = {1: "nudge", 2: "soft_restart"}.get(ladder.level, "hard_restart")
        return Step(kind, ladder.suggestion)


class CliConversation(Conversation):
    """The same ladder for a whole CLI agent (agent/providers/cli_agents.py): an episode is one ``claude -p`` or
    ``codex exec`` process whose ``propose`` calls come back through the run's MCP endpoint into this loop.
    A nudge (L1) rides on the proposal's answer; a restart or a stop ends the process's session."""

    def run(self) -> str:
        for episode, turn in lost_turns(self.opt.folder.path / "episodes", self.island, CliAgent(self.opt.agent)):
            self.opt.record_turn(turn, self.island)  # a session cut off by a kill: its tokens were spent
            with open(episode, "a") as handle:
                handle.write(json.dumps({"turn": turn.model_dump(), "recovered": True}) + "\n")
        return super().run()

    def _session(self, propose):
        return CliAgent(self.opt.agent)

    def _episode(self, agent, opening: str) -> tuple[Step, bool]:
        self.ending: Step | None = None  # set by a proposal's ladder that ends the session
        self.proposing, self.proposed = 0, False
        workspace = self.opt.workspace(self.island)
        problem = prepare_workspace(workspace, self.opt.problem.path, self.opt.incumbent_source(self.island))
        prompt = opening + "\n\n" + load_prompt("cli").format(kernel="kernel.py", problem=problem)
        with RunEndpoint(workspace, ChargedRunner(self.opt, self.island), self._on_propose) as endpoint:
            events, killed = agent.run_episode(prompt, self.opt.system_prompt(), endpoint, workspace,
                                               self.stream.with_suffix(".stream.jsonl"),
                                               ended=lambda: self.ending is not None, busy=lambda: self.proposing > 0)
        turn = agent.turn_of(events)
        self.opt.record_turn(turn, self.island)
        self._keep({"turn": turn.model_dump(), "killed": killed, "session": agent.session_id})
        if self.ending is not None:
            return self.ending, self.proposed
        spent = self.opt.out_of_budget()
        return (Step("stop", spent) if spent else Step("ended")), self.proposed

    def _on_propose(self, edit: str, idea: str) -> str:
        """A ``propose`` call from the CLI agent (the endpoint's thread): judged by the loop, then the ladder."""
        if self.ending is not None:
            return f"This session is over ({self.ending}): answer in one line and call no more tools."
        self.proposing += 1
        try:
            text, error = self.opt.propose(self.island, edit, idea)
            self.proposed = self.proposed or not error
            spent = self.opt.out_of_budget()
            action = Step("stop", spent) if spent else self._climb()
        finally:
            self.proposing -= 1
        text += self._news()
        self._keep({"proposal": idea, "answer": text, "ladder": str(action)})
        if action.ends_session:
            self.ending = action
            return f"{text}\n\nThis session ends here ({action}): answer in one line and call no more tools."
        return f"{text}\n\n{action}" if action.kind == "nudge" else text


def said(hint: Hint) -> str:
    """A hint as the model reads it."""
    quoted = "\n".join(f"> {line}" for line in hint.text.splitlines())
    return f"A person steering this search says (follow it unless the measurements contradict it):\n{quoted}"
