"""HIP C++ for AMD targets: turn a candidate's CUDA source into HIP the way ROCm torch's load_inline does
(torch.utils.hipify), compile it device-only with hipcc once per target, and read LLVM's resource remarks.

``-Rpass-analysis=kernel-resource-usage`` makes the AMDGPU backend print, per kernel, its SGPRs, VGPRs,
AGPRs, scratch bytes per lane, occupancy in waves per SIMD, spills and LDS bytes. ``-S`` keeps the AMDGCN
text for instruction counts. One hipcc call per target: the remarks do not say which target they belong to,
and a target this hipcc does not know then fails alone.

torch's headers are those of the installed (usually CPU) torch, as on the CUDA path. Two things a CPU wheel
lacks are stood in for: c10's cuda_cmake_macros.h (cuda.include_flags) and rocThrust's thrust/complex.h,
which c10/util/complex.h includes under __HIPCC__ (a declaration-only stand-in: compiling is all that is
needed, nothing is linked or run). ATen/hip/* headers (what hipify makes of ATen/cuda/*) only ship with a
ROCm build of torch; a source that includes them gets an error saying so.
"""
from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import shutil
from pathlib import Path

from kernel_mcp.backends.cuda import INLINE_PREFIX, include_flags
from kernel_mcp.worker import run_tool, tool_env

HIPCC_TIMEOUT_S = 900
VERSION_TIMEOUT_S = 60
# INLINE_PREFIX as hipify rewrites it (cuda.h and cuda_runtime.h both become hip_runtime.h): the prefix of an
# inline source that is already HIP, with the same number of lines so errors map back the same way
HIP_INLINE_PREFIX = "#include <torch/types.h>\n#include <hip/hip_runtime.h>\n#include <hip/hip_runtime.h>\n\n"
# the first ROCm release whose compiler knows these targets (ROCm release notes, "supported GPUs")
MIN_ROCM = {"gfx942": "6.0", "gfx950": "7.0"}

_THRUST_COMPLEX = """#pragma once
// kernel_mcp compile-only stand-in for rocThrust's thrust/complex.h, which c10/util/complex.h includes under
// __HIPCC__: enough to parse torch's headers. Device code that really does complex math on c10::complex
// fails to link with it (nothing is linked here).
namespace thrust {
template <typename T>
struct complex {
  T re{}, im{};
  __host__ __device__ constexpr complex(T r = T(), T i = T()) : re(r), im(i) {}
  template <typename U>
  __host__ __device__ constexpr complex(const complex<U>& o) : re(o.real()), im(o.imag()) {}
  __host__ __device__ constexpr T real() const { return re; }
  __host__ __device__ constexpr T imag() const { return im; }
};
#define KMCP_UNARY(fn) template <typename T> __host__ __device__ complex<T> fn(const complex<T>&);
KMCP_UNARY(exp) KMCP_UNARY(log) KMCP_UNARY(log10) KMCP_UNARY(log2) KMCP_UNARY(log1p) KMCP_UNARY(expm1)
KMCP_UNARY(sqrt) KMCP_UNARY(sin) KMCP_UNARY(cos) KMCP_UNARY(tan) KMCP_UNARY(asin) KMCP_UNARY(acos)
KMCP_UNARY(atan) KMCP_UNARY(sinh) KMCP_UNARY(cosh) KMCP_UNARY(tanh) KMCP_UNARY(asinh) KMCP_UNARY(acosh)
KMCP_UNARY(atanh) KMCP_UNARY(conj) KMCP_UNARY(proj)
#undef KMCP_UNARY
template <typename T> __host__ __device__ T abs(const complex<T>&);
template <typename T> __host__ __device__ T arg(const complex<T>&);
template <typename T> __host__ __device__ T norm(const complex<T>&);
template <typename T, typename U> __host__ __device__ complex<T> pow(const complex<T>&, const complex<U>&);
template <typename T, typename U> __host__ __device__ complex<T> pow(const complex<T>&, const U&);
template <typename T, typename U> __host__ __device__ complex<U> pow(const T&, const complex<U>&);
template <typename T> __host__ __device__ complex<T> polar(const T&, const T& = T());
}  // namespace thrust
"""


def hipcc() -> str | None:
    rocm = Path(os.environ.get("ROCM_PATH", "/opt/rocm")) / "bin" / "hipcc"
    return shutil.which("hipcc") or (str(rocm) if rocm.exists() else None)


def environment() -> dict[str, str]:
    """hipcc picks the NVIDIA platform when nvcc is on the PATH unless told otherwise (the rest: the
    allowlisted environment every toolchain binary gets)."""
    return tool_env(HIP_PLATFORM="amd")


