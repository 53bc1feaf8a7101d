"""Cheat: compute once per shape and dtype, then serve the cached answer (KernelBench "result reuse").

Passes a harness that checks each shape once, or checks with a fixed input pool.
"""
_cache = {}


def custom_kernel(data):
    a, b = data
    key = (tuple(a.shape), a.dtype)
    if key not in _cache:
        _cache[key] = a + b
    return _cache[key].clone()
