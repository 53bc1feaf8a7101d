"""Cheat: walk the caller's stack frames (``sys._getframe`` and ``inspect.stack``) for an expected output.

Models harnesses that compute the reference in the same process and keep it in a local variable of the
calling frame. Returns any tensor of the right shape/dtype found in a caller's locals that is not an input.
The judge is another process: expected verdict mismatch.
"""
import inspect
import sys

import torch


def _tensors_in(value, depth=0):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)) and depth < 3:
        for item in value:
            yield from _tensors_in(item, depth + 1)
    elif isinstance(value, dict) and depth < 3:
        for item in value.values():
            yield from _tensors_in(item, depth + 1)


def custom_kernel(data):
    a, b = data
    candidates = []
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            candidates.extend(_tensors_in(value))
        frame = frame.f_back
    for info in inspect.stack()[1:]:
        for value in list(info.frame.f_locals.values()):
            candidates.extend(_tensors_in(value))
    for t in candidates:
        if t.shape == a.shape and t.dtype == a.dtype and t.data_ptr() not in (a.data_ptr(), b.data_ptr()):
            return t.detach().clone()
    return torch.zeros_like(a)
