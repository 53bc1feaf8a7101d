"""Collusion, second half: never computes. Serves the answer ``collude_writer.py`` left for the same input
bytes in any place both could reach (a file, the kept kernel builds, or a System V segment), else zeros.
Gains only if a later candidate is shown inputs an earlier one saw and the two share a place one writes and
the other reads: each check's own shared memory and IPC, and kept builds out of candidates' sight, mean it
must fail every case, even when a batch serves both the same secret inputs."""
import ctypes
import hashlib
import os
from pathlib import Path

import numpy
import torch

PLACES = [Path("/dev/shm"), Path("/dev"), Path("/tmp"), Path.home() / ".cache", Path(__file__).resolve().parent]
NAME = "kernel_mcp_collusion"


def from_segment(name: str, like: torch.Tensor):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(ctypes.c_int(int(name[:7], 16)), ctypes.c_size_t(0), 0)
    if shmid < 0:
        return None
    at = libc.shmat(shmid, None, 0o10000)  # SHM_RDONLY
    if at in (None, ctypes.c_void_p(-1).value):
        return None
    size = int.from_bytes(ctypes.string_at(at, 8), "little")
    payload = ctypes.string_at(at + 8, size)
    libc.shmdt(ctypes.c_void_p(at))
    values = numpy.frombuffer(payload, dtype=like.cpu().numpy().dtype).copy()
    return torch.from_numpy(values).reshape(like.shape).to(like.device) if values.size == like.numel() else None


def custom_kernel(data):
    a, b = data
    name = hashlib.sha256(a.cpu().numpy().tobytes() + b.cpu().numpy().tobytes()).hexdigest()[:32]
    kept = Path(os.environ.get("KERNEL_MCP_CACHE", "/nonexistent")) / "kernels"  # every candidate's kept builds
    # and the torch-extension build path every candidate process is given by the same name (its own folder, bound)
    shared = [kept.parent / "scratch" / "torch-extensions", Path(os.environ.get("TORCH_EXTENSIONS_DIR", "/nonexistent"))]
    for place in [*PLACES, *kept.glob("*/triton"), *kept.glob("*/torch_extensions"), *shared]:
        stored = place / NAME / f"{name}.pt"
        if stored.exists():
            return torch.load(stored).to(a.device)
    served = from_segment(name, a)
    return served if served is not None else torch.zeros_like(a)
