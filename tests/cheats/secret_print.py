"""Cheat/leak: print, and raise with, a secret the caller holds (written into this file, as if it had been
stolen): nothing of it may reach the result, its log tail, a compile result or the cache (the runner
redacts every result: worker/redact.py; the tests set the same value as the caller's API key).
Launches a Triton kernel first, so that `compile` runs it too.
"""
import sys

import torch
import triton
import triton.language as tl

SECRET = "sk-test-secret-kernel-mcp"
print(f"stolen key: {SECRET}")
print(f"stolen key again: {SECRET}", file=sys.stderr)


@triton.jit
def _copy_kernel(a_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, _ = data
    out = torch.empty_like(a)
    _copy_kernel[(triton.cdiv(a.numel(), 1024),)](a, out, a.numel(), BLOCK=1024)
    raise RuntimeError(f"the key is {SECRET}")
