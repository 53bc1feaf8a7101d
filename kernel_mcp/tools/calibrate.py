"""calibrate: measure the present GPU's copy bandwidth and matmul rates, and cache them per device.

Datasheet peaks are not reachable in practice (an H200 copies at ~4.3 of its 4.8 TB/s, DESIGN.md), so the
roofline prefers measured ceilings when this cache has them, and says which it used. Data is random
(normal), never zeros: tensor cores draw less power on zeros and run faster than on real data.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pydantic import BaseModel

from kernel_mcp import stats
from kernel_mcp.results import UsageError

COPY_BYTES = 1 << 30  # 1 GiB: far beyond any L2/LLC, so the copy streams from and to HBM
MATMUL_N = 8192  # 2*8192^3 = 1.1 TFLOP per call: long enough that launch overhead vanishes
REPEATS = 20
MATMUL_DTYPES = ("float32", "tf32", "bfloat16", "float16")
# which devices.Ceilings.peak_flops key each measured matmul stands for
UNIT_OF = {"float32": "fp32", "tf32": "tf32_tensor", "bfloat16": "bf16_tensor", "float16": "fp16_tensor"}


class Calibration(BaseModel):
    device_name: str
    measured_at: str  # UTC, ISO 8601
    torch_version: str
    copy_bytes_per_s: float  # read + write bytes of a device-to-device copy, per second
    matmul_flops_per_s: dict[str, float]  # devices.Ceilings.peak_flops keys -> measured FLOP/s


def cache_file() -> Path:
    root = Path(os.environ.get("KERNEL_MCP_CACHE", Path.home() / ".cache" / "kernel_mcp"))
    return root / "calibration.json"


def load_cached(device_name: str) -> Calibration | None:
    try:
        entries = json.loads(cache_file().read_text())
        return Calibration.model_validate(entries[device_name])
    except (OSError, ValueError, KeyError):
        return None


def _store(calibration: Calibration) -> None:
    path = cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError):
        entries = {}
    entries[calibration.device_name] = calibration.model_dump()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries, indent=1))
    tmp.replace(path)  # atomic: a crash never leaves half a file


def _median_ms(fn, repeats: int = REPEATS) -> float:
    import torch
    for _ in range(3):
        fn()
    samples = []
    for _ in range(repeats):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        begin.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(begin.elapsed_time(end))
    return stats.median(samples)


def measure_copy(nbytes: int = COPY_BYTES) -> float:
    import torch
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    ms = _median_ms(lambda: dst.copy_(src))
    return 2 * nbytes / (ms / 1e3)


def measure_matmul(dtype_name: str, n: int = MATMUL_N) -> float:
    import torch
    dtype = torch.float32 if dtype_name == "tf32" else getattr(torch, dtype_name)
    a, b = torch.randn(n, n, device="cuda", dtype=dtype), torch.randn(n, n, device="cuda", dtype=dtype)
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
    try:
        ms = _median_ms(lambda: a @ b)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    return 2 * n ** 3 / (ms / 1e3)


def calibrate(on_progress=None) -> Calibration:
    """Measure and cache. Raises UsageError when no GPU is present."""
    import torch
    if not torch.cuda.is_available():
        raise UsageError("calibrate needs a CUDA or ROCm GPU; torch sees none here")
    say = on_progress or (lambda *_: None)
    say("copy bandwidth", 0, 1 + len(MATMUL_DTYPES))
    copy = measure_copy()
    rates = {}
    for i, name in enumerate(MATMUL_DTYPES, 1):
        say(f"matmul {name} {MATMUL_N}^3", i, 1 + len(MATMUL_DTYPES))
        rates[UNIT_OF[name]] = measure_matmul(name)
    result = Calibration(device_name=torch.cuda.get_device_name(),
                         measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                         torch_version=torch.__version__, copy_bytes_per_s=copy, matmul_flops_per_s=rates)
    _store(result)
    return result