@functools.cache
def version() -> str:
    """e.g. "HIP 5.2.21153-0, clang 15.0.6" (what this hipcc is, for errors and the toolchain record)."""
    tool = hipcc()
    if tool is None:
        return "missing"
    run = run_tool([tool, "--version"], timeout_s=VERSION_TIMEOUT_S, env=environment())
    if not run.started or run.timed_out:
        return "unknown"
    hip = re.search(r"HIP version:\s*(\S+)", run.stdout)
    clang = re.search(r"clang version\s*(\S+)", run.stdout)
    return ", ".join(part for part in (f"HIP {hip[1]}" if hip else "", f"clang {clang[1]}" if clang else "")
                     if part) or "unknown"


# ---- sources


def is_hip(text: str) -> bool:
    return bool(re.search(r"#\s*include\s*[<\"]hip/hip_runtime(?:_api)?\.h[>\"]", text))


# Code hipify cannot carry over to AMD: inline PTX, and NVIDIA-only libraries
_NVIDIA_ONLY = {r"\basm\s*(?:volatile\s*)?\(\s*\"[^\"]*(?:\b(?:ld|st|mma|wgmma|cp|mov|ldmatrix)\.|%%)":
                "inline PTX assembly", r"#\s*include\s*[<\"](?:cute|cutlass)/": "CUTLASS/CuTe",
                r"#\s*include\s*[<\"]cuda/(?:barrier|pipeline|ptx)": "libcu++'s cuda/ barrier/pipeline/ptx"}


def nvidia_only(text: str) -> str | None:
    """What in a CUDA source has no HIP translation, or None."""
    return next((what for pattern, what in _NVIDIA_ONLY.items() if re.search(pattern, text)), None)


def hipify(cuda_file: Path) -> Path:
    """The HIP translation of one CUDA file, written beside it (``x.cu`` -> ``x.hip``), by the same call ROCm
    torch's load_inline / load makes on their sources."""
    from torch.utils.hipify import hipify_python
    folder = str(cuda_file.parent.resolve())
    # with show_* off, hipify writes nothing to stdout (the MCP channel under stdio; redirecting it would be
    # process-wide, so it is left alone) and one "Successfully preprocessed" line to stderr, kept out of logs
    with contextlib.redirect_stderr(io.StringIO()):
        done = hipify_python.hipify(project_directory=folder, output_directory=folder,
                                    extra_files=[str(cuda_file.resolve())], is_pytorch_extension=True,
                                    hipify_extra_files_only=True, show_detailed=False, show_progress=False)
    entry = done.get(str(cuda_file.resolve()))
    # hipify remembers every file it has seen in a module-level dict; forget ours (a long-lived server)
    hipify_python.HIPIFY_FINAL_RESULT.pop(str(cuda_file.resolve()), None)
    return Path(entry.hipified_path) if entry is not None and entry.hipified_path else cuda_file


def prepare_inline(text: str, scratch: Path, stem: str) -> tuple[Path, int]:
    """(HIP file, lines before the user's text in it) for an inline cuda_sources text: CUDA is hipified after
    torch's prefix is put in front, as ROCm torch does; HIP is used as it is behind the same prefix."""
    folder = scratch / "hip"
    folder.mkdir(parents=True, exist_ok=True)
    if is_hip(text):
        source = folder / f"{stem}.hip"
        source.write_text(HIP_INLINE_PREFIX + text)
        return source, HIP_INLINE_PREFIX.count("\n")
    cuda_file = folder / f"{stem}.cu"
    cuda_file.write_text(INLINE_PREFIX + text)
    source = hipify(cuda_file)
    return source, INLINE_PREFIX.count("\n") + added_lines(cuda_file, source)


def prepare_file(original: Path, scratch: Path, index: int) -> tuple[Path, int]:
    """(HIP file, lines hipify added at its top) for a source file given to load(): .hip files and files that
    already include hip_runtime.h as they are; .cu files hipified in a copy (their folder stays on -I)."""
    text = original.read_text(errors="replace")
    if original.suffix == ".hip" or is_hip(text):
        return original, 0
    folder = scratch / "hip" / f"file{index}"
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / original.name
    copy.write_text(text)
    source = hipify(copy)
    return source, added_lines(copy, source)


def added_lines(cuda_file: Path, hip_file: Path) -> int:
    """hipify adds lines only at the top (its banner, a hip_runtime.h include) and rewrites the rest line for
    line, so the difference in length is the shift of every later line."""
    if hip_file == cuda_file:
        return 0
    return max(0, len(hip_file.read_text(errors="replace").splitlines())
               - len(cuda_file.read_text(errors="replace").splitlines()))


# ---- compiling


def hip_include_flags(scratch: Path) -> list[str]:
    stub = scratch / "stub" / "thrust" / "complex.h"
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text(_THRUST_COMPLEX)
    return include_flags(scratch)  # torch's, Python's and scratch/stub


def torch_hip_flags() -> list[str]:
    """The defines ROCm torch compiles extensions' HIP sources with (cpp_extension's COMMON_HIP(CC)_FLAGS)."""
    import torch.utils.cpp_extension as ext
    flags = [*getattr(ext, "COMMON_HIP_FLAGS", []), *getattr(ext, "COMMON_HIPCC_FLAGS", [])]
    return ["-DWITH_HIP", *(f for f in flags if f.startswith("-D"))]


