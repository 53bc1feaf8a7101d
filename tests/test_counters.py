"""Hardware-counter profiling: command lines, parsers on recorded-format fixtures, and run_counters against
fake profiler executables run as real subprocesses (no GPU needed)."""
from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import pytest

from kernel_mcp.counters import (NCU_METRICS, NCU_STALL_REASONS, NVTX_RANGE, ROCPROF_PASSES, CounterReport,
                                 KernelCounters, merge_rocprof_passes, ncu_command, parse_ncu_csv, parse_rocprof,
                                 rocprof_command, summarize)
from kernel_mcp.worker.launch.counters import run_counters

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "counters"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def fake_tool(bin_dir: Path, name: str, body: str, interpreter: str = "/bin/sh") -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!{interpreter}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# ------------------------------------------------------------------------------------------------ commands


def test_ncu_command_filters_on_the_candidate_push_pop_range_and_leaves_clocks_alone():
    cmd = ncu_command(["python3", "bench.py", "--shape", "2"])
    assert cmd[0] == "ncu"
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--target-processes") + 1] == "all"
    assert "--nvtx" in cmd
    # a single push/pop range name needs the trailing "/" (else ncu reads it as a start/end range)
    assert cmd[cmd.index("--nvtx-include") + 1] == f"{NVTX_RANGE}/" == "kernel_mcp_candidate/"
    assert "--csv" in cmd and cmd[cmd.index("--page") + 1] == "raw"
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert metrics == list(NCU_METRICS)
    for name in ("gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                 "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                 "sm__warps_active.avg.pct_of_peak_sustained_active", "l1tex__t_sector_hit_rate.pct",
                 "lts__t_sector_hit_rate.pct", "launch__registers_per_thread",
                 "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic",
                 "launch__block_size", "launch__grid_size",
                 "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
                 "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
                 "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio"):
        assert name in metrics
    assert len(metrics) == len(set(metrics))
    assert cmd[-4:] == ["python3", "bench.py", "--shape", "2"]
    assert "--log-file" not in cmd


def test_ncu_command_log_file_goes_before_the_target(tmp_path):
    cmd = ncu_command(["./app"], tmp_path / "out.csv")
    assert cmd[cmd.index("--log-file") + 1] == str(tmp_path / "out.csv")
    assert cmd[-1] == "./app" and cmd.index("--log-file") < cmd.index("./app")


def test_rocprof_command_traces_kernels_and_markers_and_writes_csv(tmp_path):
    cmd = rocprof_command(["python3", "bench.py"], tmp_path, ("TCC_HIT_sum", "TCC_MISS_sum"), name="p1")
    assert cmd[0] == "rocprofv3"
    assert "--kernel-trace" in cmd and "--marker-trace" in cmd
    pmc = cmd.index("--pmc")
    assert cmd[pmc + 1:pmc + 3] == ["TCC_HIT_sum", "TCC_MISS_sum"]
    assert cmd[cmd.index("--output-format") + 1] == "csv"
    assert cmd[cmd.index("-d") + 1] == str(tmp_path) and cmd[cmd.index("-o") + 1] == "p1"
    assert cmd[cmd.index("--"):] == ["--", "python3", "bench.py"]
    assert "--pmc" not in rocprof_command(["x"], tmp_path)  # the trace-only pass
    assert ROCPROF_PASSES[0] == ()


# ------------------------------------------------------------------------------------------------ ncu parser


def test_parse_ncu_raw_csv_two_kernels():
    kernels = parse_ncu_csv(fixture("ncu_raw.csv"))
    assert [k.name for k in kernels] == [
        "void gemm_tile<128, 128, 32>(const __nv_bfloat16 *, const __nv_bfloat16 *, float *, int, int, int)",
        "rms_norm_kernel",
    ]
    gemm, norm = kernels
    assert gemm.duration_us == pytest.approx(12.3456)  # "12,345.60" nsecond
    assert gemm.dram_pct == pytest.approx(71.23)
    assert gemm.compute_pct == pytest.approx(38.41)
    assert gemm.occupancy_pct == pytest.approx(45.67)
    assert gemm.l1_hit_pct == pytest.approx(12.5)
    assert gemm.l2_hit_pct == pytest.approx(80.25)
    assert gemm.registers_per_thread == 128
    assert gemm.shared_bytes_per_block == 16384 + 32768
    assert gemm.block_size == 256 and gemm.grid_size == 1056
    assert gemm.extra == {"theoretical_occupancy_pct": 50.0, "waves_per_sm": 4.0}
    # ratios 6, 2, 1 (math pipe), 0.5, 0.3, 0.2 and 1 (selected): total 11; "selected" is never listed
    assert [(s.reason, round(s.share_pct, 2)) for s in gemm.stalls] == [
        ("long_scoreboard", 54.55), ("barrier", 18.18), ("math_pipe_throttle", 9.09)]

    assert norm.duration_us == pytest.approx(2.048)
    assert norm.occupancy_pct is None  # "n/a"
    assert norm.l1_hit_pct == 0.0
    assert norm.stalls == []  # every stall cell empty or n/a
    assert norm.block_size == 1024 and norm.grid_size == 132 and norm.shared_bytes_per_block == 0


