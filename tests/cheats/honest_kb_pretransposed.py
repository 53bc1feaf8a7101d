"""Honest: the square Linear's weight stored transposed under its own name at initialisation, for an addmm
without a transpose (tests/fixtures/attacks/kb_linear_divide.py): same shape, other values than Model's."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features, divisor):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.linear.weight = nn.Parameter(self.linear.weight.detach().t().contiguous())
        self.divisor = divisor

    def forward(self, x):
        return torch.nn.functional.gelu(torch.addmm(self.linear.bias, x, self.linear.weight) / self.divisor)
