"""Honest counterpart of tests/cheats/unmasked_large_path.py: the same fast path for large inputs in whole
blocks of 1024, with the tail done apart (a masked last block). Exact at every size: it must pass profile's call
at a size near the benchmarks that no one listed."""
import torch

BLOCK = 1024


def custom_kernel(data):
    a, b = data
    if a.numel() < 100_000:
        return a + b
    out = torch.empty_like(a)
    whole = a.numel() // BLOCK * BLOCK
    out[:whole] = a[:whole] + b[:whole]
    out[whole:] = a[whole:] + b[whole:]
    return out
