"""Reference for softmax: softmax over the last dim of a (rows, cols) float32 tensor of large logits."""
import torch


def generate_input(rows, cols, seed, device="cpu"):
    """x = randn * 20 + a per-row offset uniform in [-200, 200); float32, shape (rows, cols)."""
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen, device=device) * 20.0  # spread of logits within a row
    offset = torch.rand(rows, 1, generator=gen, device=device) * 400.0 - 200.0
    return (x + offset,)


def ref_kernel(data):
    """Softmax over the last dim, in the input's dtype (a new tensor)."""
    (x,) = data
    return torch.softmax(x, dim=-1)
