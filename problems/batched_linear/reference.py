"""Reference for batched_linear: y = x @ w with x (batch, k), w (k, n), float32."""
import torch


def generate_input(batch, k, n, seed, device="cpu"):
    """x: (batch, k), w: (k, n), standard normal float32 values."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    x = torch.randn(batch, k, generator=gen, device=device)
    w = torch.randn(k, n, generator=gen, device=device)
    return x, w


def ref_kernel(data):
    """x @ w (a new tensor)."""
    x, w = data
    return x @ w
