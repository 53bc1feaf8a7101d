"""Nsight Compute (NVIDIA): the command line and the parser of its raw CSV page."""
from __future__ import annotations

import csv
import re
from pathlib import Path

from kernel_mcp.counters.report import NVTX_RANGE, TOP_STALLS, KernelCounters, Stall, _int, _number, _product_of_dims

# ---------------------------------------------------------------------------------------------------
# Nsight Compute (NVIDIA)
# ---------------------------------------------------------------------------------------------------

# Warp-stall reasons of ncu's WarpStateStats section.  Each is collected as
# smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio: the average number of cycles a warp
# spends stalled for that reason per issued instruction.  Names as in the section file shipped with
# Nsight Compute (sections/WarpStateStatistics.section, e.g. a copy at
# https://github.com/xingxerx/Qallow/blob/main/sections/WarpStateStatistics.section); the Profiling Guide
# lists the same reasons as smsp__pcsamp_warps_issue_stalled_* sampling metrics
# (https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#warp-stall-reasons).
# Note "no_instruction" (singular) here, "no_instructions" in the pcsamp list.
# "gmma" exists only on compute capability 9.0 (Hopper: H100/H200, the target) and "imc_miss" only up to
# 9.0; the section file filters both by architecture.  An explicit --metrics list is not filtered, so on
# another architecture remove the reason that does not exist there from this tuple.
# All of NCU_METRICS were accepted by ncu 2025.3.1 on an H200 (driver 580), where "gmma" was the second
# largest stall of a cuBLAS bf16 GEMM: tests/fixtures/counters/ncu_raw_h200.csv.
NCU_STALL_REASONS: tuple[str, ...] = (
    "long_scoreboard", "short_scoreboard", "barrier", "membar", "mio_throttle", "lg_throttle",
    "math_pipe_throttle", "tex_throttle", "wait", "not_selected", "no_instruction",
    "branch_resolving", "dispatch_stall", "drain", "sleeping", "imc_miss", "misc", "gmma", "selected",
)
_STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
_STALL_RE = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")

# Metric names checked against the Nsight Compute section files (SpeedOfLight, MemoryWorkloadAnalysis,
# Occupancy, LaunchStats) and the Profiling Guide's "Launch Metrics" table
# (https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html#launch-metrics).
M_DURATION = "gpu__time_duration.sum"  # SpeedOfLight "Duration"
M_DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
# Recent SpeedOfLight sections show DRAM throughput as gpu__dram_throughput...; accepted when parsing.
M_DRAM_ALT = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
M_SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"  # SpeedOfLight "Compute (SM) Throughput"
M_OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"  # Occupancy "Achieved Occupancy"
M_L1_HIT = "l1tex__t_sector_hit_rate.pct"  # MemoryWorkloadAnalysis "L1/TEX Hit Rate"
M_L2_HIT = "lts__t_sector_hit_rate.pct"  # MemoryWorkloadAnalysis "L2 Hit Rate"
M_REGS = "launch__registers_per_thread"
M_SMEM_STATIC = "launch__shared_mem_per_block_static"
M_SMEM_DYNAMIC = "launch__shared_mem_per_block_dynamic"
M_BLOCK = "launch__block_size"
M_GRID = "launch__grid_size"
# Two cheap launch-time extras (no replay pass): they explain a low achieved occupancy or a tail effect.
M_THEORETICAL_OCC = "sm__maximum_warps_per_active_cycle_pct"  # Occupancy "Theoretical Occupancy"
M_WAVES = "launch__waves_per_multiprocessor"  # LaunchStats "Waves Per SM"

NCU_METRICS: tuple[str, ...] = (
    M_DURATION, M_DRAM, M_SM, M_OCCUPANCY, M_L1_HIT, M_L2_HIT,
    M_REGS, M_SMEM_STATIC, M_SMEM_DYNAMIC, M_BLOCK, M_GRID, M_THEORETICAL_OCC, M_WAVES,
) + tuple(_STALL_METRIC.format(r) for r in NCU_STALL_REASONS)

_NCU_EXTRA = {M_THEORETICAL_OCC: "theoretical_occupancy_pct", M_WAVES: "waves_per_sm"}


def ncu_command(target_argv: list[str], output_csv: Path | None = None,
                metrics: tuple[str, ...] = NCU_METRICS) -> list[str]:
    """The Nsight Compute command line that profiles only the kernels inside the candidate's NVTX range.

    Syntax from the Nsight Compute CLI guide, https://docs.nvidia.com/nsight-compute/NsightComputeCli/:
    * "NVTX Filtering": a push/pop range is selected with ``--nvtx --nvtx-include "A_range/"``; "When only a
      single range name is given, the delimiter [/] must be appended to indicate that this refers to a
      push/pop range" (without it the name means a start/end range).  No "@" = the default domain, which is
      where torch.cuda.nvtx.range_push and nvtxRangePushA put their ranges.  Push/pop ranges are scoped per
      thread by default (--nvtx-push-pop-scope thread): push on the thread that launches the kernels.
    * ``--clock-control none``: leave GPU clocks alone (the default "boost" locks them), so durations match
      what the benchmark measures (Profiling Guide, "Workload Durations").
    * ``--target-processes all`` (the default, spelled out): the candidate may run in a child process.
    * ``--csv --page raw``: one row per kernel launch, one column per metric; ``--csv`` implies
      ``--print-units base``, and a units row follows the header (ncu 2025.3.1 on an H200 printed "ns",
      "byte/block", "%", "inst"; see tests/fixtures/counters/ncu_raw_h200.csv, recorded with this command).
    * ``--log-file``: "Send all tool output to the specified file" -- keeps the CSV apart from whatever the
      target prints.  Caches are flushed before every replay pass (--cache-control all, the default).
    """
    command = [
        "ncu",
        "--clock-control", "none",
        "--target-processes", "all",
        "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/",
        "--csv", "--page", "raw",
        "--metrics", ",".join(metrics),
    ]
    if output_csv is not None:
        command += ["--log-file", str(output_csv)]
    return command + list(target_argv)


