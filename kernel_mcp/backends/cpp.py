"""CUDA C++ candidates: capture the sources given to torch.utils.cpp_extension, build them with nvcc for
every NVIDIA target at once, describe each kernel from ptxas' report and the SASS."""
from __future__ import annotations

from pathlib import Path

from kernel_mcp import occupancy
from kernel_mcp.backends import nvidia
from kernel_mcp.backends.targets import Target
from kernel_mcp.backends.triton import ASM_EXCERPT_CHARS
from kernel_mcp.problem import Problem
from kernel_mcp.results import CompileResult, Finding, KernelBuild
from kernel_mcp.worker.steps import environment, run_step

ASSUMED_BLOCK = 256  # CUDA C++ kernels get their block size at launch; occupancy is shown for this one


def builds(path: Path, prob: Problem, targets: list[Target], scratch: Path, asm: bool,
                result: CompileResult) -> list[KernelBuild]:
    from kernel_mcp.backends import cuda
    from kernel_mcp.worker.cpp_capture import MARKER
    spec = {"candidate": str(path), "problem_dirs": [str(prob.folder), str(prob.folder.parent)]}
    units = run_step("kernel_mcp.worker.cpp_capture", spec, environment(scratch, False), MARKER, result) or []
    if not units:
        result.findings.append(Finding(code="no_kernel", message="the candidate passes no CUDA source to "
                                       "torch.utils.cpp_extension.load_inline or load when imported"))
    nv = [t.name for t in targets if t.vendor == "nvidia"]
    if len(nv) < len(targets):
        result.findings.append(Finding(code="hip_unsupported", severity="warning", message=(
            "CUDA C++ for AMD targets needs HIP source and hipcc; "
            + ("hipcc was found but HIP builds are not wired up yet" if cuda.hipcc() else
               "hipcc is not installed (ROCm, or Debian's `hipcc` package)") + ": AMD targets skipped")))
    if nv and cuda.nvcc() is None:
        result.findings.append(Finding(code="toolchain_missing", message=(
            "nvcc not found: install the CUDA toolkit (or set CUDA_HOME) to compile CUDA C++")))
        return []
    builds: list[KernelBuild] = []
    candidate_text = path.read_text(errors="replace")
    for i, unit in enumerate(u for u in units if isinstance(u, dict)):
        for source, text, prefix in _unit_sources(unit, scratch, i):
            builds += _nvcc_unit(source, text, prefix, candidate_text, path, nv, unit, scratch, asm)
    return builds


def _unit_sources(unit: dict, scratch: Path, index: int) -> list[tuple[Path, str, int]]:
    """(file to compile, the user's source text, lines the harness put before it) per source."""
    from kernel_mcp.backends.cuda import INLINE_PREFIX
    if unit.get("kind") == "inline":
        text = "\n".join(str(s) for s in unit.get("cuda_sources", []))
        if not text.strip():
            return []
        source = scratch / f"{unit.get('name', 'ext')}_{index}.cu"
        source.write_text(INLINE_PREFIX + text)
        return [(source, text, INLINE_PREFIX.count("\n"))]
    return [(Path(f), Path(f).read_text(errors="replace"), 0) for f in unit.get("files", []) if Path(f).is_file()]


def _nvcc_unit(source: Path, text: str, prefix: int, candidate_text: str, path: Path, targets: list[str],
               unit: dict, scratch: Path, asm: bool) -> list[KernelBuild]:
    from kernel_mcp.backends import cuda
    extra = [str(f) for f in unit.get("extra_cuda_cflags", []) if str(f).startswith(("-O", "-D", "--use_fast_math",
                                                                                      "-lineinfo", "--maxrregcount"))]
    code, report, obj = cuda.compile_nvidia(source, targets, extra, scratch)
    if code != 0:
        where = cuda.first_error(report)
        line = cuda.map_line(where[1], prefix, text, candidate_text) if where and prefix else (where[1] if where else 0)
        file = str(path) if where and prefix and line else (where[0] if where else "")
        message = where[2] if where else report[-3000:]
        return [KernelBuild(kernel=str(unit.get("name", source.stem)), target=t, ok=False, error=message,
                            file=file, line=line) for t in targets]
    entries = cuda.parse_ptxas(report)
    names = cuda.demangle([e["mangled"] for e in entries])
    builds = []
    for entry in entries:
        build = KernelBuild(kernel=names[entry["mangled"]], target=entry["target"], ok=True,
                            registers=entry.get("registers"), spill_bytes=entry.get("spill_bytes"),
                            shared_bytes=entry.get("shared_bytes"), stack_bytes=entry.get("stack_bytes"),
                            threads_per_block=ASSUMED_BLOCK)
        sass_text = cuda.sass_for(obj, entry["target"])
        build.instructions = nvidia.instruction_counts(sass_text)
        if asm:
            build.asm = nvidia.main_loop_excerpt(sass_text)[:ASM_EXCERPT_CHARS]
        if build.registers is not None:
            build.occupancy = occupancy.nvidia(build.target, ASSUMED_BLOCK, build.registers, build.shared_bytes or 0)
            build.occupancy.note = f"assumes {ASSUMED_BLOCK} threads per block (CUDA picks it at launch)"
        builds.append(build)
    return builds


