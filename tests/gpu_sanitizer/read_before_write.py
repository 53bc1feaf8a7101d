"""Sanitizer fixture (initcheck): vector_add that loads its freshly allocated (uninitialised) output and
multiplies it by zero before adding: right values where the garbage is finite, and a read of memory nothing
wrote, which initcheck reports."""
import torch
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _add(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    old = tl.load(out_ptr + offs, mask=mask, other=0.0)  # never written: uninitialised
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a + b + old * 0.0, mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    _add[(triton.cdiv(a.numel(), BLOCK),)](a, b, out, a.numel(), BLOCK=BLOCK)
    return out
