"""The counter report's vocabulary (CounterReport, KernelCounters, Stall) and small parsing helpers."""
from __future__ import annotations

import math
import re
from typing import Literal

from pydantic import BaseModel, Field

NVTX_RANGE = "kernel_mcp_candidate"
RAW_TAIL_CHARS = 3000
TOP_STALLS = 3

# ---------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------


class Stall(BaseModel):
    """One warp-stall reason and its share (%) of all warp cycles per issued instruction."""

    reason: str
    share_pct: float


class KernelCounters(BaseModel):
    """One kernel launch.  ``None`` where the profiler did not give (or we could not derive) a number."""

    name: str
    duration_us: float | None = None
    dram_pct: float | None = None  # DRAM throughput, % of peak
    compute_pct: float | None = None  # SM throughput, % of peak
    occupancy_pct: float | None = None  # achieved occupancy
    l1_hit_pct: float | None = None
    l2_hit_pct: float | None = None
    stalls: list[Stall] = Field(default_factory=list)  # top reasons, largest first, "selected" excluded
    registers_per_thread: int | None = None
    shared_bytes_per_block: int | None = None  # static + dynamic
    block_size: int | None = None  # threads per block
    grid_size: int | None = None  # blocks per grid
    extra: dict[str, float] = Field(default_factory=dict)


class CounterReport(BaseModel):
    tool: Literal["ncu", "rocprofv3", ""] = ""
    available: bool = False
    message: str = ""  # why not available / how to fix / caveats
    command: list[str] = Field(default_factory=list)
    kernels: list[KernelCounters] = Field(default_factory=list)
    unverified: bool = False  # True for AMD until checked on hardware
    raw_tail: str = ""  # last ~3000 characters of the profiler's output (untrusted)


# ---------------------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------------------


def _number(text: object) -> float | None:
    """'1,234.5' -> 1234.5; '', 'n/a', '-' -> None.  ncu prints thousands separators in CSV values."""
    if text is None:
        return None
    s = str(text).strip().replace(",", "")
    if not s:
        return None
    try:
        value = float(s)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _int(value: float | None) -> int | None:
    return None if value is None else round(value)


def _tail(text: str, limit: int = RAW_TAIL_CHARS) -> str:
    return text[-limit:]


def _product_of_dims(text: str) -> int | None:
    """'(256, 1, 1)' -> 256: ncu's "Block Size"/"Grid Size" columns, a fallback for launch__* metrics."""
    parts = [int(p) for p in re.findall(r"\d+", (text or "").replace(",", ""))]
    return math.prod(parts) if parts else None


