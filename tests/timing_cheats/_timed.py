"""Shared by the after-the-clock cheats (not a candidate): is this call the timed one? The check's calls
come from the host's _run, the timed ones from worker/host/timing.py's timed_call."""
import sys


def timed() -> bool:
    frame = sys._getframe(2)
    return frame.f_code.co_name in ("timed_call", "kernel_busy_us")
