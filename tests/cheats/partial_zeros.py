"""Cheat: compute only the first half of the output and leave the rest zeros (a kernel with a missing
tail or half the grid). Expected verdict: mismatch.
"""
import torch


def custom_kernel(data):
    a, b = data
    out = torch.zeros_like(a)
    half = a.numel() // 2  # a one-element test gets no element at all
    out[:half] = a[:half] + b[:half]
    return out
