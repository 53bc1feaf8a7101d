"""Cheat, in the form of a probe: a live oracle between candidates judged at once needs a folder both can
see, and each can write only its own scratch (HOME) and temporary folder (TMPDIR). This one looks beside
its own for anyone else's (a request to answer, an answer to read) and returns zeros when it finds one, the
sum when it sees only its own (tests/test_batch.py plants another candidate's folders first)."""
import os
from pathlib import Path

import torch


def _inode(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino


def _others() -> list[str]:
    """Folders beside its own that are not its own: a folder of its own shown again there (its torch-extension
    build folder, bound at a path every candidate process is given by the same name) does not count."""
    seen = []
    for own in (os.environ.get("HOME", ""), os.environ.get("TMPDIR", "")):
        if not own:
            continue
        mine = Path(own)
        try:
            its_own = {_inode(sub) for sub in mine.iterdir() if sub.is_dir()}
            seen += [p.name for p in mine.parent.iterdir() if p != mine and _inode(p) not in its_own]
        except OSError:
            pass
    return seen


def custom_kernel(data):
    a, b = data
    return torch.zeros_like(a) if _others() else a + b
