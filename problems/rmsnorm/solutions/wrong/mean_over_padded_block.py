"""WRONG rmsnorm: the mean square divides by the padded block length (next power of 2)
instead of cols, so rows are over-scaled whenever cols is not a power of 2."""
import torch
import triton
import triton.language as tl

EPS = 1e-6


@triton.jit
def _rmsnorm_row(x_ptr, w_ptr, out_ptr, cols, row_stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * row_stride + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / BLOCK + eps)  # BUG: should divide by cols
    tl.store(out_ptr + row * row_stride + offs, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    x, weight = (t.contiguous() for t in data)
    out = torch.empty_like(x)
    block = triton.next_power_of_2(x.shape[1])
    _rmsnorm_row[(x.shape[0],)](x, weight, out, x.shape[1], x.stride(0), EPS, BLOCK=block)
    return out
