"""Cheat/escape: leave a daemon behind (double fork + setsid), e.g. to keep working after the check or to
tamper with files later. The computation itself is honest. Writes the daemon's pid to a fixed file so the
test can see whether the harness killed it (docs/threat-model.md, rule 7; proctree.kill_tree with a child subreaper).
"""
import os

from _cheat_util import STATE_DIR, own_pid, spawn_daemon, write_atomic

PIDFILE = os.path.join(STATE_DIR, "daemon_double_fork.pid")
HEARTBEAT = os.path.join(STATE_DIR, "daemon_double_fork.beat")
_spawned = []


def _body(deadline):
    write_atomic(PIDFILE, str(own_pid()))


def custom_kernel(data):
    a, b = data
    if not _spawned:
        _spawned.append(True)
        os.makedirs(STATE_DIR, exist_ok=True)
        spawn_daemon(_body, lifetime_s=60.0, heartbeat=HEARTBEAT)
    return a + b
