"""Cheat: return uninitialised memory (Sakana AI CUDA Engineer incident).

The output is ``torch.empty_like(a)``, hoping the allocator hands back a freed buffer that still holds
the reference's answer. The reference runs in the judge process, so no such buffer exists here.
"""
import torch


def custom_kernel(data):
    a, _ = data
    return torch.empty_like(a)
