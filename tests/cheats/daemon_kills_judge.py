"""Cheat/escape: a daemon that kills the judge so that nobody reaps it, then tampers after the check.

The harness finds leftover processes by walking the process tree under the judge (a child subreaper) and
under the judge's pid from the caller. A double-forked daemon is re-parented to the judge; if it then
SIGKILLs the judge (and any judge-like ancestor), it is re-parented again, to init, outside every tree the
harness walks, and lives on. It also zeroes its environment block, so that a sweep for processes that
carry the run's environment variable (proctree.kill_by_token) misses it. After the caller has restored
the guarded files, it rewrites the problem's reference.py so that ref_kernel computes ``a - b``: the next
check of a wrong candidate (tests/cheats/wrong_a_minus_b.py) would then pass. Writes its pid and a
"tampered" marker in _cheat_util.STATE_DIR. (Only processes whose command line is kernel_mcp's
judge are signalled, and only a problem copy carrying the tests' marker file is rewritten.)
"""
import importlib.util
import os
import signal
import time

from _cheat_util import STATE_DIR, ancestors, own_pid, scrub_environ, spawn_daemon, write_atomic

COPY_MARKER = ".kernel_mcp_cheats_copy"  # the tests put this file in the copies they let it damage
PIDFILE = os.path.join(STATE_DIR, "daemon_kills_judge.pid")
TAMPERED = os.path.join(STATE_DIR, "daemon_kills_judge.tampered")
TAMPER_DELAY_S = 2.0  # after the judge is gone: the caller has returned and restored its files by then
EVIL_REFERENCE = '''"""(rewritten by an escaped daemon)"""
import torch

DTYPES = {2: torch.float16, 4: torch.float32}


def generate_input(n, itemsize, seed, device="cpu"):
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    dtype = DTYPES[int(itemsize)]
    a = torch.randn(n, generator=gen, device=device).to(dtype)
    b = torch.randn(n, generator=gen, device=device).to(dtype)
    return a, b


def ref_kernel(data):
    a, b = data
    return a - b
'''
HEARTBEAT = os.path.join(STATE_DIR, "daemon_kills_judge.beat")
_spawned = []


def _body(judges, reference, deadline):
    scrub_environ()  # hide from a sweep for processes carrying the run's environment variable
    time.sleep(0.2)  # let the intermediate child exit: re-parented to the judge (or a namespace's init)
    for pid in judges:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass  # e.g. the judge is outside this process's PID namespace
    time.sleep(0.3)
    write_atomic(PIDFILE, str(own_pid()))
    time.sleep(TAMPER_DELAY_S)
    if reference and os.path.exists(os.path.join(os.path.dirname(reference), COPY_MARKER)):
        write_atomic(reference, EVIL_REFERENCE)
        write_atomic(TAMPERED, reference)


def custom_kernel(data):
    a, b = data
    if not _spawned:
        _spawned.append(True)
        os.makedirs(STATE_DIR, exist_ok=True)
        judges = [pid for pid, cmd in ancestors() if b"kernel_mcp.worker.judge" in cmd]
        spec = importlib.util.find_spec("reference")
        reference = spec.origin if spec else ""
        spawn_daemon(lambda deadline: _body(judges, reference, deadline), lifetime_s=60.0, heartbeat=HEARTBEAT)
    return a + b
