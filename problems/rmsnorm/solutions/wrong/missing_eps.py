"""WRONG rmsnorm: forgets eps, out = x / sqrt(mean(x^2)) * weight. Rows whose mean square is
near or below 1e-6 (scale 1e-4 .. 1e-3) come out up to 10x too large."""
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, out_ptr, cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * row_stride + offs, mask=offs < cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols)  # BUG: no + eps
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_ptr + row * row_stride + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * row_stride + offs, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    x, weight = (t.contiguous() for t in data)
    out = torch.empty_like(x)
    block = min(triton.next_power_of_2(x.shape[1]), 4096)
    _rmsnorm_kernel[(x.shape[0],)](x, weight, out, x.shape[1], x.stride(0), BLOCK=block)
    return out
