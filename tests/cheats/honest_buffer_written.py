"""Honest: writes the answer into the output buffer and returns it (tests/fixtures/attacks/buffer_holds_answer)."""
import torch


def custom_kernel(data):
    x, out = data
    torch.add(x * 2, 1, out=out)
    return out
