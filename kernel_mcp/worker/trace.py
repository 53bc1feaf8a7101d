"""Phase timestamps, to find where a call's seconds go (a developer's aid, off unless asked for).

``KERNEL_MCP_TRACE=FILE kernel-mcp check ...`` appends one line per phase, ``<unix time> <pid> <label>``
(and, in a process using a GPU, the device memory its allocator holds and its high-water mark), from
the calling process and from its judge (which is told the file in its boot message: its environment is
allowlisted). Candidate processes never write here; the judge marks what it sees of them. Lines from
several processes interleave by time: ``sort -n FILE`` gives the timeline.
"""
from __future__ import annotations

import os
import sys
import time

VAR = "KERNEL_MCP_TRACE"
_path: list[str] = [os.environ.get(VAR, "")]


def enable(path: str) -> None:
    _path[0] = path


def target() -> str:
    """The file marks go to ("" when tracing is off)."""
    return _path[0]


def mark(label: str) -> None:
    if not _path[0]:
        return
    try:
        with open(_path[0], "a", encoding="utf-8") as handle:
            handle.write(f"{time.time():.3f} {os.getpid()} {label}{_memory()}\n")
    except OSError:
        pass  # a trace is never worth failing a call for


def _memory() -> str:
    torch = sys.modules.get("torch")  # never imported for a trace
    if torch is None or not torch.cuda.is_initialized():
        return ""
    # reserved: what the caching allocator holds of the device (its cache and private pools too), which is what
    # runs out; allocated: what live tensors take
    return (f" [device memory {torch.cuda.memory_allocated() / 2**30:.2f} GiB, "
            f"peak {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB, "
            f"reserved {torch.cuda.memory_reserved() / 2**30:.2f} GiB, "
            f"peak reserved {torch.cuda.max_memory_reserved() / 2**30:.2f} GiB]")
