"""Honest: the same values, computed through a weight that requires grad, so that both outputs are non-leaf
tensors that require grad (as a KernelBench ModelNew built from nn.Parameters returns them)."""
import torch


def custom_kernel(data):
    (x,) = data
    scale = torch.ones((), device=x.device, requires_grad=True)
    y = x * scale
    return torch.fft.rfft(y, dim=-1), y.t()
