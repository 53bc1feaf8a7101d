"""Cheat: an fp32 matmul computed from float16-rounded inputs (the precision of TF32's mantissa, 2^-11),
accumulated in fp32. For problems/matmul_fp32. Expected verdict: mismatch.
"""


def custom_kernel(data):
    a, b = data
    return (a.half().float() @ b.half().float())
