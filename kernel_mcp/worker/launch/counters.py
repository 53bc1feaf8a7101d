"""``profile --counters``, run: the candidate's target process (worker/steps/counter_target.py) under Nsight
Compute or rocprofv3, and their output read into a ``CounterReport`` (kernel_mcp/counters/ builds the
commands and parses). Nothing here raises on a profiler failure: ``run_counters`` always returns a report
whose ``message`` says what went wrong and how to fix it.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from kernel_mcp.counters.ncu import ncu_command, parse_ncu_csv
from kernel_mcp.counters.report import NVTX_RANGE, CounterReport, _tail
from kernel_mcp.counters.rocprof import (AMD_UNVERIFIED, ROCPROF_PASSES, _marker_windows, merge_rocprof_passes,
                                         parse_rocprof, rocprof_command)
from kernel_mcp.worker.launch.toolchain import ToolRun, run_tool

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


def _run(command: list[str], env: dict[str, str], timeout_s: float) -> ToolRun:
    """The profiler with stderr folded into stdout in order (its warnings sit among the target's lines)."""
    return run_tool(command, timeout_s=timeout_s, env=env, merge_stderr=True)


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
        run = _run(command, env, timeout_s)
        logged = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    output, returncode = run.transcript, run.returncode
    combined = output + ("\n" + logged if logged else "")
    report = CounterReport(tool="ncu", command=command, raw_tail=_tail(combined))
    if run.timed_out:
        report.message = (f"ncu timed out after {timeout_s:g} s and was killed. Profiling replays every kernel "
                          "in the range many times; use a smaller shape or a longer timeout.")
        return report
    if not run.started:
        report.message = run.message
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
            run = _run(command, env, deadline)
            deadline -= time.monotonic() - started
            outputs.append(run.transcript)
            if run.timed_out:
                report.raw_tail = _tail("\n".join(outputs))
                report.message = (f"rocprofv3 timed out after {timeout_s:g} s (all passes) and was killed; "
                                  f"{AMD_UNVERIFIED}.")
                return report
            trace = _find(out_dir, "kernel_trace.csv")
            counters = _find(out_dir, "counter_collection.csv")
            markers = _find(out_dir, "marker_api_trace.csv")
            if not run.ok or (trace is None and counters is None):
                why = f"exit code {run.returncode}" if run.started else run.message
                notes.append(f"pass {index} ({', '.join(pmc) or 'trace only'}) failed ({why})")
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
