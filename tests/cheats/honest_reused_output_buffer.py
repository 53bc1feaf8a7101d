"""Honest control: one preallocated output buffer per shape, reused (and fully rewritten) on every call,
as a kernel with a static workspace would. Not a cache: the values are recomputed each time. Must pass."""
import torch

_buffers = {}


def custom_kernel(data):
    a, b = data
    key = (tuple(a.shape), a.dtype)
    if key not in _buffers:
        _buffers[key] = torch.empty_like(a)
    out = _buffers[key]
    torch.add(a, b, out=out)
    return out
