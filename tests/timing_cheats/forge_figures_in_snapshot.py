"""Like lazy_subclass, but uses the snapshot callback only to rewrite the figures dict of
candidate_host._time, which is complete by then (op_ms, patched): the reported op time is whatever it
wants, bounded only by the judge's wall clock from above. Nothing is patched (CPU+GPU cheat)."""
import sys

import torch


def _forge():
    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name != "_time":
        frame = frame.f_back
    if frame is not None:
        figures = frame.f_locals["figures"]  # the very dict that will be sent
        figures["op_ms"] = figures["op_ms"] / 50
        figures["patched"] = []


class _Trigger(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        _forge()
        args = tuple(torch.Tensor._make_subclass(torch.Tensor, x) if isinstance(x, _Trigger) else x for x in args)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


def custom_kernel(data):
    a, b = data
    out = a + b
    if sys._getframe(1).f_code.co_name == "timed_call":
        return out.as_subclass(_Trigger)
    return out
