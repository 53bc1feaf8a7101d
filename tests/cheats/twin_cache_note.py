"""Cheat, judged as two byte-identical files (tests/test_batch.py copies it to ``twin_writer.py`` and
``twin_reader.py``): the writer leaves each answer in its Triton cache folder, which kernel_mcp keeps for the
next check of the same candidate; the reader, served the same inputs in the same batch, serves those answers
if its cache holds them, else zeros. The kept builds were keyed by folder and bytes, so the twins shared them."""
import hashlib
import os
from pathlib import Path

import torch

CACHE = Path(os.environ.get("TRITON_CACHE_DIR", "/nonexistent"))
WRITER = Path(__file__).stem.endswith("writer")


def _note(a: torch.Tensor, b: torch.Tensor) -> Path:
    return CACHE / ("kmcp_" + hashlib.sha256(a.numpy().tobytes() + b.numpy().tobytes()).hexdigest()[:40] + ".pt")


def custom_kernel(data):
    a, b = data
    note = _note(a, b)
    if WRITER:
        out = a + b
        try:
            torch.save(out.clone(), note)
        except OSError:
            pass
        return out
    return torch.load(note) if note.exists() else torch.zeros_like(a)
