"""CUDA/HIP C++ candidates: capture the sources given to torch.utils.cpp_extension, build them with nvcc for
every NVIDIA target at once and with hipcc per AMD target (backends/hip.py), describe each kernel from the
compiler's report and the assembly."""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kernel_mcp.backends import amd, cuda, hip, nvidia
from kernel_mcp.backends.cuda import INLINE_PREFIX
from kernel_mcp.backends.triton import ASM_EXCERPT_CHARS, Step
from kernel_mcp.hardware import occupancy
from kernel_mcp.hardware.targets import Target
from kernel_mcp.problem import Problem
from kernel_mcp.results import CompileResult, Finding, KernelBuild
from kernel_mcp.worker.protocol import CaptureRequest

ASSUMED_BLOCK = 256  # CUDA C++ kernels get their block size at launch; occupancy is shown for this one


def builds(path: Path, prob: Problem, targets: list[Target], scratch: Path, asm: bool,
           result: CompileResult, step: Step) -> list[KernelBuild]:
    values = step(CaptureRequest(candidate=str(path), problem_dirs=[str(prob.folder), str(prob.folder.parent)]))
    units = [u for u in (_plain_unit(v, path, result) for v in values or []) if u is not None]
    if values is not None and not units:  # the step ran, and saw no source
        result.findings.append(Finding(code="no_kernel", message="the candidate passes no CUDA source to "
                                       "torch.utils.cpp_extension.load_inline or load when imported"))
    candidate_text = path.read_text(errors="replace")
    nv = [t.name for t in targets if t.vendor == "nvidia"]
    gfx = [t.name for t in targets if t.vendor == "amd"]
    found: list[KernelBuild] = []
    if nv and units:
        found += _nvidia_builds(units, nv, path, candidate_text, scratch, asm, result)
    if gfx and units:
        found += _amd_builds(units, gfx, path, candidate_text, scratch, asm, result)
    return found


SOURCE_KEYS = ("cuda_sources", "cpp_sources", "extra_cuda_cflags", "files")


def _plain_unit(unit, candidate: Path, result: CompileResult) -> dict | None:
    """A captured unit as trusted code may use it (the capture ran candidate code): a name safe in a file
    name, lists of strings, and source files inside the candidate's folder only (a path elsewhere would have
    trusted code read any file into a compiler's error messages)."""
    if not isinstance(unit, dict):
        return None
    plain = {"name": re.sub(r"[^A-Za-z0-9_]", "_", str(unit.get("name", "ext")))[:64] or "ext",
             "kind": "inline" if unit.get("kind") == "inline" else "files"}
    for key in SOURCE_KEYS:
        value = unit.get(key, [])
        plain[key] = [str(v) for v in value] if isinstance(value, list) else []
    folder = candidate.resolve().parent
    inside = [f for f in plain["files"] if Path(f).resolve().is_relative_to(folder)]
    if len(inside) < len(plain["files"]):
        result.findings.append(Finding(code="source_outside", severity="warning", message=(
            f"{plain['name']}: sources outside the candidate's folder {folder} are not compiled")))
    plain["files"] = inside
    return plain


def _nvidia_builds(units: list[dict], nv: list[str], path: Path, candidate_text: str, scratch: Path, asm: bool,
                   result: CompileResult) -> list[KernelBuild]:
    if cuda.nvcc() is None:
        result.findings.append(Finding(code="toolchain_missing", message=(
            "nvcc not found: install the CUDA toolkit (or set CUDA_HOME) to compile CUDA C++ for NVIDIA targets")))
        return []
    found: list[KernelBuild] = []
    for i, unit in enumerate(units):
        for source, text, prefix in _unit_sources(unit, scratch, i):
            found += _nvcc_unit(source, text, prefix, candidate_text, path, nv, unit, scratch, asm)
    return found


def _unit_sources(unit: dict, scratch: Path, index: int) -> list[tuple[Path, str, int]]:
    """(file to compile, the user's source text, lines the harness put before it) per source."""
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


def _amd_builds(units: list[dict], gfx: list[str], path: Path, candidate_text: str, scratch: Path, asm: bool,
                result: CompileResult) -> list[KernelBuild]:
    if hip.hipcc() is None:
        result.findings.append(Finding(code="toolchain_missing", message=(
            "hipcc not found: install ROCm, or Debian/Ubuntu's `hipcc` package (apt-get install hipcc), to compile "
            f"CUDA/HIP C++ for AMD targets ({', '.join(gfx)})")))
        return []
    includes = hip.hip_include_flags(scratch)
    found: list[KernelBuild] = []
    for i, unit in enumerate(units):
        for source, text, prefix, original in _hip_sources(unit, scratch, i, result):
            found += _hipcc_unit(source, text, prefix, original, candidate_text, path, gfx, unit, includes,
                                 scratch, asm)
    return found


def _hip_sources(unit: dict, scratch: Path, index: int,
                 result: CompileResult) -> list[tuple[Path, str, int, Path | None]]:
    """(HIP file to compile, the user's source text, lines before it in the HIP file, the user's own file or
    None for inline text) per source; CUDA that HIP cannot express is reported and left out."""
    name = str(unit.get("name", "ext"))
    if unit.get("kind") == "inline":
        text = "\n".join(str(s) for s in unit.get("cuda_sources", []))
        pieces = [(text, None)] if text.strip() else []
    else:
        pieces = [(Path(f).read_text(errors="replace"), Path(f)) for f in unit.get("files", []) if Path(f).is_file()]
    out = []
    for n, (text, original) in enumerate(pieces):
        blocker = None if hip.is_hip(text) else hip.nvidia_only(text)
        if blocker:
            result.findings.append(Finding(code="hip_unsupported", severity="warning", message=(
                f"{original or name}: uses {blocker}, which has no HIP translation: not built for AMD targets")))
            continue
        if original is None:
            source, prefix = hip.prepare_inline(text, scratch, f"{name}_{index}")
        else:
            source, prefix = hip.prepare_file(original, scratch, index * 100 + n)
        out.append((source, text, prefix, original))
    return out


