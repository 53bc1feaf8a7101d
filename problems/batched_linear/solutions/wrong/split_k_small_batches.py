"""Wrong (batch-variant), and within every tolerance: a small batch cannot fill the device with one program
per row, so below 16 rows this kernel splits K in four and sums the four partial products after (the
split-K of serving engines' GEMMs). Each row is then summed in another order than in a batch of 16 or more:
the same request gets other bits depending on who it was batched with."""
import torch
import triton
import triton.language as tl

BLOCK_N, BLOCK_K = 64, 128
SPLITS, SMALL_BATCH = 4, 16


@triton.jit
def _row_kernel(x_ptr, w_ptr, y_ptr, k, n, stride_x, stride_w, stride_y,
                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + row * stride_x + ks, mask=ks < k, other=0.0)
        w = tl.load(w_ptr + ks[:, None] * stride_w + cols[None, :], mask=(ks[:, None] < k) & (cols[None, :] < n),
                    other=0.0)
        acc += tl.sum(x[:, None] * w, axis=0)
    tl.store(y_ptr + row * stride_y + cols, acc, mask=cols < n)


def _rows(x, w):
    x, w = x.contiguous(), w.contiguous()
    batch, k = x.shape
    n = w.shape[1]
    y = torch.empty((batch, n), dtype=x.dtype, device=x.device)
    _row_kernel[(batch, triton.cdiv(n, BLOCK_N))](x, w, y, k, n, x.stride(0), w.stride(0), y.stride(0),
                                                   BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return y


def custom_kernel(data):
    x, w = data
    if x.shape[0] >= SMALL_BATCH:
        return _rows(x, w)
    step = triton.cdiv(x.shape[1], SPLITS)
    parts = [_rows(x[:, i:i + step], w[i:i + step]) for i in range(0, x.shape[1], step)]
    return torch.stack(parts).sum(dim=0)
