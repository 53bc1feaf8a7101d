"""Correct rmsnorm: the baseline's two-pass kernel with 128-column blocks (several per row)."""
import torch
import triton
import triton.language as tl

EPS = 1e-6


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, out_ptr, cols, row_stride, eps, BLOCK: tl.constexpr):
    x_row = x_ptr + tl.program_id(0) * row_stride
    out_row = out_ptr + tl.program_id(0) * row_stride
    sum_sq = 0.0  # float32 scalar
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=0.0).to(tl.float32)
        sum_sq += tl.sum(x * x, axis=0)
    rstd = 1.0 / tl.sqrt(sum_sq / cols + eps)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + offs, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    x, weight = (t.contiguous() for t in data)
    out = torch.empty_like(x)
    _rmsnorm_kernel[(x.shape[0],)](x, weight, out, x.shape[1], x.stride(0), EPS, BLOCK=128)
    return out
