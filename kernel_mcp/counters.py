"""``profile --counters``: hardware counters for one benchmark shape of a candidate, as a few numbers.

The target process pushes an NVTX (ROCTx on AMD) push/pop range named ``NVTX_RANGE`` around the
candidate's call only; warm-up, input generation and the L2 flush stay outside it.  On NVIDIA, Nsight
Compute profiles only the kernels launched inside that range.  On AMD, rocprofv3 has no range filter,
so every pass also traces markers and the kernels are kept by the range's time window.

Nothing here raises on a profiler failure: ``run_counters`` always returns a ``CounterReport`` whose
``message`` says what went wrong and how to fix it.

The ncu command and parser were checked on an H200 (ncu 2025.3.1): tests/fixtures/counters/ncu_raw_h200.csv.
The rocprofv3 side follows the ROCprofiler-SDK documentation only (``unverified=True``).
"""
from __future__ import annotations

import csv
import io
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
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


def ncu_command(target_argv: list[str], output_csv: Path | None = None) -> list[str]:
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
        "--metrics", ",".join(NCU_METRICS),
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


# ---------------------------------------------------------------------------------------------------
# rocprofv3 (AMD) -- parsed from the ROCprofiler-SDK documentation, not verified on AMD hardware
# ---------------------------------------------------------------------------------------------------

# Counter passes.  "--pmc ... the job fails if the entire set of counters can't be collected in a single
# pass" (https://rocm.docs.amd.com/projects/rocprofiler-sdk/en/latest/how-to/using-rocprofv3.html), so each
# group below is one application run.  Definitions for gfx942 (MI300) from rocprofiler-sdk's
# counter_defs.yaml (https://github.com/ROCm/rocprofiler-sdk, source/share/rocprofiler-sdk/counter_defs.yaml):
# * FETCH_SIZE / WRITE_SIZE: kilobytes read from / written to video memory (HBM), from TCC_EA0_* requests.
#   FETCH_SIZE alone uses three TCC counters, hence its own pass.
# * TCC_HIT_sum / TCC_MISS_sum: L2 hits and misses summed over channels.  The L2CacheHit derived metric
#   (100*hit/(hit+miss)) is not defined for gfx942 there, so the percentage is computed here.
# * OccupancyPercent (gfx942): 400*SQ_WAVE_CYCLES/GRBM_GUI_ACTIVE/CU_NUM/32, "GPU Occupancy as % of maximum".
# The first pass collects no counters: its kernel trace gives durations without counter overhead.
# Whether each group really fits one pass is unverified; ``rocprofv3-avail pmc-check <counters>`` says.
ROCPROF_PASSES: tuple[tuple[str, ...], ...] = (
    (),
    ("FETCH_SIZE",),
    ("WRITE_SIZE",),
    ("TCC_HIT_sum", "TCC_MISS_sum", "OccupancyPercent", "SQ_WAVES"),
)
AMD_UNVERIFIED = "parsed from documentation, not verified on AMD hardware"


def rocprof_command(target_argv: list[str], out_dir: Path | str, pmc: tuple[str, ...] | list[str] = (),
                    name: str = "counters") -> list[str]:
    """One rocprofv3 run: kernel trace + marker trace (+ counters), CSV files under ``out_dir``.

    From "Using rocprofv3" (https://rocm.docs.amd.com/projects/rocprofiler-sdk/en/latest/how-to/using-rocprofv3.html):
    ``--kernel-trace`` writes ``<name>_kernel_trace.csv``; ``--marker-trace`` writes
    ``<name>_marker_api_trace.csv`` (ROCTx ranges, used to keep only the candidate's kernels: rocprofv3 has
    no NVTX-style range filter, only kernel-name regexes); ``--pmc A B`` writes ``<name>_counter_collection.csv``
    (input-file runs use ``pmc_N/`` subfolders, so files are looked up recursively); ``-d`` sets the
    directory and ``-o`` the file prefix; ``--output-format csv`` because the default is now rocpd (SQLite).
    """
    command = ["rocprofv3", "--kernel-trace", "--marker-trace"]
    if pmc:
        command += ["--pmc", *pmc]
    command += ["--output-format", "csv", "-d", str(out_dir), "-o", name, "--", *target_argv]
    return command


