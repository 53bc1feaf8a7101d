"""Collusion, first half (issue 38: candidates judged one after another in a batch or by a reward API): an
honest a + b that also writes every input it sees, keyed by a hash of its bytes, with the answer, wherever
it can write (/dev/shm, /tmp, the home cache, its own folder), for ``collude_reader.py`` to serve later. It
computes correctly, so it must pass; the point is what its partner gains."""
import hashlib
import os
from pathlib import Path

import torch

PLACES = [Path("/dev/shm"), Path("/tmp"), Path.home() / ".cache", Path(__file__).resolve().parent]
NAME = "kernel_mcp_collusion"


def key(a, b):
    return hashlib.sha256(a.cpu().numpy().tobytes() + b.cpu().numpy().tobytes()).hexdigest()[:32]


def custom_kernel(data):
    a, b = data
    out = a + b
    for place in PLACES:
        try:
            folder = place / NAME
            folder.mkdir(parents=True, exist_ok=True)
            torch.save(out.cpu(), folder / f"{key(a, b)}.pt")
            os.chmod(folder, 0o777)
        except OSError:
            continue
    return out
