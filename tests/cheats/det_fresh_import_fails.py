"""Cheat: imports in the first process of a check and refuses to in any later one, seen by a note it leaves in
/dev/shm (the judge's hosts share it). A kernel whose bits differ from one process to the next (a tuner that
picks by timing) would hide that so from a task declaring ``deterministic: true``: the fresh process it is
checked in never runs, and its first process alone gives the same bits every time."""
import os

NOTE = "/dev/shm/.kmcp-fresh-import-note"
if os.path.exists(NOTE):
    raise ImportError("not in this process")
try:
    open(NOTE, "w").close()
except OSError:
    pass


def custom_kernel(data):
    a, b = data
    return a + b