def test_parse_ncu_real_h200_recording():
    """Recorded on an H200 (ncu 2025.3.1, driver 580) with ncu_command and record_h200.py: warm-up and a
    kernel after the range ran too, so exactly two kernels means the NVTX filter worked."""
    gemm, norm = parse_ncu_csv(fixture("ncu_raw_h200.csv"))
    assert gemm.name.startswith("nvjet_sm90") and "layer_norm" in norm.name
    assert gemm.duration_us == pytest.approx(177.344)  # "177,344" ns
    assert gemm.registers_per_thread == 168 and gemm.block_size == 384 and gemm.grid_size == 132
    assert gemm.shared_bytes_per_block == 213188  # 0 static + 213,188 dynamic, unit "byte/block"
    assert gemm.dram_pct == pytest.approx(20.71) and gemm.compute_pct is not None
    assert [s.reason for s in gemm.stalls] == ["barrier", "gmma", "long_scoreboard"]  # gmma: Hopper only
    assert norm.grid_size == 8192 and norm.block_size == 128 and norm.shared_bytes_per_block == 24
    assert norm.stalls[0].reason == "long_scoreboard" and norm.extra["waves_per_sm"] == pytest.approx(5.17)
    for kernel in (gemm, norm):
        assert None not in (kernel.occupancy_pct, kernel.l1_hit_pct, kernel.l2_hit_pct)
        assert 0 < sum(s.share_pct for s in kernel.stalls) < 100


def test_parse_ncu_converts_scaled_units_from_the_units_row():
    (kernel,) = parse_ncu_csv(fixture("ncu_raw_scaled_units.csv"))
    assert kernel.duration_us == pytest.approx(1234.5)  # usecond
    assert kernel.shared_bytes_per_block == 1020 + 2050  # Kbyte = 1000 bytes in ncu
    assert kernel.registers_per_thread == 32
    # no launch__block_size/grid_size columns: the "(x, y, z)" columns are the fallback
    assert kernel.block_size == 256 and kernel.grid_size == 16
    assert kernel.dram_pct is None and kernel.stalls == []


def test_parse_ncu_is_empty_without_a_table_and_ignores_the_available_kernels_list():
    text = ('==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\nAvailable Kernels:\n'
            '1. gemm(float *, float *, int)\n')
    assert parse_ncu_csv(text) == []
    assert parse_ncu_csv("") == []


def test_parse_ncu_skips_a_repeated_header():
    text = fixture("ncu_raw_scaled_units.csv")
    body = text.split("\n", 1)[1]  # without the first ==PROF== line
    assert len(parse_ncu_csv(text + body)) == 2


# ------------------------------------------------------------------------------------------------ rocprofv3


def test_parse_rocprof_keeps_kernels_inside_the_roctx_range_and_joins_counters():
    kernels = parse_rocprof(fixture("rocprof_kernel_trace.csv"), fixture("rocprof_counter_collection.csv"),
                            fixture("rocprof_marker_api_trace.csv"))
    assert [k.name.split("(")[0] for k in kernels] == ["void gemm_tile<128, 128, 32>", "rms_norm_kernel"]
    gemm, norm = kernels
    assert gemm.duration_us == pytest.approx(12.0)
    assert gemm.block_size == 256 and gemm.grid_size == 33 * 32  # Grid_Size is in work-items
    assert gemm.extra["grid_work_items"] == 8448 * 32
    assert gemm.registers_per_thread == 128 and gemm.extra["accum_vgpr"] == 64 and gemm.extra["sgpr"] == 80
    assert gemm.shared_bytes_per_block == 65536
    assert gemm.l2_hit_pct == pytest.approx(75.0)
    assert gemm.occupancy_pct == pytest.approx(31.25)
    assert gemm.dram_pct is None and gemm.compute_pct is None and gemm.l1_hit_pct is None
    assert gemm.stalls == []
    assert norm.duration_us == pytest.approx(5.5) and norm.grid_size == 132 and norm.l2_hit_pct == 0.0


