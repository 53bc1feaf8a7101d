"""Honest: split-K, 7 uneven slices of k summed separately, then added last slice first (atomics land in
any order)."""
import torch


def custom_kernel(data):
    a, b = data
    bounds = torch.linspace(0, a.shape[1], 8).round().long().tolist()
    parts = [a[:, lo:hi] @ b[lo:hi, :] for lo, hi in zip(bounds, bounds[1:]) if hi > lo]
    acc = torch.zeros_like(parts[0])
    for part in reversed(parts):
        acc += part
    return acc
