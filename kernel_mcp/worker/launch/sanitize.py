"""``sanitize``, run: the candidate's one-call target (worker/steps/counter_target.py) under each Compute
Sanitizer tool in turn, its output read by backends/sanitizer.py. Never raises: a tool that is missing,
times out or fails to start is a report whose ``message`` says so and how to fix it."""
from __future__ import annotations

import os
import shutil
import time

from kernel_mcp.backends.sanitizer import TOOLS, ToolReport, command, parse
from kernel_mcp.counters.report import _tail
from kernel_mcp.worker.launch.toolchain import ToolRun, run_tool

EXECUTABLE = "compute-sanitizer"
INSTALL_HINT = ("compute-sanitizer is not installed or not on PATH: it ships with the CUDA toolkit "
                "(/usr/local/cuda/bin/compute-sanitizer; apt package cuda-sanitizer-<ver>); put its folder on PATH")


def run_sanitizer(target_argv: list[str], env: dict[str, str], timeout_s: float,
                  tools: tuple[str, ...] = TOOLS) -> list[ToolReport]:
    """Each of ``tools`` over ``target_argv``, within ``timeout_s`` for them all. ``env`` is the whole
    environment of the target (an allowlisted one: it runs candidate code); without a PATH it gets this
    process's PATH, where the tool is found."""
    full_env = {str(k): str(v) for k, v in env.items()}
    full_env.setdefault("PATH", os.environ.get("PATH", ""))
    # torch's caching allocator carves tensors out of 2 MiB segments it keeps and reuses, so a store past a
    # tensor's end lands inside a live allocation (memcheck sees nothing) and a fresh tensor's memory was
    # written by an earlier one (initcheck sees nothing): both found nothing on an H100 (2026-12-05) until
    # every tensor had its own cudaMalloc. Slower, and only in this process.
    full_env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    executable = shutil.which(EXECUTABLE, path=full_env["PATH"])
    if executable is None:
        return [ToolReport(tool=tool, message=INSTALL_HINT) for tool in tools]
    reports, left = [], timeout_s
    for tool in tools:
        if left <= 0:
            reports.append(ToolReport(tool=tool, message=f"not run: the {timeout_s:g} s for all tools were spent"))
            continue
        began = time.monotonic()
        run = run_tool(command(executable, tool, target_argv), timeout_s=left, env=full_env, merge_stderr=True)
        left -= time.monotonic() - began
        reports.append(_report(tool, run))
    return reports


def _report(tool: str, run: ToolRun) -> ToolReport:
    if not run.started:
        return ToolReport(tool=tool, message=run.message)
    report = parse(tool, run.transcript)
    report.raw_tail = _tail(run.transcript)
    if run.timed_out:
        report.message = (f"{tool} timed out and was killed (it runs every kernel many times slower than "
                          "normal): use a smaller shape or a longer timeout")
    elif not report.ran:
        report.message = f"{EXECUTABLE} printed nothing of its own (exit code {run.returncode}); see raw_tail"
    elif run.returncode not in (0, None):
        report.message = f"the target exited with code {run.returncode} under {tool}; see raw_tail"
    return report
