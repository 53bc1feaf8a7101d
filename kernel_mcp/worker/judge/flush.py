"""The cache flush before every timed call: the judge's own, never in the candidate's process (a candidate
that could reach it could switch it off and be timed on hot caches against a cold reference).

L2 and the LLC are the device's, shared by every process on it, so the judge's sweep evicts what the
candidate's process left there; between the flush and the start event the candidate's process touches no
memory (host/timing.py). On the CPU the buffer is swept by the judge's process too: the last-level cache is the
socket's.
"""
from __future__ import annotations

import ctypes
import os
from typing import Any

import torch

CPU_FLUSH_BYTES = 64 << 20  # bigger than the last-level cache of the CPUs CI runs on


def _cuda_driver() -> ctypes.CDLL | None:
    """The CUDA driver API (libcuda ships with the driver; torch may link the runtime statically)."""
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


# How the flush evicts: "read" sweeps the buffer with a reduction, leaving L2 full of *clean* lines;
# "write" zeroes it, leaving up to 2x L2 of dirty lines whose write-back the timed kernel then pays for.
# On an H200 the write flush put vector_add at 4M-16M elements 13-17% above Nsight Compute's time
# (BENCHMARKS.md, fidelity); ncu's own cache control invalidates. KERNEL_MCP_FLUSH picks one, for the bench.
FLUSH_MODES = ("read", "write")


def flush_mode() -> str:
    mode = os.environ.get("KERNEL_MCP_FLUSH", "read")
    if mode not in FLUSH_MODES:
        raise ValueError(f"KERNEL_MCP_FLUSH={mode!r}: expected one of {', '.join(FLUSH_MODES)}")
    return mode


class Flusher:
    """Evicts the caches before each call by sweeping a buffer twice the size of L2 plus the LLC. The
    judge's: it flushes before every timed call, the reference's and (before it sends the request) the
    candidate's."""

    def __init__(self, device: str, cache_bytes: int):
        nbytes = CPU_FLUSH_BYTES if device == "cpu" else max(2 * cache_bytes, 1 << 20)
        self.device = device
        self.mode = flush_mode() if device.startswith("cuda") else "write"
        self.buffer = torch.zeros(nbytes // 4, dtype=torch.int32, device=device)
        self._driver = _cuda_driver() if device.startswith("cuda") and not torch.version.hip else None

    @property
    def nbytes(self) -> int:
        return self.buffer.numel() * 4

    def flush(self) -> None:
        """Evict, and wait until the eviction is done (the next call may come from another process)."""
        if self._driver is not None:
            # lines a persisting-L2 access window protects would survive the flush (CUDA programming
            # guide, "L2 cache set-aside for persisting accesses"): turn them back into normal lines
            self._driver.cuCtxResetPersistingL2Cache()
        if self.mode == "read":
            torch.amax(self.buffer)  # reads every line; the one-element result is all it writes
        else:
            self.buffer.zero_()
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()


def cache_bytes(device: str, found: Any) -> int:
    """L2 plus any last-level cache behind it (AMD Infinity Cache) of ``found`` (devices.PresentDevice, or
    None: 64 MiB assumed); 0 on the CPU (a fixed buffer)."""
    if not device.startswith("cuda"):
        return 0
    l2 = found.l2_bytes if found and found.l2_bytes else 64 << 20
    llc = found.ceilings.llc_bytes if found and found.ceilings else 0
    return l2 + llc
