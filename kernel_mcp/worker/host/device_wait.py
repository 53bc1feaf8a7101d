"""How a process waits for its GPU: a judge or candidate host booted for a check waits asleep.

CUDA's default (``CU_CTX_SCHED_AUTO``) spins a core for every wait on the device whenever a process holds fewer
contexts than the machine has cores, which is always here. A batch runs a dozen judges and a dozen candidate
hosts on one GPU; most of their time is spent waiting on it while the others' work runs (the GPU time-slices
contexts), and a spinning wait burns a core the builds beside them need (nvcc: about a minute of CPU per
``load_inline`` candidate). On an H100, twelve such processes burnt 118 CPU-seconds in 10 s spinning and 10
asleep, for the same GPU work (BENCHMARKS.md, "A batch's CPU by kind"). So a judge or host booted for a check waits
asleep (``CU_CTX_SCHED_BLOCKING_SYNC``, set once after its warm-up: host/warm.py). Those booted for timing keep
CUDA's default, the wait the field's timings were taken with: every timed call runs in one of them, and nothing
switches the mode around a call (code run after the clock stops is code a candidate could replace).

The driver's ``cuCtxSetFlags`` (CUDA 12.1 and later) on the context current to the calling thread. The mode only
chooses how the CPU waits, never what the device computes: a check's verdict is the same either way. Best
effort: where the call is missing (an older driver, ROCm: not tried on AMD hardware) the process keeps CUDA's
default. A candidate may set its own process's mode; it only changes how its own process waits.
"""
from __future__ import annotations

import ctypes
import os
from functools import cache

SCHED_AUTO, SCHED_SPIN, SCHED_BLOCKING_SYNC = 0x0, 0x1, 0x4  # CUctx_flags (cuda.h)
SCHED_MASK = 0x7


@cache
def _driver() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    if not all(hasattr(lib, name) for name in ("cuCtxSetFlags", "cuCtxGetFlags", "cuCtxGetCurrent")):
        return None
    return lib


def _current_context(lib: ctypes.CDLL) -> bool:
    context = ctypes.c_void_p()
    return lib.cuCtxGetCurrent(ctypes.byref(context)) == 0 and bool(context.value)


def _context_flags() -> tuple[ctypes.CDLL, int] | None:
    """The driver and the flags of the context current to this thread; None where there is none to ask."""
    lib = _driver()
    if lib is None or not _current_context(lib):
        return None
    flags = ctypes.c_uint()
    return (lib, flags.value) if lib.cuCtxGetFlags(ctypes.byref(flags)) == 0 else None


def scheduling() -> int | None:
    """The current context's scheduling flags (``SCHED_*``), None where there is no CUDA context to ask."""
    found = _context_flags()
    return None if found is None else found[1] & SCHED_MASK


def set_scheduling(mode: int) -> bool:
    """``mode`` for the context current to this thread, its other flags kept; False where it could not be set."""
    found = _context_flags()
    if found is None:
        return False
    lib, flags = found
    return lib.cuCtxSetFlags(ctypes.c_uint((flags & ~SCHED_MASK) | mode)) == 0


def asleep(device: str) -> bool:
    """From now on this process waits for ``device`` asleep. Call once its context exists (after the warm-up).
    ``KERNEL_MCP_DEVICE_WAIT=spin`` keeps CUDA's default instead (to measure what waiting asleep saves)."""
    if os.environ.get("KERNEL_MCP_DEVICE_WAIT") == "spin":
        return False
    return device.startswith("cuda") and set_scheduling(SCHED_BLOCKING_SYNC)
