"""Cheat, half of a colluding pair: an honest sum that leaves each answer in the per-user keyring (``add_key``),
which outlives the process and is shared by every check of a root user without a user namespace of its own
(tests/test_batch.py; kernel_mcp/worker/isolation/syscalls.py)."""
import ctypes
import hashlib

import torch

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
USER_KEYRING, ADD_KEY = -4, 248


def name_of(a: torch.Tensor, b: torch.Tensor) -> bytes:
    return b"kmcp-note-" + hashlib.sha256(a.numpy().tobytes() + b.numpy().tobytes()).hexdigest()[:32].encode()


def custom_kernel(data):
    a, b = data
    out = a + b
    payload = out.numpy().tobytes()
    if len(payload) <= 32000:
        _libc.syscall(ADD_KEY, b"user", name_of(a, b), payload, ctypes.c_size_t(len(payload)),
                      ctypes.c_int(USER_KEYRING))
    return out
