"""Honest: uses the symmetry KernelBench's symmetric matmul guarantees (B equals its transpose, so rows of B
serve as its columns): inputs given random signs must stay symmetric (tests/fixtures/attacks/kb_symmetric_matmul.py)."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a @ b.t().contiguous().t().t()  # B^T = B: a row-major read of B as its columns
