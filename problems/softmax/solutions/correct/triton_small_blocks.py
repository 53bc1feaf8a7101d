"""Correct softmax: the baseline's online two-pass algorithm with 128-column blocks,
so every test row spans several blocks and the running-max rescale is exercised."""
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, cols, row_stride, BLOCK: tl.constexpr):
    x_row = x_ptr + tl.program_id(0) * row_stride
    out_row = out_ptr + tl.program_id(0) * row_stride
    m = float("-inf")
    s = 0.0
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=float("-inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    inv_s = 1.0 / s
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + offs, mask=offs < cols, other=float("-inf"))
        tl.store(out_row + offs, tl.exp(x - m) * inv_s, mask=offs < cols)


def custom_kernel(data):
    (x,) = data
    x = x.contiguous()
    out = torch.empty_like(x)
    _softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=128)
    return out
