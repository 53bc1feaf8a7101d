"""Correct row_sum: Triton, each program sums ROWS rows at once over 64-column blocks (2-D tiles)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, rows, cols, row_stride, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)  # (ROWS,) row indices
    acc = tl.zeros([ROWS, BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = (r[:, None] < rows) & (c[None, :] < cols)
        acc += tl.load(x_ptr + r[:, None] * row_stride + c[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + r, tl.sum(acc, axis=1), mask=r < rows)


def custom_kernel(data):
    (x,) = data
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty(rows, dtype=x.dtype, device=x.device)
    _row_sum_kernel[(triton.cdiv(rows, 4),)](x, out, rows, cols, x.stride(0), ROWS=4, BLOCK=64)
    return out
