"""Honest: the zero-bias model with its parameters under other names, created the same way (same seed):
they get Model's values by shape and initial value (tests/fixtures/attacks/kb_zero_bias.py)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.w = nn.Parameter(torch.randn(out_features, in_features) * 0.1)
        self.b = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        return torch.addmm(self.b, x, self.w.t())
