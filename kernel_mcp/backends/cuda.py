"""CUDA C++ sources of a candidate: compile for the NVIDIA targets with nvcc, read ptxas' report (AMD targets:
backends/hip.py, which reuses this module's includes, demangling and line mapping).

The sources come from worker/steps/cpp_capture.py (what the candidate passes to load_inline / load). They are
compiled the way torch.utils.cpp_extension would (same prepended includes, C++17, torch's headers) but
only to an object file: one nvcc call covers every NVIDIA target (-gencode each), since parsing torch's
headers dominates the time. ``-Xptxas -v`` reports registers, spills, shared memory and stack per kernel.
"""
from __future__ import annotations

import os
import re
import shutil
import sysconfig
from pathlib import Path

from kernel_mcp.backends import nvidia
from kernel_mcp.worker import run_tool

# what load_inline puts before the user's cuda_sources (torch/utils/cpp_extension.py, load_inline)
INLINE_PREFIX = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n\n"
NVCC_TIMEOUT_S = 900
DEMANGLE_TIMEOUT_S = 30
CUOBJDUMP_TIMEOUT_S = 120
GENCODE = {"sm_80": "compute_80", "sm_86": "compute_86", "sm_89": "compute_89", "sm_90": "compute_90",
           "sm_90a": "compute_90a", "sm_100": "compute_100", "sm_100a": "compute_100a", "sm_120": "compute_120"}


def nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidate = Path(home) / "bin" / "nvcc" if home else None
    return str(candidate) if candidate and candidate.exists() else None


def include_flags(scratch: Path) -> list[str]:
    """torch's headers and Python's; plus an empty c10/cuda/impl/cuda_cmake_macros.h, which CPU-only torch
    wheels leave out (it is generated at build time and only sets an export macro)."""
    import torch.utils.cpp_extension as ext
    stub = scratch / "stub" / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text("#pragma once\n")
    dirs = [*ext.include_paths(), str(scratch / "stub"), sysconfig.get_paths()["include"]]
    return [f"-I{d}" for d in dirs]


def nvcc_command(source: Path, out: Path, targets: list[str], extra: list[str], includes: list[str]) -> list[str]:
    gencode = [f"-gencode=arch={GENCODE[t]},code={t}" for t in targets]
    return [nvcc() or "nvcc", "-c", str(source), "-o", str(out), "-std=c++17", "-Xptxas", "-v", "-w",
            *gencode, *includes, *extra]


def compile_nvidia(source: Path, targets: list[str], extra: list[str], scratch: Path) -> tuple[int, str, Path]:
    """(exit code, nvcc's output, object file); an nvcc that could not start or ran out of time is a failure
    whose output says so."""
    out = scratch / (source.stem + ".o")
    run = run_tool(nvcc_command(source, out, targets, extra, include_flags(scratch)), timeout_s=NVCC_TIMEOUT_S,
                   cwd=scratch)
    return run.exit_status, run.transcript, out


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_USED = re.compile(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas(report: str) -> list[dict]:
    """One entry per (kernel, arch) from ``ptxas -v`` output: registers, smem, stack, spills."""
    entries: list[dict] = []
    current: dict | None = None
    for line in report.splitlines():
        entry = _ENTRY.search(line)
        if entry:
            current = {"mangled": entry[1], "target": entry[2]}
            entries.append(current)
            continue
        if current is None:
            continue
        frame = _FRAME.search(line)
        if frame:
            current.update(stack_bytes=int(frame[1]), spill_bytes=int(frame[2]) + int(frame[3]))
        used = _USED.search(line)
        if used:
            current.update(registers=int(used[1]), shared_bytes=int(used[2] or 0))
    return entries


def demangle(names: list[str]) -> dict[str, str]:
    beside_nvcc = Path(nvcc()).parent / "cu++filt" if nvcc() else None
    tool = shutil.which("cu++filt") or (str(beside_nvcc) if beside_nvcc and beside_nvcc.exists() else None) \
        or shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    plain = run_tool([tool], input="\n".join(names), timeout_s=DEMANGLE_TIMEOUT_S).stdout.splitlines()
    return dict(zip(names, plain)) if len(plain) == len(names) else {n: n for n in names}


_ERROR = re.compile(r"^(.*?)\((\d+)\): (?:error|catastrophic error)[^:]*: (.*)$", re.MULTILINE)


def first_error(report: str) -> tuple[str, int, str] | None:
    """(file, line, message) of nvcc's first error."""
    found = _ERROR.search(report)
    return (found[1], int(found[2]), found[3]) if found else None


def map_line(generated_line: int, prefix_lines: int, source_text: str, candidate_text: str) -> int:
    """The candidate-file line of a line of an inline source: where that source's text sits in the file
    (a triple-quoted string holds it verbatim); 0 when it cannot be found."""
    offset = generated_line - prefix_lines  # 1-based line inside source_text
    lines = source_text.splitlines()
    if not 1 <= offset <= len(lines):
        return 0
    anchor = next((i for i, text in enumerate(lines) if text.strip()), None)
    if anchor is None:
        return 0
    file_lines = candidate_text.splitlines()
    for start, text in enumerate(file_lines):
        if text.strip() and lines[anchor].strip() in text:
            return start + 1 + (offset - 1 - anchor)
    return 0


def sass_for(obj: Path, target: str) -> str:
    tool = nvidia.tool("cuobjdump")
    if tool is None:
        return ""
    return run_tool([tool, "-sass", "-arch", target, obj], timeout_s=CUOBJDUMP_TIMEOUT_S).stdout
