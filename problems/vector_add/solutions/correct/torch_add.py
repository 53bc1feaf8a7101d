"""Correct vector_add in plain torch: the sum is rounded once, in the inputs' dtype."""
import torch


def custom_kernel(data):
    a, b = data
    return torch.add(a, b)
