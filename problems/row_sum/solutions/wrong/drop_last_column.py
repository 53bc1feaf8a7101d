"""WRONG row_sum: the column mask is `offs < cols - 1`, so the last column (about 3 per row) is lost."""
import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * row_stride + offs, mask=offs < cols - 1, other=0.0)  # BUG: cols - 1
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def custom_kernel(data):
    (x,) = data
    x = x.contiguous()
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    block = min(triton.next_power_of_2(x.shape[1]), 4096)
    _row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=block)
    return out
