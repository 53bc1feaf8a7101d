"""Jobs: a long instrument call run in a thread of its own and polled, instead of one tool call held open.

Claude Code and Codex drop tool calls that last beyond ~60 s, and evaluate, profile and roofline can take
minutes. A job turns one such call into start -> id, then wait(id, a bounded time) -> progress or result.
Plain Python (no ``mcp``): the server's *_start and job_wait tools are a thin layer over ``JobBoard``.
"""
from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from kernel_mcp.errors import UsageError, shown

JobState = Literal["running", "done", "failed"]
Progress = Callable[..., None]  # progress(message, done=0, total=0), as the instruments call it
Work = Callable[[Progress], BaseModel | dict[str, Any]]  # one blocking instrument call, ready to run

KEEP_FINISHED = 100  # finished jobs remembered, newest first ...
KEEP_FINISHED_S = 3600.0  # ... and for at most this long after they finished
MAX_RUNNING = 8  # a model that starts jobs in a loop gets an error instead of a machine full of judges

log = logging.getLogger(__name__)


class JobProgress(BaseModel):
    """The latest progress the instrument reported."""

    message: str = ""
    done: int = 0
    total: int = 0  # 0: the instrument did not say how many steps there are


class Job(BaseModel):
    """One long call as its caller sees it: wait again while ``state`` is "running"."""

    id: str
    tool: str  # the one-call tool this job runs, e.g. "evaluate"
    state: JobState
    progress: JobProgress
    elapsed_s: float  # since the start; frozen once the job ends
    result: dict[str, Any] | None = None  # state "done": what the one-call tool returns
    error: str | None = None  # state "failed": what to fix (misuse) or what broke (type: message)


@dataclass
class _Record:
    """A job's mutable state; the fields after ``ended`` are read and written under the board's lock."""

    id: str
    tool: str
    started: float  # time.monotonic()
    ended: threading.Event = field(default_factory=threading.Event)
    finished_at: float | None = None
    progress: JobProgress = field(default_factory=JobProgress)
    result: dict[str, Any] | None = None
    error: str | None = None

    def view(self, now: float) -> Job:
        state: JobState = "running" if self.finished_at is None else "failed" if self.error is not None else "done"
        until = now if self.finished_at is None else self.finished_at
        return Job(id=self.id, tool=self.tool, state=state, progress=self.progress.model_copy(),
                   elapsed_s=round(until - self.started, 2), result=self.result, error=self.error)


class JobBoard:
    """Thread-safe: jobs are started, polled and waited on from any thread. Running jobs are always kept;
    finished ones for ``keep_s`` seconds, at most ``keep`` of them (the oldest go first)."""

    def __init__(self, keep: int = KEEP_FINISHED, keep_s: float = KEEP_FINISHED_S, max_running: int = MAX_RUNNING):
        self.keep, self.keep_s, self.max_running = keep, keep_s, max_running
        self._lock = threading.Lock()
        self._records: dict[str, _Record] = {}

    def start(self, tool: str, work: Work) -> Job:
        """Run ``work`` in a new thread and return at once. The caller validated the arguments already, so
        misuse that can be caught before any work is a refusal of the call, not a failed job."""
        with self._lock:
            self._forget_old(time.monotonic())
            running = sum(r.finished_at is None for r in self._records.values())
            if running >= self.max_running:
                raise UsageError(f"{running} jobs are already running on this server; wait for one to end "
                                 "(job_wait) before starting another")
            record = _Record(id=self._new_id(), tool=tool, started=time.monotonic())
            self._records[record.id] = record
        threading.Thread(target=self._run, args=(record, work), name=f"job-{tool}-{record.id}", daemon=True).start()
        with self._lock:
            return record.view(time.monotonic())

    def get(self, job_id: str) -> Job:
        with self._lock:
            return self._record(job_id).view(time.monotonic())

    def wait(self, job_id: str, wait_s: float) -> Job:
        """The job as soon as it ends, or as it stands after ``wait_s`` seconds, whichever comes first."""
        with self._lock:
            record = self._record(job_id)
        record.ended.wait(max(wait_s, 0.0))
        with self._lock:  # the record in hand: forgetting it meanwhile would not lose this answer
            return record.view(time.monotonic())

    def _run(self, record: _Record, work: Work) -> None:
        def progress(message: str, done: int = 0, total: int = 0) -> None:
            with self._lock:
                record.progress = JobProgress(message=message, done=done, total=total)

        result, error = None, None
        try:
            answer = work(progress)
            result = answer.model_dump(mode="json") if isinstance(answer, BaseModel) else dict(answer)
        except UsageError as exc:  # misuse found only while working (a malformed problem): the model can act
            error = str(exc)
        except Exception as exc:  # a bug or a broken machine: say what it was; the log keeps the traceback
            log.exception("job %s (%s) failed", record.id, record.tool)
            error = f"{type(exc).__name__}: {exc}"
        with self._lock:
            record.result, record.error, record.finished_at = result, error, time.monotonic()
        record.ended.set()

    def _record(self, job_id: str) -> _Record:
        """The job's record (the lock held); finished jobs past their keeping are forgotten first."""
        self._forget_old(time.monotonic())
        record = self._records.get(job_id)
        if record is None:
            raise UsageError(f"no job {shown(job_id)} on this server: the id is wrong, or the job ended long enough "
                             f"ago to be forgotten (the last {self.keep} finished jobs are kept, for "
                             f"{self.keep_s / 60:g} min); start it again")
        return record

    def _forget_old(self, now: float) -> None:
        finished = sorted((r for r in self._records.values() if r.finished_at is not None),
                          key=lambda r: r.finished_at, reverse=True)
        for index, record in enumerate(finished):
            if index >= self.keep or now - record.finished_at > self.keep_s:
                del self._records[record.id]

    def _new_id(self) -> str:
        while True:
            job_id = secrets.token_hex(6)  # unguessable, so one client cannot stumble on another's job
            if job_id not in self._records:
                return job_id