def _csv_dicts(text: str | None) -> list[dict[str, str]]:
    if not text or not text.strip():
        return []
    return [{k.strip(): (v or "").strip() for k, v in row.items() if k}
            for row in csv.DictReader(io.StringIO(text.strip()))]


def _first(row: dict[str, str], *columns: str) -> float | None:
    for column in columns:
        value = _number(row.get(column))
        if value is not None:
            return value
    return None


def _marker_windows(marker_csv: str | None, range_name: str) -> list[tuple[float, float]]:
    """(start, end) ns of every ROCTx range whose message is ``range_name`` (Function column)."""
    windows = []
    for row in _csv_dicts(marker_csv):
        if row.get("Function", "") == range_name or row.get("Message", "") == range_name:
            start, end = _number(row.get("Start_Timestamp")), _number(row.get("End_Timestamp"))
            if start is not None and end is not None:
                windows.append((start, end))
    return windows


def _blocks(grid: float | None, workgroup: float | None) -> int | None:
    if grid is None or not workgroup:
        return None
    return math.ceil(grid / workgroup)


def _amd_launch_shape(row: dict[str, str]) -> tuple[int | None, int | None, float | None]:
    """(threads per block, blocks, grid work-items).

    rocprofv3's Grid_Size is in work-items (HSA dispatch-packet semantics), although the field table calls it
    "thread blocks": in the documentation's own sample a 64-thread workgroup over Grid_Size 1048576 gives
    SQ_WAVES 16384 = 1048576/64, one wave per block.  So blocks = ceil(grid/workgroup) per dimension.
    """
    wg = [_number(row.get(f"Workgroup_Size_{d}")) for d in "XYZ"]
    grid = [_number(row.get(f"Grid_Size_{d}")) for d in "XYZ"]
    if all(v is not None for v in wg + grid):
        threads = int(wg[0] * wg[1] * wg[2])
        blocks = 1
        for g, w in zip(grid, wg):
            blocks *= _blocks(g, w) or 1
        return threads, blocks, grid[0] * grid[1] * grid[2]
    threads_f, grid_total = _number(row.get("Workgroup_Size")), _number(row.get("Grid_Size"))
    return _int(threads_f), _blocks(grid_total, threads_f), grid_total


def _amd_base(row: dict[str, str]) -> KernelCounters:
    """A kernel from a kernel-trace (or counter-collection) row: name, duration, launch shape, resources."""
    threads, blocks, work_items = _amd_launch_shape(row)
    start, end = _number(row.get("Start_Timestamp")), _number(row.get("End_Timestamp"))
    extra: dict[str, float] = {}
    for column, key in (("Accum_VGPR_Count", "accum_vgpr"), ("SGPR_Count", "sgpr"),
                        ("Scratch_Size", "scratch_bytes"), ("Private_Segment_Size", "private_segment_bytes")):
        if (value := _number(row.get(column))) is not None:
            extra[key] = value
    if work_items is not None:
        extra["grid_work_items"] = work_items
    return KernelCounters(
        name=row.get("Kernel_Name", "") or "?",
        duration_us=(end - start) / 1000.0 if start is not None and end is not None and end >= start else None,
        registers_per_thread=_int(_first(row, "Arch_VGPR_Count", "VGPR_Count")),  # VGPRs are per lane
        # LDS_Block_Size in newer traces; older ones give Group_Segment_Size ("does not include any
        # dynamically allocated group segment memory"), the better-than-nothing fallback.
        shared_bytes_per_block=_int(_first(row, "LDS_Block_Size", "Group_Segment_Size")),
        block_size=threads,
        grid_size=blocks,
        extra=extra,
    )


