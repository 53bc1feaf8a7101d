"""rocprofv3 (AMD, from the ROCprofiler-SDK documentation; not verified on AMD hardware)."""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from kernel_mcp.counters.report import NVTX_RANGE, KernelCounters, _int, _number

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


