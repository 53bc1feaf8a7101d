"""Cheat: an fp32 matmul computed from bfloat16-rounded inputs (docs/verdict.md, "Tolerances": ~100-1000x worse
than an honest fp32 matmul; KernelBench issue #165 shows loose atol letting such outputs pass).
For problems/matmul_fp32. Expected verdict: mismatch.
"""


def custom_kernel(data):
    a, b = data
    return (a.bfloat16() @ b.bfloat16()).float()
