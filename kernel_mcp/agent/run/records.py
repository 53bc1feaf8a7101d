"""The journal's records, one model per kind. Every record carries ``seq`` (its line, from 0), ``at`` (wall
clock, seconds since the epoch) and ``kind``; the rest is its kind's fields below.

Writing is strict (``parse_record(..., writing=True)``): a field its kind does not declare is refused, so a
new field cannot be written and then silently lost. Reading ignores fields no kind declares any more, so a
run folder written by an earlier version still resumes.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class Record(BaseModel):
    """One line of the journal (the fields every kind has)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    seq: int
    at: float
    kind: str

    def model_post_init(self, _context: Any) -> None:
        if type(self) is Record:  # it would keep none of a kind's fields: parse_record picks the kind's model
            raise TypeError("a journal record is made by parse_record, as its kind's model")

    def fields(self) -> dict[str, Any]:
        """This record's own fields (what was written besides seq, at and kind), as a dict."""
        return self.model_dump(exclude={"seq", "at", "kind"})


class RunStarted(Record):
    kind: Literal["run_started"]  # the run's first record (its config is run.json)


class Resumed(Record):
    kind: Literal["resumed"]  # a process took the run over after the previous one ended or died
    pid: int | None = None
    last_alive: float | None = None  # the dead process's last heartbeat


class EpochStarted(Record):
    kind: Literal["epoch_started"]  # a hard restart began a new epoch: sessions from scratch, lessons only
    island: str = "0"


class EpisodeStarted(Record):
    kind: Literal["episode_started"]  # an agent session began on an island
    island: str = "0"
    rung: int = 0  # the ladder's rung it starts on


class Turn(Record):
    kind: Literal["turn"]  # one model turn or CLI episode: usage and cost
    island: str = "0"
    model: str = ""
    usage: dict[str, Any] = Field(default_factory=dict)  # token counts by kind
    cost_usd: float | None = None  # from the pricing table; None: an unpriced model (never counted as $0)
    reported_cost_usd: float | None = None  # what the provider said it cost, where it says


class Intent(Record):
    kind: Literal["intent"]  # an evaluation is about to run: written before any device time
    candidate_hash: str  # the evaluation cache's key
    role: str = "candidate"  # baseline | candidate | tuned
    island: str = "0"
    idea: str = ""
    parent: str | None = None  # the island's incumbent it was proposed against
    structure: str | None = None  # its syntax tree's hash (history/novelty.py)


