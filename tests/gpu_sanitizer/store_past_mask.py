"""Sanitizer fixture (memcheck): vector_add whose store has no mask, so the last program writes up to
BLOCK - 1 elements past the output's end. The values it returns are right (the stray writes land outside
the tensor); only memcheck sees the out-of-bounds stores."""
import torch
import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def _add(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, a + b)  # no mask: past the end on the last program


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    _add[(triton.cdiv(a.numel(), BLOCK),)](a, b, out, a.numel(), BLOCK=BLOCK)
    return out
