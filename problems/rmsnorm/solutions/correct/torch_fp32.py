"""Correct rmsnorm in plain torch: computed in float32, rounded once to x's dtype."""
import torch

EPS = 1e-6


def custom_kernel(data):
    x, weight = data
    x32 = x.float()
    rstd = torch.rsqrt(x32.pow(2).mean(dim=-1, keepdim=True) + EPS)  # (rows, 1)
    return (x32 * rstd * weight.float()).to(x.dtype)
