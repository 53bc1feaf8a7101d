"""The run's journal: an append-only file of records, each flushed and fsynced before the loop acts on it,
so a run killed at any instant (``kill -9``, a lost machine) resumes from exactly what it had decided.

One JSON object per line, numbered from 0 (``seq``), stamped with the wall clock (``at``, seconds since
the epoch) and a ``kind``, each kind a model of its own (records.py). Everything else a run knows (spend,
what was evaluated, incumbents, restarts) is derived from these records (``agent/run/state.py``); nothing is
kept only in memory.

A crash can leave the last line half written. Reading ignores a final line that is not complete JSON
ending in a newline, and opening the journal for appending cuts it off first, so the next record starts
on a line of its own. A damaged line anywhere else is not a crash's mark but corruption: it is refused.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from kernel_mcp.agent.run.records import Kind, Record, parse_record


class CorruptJournal(ValueError):
    """A journal line other than the last one is not a record: the file was damaged, not cut by a crash."""


class RunLog:
    """The journal of one run folder, read whole at open, appended record by record."""

    def __init__(self, path: Path):
        self.path = path
        self.records, good = _scan(path)
        _cut_torn_tail(path, good)
        self._handle = open(path, "ab")

    def append(self, kind: Kind, **fields: Any) -> Record:
        """Write one record and make it durable (flush + fsync) before returning it."""
        record = parse_record({"seq": len(self.records), "at": time.time(), "kind": kind, **fields}, writing=True)
        line = record.model_dump_json().encode() + b"\n"
        self._handle.write(line)
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self.records.append(record)
        return record

    def of_kind(self, *kinds: Kind) -> list[Record]:
        return [r for r in self.records if r.kind in kinds]

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read(path: Path) -> list[Record]:
    """The journal's records in order; a torn last line (a crash mid-write) is left out."""
    return _scan(path)[0]


def _scan(path: Path) -> tuple[list[Record], int]:
    """The records, and the byte length of the journal up to the end of the last whole one. Only the last
    line may be damaged (cut short, or, after a power loss, whole but with holes): that is a crash's mark."""
    if not path.exists():
        return [], 0
    data = path.read_bytes()
    lines = data.split(b"\n")
    records, good = [], 0
    for number, line in enumerate(lines[:-1]):
        try:
            record = parse_record(json.loads(line))
        except ValueError as exc:
            if number == len(lines) - 2 and not lines[-1]:
                break  # the last line: torn
            raise CorruptJournal(f"{path}: line {number + 1} is not a journal record ({exc})") from None
        if record.seq != number:
            raise CorruptJournal(f"{path}: line {number + 1} has seq {record.seq}; lines were lost or reordered")
        records.append(record)
        good += len(line) + 1
    return records, good


def _cut_torn_tail(path: Path, good: int) -> None:
    """Drop what follows the last whole record (one a crash cut short), so appends start on a clean line."""
    if path.exists() and path.stat().st_size > good:
        with open(path, "r+b") as handle:
            handle.truncate(good)
            handle.flush()
            os.fsync(handle.fileno())
