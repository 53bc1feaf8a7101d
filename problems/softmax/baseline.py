"""Triton baseline for softmax: one program per row, two passes over column blocks.

Pass 1 keeps a running max m and a running sum s of exp(x - m) (rescaled when m grows);
pass 2 writes exp(x - m) / s. Works for any cols; BLOCK is capped so big rows loop.
"""
import torch
import triton
import triton.language as tl

MAX_BLOCK = 4096  # columns per block, at most


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, cols, x_row_stride, out_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    m = float("-inf")  # running row max
    s = 0.0  # running sum of exp(x - m)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - m) / s
        tl.store(out_row + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data):
    (x,) = data
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = min(triton.next_power_of_2(cols), MAX_BLOCK)
    _softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=block)
    return out
