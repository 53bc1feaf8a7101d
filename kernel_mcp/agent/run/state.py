"""What a run knows, derived from its journal alone (``derive``): a pure fold over the records, so a run
resumed after ``kill -9`` knows exactly what the killed process had made durable, and no more.

Conventions of the records it reads (each kind's fields are declared in ``agent/run/records.py``):

* ``turn``: ``usage`` (token counts by kind) and ``cost_usd`` (from the pricing table; None when the model
  is unpriced, which is never counted as $0 but as an unpriced turn);
* ``intent`` / ``done``: ``candidate_hash`` (the evaluation cache's key), ``island``, ``role`` ("baseline"
  or "candidate"); ``done`` adds the result's summary (``verdict``, ``passed``, ``speedup``...);
* ``promotion``: ``island``, ``candidate_hash``; ``restart``: ``island``, ``level``; ``finished``: ``reason``;
* ``tuned``: ``start_hash`` (the incumbent searched), ``best_hash``, ``best`` (its parameters);
* ``noise``: ``ratio`` (the baseline against itself; None if it could not be timed) and ``delta``, the
  margin every later comparison must clear (agent/decide.py).

Time spent (``active_s``) sums the gaps between records; before a ``resumed`` only up to the dead
process's last heartbeat (``last_alive``): the time a run lay dead is not charged to its budget, the time
it worked before dying is. ``lesson`` records name the candidate judged (``candidate_hash``): a
candidate evaluated but never judged (a kill in between) is judged on resume.
"""
from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, Field

from kernel_mcp.agent.run.records import Done, Hint, Record

TOKEN_KINDS = ("input", "output", "cache_read", "cache_write", "reasoning")


class RunState(BaseModel):
    spend_usd: float = 0.0  # priced turns only
    unpriced_turns: int = 0  # turns of a model missing from the pricing table: their cost is unknown
    turns: int = 0
    tokens: dict[str, int] = Field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0))
    evaluated: dict[str, Done] = Field(default_factory=dict)  # candidate hash -> its done record
    pending: dict[str, dict[str, Any]] = Field(default_factory=dict)  # hash -> intent without a done, in order
    baseline_hash: str | None = None  # set once the baseline's evaluation is done: never added again
    incumbents: dict[str, str] = Field(default_factory=dict)  # island -> candidate hash
    epoch: int = 0
    restarts: list[dict[str, Any]] = Field(default_factory=list)
    resumptions: int = 0
    tuned: dict[str, str] = Field(default_factory=dict)  # start hash -> the tune's winner (never tuned twice;
    # a winner maps to itself: the search ended there)
    judged: list[str] = Field(default_factory=list)  # candidates whose promotion decision was recorded
    active_s: float = 0.0  # seconds of records written while a process drove the run, summed over processes
    last_at: float | None = None  # the last record's wall clock
    finished: str | None = None  # why the run ended, once it has
    probes: int = 0  # instrument calls that ran on the device (agent/loop/instruments.py): charged as evaluations
    hints: list[Hint] = Field(default_factory=list)  # a person's hints, in the order journaled
    delta: float | None = None  # the significance margin from the run's A/A timing (None: not measured yet)

    def elapsed_s(self, now: float | None = None) -> float:
        """Active seconds over every process that drove the run, up to ``now`` (wall clock) while one drives
        it: the one elapsed time the live view, the budget and the summary all show."""
        now = time.time() if now is None else now
        return self.active_s + (max(0.0, now - self.last_at) if self.last_at is not None and not self.finished else 0.0)


def derive(records: list[Record]) -> RunState:
    """The state after ``records`` (a journal read in order)."""
    state = RunState()
    for record in records:
        apply(state, record)
    return state


def apply(state: RunState, record: Record) -> None:
    """Fold one more record into ``state`` (in place)."""
    kind, fields = record.kind, record.fields()
    if state.last_at is not None and kind not in ("resumed", "run_started"):
        state.active_s += max(0.0, record.at - state.last_at)
    elif kind == "resumed" and state.last_at is not None:  # up to the dead process's last heartbeat, not beyond
        state.active_s += max(0.0, min(record.at, fields.get("last_alive") or 0.0) - state.last_at)
    state.last_at = record.at
    if kind == "turn":
        state.turns += 1
        for name, count in (fields.get("usage") or {}).items():
            if name in state.tokens and isinstance(count, int):
                state.tokens[name] += count
        cost = fields.get("cost_usd")
        if cost is None:
            state.unpriced_turns += 1
        else:
            state.spend_usd += float(cost)
    elif kind == "intent":
        key = fields["candidate_hash"]
        if key not in state.evaluated:
            state.pending.setdefault(key, fields)
    elif kind == "done":
        key = fields["candidate_hash"]
        state.evaluated[key] = record
        state.pending.pop(key, None)
        if record.role == "baseline":
            state.baseline_hash = key
    elif kind == "promotion":
        state.incumbents[str(fields["island"])] = fields["candidate_hash"]
    elif kind == "restart":
        state.restarts.append(fields)
    elif kind == "noise":
        state.delta = fields["delta"]
    elif kind == "epoch_started":
        state.epoch += 1
    elif kind == "tuned":
        best = fields.get("best_hash") or fields["start_hash"]
        state.tuned[fields["start_hash"]] = best
        # The winner is where that search ended: it counts as tuned too. Without this, a kill between the
        # ``tuned`` record and the winner's promotion (mended on resume) left the promoted winner untuned in
        # the state, and the resumed run searched it all over again (so did island 1 given the tuned start).
        state.tuned.setdefault(best, best)
    elif kind == "lesson" and fields.get("candidate_hash"):
        state.judged.append(fields["candidate_hash"])
    elif kind == "resumed":
        state.resumptions += 1
    elif kind == "probe_done" and record.charged:
        state.probes += 1
    elif kind == "hint":
        state.hints.append(record)
    elif kind == "finished":
        state.finished = fields.get("reason", "finished")