class Outcome(BaseModel):
    """What one evaluation found, as the loop keeps it (the evaluation cache holds exactly this)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    verdict: str = ""
    passed: bool | None = None
    trusted: bool | None = None
    speedup: float | None = None  # over the reference
    speedup_ci: list[float] | None = None
    roofline_percent: float | None = None
    snapshot: str | None = None  # the snapshot id in the island's store
    feedback: str = ""  # what the model is told of it (agent/loop/feedback.py), kept so a resume re-runs nothing

    @property
    def believed(self) -> bool:
        """Passed with no integrity finding: its speedup can be compared."""
        return bool(self.passed and self.trusted)


class Done(Intent, Outcome):
    kind: Literal["done"]  # that evaluation's result (the intent's fields too), also in the evaluation cache

    def outcome(self) -> Outcome:
        return Outcome.model_validate(self.model_dump(include=set(Outcome.model_fields)))


class Promotion(Record):
    kind: Literal["promotion"]  # an island's incumbent changed (confirmed in a fresh process)
    island: str
    candidate_hash: str
    speedup: list[float] | None = None  # [value, lo, hi] over the previous incumbent, paired
    how: str = ""  # baseline | proposal | tune | tuned start | hard restart | migrated from island N
    previous: str | None = None


class Stall(Record):
    kind: Literal["stall"]  # stall signals fired, with the level of the restart ladder chosen
    island: str = "0"
    level: int
    signals: list[str] = Field(default_factory=list)


class Restart(Record):
    kind: Literal["restart"]  # an island restarted (L2 soft, L3 hard)
    island: str = "0"
    level: int
    why: str = ""


class Lesson(BaseModel):
    """What one idea tried taught (agent/loop/lessons.py renders them into a restart's brief)."""

    hypothesis: str  # what the idea was meant to do ("bigger tiles amortise the loads")
    change: str  # what was changed ("BLOCK_M 64 -> 128")
    verdict: Literal["worked", "no gain", "slower", "failed", "rejected"]
    speedup: float | None = None  # against the incumbent of the time
    speedup_ci: list[float] | None = None
    bottleneck: str = ""  # what the roofline or counters said before ("memory-bound at 41% of DRAM")
    failure: str = ""  # the verdict's words when it failed ("fail: mismatch")
    size_delta: int = 0  # lines added (negative: removed)
    evaluation: int = 0  # its number in the run, for recency
    insight: str = ""  # what it taught beyond its own result
    avenue: Literal["open", "closed", ""] = ""  # whether the direction is worth more tries


class LessonRecord(Record, Lesson):
    kind: Literal["lesson"]
    island: str = "0"
    candidate_hash: str | None = None  # the candidate judged (a kill before this record: judged on resume)

    def lesson(self) -> Lesson:
        return Lesson.model_validate(self.model_dump(include=set(Lesson.model_fields)))


class TuneStep(Record):
    """One measurement or comparison of the tune agent's search, as the tuner told it (agent/tune/driver.py:
    what, config, against, effort, ms or ratio, seconds); its fields are the tuner's own."""

    model_config = ConfigDict(frozen=True, extra="allow")
    kind: Literal["tune_step"]
    island: str = "0"
    start_hash: str = ""


class Tuned(Record):
    kind: Literal["tuned"]  # the tune agent searched an incumbent's parameters
    island: str = "0"
    start_hash: str
    best_hash: str | None = None
    params: Any = None  # the parameters searched
    start: dict[str, Any] | None = None  # the configuration searched from, and the winner's
    best: dict[str, Any] | None = None
    speedup: list[float] | None = None  # the winner over the start, [value, lo, hi]
    comparisons: Any = None
    measured: Any = None
    failed: Any = None
    note: str = ""


class Noise(Record):
    kind: Literal["noise"]  # the A/A run: the baseline timed against itself, and the run's margin
    ratio: list[float] | None = None  # None: it could not be timed
    delta: float


class HeldOut(Record):
    kind: Literal["held_out"]  # a faster candidate checked on shapes it was never shown, before its promotion
    island: str = "0"
    candidate_hash: str
    shapes: list[dict[str, Any]] = Field(default_factory=list)
    refused: str = ""  # why it was not promoted ("" when it passed, or the incumbent failed them too)
    incumbent: str | None = None  # the best it was checked beside (its failures there excuse the candidate's)
    seconds: float | None = None  # the check's wall time (both kernels on the secret shapes)


class Probe(Record):
    kind: Literal["probe"]  # a model called an instrument (agent/loop/instruments.py): written before it runs
    island: str = "0"
    tool: str
    key: str  # the evaluation cache's key for its answer ("probe-" + key)


class ProbeDone(Probe):
    kind: Literal["probe_done"]  # its answer was given (from the cache when charged is False)
    charged: bool = False  # it ran on the device: counted against the evaluation budget


class Hint(Record):
    kind: Literal["hint"]  # a person's hint to the search (agent/run/steer.py), heard by every island
    id: str  # its inbox file's name: a hint is journaled once whatever kills happen
    text: str


class Finished(Record):
    kind: Literal["finished"]  # the run ended
    reason: str = "finished"


KINDS = (RunStarted, Resumed, EpochStarted, EpisodeStarted, Turn, Intent, Done, Promotion, Stall, Restart,
         LessonRecord, TuneStep, Tuned, Noise, HeldOut, Probe, ProbeDone, Hint, Finished)
Kind = Literal["run_started", "resumed", "epoch_started", "episode_started", "turn", "intent", "done", "promotion",
               "stall", "restart", "lesson", "tune_step", "tuned", "noise", "held_out", "probe", "probe_done", "hint",
               "finished"]
AnyRecord = Annotated[Union[KINDS], Field(discriminator="kind")]  # noqa: UP007  (a tuple of classes)
_READ = TypeAdapter(AnyRecord)
_BY_KIND = {model.model_fields["kind"].annotation.__args__[0]: model for model in KINDS}


def parse_record(data: dict[str, Any], writing: bool = False) -> Record:
    """The record ``data`` is, as its kind's model; a kind no model has is refused (ValueError), and so is,
    when ``writing``, a field its kind does not declare."""
    if writing:
        model = _BY_KIND.get(data.get("kind"))
        unknown = set(data) - set(model.model_fields) if model and model.model_config.get("extra") != "allow" else set()
        if unknown:
            raise ValueError(f"a {data['kind']} record has no field {', '.join(sorted(unknown))}")
    return _READ.validate_python(data)
