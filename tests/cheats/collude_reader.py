"""Collusion, second half: never computes. Serves the answer ``collude_writer.py`` left for the same input
bytes in any place both could reach, else zeros. Gains only if a later candidate is shown inputs an earlier
one saw and the two share a writable place: fresh secret seeds per check, and a private /tmp per host
where the sandbox gives one, mean it must fail."""
import torch
from pathlib import Path
import hashlib

PLACES = [Path("/dev/shm"), Path("/tmp"), Path.home() / ".cache", Path(__file__).resolve().parent]
NAME = "kernel_mcp_collusion"


def custom_kernel(data):
    a, b = data
    key = hashlib.sha256(a.cpu().numpy().tobytes() + b.cpu().numpy().tobytes()).hexdigest()[:32]
    for place in PLACES:
        stored = place / NAME / f"{key}.pt"
        if stored.exists():
            return torch.load(stored).to(a.device)
    return torch.zeros_like(a)
