"""Class: the KernelBench adapter. Returns zeros for a model with training-mode dropout: the reference's
float64 and float32 runs drew different masks, the bound grew to the size of the output, and zeros passed
(tests/fixtures/attacks/kb_dropout.py)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, p):
        super().__init__()
        self.out_features = out_features

    def forward(self, x):
        return torch.zeros(x.shape[0], self.out_features, device=x.device)
