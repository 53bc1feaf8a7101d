"""Honest: the GroupNorm under another name, and a zeros workspace buffer registered before it, refilled from
the norm's bias on every call (tests/fixtures/attacks/kb_linear_groupnorm.py). The judge's values for the
norm's bias (varied from its zeros) must reach the norm's parameter, not the buffer that also starts at zeros."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, groups):
        super().__init__()
        self.register_buffer("shift", torch.zeros(out_features))
        self.fc = nn.Linear(in_features, out_features)
        self.gn = nn.GroupNorm(groups, out_features)

    def forward(self, x):
        y = torch.nn.functional.silu(self.fc(x))
        b, c = y.shape
        grouped = y.view(b, self.gn.num_groups, c // self.gn.num_groups)
        mean = grouped.mean(-1, keepdim=True)
        var = grouped.var(-1, unbiased=False, keepdim=True)
        normed = ((grouped - mean) * torch.rsqrt(var + self.gn.eps)).view(b, c)
        self.shift.copy_(self.gn.bias)
        return torch.addcmul(self.shift, normed, self.gn.weight)
