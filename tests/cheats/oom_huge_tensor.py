"""Crash kind: allocate an absurdly large tensor (4 TiB of float32). On CPU the harness caps the address
space, so this is an exception (or a crash), never a hang of the whole machine."""
import torch


def custom_kernel(data):
    huge = torch.empty(1 << 40)
    huge.fill_(1.0)
    return huge