def _amd_counters(counter_csv: str | None) -> dict[str, dict[str, float]]:
    """Counter values per Dispatch_Id (one CSV row per dispatch and counter; repeated rows are summed)."""
    by_dispatch: dict[str, dict[str, float]] = {}
    for row in _csv_dicts(counter_csv):
        value = _number(row.get("Counter_Value"))
        name = row.get("Counter_Name", "")
        if value is None or not name:
            continue
        counters = by_dispatch.setdefault(row.get("Dispatch_Id", ""), {})
        counters[name] = counters.get(name, 0.0) + value
    return by_dispatch


def _derive_amd(kernel: KernelCounters) -> KernelCounters:
    """Fill the fields that the collected counters justify; the rest stay None."""
    x = kernel.extra
    hit, miss = x.get("TCC_HIT_sum"), x.get("TCC_MISS_sum")
    if hit is not None and miss is not None and hit + miss > 0:
        kernel.l2_hit_pct = 100.0 * hit / (hit + miss)
    if "OccupancyPercent" in x:
        kernel.occupancy_pct = x["OccupancyPercent"]
    fetched, written = x.get("FETCH_SIZE"), x.get("WRITE_SIZE")
    if kernel.duration_us and (fetched is not None or written is not None):
        # KB (1024 bytes, per the definition's /1024) moved per microsecond -> GB/s.  % of peak would need
        # the device's peak HBM bandwidth, which no counter gives, so dram_pct stays None.
        kernel.extra["dram_gbps"] = ((fetched or 0) + (written or 0)) * 1024 / (kernel.duration_us * 1e3)
    return kernel


def parse_rocprof(kernel_trace_csv: str, counter_csv: str | None, marker_csv: str | None = None,
                  range_name: str = NVTX_RANGE) -> list[KernelCounters]:
    """Kernels of one rocprofv3 run, joined with that run's counters by Dispatch_Id.

    With a marker trace that contains ``range_name``, only dispatches that start inside one of its windows
    are kept (kernel timestamps are ns in the same clock as marker timestamps; the target synchronizes
    before popping the range).  Without it, every dispatch is kept.  No warp-stall data on AMD.
    """
    rows = _csv_dicts(kernel_trace_csv)
    if not rows:  # a counter-collection CSV alone also describes each dispatch
        rows = list({r.get("Dispatch_Id", ""): r for r in _csv_dicts(counter_csv)}.values())
    windows = _marker_windows(marker_csv, range_name)
    counters = _amd_counters(counter_csv)
    kernels = []
    for row in sorted(rows, key=lambda r: _number(r.get("Start_Timestamp")) or 0.0):
        start = _number(row.get("Start_Timestamp"))
        if windows and (start is None or not any(lo <= start <= hi for lo, hi in windows)):
            continue
        kernel = _amd_base(row)
        kernel.extra.update(counters.get(row.get("Dispatch_Id", ""), {}))
        kernels.append(_derive_amd(kernel))
    return kernels


def merge_rocprof_passes(passes: list[list[KernelCounters]]) -> list[KernelCounters]:
    """Join the runs kernel by kernel: same name, same occurrence number (each pass is a separate run).

    The first pass (no counters) gives durations and launch shapes; later passes add their counters.
    """
    if not passes:
        return []
    merged = [k.model_copy(deep=True) for k in passes[0]]

    def keyed(kernels: list[KernelCounters]) -> dict[tuple[str, int], KernelCounters]:
        seen: dict[str, int] = {}
        out = {}
        for k in kernels:
            seen[k.name] = seen.get(k.name, 0) + 1
            out[(k.name, seen[k.name])] = k
        return out

    base = keyed(merged)
    for later in passes[1:]:
        for key, kernel in keyed(later).items():
            if key in base:
                counters = {n: v for n, v in kernel.extra.items() if n not in base[key].extra}
                base[key].extra.update(counters)
    for kernel in merged:
        kernel.extra.pop("dram_gbps", None)
        _derive_amd(kernel)
    return merged


# ---------------------------------------------------------------------------------------------------
# Running the profiler
# ---------------------------------------------------------------------------------------------------

