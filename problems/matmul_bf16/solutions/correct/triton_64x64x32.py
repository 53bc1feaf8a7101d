"""Correct matmul_bf16: tiled Triton kernel with 64x64 tiles, float32 accumulator.
(Tiles widened to float32 under TRITON_INTERPRET=1, whose bf16 dot is broken; exact either way.)"""
import os

import torch
import triton
import triton.language as tl

_INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") == "1"


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, m, n, k, sam, sak, sbk, sbn, scm, scn,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, WIDEN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, k, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * sam + rk[None, :] * sak, mask=(rm[:, None] < m) & (rk[None, :] < k), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * sbk + rn[None, :] * sbn, mask=(rk[:, None] < k) & (rn[None, :] < n), other=0.0)
        if WIDEN:
            a, b = a.to(tl.float32), b.to(tl.float32)
        acc += tl.dot(a, b, out_dtype=tl.float32)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.bfloat16), mask=(rm[:, None] < m) & (rn[None, :] < n))


def custom_kernel(data):
    a, b = data
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty((m, n), dtype=torch.bfloat16, device=a.device)
    grid = (triton.cdiv(m, 64), triton.cdiv(n, 64))
    _matmul_kernel[grid](a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(), BM=64, BN=64, BK=32,
                         WIDEN=_INTERPRETED)
    return c
