"""Honest: the LayerNorm model written out by hand, using the affine parameters Model has (their values
are Model's, whatever they are)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        y = self.linear(x)
        mean = y.mean(dim=-1, keepdim=True)
        var = (y - mean).square().mean(dim=-1, keepdim=True)
        return (y - mean) * torch.rsqrt(var + self.norm.eps) * self.norm.weight + self.norm.bias
