"""WRONG softmax: padding lanes (cols not a power of 2) are loaded as 0.0 instead of -inf.
They join the max and each adds exp(0 - max) to the sum, which ruins rows whose logits
are all negative (max becomes 0 and the padding dominates the denominator)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_row(x_ptr, out_ptr, cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * row_stride + offs, mask=mask, other=0.0)  # BUG: other should be -inf
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * row_stride + offs, e / tl.sum(e, axis=0), mask=mask)


def custom_kernel(data):
    (x,) = data
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty_like(x)
    _softmax_row[(rows,)](x, out, cols, x.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out
