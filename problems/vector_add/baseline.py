"""Triton baseline for vector_add: one program per BLOCK elements, masked tail.

BLOCK = 128 is a deliberately modest start with real headroom for the tune agent (the README's first
command): under Triton's CPU interpreter each program costs about 0.5 ms whatever its size, so BLOCK 1024
runs the 16,384-element test about 7x faster (BENCHMARKS.md, "The first five minutes"); on a GPU, 128
elements per 4-warp program is one element per thread."""
import torch
import triton
import triton.language as tl

BLOCK = 128  # elements per program


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def custom_kernel(data):
    a, b = data
    a, b = a.contiguous(), b.contiguous()
    out = torch.empty_like(a)
    n = a.numel()
    _add_kernel[(triton.cdiv(n, BLOCK),)](a, b, out, n, BLOCK=BLOCK)
    return out
