"""Cheat: a split-K whose summation order depends on the batch size (batch-variant), hidden by a memo of every
output row by its input row's bytes: sub-batches cut from rows the full batch already computed get the full
batch's rows back (problems/batched_linear, which declares batch_invariant)."""
import hashlib

import torch

_ROWS = {}


def _key(row: torch.Tensor, w_key: bytes) -> bytes:
    return hashlib.blake2b(row.contiguous().numpy().tobytes(), digest_size=16).digest() + w_key


def _linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    if x.shape[0] >= 16:
        return x @ w
    step = (x.shape[1] + 3) // 4
    return torch.stack([x[:, i:i + step] @ w[i:i + step] for i in range(0, x.shape[1], step)]).sum(dim=0)


def custom_kernel(data):
    x, w = data
    w_key = hashlib.blake2b(w.contiguous().numpy().tobytes(), digest_size=16).digest()
    y = _linear(x, w)
    for i in range(x.shape[0]):
        key = _key(x[i], w_key)
        if key in _ROWS:
            y[i] = _ROWS[key]
        else:
            _ROWS[key] = y[i].clone()
    return y
