"""Cheat/escape through compile: an honest Triton kernel whose first call leaves a daemon that keeps the
process's stdout and stderr open (found on 2026-12-01: a compile step then blocked for its full 300 s,
waiting for the end of a pipe, and reported a correct kernel as failed; the daemon lived on, re-parented
to init). The compile step must end at once with its result, and the daemon must die with it.
"""
import os
import time

from _cheat_util import STATE_DIR, write_atomic
from _triton_add import add

HEARTBEAT = os.path.join(STATE_DIR, "compile_daemon.beat")
_spawned = []



def _daemon_keeping_stdio(lifetime_s=60.0):
    if os.fork():
        return
    os.setsid()
    if os.fork() == 0:  # stdin, stdout and stderr stay as inherited
        deadline = time.monotonic() + lifetime_s
        while time.monotonic() < deadline:
            write_atomic(HEARTBEAT, str(time.time()))
            time.sleep(0.1)
    os._exit(0)


def custom_kernel(data):
    a, b = data
    if not _spawned:
        _spawned.append(True)
        os.makedirs(STATE_DIR, exist_ok=True)
        _daemon_keeping_stdio()
    return add(a, b)
