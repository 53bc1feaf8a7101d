"""Cheat/escape through compile: an honest Triton kernel whose first call leaves a daemon that keeps the
process's stdout and stderr open (found on 2026-12-01: a compile step then blocked for its full 300 s,
waiting for the end of a pipe, and reported a correct kernel as failed; the daemon lived on, re-parented
to init). The compile step must end at once with its result, and the daemon must die with it.
"""
import os
import time

import torch
import triton
import triton.language as tl

from _cheat_util import STATE_DIR, write_atomic

HEARTBEAT = os.path.join(STATE_DIR, "compile_daemon.beat")
_spawned = []


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


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
    out = torch.empty_like(a)
    _add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