_INSTALL_HINT = {
    "ncu": "Nsight Compute is not installed or `ncu` is not on PATH. Install NVIDIA Nsight Compute (it ships "
           "with the CUDA toolkit as nsight-compute, e.g. /usr/local/cuda/bin/ncu; apt package "
           "`nsight-compute` or `cuda-nsight-compute-<ver>`) and put its directory on PATH.",
    "rocprofv3": "rocprofv3 is not installed or not on PATH. Install ROCm's rocprofiler-sdk (package "
                 "`rocprofiler-sdk`; the tool is /opt/rocm/bin/rocprofv3) and add /opt/rocm/bin to PATH.",
}

_PERM_MESSAGE = (
    "ERR_NVGPUCTRPERM: this user may not read the GPU performance counters (NVIDIA restricts them to admin "
    "users by default since driver 418.43). Fix: run the profiler as root (sudo) or with CAP_SYS_ADMIN "
    "(CAP_PERFMON from driver R565); or let all users profile: add `options nvidia "
    "NVreg_RestrictProfilingToAdminUsers=0` to a file in /etc/modprobe.d/, rebuild the initramfs and reload "
    "the driver or reboot. In a container, enable it on the host or start the container with "
    "--cap-add=SYS_ADMIN. See https://developer.nvidia.com/ERR_NVGPUCTRPERM"
)
_NO_KERNELS_MESSAGE = (
    f"No kernels were profiled: the NVTX filter --nvtx-include {NVTX_RANGE}/ matched nothing. The target must "
    f"push a push/pop range named exactly '{NVTX_RANGE}' (torch.cuda.nvtx.range_push / nvtxRangePushA, default "
    "domain) on the same thread that launches the candidate's kernels, launch them before popping it, and the "
    "candidate must launch at least one CUDA kernel (a CPU fallback launches none)."
)


def _vendor_tool(vendor: str) -> str:
    v = vendor.strip().lower()
    if v in ("nvidia", "cuda", "ncu"):
        return "ncu"
    if v in ("amd", "rocm", "hip", "rocprofv3"):
        return "rocprofv3"
    return ""


def _run(command: list[str], env: dict[str, str], timeout_s: float) -> tuple[int | None, str]:
    """(exit code or None on timeout, combined stdout+stderr).  The whole process group dies on timeout."""
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return -1, f"could not start {command[0]}: {exc}"
    try:
        out, _ = proc.communicate(timeout=max(timeout_s, 0.001))
        return proc.returncode, out.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the profiler and the target it launched
        except (ProcessLookupError, PermissionError):
            pass
        try:
            out, _ = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a grandchild left the group and holds the pipe
            proc.kill()
            out = b""
        return None, out.decode("utf-8", "replace")


def _ncu_diagnosis(output: str, returncode: int | None) -> str:
    """Why an ncu run gave no kernels, most specific cause first (a permission error also says "No kernels
    were profiled", so it is checked before that)."""
    if "ERR_NVGPUCTRPERM" in output:
        return _PERM_MESSAGE
    if re.search(r"failed to find metric", output, re.IGNORECASE):
        return ("ncu does not know one of the requested metrics on this GPU (names differ across "
                "architectures; e.g. the 'gmma' stall exists only on Hopper). Check with "
                "`ncu --query-metrics` and adjust NCU_METRICS.")
    if "No kernels were profiled" in output:
        return _NO_KERNELS_MESSAGE
    if returncode not in (0, None):
        return f"ncu exited with code {returncode} and printed no counters; see raw_tail."
    return "ncu printed no counter table; see raw_tail."


def _run_ncu(tool: str, target_argv: list[str], env: dict[str, str], timeout_s: float) -> CounterReport:
    with tempfile.TemporaryDirectory(prefix="kernel_mcp_ncu_") as tmp:
        log = Path(tmp) / "ncu.csv"
        command = ncu_command(target_argv, log)
        command[0] = tool
        returncode, output = _run(command, env, timeout_s)
        logged = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    combined = output + ("\n" + logged if logged else "")
    report = CounterReport(tool="ncu", command=command, raw_tail=_tail(combined))
    if returncode is None:
        report.message = (f"ncu timed out after {timeout_s:g} s and was killed. Profiling replays every kernel "
                          "in the range many times; use a smaller shape or a longer timeout.")
        return report
    kernels = parse_ncu_csv(logged) or parse_ncu_csv(output)
    if not kernels:
        report.message = _ncu_diagnosis(combined, returncode)
        return report
    report.available, report.kernels = True, kernels
    if returncode != 0:
        report.message = f"ncu exited with code {returncode} (the target may have failed); counters were parsed."
    return report


