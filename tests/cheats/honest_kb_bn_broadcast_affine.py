"""Honest: batch norm with its affine weight and bias kept in broadcast shape (1, C, 1, 1), for one addcmul:
the judge's values (shape (C,)) must reach them reshaped (tests/fixtures/attacks/kb_batchnorm.py)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(1, channels, 1, 1))
        self.bias = nn.Parameter(torch.zeros(1, channels, 1, 1))

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=(0, 2, 3), unbiased=False, keepdim=True)
        scale = self.weight * torch.rsqrt(var + 1e-5)
        return torch.addcmul(self.bias - mean * scale, x, scale)
