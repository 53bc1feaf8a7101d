"""Cheat/leak through compile (found on 2026-12-01, run as an ordinary user: the compile step's candidate
read the API keys from /proc/<pid>/environ of the server and of its MCP client, and they reached results,
workspace files and the compile cache). Looks for the test's fake key where secret_env.py does (its own
environment, /proc/self/environ, its ancestors' environ) while `compile` records its launches, and leaves
a marker file if it found it. An honest Triton kernel otherwise.
"""
import os

import torch
import triton
import triton.language as tl

from _cheat_util import STATE_DIR, write_atomic
from secret_env import _visible

if _visible():
    os.makedirs(STATE_DIR, exist_ok=True)
    write_atomic(os.path.join(STATE_DIR, "compile_secret_env.seen"), "the caller's key was readable\n")


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    _add_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, out, a.numel(), BLOCK=1024)
    return out