def test_parse_rocprof_without_markers_keeps_every_dispatch_in_time_order():
    kernels = parse_rocprof(fixture("rocprof_kernel_trace.csv"), None)
    assert [k.name.split("(")[0] for k in kernels] == [
        "warmup_fill_kernel", "void gemm_tile<128, 128, 32>", "rms_norm_kernel", "l2_flush_kernel"]
    assert all(k.l2_hit_pct is None for k in kernels)


def test_parse_rocprof_from_a_counter_collection_alone():
    kernels = parse_rocprof("", fixture("rocprof_counter_collection.csv"), fixture("rocprof_marker_api_trace.csv"))
    assert len(kernels) == 2
    assert kernels[0].block_size == 256 and kernels[0].grid_size == 270336 // 256
    assert kernels[0].l2_hit_pct == pytest.approx(75.0)


def test_merge_rocprof_passes_adds_bandwidth_from_a_separate_run():
    trace, markers = fixture("rocprof_kernel_trace.csv"), fixture("rocprof_marker_api_trace.csv")
    timing = parse_rocprof(trace, None, markers)
    fetch = parse_rocprof(trace, fixture("rocprof_fetch_counter_collection.csv"), markers)
    cache = parse_rocprof(trace, fixture("rocprof_counter_collection.csv"), markers)
    gemm, norm = merge_rocprof_passes([timing, fetch, cache])
    assert gemm.duration_us == pytest.approx(12.0)
    assert gemm.extra["FETCH_SIZE"] == 46875
    assert gemm.extra["dram_gbps"] == pytest.approx(46875 * 1024 / 12_000)  # KB over 12 us, in GB/s
    assert gemm.l2_hit_pct == pytest.approx(75.0) and gemm.occupancy_pct == pytest.approx(31.25)
    assert norm.extra["dram_gbps"] == pytest.approx(528 * 1024 / 5_500)
    assert merge_rocprof_passes([]) == []


# ------------------------------------------------------------------------------------------------ run_counters


def test_missing_ncu_names_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    report = run_counters(["python3", "bench.py"], {}, 10, "nvidia")
    assert isinstance(report, CounterReport)
    assert not report.available and report.kernels == []
    assert report.tool == "ncu" and "Nsight Compute" in report.message and "PATH" in report.message


def test_missing_rocprofv3_names_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    report = run_counters(["python3", "bench.py"], {}, 10, "amd")
    assert not report.available and report.tool == "rocprofv3"
    assert "rocprofiler-sdk" in report.message and report.unverified


def test_unknown_vendor_is_a_message_not_an_exception():
    report = run_counters(["x"], {}, 1, "intel")
    assert not report.available and "vendor" in report.message


def test_permission_error_explains_the_fix(tmp_path):
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "ncu", """echo "==PROF== Connected to process 4242 (/usr/bin/python3)"
echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0. For instructions on enabling permissions and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM"
echo "==WARNING== No kernels were profiled."
exit 1
""")
    report = run_counters(["python3", "bench.py"], {"PATH": str(bin_dir)}, 30, "nvidia")
    assert not report.available and report.kernels == []
    assert "ERR_NVGPUCTRPERM" in report.message
    assert "NVreg_RestrictProfilingToAdminUsers=0" in report.message and "sudo" in report.message
    assert "ERR_NVGPUCTRPERM" in report.raw_tail
    assert report.command[0] == str(bin_dir / "ncu") and report.command[-2:] == ["python3", "bench.py"]


def test_no_kernels_profiled_explains_the_nvtx_filter(tmp_path):
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "ncu", 'echo "==WARNING== No kernels were profiled."\n')
    report = run_counters(["python3", "bench.py"], {"PATH": str(bin_dir)}, 30, "nvidia")
    assert not report.available
    assert NVTX_RANGE in report.message and "range_push" in report.message


