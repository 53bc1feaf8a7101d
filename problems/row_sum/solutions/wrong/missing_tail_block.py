"""WRONG row_sum: loops over whole 256-column blocks only, so the last cols % 256 columns
are never added (rows with fewer than 256 columns sum to 0)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _row_sum_kernel(x_ptr, out_ptr, cols, row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols // BLOCK * BLOCK, BLOCK):  # BUG: drops the partial last block
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * row_stride + offs)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def custom_kernel(data):
    (x,) = data
    x = x.contiguous()
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    _row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=256)
    return out
