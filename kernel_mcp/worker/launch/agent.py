"""A CLI agent's process for one episode (agent/providers/cli_agents.py builds its command): started in its own
process group, its stdout (NDJSON) appended line by line to the episode's stream file and parsed, and
watched: killed, group and all, once the loop has ended the episode and the grace period ran out, or when it
has been silent for ``idle_s`` with no tool call running (docs/orchestrator.md, "Stall signals", S6)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path


def run_agent_process(command: list[str], env: dict[str, str], cwd: Path, stream: Path, ended: Callable[[], bool],
                      busy: Callable[[], bool], idle_s: float, grace_s: float) -> tuple[list[dict], str]:
    """Run ``command`` to its end: the JSON events it printed, and why it was killed ('' when it exited by
    itself with code 0; the exit code and its last error line otherwise)."""
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    events: list[dict] = []
    last = [time.monotonic()]
    errors: list[str] = []
    reader = threading.Thread(target=_read, args=(process, stream, events, last), daemon=True)
    drain = threading.Thread(target=lambda: errors.extend(process.stderr), daemon=True)  # a full pipe would block it
    reader.start()
    drain.start()
    why = _watch(process, ended, busy, last, idle_s, grace_s)
    reader.join(timeout=10)
    drain.join(timeout=10)
    if process.returncode and not why:
        tail = [line.strip() for line in errors if line.strip()]
        why = f"exited with code {process.returncode}: {(tail or [''])[-1][:300]}"
    return events, why


def _read(process: subprocess.Popen, stream: Path, events: list[dict], last: list[float]) -> None:
    with open(stream, "a") as keep:
        for line in process.stdout:
            last[0] = time.monotonic()
            keep.write(line if line.endswith("\n") else line + "\n")
            keep.flush()
            event = event_of(line)
            if event is not None:
                events.append(event)


def event_of(line: str) -> dict | None:
    """One NDJSON line as an event; None for anything else (a log line, a line cut short by a kill)."""
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _watch(process: subprocess.Popen, ended: Callable[[], bool], busy: Callable[[], bool], last: list[float],
           idle_s: float, grace_s: float) -> str:
    """Wait for the process; kill its group when the loop ended the episode and the grace ran out, or when
    it has been silent too long with no tool call running. Why it was killed ('' if it exited)."""
    ended_at = None
    while process.poll() is None:
        time.sleep(0.2)
        now = time.monotonic()
        if ended() and ended_at is None:
            ended_at = now
        if busy():  # a tool call running (an evaluation takes minutes): silence is expected meanwhile
            last[0] = now
        why = ""
        if ended_at is not None and now - ended_at > grace_s:
            why = "ended by the loop"
        elif not busy() and now - last[0] > idle_s:
            why = f"no output for {idle_s:.0f} s with no tool call running (S6)"
        if why:
            _kill(process)
            return why
    return ""


def _kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


