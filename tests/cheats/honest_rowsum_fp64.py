"""Honest: float64 row sums, as the reference returns them."""
import torch


def custom_kernel(data):
    return data[0].sum(dim=-1, dtype=torch.float64)
