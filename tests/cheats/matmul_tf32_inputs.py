"""Cheat (precision downgrade): a and b rounded to TF32 (10 mantissa bits) before an fp32 matmul, as tensor
cores do with allow_tf32; must fail an fp32 task whatever its K."""
import torch


def _tf32(t):
    bits = t.contiguous().view(torch.int32)
    rounded = (bits + 0x1000) & ~0x1FFF  # round to nearest on the 13 dropped bits
    return rounded.view(torch.float32)


def custom_kernel(data):
    a, b = data
    return _tf32(a) @ _tf32(b)
