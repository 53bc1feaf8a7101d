"""The judge's one-time costs, paid at boot before any candidate exists: its device context, CUPTI for timing
runs (host/warm.py's, shared with candidate hosts), and one comparison so the CUDA kernels judge/tolerance.py uses
are loaded (torch loads them lazily, on first use)."""
from __future__ import annotations

import torch

from kernel_mcp.taskspec import ToleranceSpec
from kernel_mcp.worker.host.warm import gpu
from kernel_mcp.worker.judge.tolerance import Expected, compare


def warm_judge(device: str, profiler: bool) -> None:
    """The judge: its context, CUPTI for timing runs, and one comparison so the kernels judge/tolerance.py uses
    are loaded (torch loads CUDA kernels lazily, on first use)."""
    gpu(device, profiler)
    ref = torch.linspace(-1, 1, 64, dtype=torch.float64, device=device)
    compare((ref * 1.5).float(), Expected(ref=ref, honest=ref.float()), ToleranceSpec(), 4.0)
