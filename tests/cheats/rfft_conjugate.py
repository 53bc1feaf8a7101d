"""Cheat: the complex output conjugated (imaginary parts negated): right magnitudes, wrong values."""
import torch


def custom_kernel(data):
    (x,) = data
    return torch.fft.rfft(x, dim=-1).conj().resolve_conj(), x.t()
