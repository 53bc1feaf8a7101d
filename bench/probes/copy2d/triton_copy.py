"""A plain Triton copy, one program per BLOCK elements (the probe's Triton contestant; torch.clone the other)."""
import torch
import triton
import triton.language as tl

BLOCK = 16384  # 4096 measured the same within 1.5% (BENCHMARKS.md)


@triton.jit
def _copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def custom_kernel(data):
    (x,) = data
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _copy[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, num_warps=8)
    return out
