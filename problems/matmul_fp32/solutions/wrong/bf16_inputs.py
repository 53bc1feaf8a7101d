"""WRONG matmul_fp32: rounds both inputs to bfloat16 (8-bit mantissa) before multiplying,
giving ~1e-3 relative error instead of float32's ~1e-7."""
import torch


def custom_kernel(data):
    a, b = data
    return (a.bfloat16() @ b.bfloat16()).float()  # BUG: bf16 precision
