"""WRONG matmul_fp32: the K loop runs over whole BLOCK_K blocks only, so when k is not a multiple
of 32 the last k % 32 products are never added (k = 72 loses 8 terms, k = 100 loses 4)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, m, n, k, sam, sak, sbk, sbn, scm, scn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, k - BK + 1, BK):  # BUG: drops the partial last K block
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * sam + rk[None, :] * sak, mask=rm[:, None] < m, other=0.0)
        b = tl.load(b_ptr + rk[:, None] * sbk + rn[None, :] * sbn, mask=rn[None, :] < n, other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < m) & (rn[None, :] < n))


def custom_kernel(data):
    a, b = data
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, 32), triton.cdiv(n, 32))
    _matmul_kernel[grid](a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(), BM=32, BN=32, BK=32)
    return c
