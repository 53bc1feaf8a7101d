"""Reference for rmsnorm: x / sqrt(mean(x^2, -1) + eps) * weight, eps = 1e-6."""
import torch

EPS = 1e-6
# test parameter `itemsize` (bytes per element) -> dtype
DTYPES = {2: torch.bfloat16, 4: torch.float32}


def generate_input(rows, cols, itemsize, seed, device="cpu"):
    """x: (rows, cols) normal values, each row scaled by 10**u with u uniform in [-4, 1);
    weight: (cols,) around 1. Both in the dtype named by itemsize."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    dtype = DTYPES[int(itemsize)]
    scale = 10.0 ** (torch.rand(rows, 1, generator=gen, device=device) * 5.0 - 4.0)
    x = torch.randn(rows, cols, generator=gen, device=device) * scale
    weight = 1.0 + 0.5 * torch.randn(cols, generator=gen, device=device)
    return x.to(dtype), weight.to(dtype)


def ref_kernel(data):
    """RMS norm over the last dim in the inputs' dtype (a new tensor)."""
    x, weight = data
    mean_sq = x.pow(2).mean(dim=-1, keepdim=True)  # (rows, 1)
    return x * torch.rsqrt(mean_sq + EPS) * weight
