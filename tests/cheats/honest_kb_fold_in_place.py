"""Honest: the divisor folded into the Linear's weight and bias in place at initialisation, under their own
names (an ordinary optimisation; KernelBench passes it): Model's values must not be loaded over the folded
ones (tests/fixtures/attacks/kb_linear_divide.py)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features, divisor):
        super().__init__()
        self.linear = nn.Linear(features, features)
        with torch.no_grad():
            self.linear.weight.div_(divisor)
            self.linear.bias.div_(divisor)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x))
