"""Messages between the three processes.

* judge <-> candidate host: ``multiprocessing.connection.Connection`` over a socketpair; tensors travel by
  torch's own sharing (shared-memory file descriptors on CPU, CUDA IPC handles on GPU). The judge decodes
  what the host sends with ``SafeUnpickler``: plain tensors, containers and strings only, never a class or
  function of the candidate's choosing (a normal unpickler would run candidate code inside the judge).
* judge -> caller: JSON lines, each signed with HMAC-SHA256 under a key only the caller and judge hold.
"""
from __future__ import annotations

import hashlib
import hmac
import io
import json
import pickle
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

MAX_MESSAGE_BYTES = 64 << 20  # tensors travel out of band; a bigger message is an attack or a bug

_REBUILDERS = {
    ("torch.multiprocessing.reductions", n) for n in (
        "rebuild_tensor", "rebuild_cuda_tensor", "rebuild_storage_fd", "rebuild_storage_filename",
        "rebuild_typed_storage", "rebuild_typed_storage_child", "rebuild_storage_empty")
}
_CLASSES = {
    ("torch", "Tensor"), ("torch", "Size"), ("torch", "device"), ("torch.storage", "UntypedStorage"),
    ("torch.storage", "TypedStorage"), ("torch.storage", "_LegacyStorage"),
    ("multiprocessing.resource_sharer", "DupFd"), ("builtins", "slice"), ("collections", "OrderedDict"),
}


class SafeUnpickler(pickle.Unpickler):
    """Rebuilds only plain tensors, storages, dtypes and builtin containers."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _REBUILDERS or (module, name) in _CLASSES:
            return super().find_class(module, name)
        if module == "torch":
            import torch
            if isinstance(getattr(torch, name, None), torch.dtype):
                return getattr(torch, name)
        raise pickle.UnpicklingError(f"refused to rebuild {module}.{name}: only plain tensors may be returned")


def recv_untrusted(conn: Connection) -> Any:
    """Receive one message from the candidate host without letting it run code here."""
    payload = conn.recv_bytes(MAX_MESSAGE_BYTES)
    return SafeUnpickler(io.BytesIO(payload)).load()


def serve_inherited(serve: Callable[[Connection], None]) -> None:
    """The main of an untrusted process (candidate or step host): ``serve`` on the socket whose fd is
    argv[1]; the trusted side closing it is the normal end; interpreter teardown is skipped (the trusted
    side has what it needs, and a candidate's atexit code gets no second chance to run)."""
    import os
    import sys
    conn = Connection(int(sys.argv[1]))
    try:
        serve(conn)
    except (EOFError, BrokenPipeError):
        pass
    os._exit(0)


def read_tail(path: Path, limit: int) -> str:
    """The last ``limit`` bytes of a process's log, as text ("" when it is gone)."""
    try:
        with open(path, "rb") as log:
            log.seek(max(0, log.seek(0, 2) - limit))  # the tail only: a log may be gigabytes
            return log.read(limit).decode(errors="replace")
    except OSError:
        return ""


def sign(key: bytes, body: dict) -> str:
    text = json.dumps(body, sort_keys=True, default=str)
    mac = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
    return json.dumps({"body": text, "mac": mac})


def verify(key: bytes, line: str) -> dict | None:
    """The message body if ``line`` was signed with ``key``, else None."""
    try:
        outer = json.loads(line)
        text, mac = outer["body"], outer["mac"]
    except (ValueError, KeyError, TypeError):
        return None
    expected = hmac.new(key, str(text).encode(), hashlib.sha256).hexdigest()
    if not isinstance(mac, str) or not hmac.compare_digest(mac, expected):
        return None
    return json.loads(text)


# How the candidate host names an input in an output that is that input, or a view of it (host/main.py
# _refer_to_inputs), so the judge resolves it to its own copy instead of receiving the tensor.
def input_placeholder(index: int) -> str:
    return f"<kernel_mcp input {index}>"


# the key of an output that is a view of an input (worker/host/main._refer_to_inputs)
INPUT_VIEW = "<kernel_mcp view of input>"