def _hipcc_unit(source: Path, text: str, prefix: int, original: Path | None, candidate_text: str, path: Path,
                targets: list[str], unit: dict, includes: list[str], scratch: Path, asm: bool) -> list[KernelBuild]:
    extra = _hipcc_extra(unit)
    workdir = original.parent if original else scratch
    # one hipcc per target (the remarks do not name the target); they run side by side, one per core
    with ThreadPoolExecutor(max_workers=max(1, min(len(targets), os.cpu_count() or 1))) as pool:
        outputs = list(pool.map(lambda t: hip.compile_amd(source, t, extra, includes, scratch, workdir), targets))
    found: list[KernelBuild] = []
    for target, (code, report, amdgcn) in zip(targets, outputs):
        if code != 0:
            found.append(_hip_failure(unit, source, target, report, text, prefix, original, candidate_text, path))
            continue
        found += _hip_kernels(target, report, amdgcn, asm)
    return found


def _hipcc_extra(unit: dict) -> list[str]:
    """The candidate's extra_cuda_cflags that mean the same to hipcc (nvcc's fast-math spelled clang's way)."""
    flags = [str(f) for f in unit.get("extra_cuda_cflags", [])]
    return [("-ffast-math" if f == "--use_fast_math" else f) for f in flags
            if f.startswith(("-O", "-D", "-ffast-math", "--use_fast_math"))]


def _hip_failure(unit: dict, source: Path, target: str, report: str, text: str, prefix: int,
                 original: Path | None, candidate_text: str, path: Path) -> KernelBuild:
    kernel = str(unit.get("name", source.stem))
    unsupported = hip.target_problem(report, target)
    if unsupported:  # the target, not the source: no line to point at
        return KernelBuild(kernel=kernel, target=target, ok=False, error=unsupported)
    where = hip.first_error(report)
    if where is None:
        return KernelBuild(kernel=kernel, target=target, ok=False, error=report[-3000:])
    file, line = where[0], where[1]
    if Path(file).name == source.name and original is None:  # inline text: find it in the candidate file
        mapped = cuda.map_line(line, prefix, text, candidate_text)
        file, line = (str(path), mapped) if mapped else (file, line)
    elif Path(file).name == source.name and source != original:  # a hipified copy of the user's .cu file
        file, line = str(original), max(1, line - prefix)
    message = hip.missing_torch_hip_header(report) or where[2]
    return KernelBuild(kernel=kernel, target=target, ok=False, error=message, file=file, line=line)


def _hip_kernels(target: str, report: str, amdgcn: str, asm: bool) -> list[KernelBuild]:
    entries = hip.parse_remarks(report)
    names = cuda.demangle([e["mangled"] for e in entries])
    bodies = hip.kernel_asm(amdgcn)
    found = []
    for entry in entries:
        body = bodies.get(entry["mangled"], "")
        build = KernelBuild(kernel=names[entry["mangled"]], target=target, ok=True, vgprs=entry.get("vgprs"),
                            agprs=entry.get("agprs"), sgprs=entry.get("sgprs"),
                            spill_bytes=entry.get("scratch_bytes"), shared_bytes=entry.get("lds_bytes"),
                            threads_per_block=ASSUMED_BLOCK, instructions=amd.instruction_counts(body) if body else {})
        if asm and body:
            build.asm = amd.main_loop_excerpt(body)[:ASM_EXCERPT_CHARS]
        build.occupancy = _amd_occupancy(target, entry)
        found.append(build)
    return found


def _amd_occupancy(target: str, entry: dict) -> occupancy.Occupancy | None:
    """occupancy.amd's arithmetic for ASSUMED_BLOCK threads, checked against hipcc's own waves-per-SIMD figure;
    where the two differ, the compiler's figure is the one reported (it knows the target's exact rules)."""
    if entry.get("vgprs") is None or target not in occupancy.AMD:
        return None
    ours = occupancy.amd(target, ASSUMED_BLOCK, entry["vgprs"], entry.get("agprs", 0), entry.get("lds_bytes", 0))
    limits = occupancy.AMD[target]
    ours_per_simd = ours.resident_warps // limits.simds
    compiler = entry.get("waves_per_simd")
    base = f"assumes {ASSUMED_BLOCK} threads per block (HIP picks it at launch); unverified on AMD hardware"
    if compiler is None or compiler == ours_per_simd:
        ours.note = base + ("" if compiler is None else f"; hipcc agrees: {compiler} waves/SIMD")
        return ours
    waves_per_block = -(-ASSUMED_BLOCK // limits.wave_size)
    blocks = compiler * limits.simds // waves_per_block
    max_waves = limits.simds * limits.waves_per_simd
    return occupancy.Occupancy(
        resident_blocks=blocks, resident_warps=blocks * waves_per_block, max_warps=max_waves,
        percent=round(100.0 * blocks * waves_per_block / max_waves, 1), limited_by=ours.limited_by,
        note=f"{base}; hipcc's figure ({compiler} waves/SIMD, for its own default of up to 1024 threads per "
             f"block) is shown: kernel_mcp's arithmetic gave {ours_per_simd}")
