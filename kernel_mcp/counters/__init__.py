"""``profile --counters``: hardware counters for one benchmark shape of a candidate, as a few numbers.

The target process pushes an NVTX (ROCTx on AMD) push/pop range named ``NVTX_RANGE`` around the
candidate's call only; warm-up, input generation and the L2 flush stay outside it.  On NVIDIA, Nsight
Compute profiles only the kernels launched inside that range.  On AMD, rocprofv3 has no range filter,
so every pass also traces markers and the kernels are kept by the range's time window.

Pure: the commands, the parsers and the report. Running a profiler is the caller's, in
worker/launch/counters.py (``run_counters``), which never raises on a profiler failure.

The ncu command and parser were checked on an H200 (ncu 2025.3.1): tests/fixtures/counters/ncu_raw_h200.csv.
The rocprofv3 side follows the ROCprofiler-SDK documentation only (``unverified=True``).
"""
from __future__ import annotations

from kernel_mcp.counters.ncu import NCU_METRICS, NCU_STALL_REASONS, ncu_command, parse_ncu_csv
from kernel_mcp.counters.report import NVTX_RANGE, CounterReport, KernelCounters, Stall
from kernel_mcp.counters.rocprof import (AMD_UNVERIFIED, ROCPROF_PASSES, merge_rocprof_passes, parse_rocprof,
                                         rocprof_command)

__all__ = ["NCU_METRICS", "NCU_STALL_REASONS", "NVTX_RANGE", "ROCPROF_PASSES", "CounterReport", "KernelCounters",
           "Stall", "merge_rocprof_passes", "ncu_command", "parse_ncu_csv", "parse_rocprof", "rocprof_command",
           "summarize"]

# ---------------------------------------------------------------------------------------------------
# Summary for a model
# ---------------------------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def _kernel_lines(index: int, k: KernelCounters) -> list[str]:
    duration = "n/a" if k.duration_us is None else f"{k.duration_us:.2f} us"
    rates = (f"    time {duration} | DRAM {_pct(k.dram_pct)} of peak | SM {_pct(k.compute_pct)} of peak | "
             f"occupancy {_pct(k.occupancy_pct)} | L1 hit {_pct(k.l1_hit_pct)} | L2 hit {_pct(k.l2_hit_pct)}")
    lines = [f"[{index}] {k.name}", rates]
    shape = []
    if k.grid_size is not None or k.block_size is not None:
        shape.append(f"grid {k.grid_size if k.grid_size is not None else '?'} blocks x "
                     f"{k.block_size if k.block_size is not None else '?'} threads")
    if k.registers_per_thread is not None:
        shape.append(f"{k.registers_per_thread} regs/thread")
    if k.shared_bytes_per_block is not None:
        shape.append(f"{k.shared_bytes_per_block} B shared/block")
    if shape:
        lines.append("    launch: " + ", ".join(shape))
    if k.stalls:
        lines.append("    top stalls: " + ", ".join(f"{s.reason} {s.share_pct:.0f}%" for s in k.stalls))
    if k.extra:
        shown = ", ".join(f"{key}={value:.4g}" for key, value in sorted(k.extra.items()))
        lines.append(f"    extra: {shown}")
    return lines


def summarize(report: CounterReport) -> str:
    """A few plain lines per kernel for a model to read."""
    if not report.available:
        return f"hardware counters unavailable ({report.tool or 'no profiler'}): {report.message}"
    head = f"{report.tool}: {len(report.kernels)} kernel launch(es) in range '{NVTX_RANGE}'"
    if report.unverified:
        head += f" [{AMD_UNVERIFIED}]"
    lines = [head]
    if report.message:
        lines.append(f"note: {report.message}")
    for index, kernel in enumerate(report.kernels, 1):
        lines += _kernel_lines(index, kernel)
    return "\n".join(lines)

