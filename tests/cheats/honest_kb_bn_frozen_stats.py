"""Honest: batch norm written out, its running statistics kept as frozen parameters declared before the affine
ones (they start at 0 and 1 too): the judge's values for the norm's weight and bias must reach ``weight`` and
``bias``, not the frozen statistics that start alike (tests/fixtures/attacks/kb_batchnorm.py)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.running_mean = nn.Parameter(torch.zeros(channels), requires_grad=False)
        self.running_var = nn.Parameter(torch.ones(channels), requires_grad=False)
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        var, mean = torch.var_mean(x, dim=(0, 2, 3), unbiased=False, keepdim=True)
        scale = self.weight.view(1, -1, 1, 1) * torch.rsqrt(var + 1e-5)
        return (x - mean) * scale + self.bias.view(1, -1, 1, 1)