def _find(out_dir: Path, suffix: str) -> str | None:
    files = sorted(out_dir.rglob(f"*{suffix}"))
    return files[0].read_text(encoding="utf-8", errors="replace") if files else None


def _run_rocprof(tool: str, target_argv: list[str], env: dict[str, str], timeout_s: float) -> CounterReport:
    report = CounterReport(tool="rocprofv3", unverified=True)
    deadline = timeout_s
    outputs, passes, notes = [], [], []
    with tempfile.TemporaryDirectory(prefix="kernel_mcp_rocprof_") as tmp:
        for index, pmc in enumerate(ROCPROF_PASSES):
            out_dir = Path(tmp) / f"pass{index}"
            command = rocprof_command(target_argv, out_dir, pmc, name=f"pass{index}")
            command[0] = tool
            report.command = report.command or command
            started = time.monotonic()
            returncode, output = _run(command, env, deadline)
            deadline -= time.monotonic() - started
            outputs.append(output)
            if returncode is None:
                report.raw_tail = _tail("\n".join(outputs))
                report.message = (f"rocprofv3 timed out after {timeout_s:g} s (all passes) and was killed; "
                                  f"{AMD_UNVERIFIED}.")
                return report
            trace = _find(out_dir, "kernel_trace.csv")
            counters = _find(out_dir, "counter_collection.csv")
            markers = _find(out_dir, "marker_api_trace.csv")
            if returncode != 0 or (trace is None and counters is None):
                notes.append(f"pass {index} ({', '.join(pmc) or 'trace only'}) failed with exit code "
                             f"{returncode}")
                continue
            if index == 0 and not _marker_windows(markers, NVTX_RANGE):
                notes.append(f"ROCTx range '{NVTX_RANGE}' not found in the marker trace, so every kernel of "
                             "the process was kept")
            passes.append(parse_rocprof(trace or "", counters, markers))
    report.raw_tail = _tail("\n".join(outputs))
    report.kernels = merge_rocprof_passes(passes) if passes else []
    report.available = bool(report.kernels)
    if not report.kernels and not notes:
        notes.append(f"no kernel dispatches were recorded inside the ROCTx range '{NVTX_RANGE}'")
    report.message = "; ".join(notes + [AMD_UNVERIFIED]) + "."
    return report


def run_counters(target_argv: list[str], env: dict, timeout_s: float, vendor: str) -> CounterReport:
    """Profile ``target_argv`` with ncu (NVIDIA) or rocprofv3 (AMD).  Never raises.

    ``env`` is the whole environment of the profiled process (the target runs candidate code, so the
    caller passes an allowlisted one); without a PATH it gets this process's PATH, where the tool is found.
    """
    tool = _vendor_tool(vendor)
    if not tool:
        return CounterReport(message=f"unknown GPU vendor {vendor!r}: expected 'nvidia' or 'amd'.")
    full_env = {str(k): str(v) for k, v in (env or {}).items()}
    full_env.setdefault("PATH", os.environ.get("PATH", ""))
    path = shutil.which(tool, path=full_env.get("PATH", ""))
    if path is None:
        return CounterReport(tool=tool, message=_INSTALL_HINT[tool], unverified=tool == "rocprofv3")
    try:
        if tool == "ncu":
            return _run_ncu(path, target_argv, full_env, timeout_s)
        return _run_rocprof(path, target_argv, full_env, timeout_s)
    except Exception as exc:  # noqa: BLE001 -- a parser surprise must not take the tool down
        return CounterReport(tool=tool, unverified=tool == "rocprofv3",
                             message=f"counter collection failed inside kernel_mcp: {type(exc).__name__}: {exc}")


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
