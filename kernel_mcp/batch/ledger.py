"""results.jsonl: one row per judged candidate, appended and flushed to disk as each ends, so a killed batch
resumes where it stopped (a row is the proof a candidate was judged; a torn last line is not)."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError


class Judged(BaseModel):
    """What a batch found of one candidate."""

    id: str
    level: int | None = None
    problem: str  # the problem's name (folder or KernelBench file)
    candidate: str  # its path
    verdict: str  # check's verdict: "pass", "fail: mismatch", ... ("error: usage" for a file we cannot judge)
    passed: bool = False
    cause: str = ""  # a failure's likeliest cause, measured
    kernelbench: bool | None = None  # KernelBench's own rule judged in the same run (its problems only)
    kernelbench_v01: bool | None = None  # KernelBench v0.1's looser rule (atol = rtol = 1e-2), the same run
    why: str = ""  # where our verdict and KernelBench's disagree, why (the check's own explanation)
    trusted: bool | None = None  # timed: no integrity finding, the speedups can be believed
    speedup: float | None = None  # over the reference as written (eager), timed in this run
    speedup_ci: list[float] | None = None  # 95%
    speedup_compiled: float | None = None  # over torch.compile of the reference, timed in the same run
    seconds: float = 0.0  # wall time of this candidate's judging
    phases: dict[str, float] = Field(default_factory=dict)  # where the check's seconds went (judging.PhaseClock)
    error: str = ""  # why it could not be judged (a usage error), for the person reading the table


class Ledger:
    """results.jsonl of a batch's folder, safe to append to from several threads."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "results.jsonl"
        self._lock = threading.Lock()
        _drop_torn_tail(self.path)
        self.rows: dict[str, Judged] = {row.id: row for row in read_rows(self.path)}

    def append(self, row: Judged) -> None:
        with self._lock:
            with open(self.path, "a") as handle:
                handle.write(row.model_dump_json() + "\n")
                handle.flush()
                os.fsync(handle.fileno())  # durable before the next candidate starts: a kill loses nothing judged
            self.rows[row.id] = row


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line a kill left half-written, so the next row starts on a line of its own."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def read_rows(path: Path) -> list[Judged]:
    """The rows of ``path`` (none if it does not exist); a line a kill tore is dropped, its candidate judged again."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(Judged.model_validate(json.loads(line)))
        except (ValueError, ValidationError):
            continue
    return rows
