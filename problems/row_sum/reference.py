"""Reference for row_sum: x.sum(-1) for a (rows, cols) float32 tensor of mean 3."""
import torch


def generate_input(rows, cols, seed, device="cpu"):
    """x = randn + 3, float32, shape (rows, cols)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return (torch.randn(rows, cols, generator=gen, device=device) + 3.0,)


def ref_kernel(data):
    """Sum over the last dim, in the input's dtype: shape (rows,)."""
    (x,) = data
    return x.sum(dim=-1)
