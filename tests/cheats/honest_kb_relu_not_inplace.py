"""Honest: the in-place-ReLU model computed without touching its input (KernelBench judges the output)
(tests/fixtures/attacks/kb_relu_inplace.py)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2
