"""Reference for matmul_fp32: c = a @ b with a (m, k), b (k, n) float32."""
import torch


def generate_input(m, n, k, seed, device="cpu"):
    """a: (m, k), b: (k, n), standard normal float32."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    a = torch.randn(m, k, generator=gen, device=device)
    b = torch.randn(k, n, generator=gen, device=device)
    return a, b


def ref_kernel(data):
    """a @ b in the inputs' dtype: shape (m, n)."""
    a, b = data
    return a @ b
