"""WRONG vector_add: the load mask is `offs < n - 1`, so the last element reads a = b = 0 and
its output is 0 instead of a[n-1] + b[n-1]. The store mask is right, so every output is written."""
import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    load_mask = offs < n - 1  # BUG: should be offs < n
    a = tl.load(a_ptr + offs, mask=load_mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=load_mask, other=0.0)
    tl.store(out_ptr + offs, a + b, mask=offs < n)


def custom_kernel(data):
    a, b = (t.contiguous() for t in data)
    out = torch.empty_like(a)
    n = a.numel()
    _add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
    return out
