"""calibrate: measure the present GPU's memory bandwidth and matmul rates, and cache them per device.

Datasheet peaks are not reachable in practice (an H200 copies at ~4.3 of its 4.8 TB/s; docs/verdict.md,
"Measured ceilings"), so the roofline prefers measured ceilings when this cache has them, and says which it
used. Data is random (normal), never zeros: tensor cores draw less power on zeros and run faster than on real data.

The bandwidth ceiling is the best of three streams with different read/write mixes. HBM's achievable rate
depends on the mix (read/write turnarounds cost bus time), so a copy alone is not the roof of a kernel that
reads more than it writes: on an H200 the bundled 2-read/1-write vector_add reached 104% of a copy's
bandwidth (BENCHMARKS.md, 2026-11-30). No honest kernel should sit above 100% of the best mix.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from pydantic import BaseModel, Field, computed_field

from kernel_mcp import stats
from kernel_mcp.errors import UsageError
from kernel_mcp.files import cache_root
from kernel_mcp.worker import Runner, default_runner

STREAM_BYTES = 1 << 30  # moved per call by each stream: a working set far beyond any L2/LLC (MI300X: 256 MB)
MATMUL_N = 8192  # 2*8192^3 = 1.1 TFLOP per call: long enough that launch overhead vanishes
REPEATS = 20
MATMUL_DTYPES = ("float32", "tf32", "bfloat16", "float16")
# which devices.Ceilings.peak_flops key each measured matmul stands for
UNIT_OF = {"float32": "fp32", "tf32": "tf32_tensor", "bfloat16": "bf16_tensor", "float16": "fp16_tensor"}


class Calibration(BaseModel):
    device_name: str
    measured_at: str  # UTC, ISO 8601
    torch_version: str
    bandwidth_by_mix: dict[str, float] = Field(min_length=1)  # stream name (STREAMS) -> bytes read + written per s
    matmul_flops_per_s: dict[str, float]  # devices.Ceilings.peak_flops keys -> measured FLOP/s

    @computed_field
    @property
    def bandwidth_bytes_per_s(self) -> float:
        """The roofline's memory ceiling: the best mix (derived, so a cache entry cannot contradict it)."""
        return max(self.bandwidth_by_mix.values())


def cache_file() -> Path:
    return cache_root() / "calibration.json"


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
    """Median device time of fn over back-to-back calls: the host enqueues every call before the device has
    finished the first, so no launch gap sits inside an event pair (a gap would lower the ceiling)."""
    import torch
    for _ in range(3):
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
    torch.cuda.synchronize()
    for begin, end in events:
        begin.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return stats.median([begin.elapsed_time(end) for begin, end in events])


# name -> (fp32 tensors it touches, each read or written once per call; the operation (torch, tensors))
STREAMS = {
    "copy (1 read : 1 write)": (2, lambda torch, t: t[1].copy_(t[0])),
    "add (2 reads : 1 write)": (3, lambda torch, t: torch.add(t[0], t[1], out=t[2])),
    "sum (read only)": (1, lambda torch, t: t[0].sum()),
}


def measure_stream(name: str, nbytes: int = STREAM_BYTES) -> float:
    """Bytes read + written per second by one STREAMS entry, its tensors sized to move ``nbytes`` per call."""
    import torch
    count, operation = STREAMS[name]
    elements = nbytes // (4 * count)
    tensors = [torch.randn(elements, device="cuda") for _ in range(count)]
    ms = _median_ms(lambda: operation(torch, tensors))
    return count * 4 * elements / (ms / 1e3)


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


def calibrate(on_progress=None, runner: Runner | None = None) -> Calibration:
    """Measure (the GPU held exclusively: nobody else's work in the figures) and cache. Raises UsageError
    when no GPU is present."""
    runner = runner or default_runner()
    device = runner.local_gpu()
    if device is None:
        raise UsageError("calibrate needs a CUDA or ROCm GPU; torch sees none here")
    say = on_progress or (lambda *_: None)
    with runner.exclusive(device, say):
        result = _measure(say)
    _store(result)
    return result


def _measure(say) -> Calibration:
    import torch
    steps = len(STREAMS) + len(MATMUL_DTYPES)
    by_mix = {}
    for i, name in enumerate(STREAMS):
        say(f"bandwidth: {name}", i, steps)
        by_mix[name] = measure_stream(name)
    rates = {}
    for i, name in enumerate(MATMUL_DTYPES, len(STREAMS)):
        say(f"matmul {name} {MATMUL_N}^3", i, steps)
        rates[UNIT_OF[name]] = measure_matmul(name)
    return Calibration(device_name=torch.cuda.get_device_name(),
                         measured_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                         torch_version=torch.__version__, bandwidth_by_mix=by_mix,
                         matmul_flops_per_s=rates)
