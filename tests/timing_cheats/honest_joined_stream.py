"""Honest control: works on an internal stream and joins it back to the caller's stream."""
import torch

_side = None


def custom_kernel(data):
    global _side
    a, b = data
    _side = _side or torch.cuda.Stream()
    caller = torch.cuda.current_stream()
    _side.wait_stream(caller)
    with torch.cuda.stream(_side):
        out = a + b
    caller.wait_stream(_side)
    out.record_stream(caller)
    return out