def test_timeout_kills_the_profiler_and_says_so(tmp_path):
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "ncu", "echo starting\nsleep 60 &\nsleep 60\n")  # children share the process group
    started = time.monotonic()
    report = run_counters(["python3", "bench.py"], {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin"}, 1, "nvidia")
    assert time.monotonic() - started < 15
    assert not report.available and report.kernels == []
    assert "timed out" in report.message and "starting" in report.raw_tail


def test_fake_ncu_printing_a_table_gives_kernels(tmp_path):
    bin_dir = tmp_path / "bin"
    args_file = tmp_path / "args.txt"
    fake_tool(bin_dir, "ncu", f"""for a in "$@"; do echo "$a" >> "{args_file}"; done
cat "{FIXTURES / 'ncu_raw.csv'}"
""")
    report = run_counters(["python3", "bench.py"], {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin"}, 30, "nvidia")
    assert report.available and report.tool == "ncu" and not report.unverified
    assert [k.name for k in report.kernels][1] == "rms_norm_kernel"
    assert report.kernels[0].stalls[0].reason == "long_scoreboard"
    args = args_file.read_text().splitlines()
    assert args[args.index("--nvtx-include") + 1] == "kernel_mcp_candidate/"
    assert args[args.index("--clock-control") + 1] == "none"
    assert "--log-file" in args and args[-2:] == ["python3", "bench.py"]
    assert len(report.raw_tail) <= 3000


def test_fake_ncu_writing_its_log_file_gives_kernels_and_keeps_a_nonzero_exit_note(tmp_path):
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "ncu", f"""import shutil, sys
args = sys.argv[1:]
shutil.copy({str(FIXTURES / 'ncu_raw_scaled_units.csv')!r}, args[args.index("--log-file") + 1])
print("target says hello")
sys.exit(3)
""", interpreter=sys.executable)
    report = run_counters(["./app"], {"PATH": str(bin_dir)}, 30, "cuda")
    assert report.available and len(report.kernels) == 1
    assert "exited with code 3" in report.message


def test_fake_rocprofv3_runs_every_pass_and_merges(tmp_path):
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "rocprofv3", f"""import pathlib, shutil, sys
args = sys.argv[1:]
out = pathlib.Path(args[args.index("-d") + 1]) / "host" / "1234"
name = args[args.index("-o") + 1]
pmc = args[args.index("--pmc") + 1:args.index("--output-format")] if "--pmc" in args else []
fixtures = pathlib.Path({str(FIXTURES)!r})
if "WRITE_SIZE" in pmc:
    print("ROCPROFILER error: counters cannot be collected in a single pass")
    sys.exit(1)
out.mkdir(parents=True)
shutil.copy(fixtures / "rocprof_kernel_trace.csv", out / (name + "_kernel_trace.csv"))
shutil.copy(fixtures / "rocprof_marker_api_trace.csv", out / (name + "_marker_api_trace.csv"))
if "FETCH_SIZE" in pmc:
    shutil.copy(fixtures / "rocprof_fetch_counter_collection.csv", out / (name + "_counter_collection.csv"))
elif pmc:
    shutil.copy(fixtures / "rocprof_counter_collection.csv", out / (name + "_counter_collection.csv"))
print("pass", name, "done")
""", interpreter=sys.executable)
    report = run_counters(["python3", "bench.py"], {"PATH": str(bin_dir)}, 60, "amd")
    assert report.available and report.tool == "rocprofv3" and report.unverified
    assert "not verified on AMD hardware" in report.message
    assert "WRITE_SIZE" in report.message  # the failed pass is reported, the others still count
    gemm, norm = report.kernels
    assert gemm.duration_us == pytest.approx(12.0) and gemm.l2_hit_pct == pytest.approx(75.0)
    assert gemm.extra["dram_gbps"] == pytest.approx(4000.0) and norm.occupancy_pct == pytest.approx(12.5)
    assert "pass pass0 done" in report.raw_tail
    assert report.command[report.command.index("--"):] == ["--", "python3", "bench.py"]


# ------------------------------------------------------------------------------------------------ summary


def test_summarize_reads_like_a_short_report():
    report = CounterReport(tool="ncu", available=True, kernels=parse_ncu_csv(fixture("ncu_raw.csv")))
    text = summarize(report)
    assert "ncu: 2 kernel launch(es)" in text and "gemm_tile" in text and "rms_norm_kernel" in text
    assert "long_scoreboard 55%" in text and "DRAM 71.2% of peak" in text
    assert "occupancy n/a" in text  # the second kernel's missing value
    assert "grid 1056 blocks x 256 threads" in text and "49152 B shared/block" in text
    assert len(text.splitlines()) <= 12


def test_summarize_unavailable_and_unverified():
    assert "unavailable" in summarize(CounterReport(tool="ncu", message="ERR_NVGPUCTRPERM: ..."))
    amd = CounterReport(tool="rocprofv3", available=True, unverified=True,
                        kernels=[KernelCounters(name="k", duration_us=1.0)])
    assert "not verified on AMD hardware" in summarize(amd)


def test_stall_reason_list_matches_the_metric_list():
    stall_metrics = [m for m in NCU_METRICS if m.startswith("smsp__average_warps_issue_stalled_")]
    assert len(stall_metrics) == len(NCU_STALL_REASONS)
    assert "selected" in NCU_STALL_REASONS and "no_instruction" in NCU_STALL_REASONS
