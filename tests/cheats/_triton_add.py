"""A helper module for fixtures that must launch a real Triton kernel (so that `compile` records and builds
it) while their attack lies elsewhere: an honest elementwise add (not a candidate itself)."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def add(a, b):
    out = torch.empty_like(a)
    _add_kernel[(triton.cdiv(a.numel(), BLOCK),)](a, b, out, a.numel(), BLOCK=BLOCK)
    return out
