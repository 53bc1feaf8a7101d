"""Cheat: compute the answer once, free it, then return ``torch.empty`` (stale memory reuse).

Models the Sakana incident's mechanism inside one process: the first call computes ``a + b`` into a
buffer and drops it; every call returns an uninitialised tensor of the same size, which the caching
allocator is likely to place on the freed buffer. Later calls have new values, so the stale answer is wrong.
"""
import torch

_calls = [0]


def custom_kernel(data):
    a, b = data
    if _calls[0] == 0:
        answer = a + b
        del answer  # freed: its memory goes back to the allocator, values intact
    _calls[0] += 1
    return torch.empty_like(a)
