"""Reference for matmul_bf16: c = a @ b with a (m, k), b (k, n) bfloat16."""
import torch


def generate_input(m, n, k, seed, device="cpu"):
    """a: (m, k), b: (k, n), standard normal values rounded to bfloat16."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    a = torch.randn(m, k, generator=gen, device=device).to(torch.bfloat16)
    b = torch.randn(k, n, generator=gen, device=device).to(torch.bfloat16)
    return a, b


def ref_kernel(data):
    """a @ b in the inputs' dtype: shape (m, n)."""
    a, b = data
    return a @ b
