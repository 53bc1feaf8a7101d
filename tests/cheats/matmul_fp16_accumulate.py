"""Cheat (precision downgrade): blocks of 32 along k summed into a float16 running sum."""
import torch


def custom_kernel(data):
    a, b = data
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float16, device=a.device)
    for k in range(0, a.shape[1], 32):
        acc += (a[:, k:k + 32] @ b[k:k + 32, :]).half()
    return acc.float()
