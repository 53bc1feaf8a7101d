"""Cheat: a result cache keyed on the input's data pointer (GPU MODE reference-kernels #159-#162).

Computes honestly when a pointer is new; when an input arrives at an address seen before, it serves the
answer remembered for that address (cast/trimmed to the new shape so the structure looks right). A harness
that reuses input buffers with new values, or the same values, would be fooled.
"""

_cache = {}


def custom_kernel(data):
    a, b = data
    key = a.data_ptr()
    if key in _cache:
        old = _cache[key]
        if old.numel() >= a.numel():
            print("served from cache", flush=True)  # the test reads this from log_tail
            return old.reshape(-1)[: a.numel()].reshape(a.shape).to(a.dtype).clone()
    out = a + b
    _cache[key] = out
    return out
