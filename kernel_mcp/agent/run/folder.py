"""A run folder: everything an unattended search has decided and measured, kept so that ``kill -9`` at any
instant loses nothing and ``--resume`` carries on.

    RUN/run.json          the run's configuration, written once (exclusive create) and never changed
    RUN/journal.jsonl     append-only, fsynced records (agent/run/journal.py): the one source of truth
    RUN/state.json        derived from the journal (agent/run/state.py) after each record, replaced by rename
    RUN/lock              flock-ed by the one process driving the run; dies with it
    RUN/heartbeat.json    that process's pid and last sign of life (every HEARTBEAT_S), for ``status``
    RUN/cache/HASH.json   each evaluation's result by candidate hash (+ the tools' version): a resumed
                          run never re-runs an evaluation whose result was written
    RUN/episodes/         each agent episode's prompt and raw stream
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

import kernel_mcp
from kernel_mcp.agent.run.journal import RunLog
from kernel_mcp.agent.run.records import Kind, Record
from kernel_mcp.agent.run.state import RunState, apply, derive

HEARTBEAT_S = 5.0


class RunConfig(BaseModel):
    """What a run was asked to do; fixed at creation (a resumed run uses it, not new arguments)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    problem: str
    problem_hash: str  # of the problem's files, so a resumed run notices the problem changed under it
    agent: str
    islands: int = 1
    budget: dict[str, float] = {}  # e.g. {"seconds": 1800, "evaluations": 200, "usd": 5}
    until_sol: float | None = None
    device_kind: str | None = None  # "cpu" | "cuda" (ROCm included): a run's numbers come from one kind
    kernel_mcp_version: str = kernel_mcp.__version__


class RunBusy(RuntimeError):
    """Another live process drives this run."""


class RunFolder:
    """An open run folder, locked by this process (``create`` or ``resume``; close it, or use ``with``)."""

    def __init__(self, path: Path, config: RunConfig):
        self.path, self.config = path, config
        self._lock = open(path / "lock", "a+")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise RunBusy(f"{path} is driven by another process ({_heartbeat_text(path)})") from None
        self.log = RunLog(path / "journal.jsonl")
        self.lock = threading.Lock()  # islands record from their own threads: one record at a time
        self.state: RunState = derive(self.log.records)
        self.listeners: list = []  # called with (record, state) after each record (the live progress view)
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True, name="run heartbeat")
        # started by create/resume once their first record is durable: a heartbeat written before a resumed
        # process's 'resumed' record would, after a kill in between, pass for the dead process's last sign
        # of life, and the next resume would charge the time the run lay dead to its budget (state.py)

    @classmethod
    def create(cls, path: str | Path, config: RunConfig) -> RunFolder:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        for sub in ("cache", "episodes"):
            (path / sub).mkdir(exist_ok=True)
        tmp = path / f".run.json.{os.getpid()}.tmp"
        write_atomic(tmp, config.model_dump_json(indent=1).encode())
        try:  # a hard link appears whole or not at all, and never replaces: a crash leaves no half run.json
            os.link(tmp, path / "run.json")
        except FileExistsError:
            raise FileExistsError(f"{path} already holds a run: resume it (--resume) or choose a new folder") from None
        finally:
            tmp.unlink()
        folder = cls(path, config)
        folder.record("run_started")
        folder._beat.start()
        return folder

    @classmethod
    def resume(cls, path: str | Path) -> RunFolder:
        path = Path(path)
        try:
            config = RunConfig.model_validate_json((path / "run.json").read_text())
        except FileNotFoundError:
            raise FileNotFoundError(f"{path} holds no run (no run.json)") from None
        last_alive = _last_heartbeat(path)  # read before this process's own heartbeat replaces it
        folder = cls(path, config)
        if folder.state.finished is None:
            folder.record("resumed", pid=os.getpid(), last_alive=last_alive)
        folder._beat.start()  # only now (see __init__)
        return folder

    # --- the journal, and the state derived from it ----------------------------------------------------
    def record(self, kind: Kind, **fields: Any) -> Record:
        """Append a record (durable when this returns) and bring state.json up to date."""
        with self.lock:
            record = self.log.append(kind, **fields)
            apply(self.state, record)
            write_atomic(self.path / "state.json", self.state.model_dump_json(indent=1).encode())
            for listener in self.listeners:
                listener(record, self.state)
        return record

    # --- the evaluation cache --------------------------------------------------------------------------
    def cached(self, candidate_hash: str) -> dict[str, Any] | None:
        try:
            return json.loads((self.path / "cache" / f"{candidate_hash}.json").read_text())
        except (FileNotFoundError, ValueError):
            return None  # never written, or cut short by a crash: evaluate again

    def cache(self, candidate_hash: str, result: dict[str, Any]) -> None:
        write_atomic(self.path / "cache" / f"{candidate_hash}.json", json.dumps(result).encode())

    # --- life ------------------------------------------------------------------------------------------
    def _heartbeat(self) -> None:
        while True:
            write_atomic(self.path / "heartbeat.json",
                          json.dumps({"pid": os.getpid(), "at": time.time()}).encode(), durable=False)
            if self._stop.wait(HEARTBEAT_S):
                return

    def close(self) -> None:
        self._stop.set()
        if self._beat.ident is not None:  # started
            self._beat.join()
        self.log.close()
        self._lock.close()  # releases the flock

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def candidate_hash(source: bytes) -> str:
    """The evaluation cache's key: the candidate's bytes and the version of the tools that judge it."""
    return hashlib.sha256(kernel_mcp.__version__.encode() + b"\0" + source).hexdigest()[:24]


def write_atomic(path: Path, data: bytes, durable: bool = True) -> None:
    """Write ``path`` whole or not at all (a kill leaves the old file or the new one); fsynced if durable."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
    tmp.replace(path)


def write_once(path: Path, data: bytes, durable: bool = True) -> None:
    """A content-named file: written (atomically) unless it already holds ``data``; a file cut short by a
    kill is written again."""
    if not path.exists() or path.read_bytes() != data:
        write_atomic(path, data, durable)


def _last_heartbeat(path: Path) -> float | None:
    try:
        return float(json.loads((path / "heartbeat.json").read_text())["at"])
    except (OSError, ValueError, KeyError):
        return None


def _heartbeat_text(path: Path) -> str:
    try:
        beat = json.loads((path / "heartbeat.json").read_text())
        return f"pid {beat['pid']}, last heartbeat {time.time() - beat['at']:.0f} s ago"
    except (OSError, ValueError, KeyError):
        return "no heartbeat yet"
