"""Honest: the reference's own calls (a complex64 rfft and a transposed view of the input, copied)."""
import torch


def custom_kernel(data):
    (x,) = data
    return torch.fft.rfft(x, dim=-1), x.t().clone().t().t()
