"""A person's hints to a running (or stopped) search: ``kernel-mcp steer RUN "text"`` and the MCP tool
``steer`` drop a hint into RUN/hints/, the process driving the run journals it (a ``hint`` record) before
any island is told, and every island hears it on its next turn (agent/loop/conversation.py). A hint left
while no process drives the run is heard when it resumes; one journaled before a kill is never lost nor
heard twice (its file name is its id, and the record comes before the file is removed).
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from kernel_mcp.agent.run.folder import RunFolder, write_atomic
from kernel_mcp.errors import UsageError

HINT_CHARS = 4000  # a hint is a sentence or a paragraph, not a document
INBOX = "hints"
_TAKING = threading.Lock()  # islands' threads take hints; each is journaled once


def post_hint(run: str | Path, text: str) -> Path:
    """Leave ``text`` for the run at ``run``; the file it was written to. UsageError for a folder that is not
    a run, an empty hint or one over HINT_CHARS."""
    run = Path(run)
    if not (run / "run.json").is_file():
        raise UsageError(f"{run} is not a run folder (no run.json): give the folder `kernel-mcp optimize` made")
    text = text.strip()
    if not text:
        raise UsageError("the hint is empty: say what the search should try or avoid")
    if len(text) > HINT_CHARS:
        raise UsageError(f"the hint has {len(text)} characters; at most {HINT_CHARS}")
    inbox = run / INBOX
    inbox.mkdir(exist_ok=True)
    path = inbox / f"{time.time_ns()}-{os.getpid()}.txt"  # sorts in the order they were left
    write_atomic(path, text.encode())
    return path


def take_hints(folder: RunFolder) -> None:
    """Journal every hint waiting in the inbox (in the order left), then remove its file."""
    inbox = folder.path / INBOX
    if not inbox.is_dir():
        return
    with _TAKING:
        for path in sorted(inbox.glob("*.txt")):
            if not any(h.id == path.stem for h in folder.state.hints):
                folder.record("hint", id=path.stem, text=path.read_text(errors="replace")[:HINT_CHARS])
            path.unlink(missing_ok=True)
