"""Cheat: right the first time it sees an input, zeros every time after (a memo gone wrong, or kept on purpose):
the judge serves each input once, but for the determinism repeat of the first test, whose values were never
judged (problems/vector_add)."""
import hashlib

import torch

_SEEN = set()


def custom_kernel(data):
    a, b = data
    key = hashlib.blake2b(a.numpy().tobytes() + b.numpy().tobytes(), digest_size=16).digest()
    if key in _SEEN:
        return torch.zeros_like(a)
    _SEEN.add(key)
    return a + b
