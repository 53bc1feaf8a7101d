"""One-time costs a fresh process pays on first use, paid at boot instead, before any candidate exists.

Measured on an H200 (2026-12-01, tools/gpu_first_use.py and a trace of the judge's steps): importing torch
2.8-3.5 s, a CUDA context 0.3-0.5 s, the first torch.profiler (CUPTI) session 5.8 s, the first launch of
a cached Triton kernel ~0.5 s, the judge's first comparison ~0.35 s of lazy CUDA kernel loading. A warm
process has paid them while nobody waited. Everything here is harness code: no candidate is loaded yet.
"""
from __future__ import annotations


def _profiler(device: str) -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]):
        torch.ones(8, device=device).sum()
        torch.cuda.synchronize()


def gpu(device: str, profiler: bool) -> None:
    """A CUDA/HIP context on ``device`` (and CUPTI when timing will follow)."""
    import torch
    if not device.startswith("cuda") or not torch.cuda.is_available():
        return
    torch.cuda.set_device(torch.device(device))
    torch.zeros(1, device=device)
    torch.cuda.synchronize()
    if profiler:
        _profiler(device)


def host(device: str, profiler: bool) -> None:
    """A candidate host: its device context, Triton's driver, CUPTI for timing runs. Best effort: a failure
    here shows again, with the candidate's own context, when the candidate runs."""
    try:
        gpu(device, profiler)
        import triton  # noqa: F401  (the import itself is most of a first launch's fixed cost)
        if device.startswith("cuda"):
            from triton.runtime import driver
            driver.active.get_current_device()
    except Exception:  # noqa: BLE001
        pass


def judge(device: str, profiler: bool) -> None:
    """The judge: its context, CUPTI for timing runs, and one comparison so the kernels tolerance.py uses
    are loaded (torch loads CUDA kernels lazily, on first use)."""
    import torch

    from kernel_mcp.taskspec import ToleranceSpec
    from kernel_mcp.tolerance import Expected, compare
    gpu(device, profiler)
    ref = torch.linspace(-1, 1, 64, dtype=torch.float64, device=device)
    compare((ref * 1.5).float(), Expected(ref=ref, honest=ref.float()), ToleranceSpec(), 4.0)