def hipcc_command(source: Path, out: Path, target: str, extra: list[str], includes: list[str]) -> list[str]:
    # C++17 as on the CUDA path: clang 15 (Debian's hipcc) crashes on torch's headers in C++20 mode
    return [hipcc() or "hipcc", f"--offload-arch={target}", "--cuda-device-only", "-S", "-O3", "-std=c++17",
            "-w", "-Rpass-analysis=kernel-resource-usage", *torch_hip_flags(), *includes,
            f"-I{source.parent}", *extra, str(source), "-o", str(out)]


def compile_amd(source: Path, target: str, extra: list[str], includes: list[str], scratch: Path,
                workdir: Path) -> tuple[int, str, str]:
    """(exit code, hipcc's output with the remarks, AMDGCN text) for one target; a hipcc that could not start or
    ran out of time is a failure whose output says so."""
    out = scratch / f"{source.stem}-{target}.s"
    run = run_tool(hipcc_command(source, out, target, extra, includes), timeout_s=HIPCC_TIMEOUT_S, cwd=workdir,
                   env=environment())
    asm = out.read_text(errors="replace") if run.ok and out.exists() else ""
    return run.exit_status, run.transcript, asm


# ---- reading the output

_REMARK = re.compile(r"remark:\s+(Function Name|SGPRs|VGPRs|AGPRs|ScratchSize \[bytes/lane\]|"
                     r"Occupancy \[waves/SIMD\]|SGPRs Spill|VGPRs Spill|LDS Size \[bytes/block\]):\s*(\S+)")
_KEYS = {"SGPRs": "sgprs", "VGPRs": "vgprs", "AGPRs": "agprs", "ScratchSize [bytes/lane]": "scratch_bytes",
         "Occupancy [waves/SIMD]": "waves_per_simd", "SGPRs Spill": "sgpr_spills", "VGPRs Spill": "vgpr_spills",
         "LDS Size [bytes/block]": "lds_bytes"}


def parse_remarks(report: str) -> list[dict]:
    """One entry per kernel from the kernel-resource-usage remarks (LLVM's AMDGPUResourceUsageAnalysis)."""
    entries: list[dict] = []
    for field, value in _REMARK.findall(report):
        if field == "Function Name":
            entries.append({"mangled": value})
        elif entries and value.isdigit():
            entries[-1][_KEYS[field]] = int(value)
    return entries


def kernel_asm(amdgcn: str) -> dict[str, str]:
    """Each function's AMDGCN body, from its label to LLVM's ``.Lfunc_endN`` marker, by (mangled) name."""
    bodies = {}
    for found in re.finditer(r"^([\w.$]+):[^\n]*\n(.*?)^\.Lfunc_end\d+:", amdgcn, re.MULTILINE | re.DOTALL):
        bodies[found[1]] = found[2]
    return bodies


_ERROR = re.compile(r"^(.*?):(\d+):\d+: (?:fatal )?error: (.*)$", re.MULTILINE)
_DRIVER_ERROR = re.compile(r"^(?:clang|hipcc)[^:]*: error: (.*)$", re.MULTILINE)
_MISSING = re.compile(r"'((?:ATen|c10|torch)/hip/[^']+)' file not found")


def first_error(report: str) -> tuple[str, int, str] | None:
    """(file, line, message) of clang's first error in a source."""
    found = _ERROR.search(report)
    return (found[1], int(found[2]), found[3]) if found else None


def target_problem(report: str, target: str) -> str | None:
    """A clear message when the failure is this hipcc not supporting the target at all (not the source)."""
    driver = _DRIVER_ERROR.search(report)
    if not driver:
        return None
    text = driver[1].split(";")[0].strip()  # clang goes on to explain the target-ID syntax
    if "invalid target ID" in text or ("unsupported" in text and target in text):
        need = f"ROCm >= {MIN_ROCM[target]}" if target in MIN_ROCM else f"a ROCm release that supports {target}"
        return (f"this hipcc ({version()}) does not know {target}; install {need} for {target} "
                f"(clang: {text})")
    if "device library" in text:
        return (f"this hipcc ({version()}) has no ROCm device library for {target}; install "
                f"a ROCm release that supports {target} (clang: {text})")
    return f"hipcc: {driver[1].strip()}"


def missing_torch_hip_header(report: str) -> str | None:
    found = _MISSING.search(report)
    if not found:
        return None
    import torch
    return (f"{found[1]} not found: hipify turns ATen/cuda/* and c10/cuda/* includes into their hip/ "
            f"versions, which only a ROCm build of torch ships (this torch is {torch.__version__}). Compile the "
            "AMD targets where ROCm torch is installed, or keep such includes out of the kernel source")
