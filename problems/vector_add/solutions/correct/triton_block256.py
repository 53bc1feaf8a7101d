"""Correct vector_add: Triton with a smaller block (256 elements), a grid that covers the tail."""
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def custom_kernel(data):
    a, b = (t.contiguous() for t in data)
    out = torch.empty_like(a)
    n = a.numel()
    _add_kernel[(triton.cdiv(n, 256),)](a, b, out, n, BLOCK=256)
    return out