# Unit scale factors.  ncu scales byte units by 1000 (K, M, G) and time by 1000 (n, u, m): CLI guide,
# "Metrics and Units".  Binary prefixes are accepted in case a version prints them.
_TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
          "second": 1e6, "s": 1e6}
_TO_BYTES = {"byte": 1, "b": 1, "kbyte": 1e3, "kb": 1e3, "mbyte": 1e6, "mb": 1e6, "gbyte": 1e9, "gb": 1e9,
             "kibyte": 1024, "kib": 1024, "mibyte": 1024**2, "mib": 1024**2}


def _scaled(value: float | None, unit: str, table: dict[str, float], default: float) -> float | None:
    """Scale by the units row.  ncu 2025.3 on an H200 printed "ns" and "byte/block"; older ones "nsecond"."""
    if value is None:
        return None
    base = unit.split("/")[0].strip().lower()
    return value * table.get(base, default) if base else value * default


def _ncu_rows(text: str) -> tuple[list[str], dict[str, str], list[dict[str, str]]]:
    """Split ncu's output into (header, units by column, data rows), skipping everything that is not CSV.

    ncu prints ``==PROF==``/``==WARNING==`` lines and the target's own output around the CSV.  The header
    row starts with "ID","Process ID" and contains "Kernel Name"; the raw page's second row has the units
    (its ID cell is empty).  Every CSV line ncu prints is fully quoted, so lines not starting with a quote
    are not CSV.  A repeated header (several processes) is skipped.
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if line.lstrip().startswith('"ID","Process ID"') and '"Kernel Name"' in line), None)
    if start is None:
        return [], {}, []
    quoted = [line.strip() for line in lines[start:] if line.lstrip().startswith('"')]
    table = list(csv.reader(quoted))
    header = table[0]
    units: dict[str, str] = {}
    rows: list[dict[str, str]] = []
    for cells in table[1:]:
        if cells == header or len(cells) != len(header):
            continue
        row = dict(zip(header, cells))
        if not row.get("ID", "").strip():  # the units row (first one wins)
            if not units:
                units = row
            continue
        rows.append(row)
    return header, units, rows


def _ncu_stalls(row: dict[str, str]) -> list[Stall]:
    """Share of each reason in the sum of all reasons (selected included), top ones without "selected"."""
    ratios: dict[str, float] = {}
    for column, text in row.items():
        match = _STALL_RE.match(column)
        value = _number(text)
        if match and value is not None and value >= 0:
            ratios[match.group(1)] = value
    total = sum(ratios.values())
    if total <= 0:
        return []
    ranked = sorted(((r, v) for r, v in ratios.items() if r != "selected"), key=lambda rv: -rv[1])
    return [Stall(reason=r, share_pct=100.0 * v / total) for r, v in ranked[:TOP_STALLS]]


def _ncu_kernel(row: dict[str, str], units: dict[str, str]) -> KernelCounters:
    def get(metric: str) -> float | None:
        return _number(row.get(metric))

    def size_in_bytes(metric: str) -> float | None:
        return _scaled(get(metric), units.get(metric, "byte"), _TO_BYTES, 1)

    static, dynamic = size_in_bytes(M_SMEM_STATIC), size_in_bytes(M_SMEM_DYNAMIC)
    shared = None if static is None and dynamic is None else (static or 0) + (dynamic or 0)
    dram = get(M_DRAM)
    return KernelCounters(
        name=row.get("Kernel Name", "").strip() or "?",
        duration_us=_scaled(get(M_DURATION), units.get(M_DURATION, "nsecond"), _TO_US, 1e-3),
        dram_pct=dram if dram is not None else get(M_DRAM_ALT),
        compute_pct=get(M_SM),
        occupancy_pct=get(M_OCCUPANCY),
        l1_hit_pct=get(M_L1_HIT),
        l2_hit_pct=get(M_L2_HIT),
        stalls=_ncu_stalls(row),
        registers_per_thread=_int(get(M_REGS)),
        shared_bytes_per_block=_int(shared),
        block_size=_int(get(M_BLOCK)) or _product_of_dims(row.get("Block Size", "")),
        grid_size=_int(get(M_GRID)) or _product_of_dims(row.get("Grid Size", "")),
        extra={key: v for metric, key in _NCU_EXTRA.items() if (v := get(metric)) is not None},
    )


def parse_ncu_csv(text: str) -> list[KernelCounters]:
    """Kernels from ``ncu --csv --page raw`` output (one per launch, in launch order).

    Columns are found by name, never by position, and every metric may be missing or "n/a".
    """
    _, units, rows = _ncu_rows(text)
    return [_ncu_kernel(row, units) for row in rows]


