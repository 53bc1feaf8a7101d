"""Shared by two fixtures (not a candidate): the figures dict of the candidate host's timing request, found
by walking up the stack from custom_kernel (nothing is patched)."""
import sys


def timing_figures():
    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name != "_time":
        frame = frame.f_back
    return None if frame is None else frame.f_locals["figures"]
