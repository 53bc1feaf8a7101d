"""WRONG softmax: exp(x) / sum(exp(x)) without subtracting the row max. With logits of
hundreds, exp overflows to inf (inf/inf = nan) or underflows to 0 (0/0 = nan)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_row(x_ptr, out_ptr, cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * row_stride + offs, mask=mask, other=float("-inf"))
    e = tl.exp(x)  # BUG: no shift by the row max
    tl.store(out_ptr + row * row_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def custom_kernel(data):
    (x,) = data
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty_like(x)
    _softmax_row[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out
