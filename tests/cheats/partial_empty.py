"""Cheat: compute only the first half of the output into ``torch.empty`` and leave the rest
uninitialised (whatever the allocator had there). Expected verdict: mismatch.
"""
import torch


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    half = a.numel() // 2
    out[:half] = a[:half] + b[:half]
    return out
