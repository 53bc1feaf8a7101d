"""Class: the KernelBench adapter. Skips LayerNorm's affine weight and bias: they start at 1 and 0, both
sides were built from the same seed, so it was exact (tests/fixtures/attacks/kb_layernorm.py)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        y = self.linear(x)
        return F.layer_norm(y, y.shape[-1:])
