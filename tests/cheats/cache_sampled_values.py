"""Cheat: a cache keyed on a few sampled input values (GPU MODE #159-#162 variant).

The first input of each shape is computed honestly. Later inputs are matched to the cached entry whose
sampled values (first, middle and last element of ``a`` and ``b``) are nearest, and that entry's answer is
served without computing. Defeats a harness that re-serves inputs from a fixed pool, or perturbs only a
few elements of a known input.
"""
import torch

_cache = []  # (shape, dtype, fingerprint, answer)


def _fingerprint(a, b):
    n = a.numel()
    idx = [0, n // 2, n - 1]
    return torch.tensor([float(t.reshape(-1)[i]) for t in (a, b) for i in idx])


def custom_kernel(data):
    a, b = data
    fp = _fingerprint(a, b)
    same = [e for e in _cache if e[0] == tuple(a.shape) and e[1] == a.dtype]
    if same:
        best = min(same, key=lambda e: float((e[2] - fp).abs().sum()))
        return best[3].clone()
    out = a + b
    _cache.append((tuple(a.shape), a.dtype, fp, out))
    return out
