"""Honest: 3 * tanh(x), written as 6 * sigmoid(2x) - 3."""
import torch


def custom_kernel(data):
    return 6 * torch.sigmoid(2 * data[0]) - 3
