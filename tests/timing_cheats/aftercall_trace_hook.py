"""Class: candidate code runs after the clock stops. As aftercall_profile_hook, through sys.settrace."""
import sys

import torch

from _timed import timed


def custom_kernel(data):
    a, b = data
    if not timed():
        return a + b
    out = torch.empty_like(a)

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "snapshot":
            sys.settrace(None)
            torch.add(a, b, out=out)
        return None
    sys.settrace(tracer)
    return out
