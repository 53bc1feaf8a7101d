"""Triton candidates: record the launches of one call, compile them per target, describe the binaries."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernel_mcp.backends import amd, nvidia
from kernel_mcp.hardware import occupancy
from kernel_mcp.hardware.targets import Target, parse, present
from kernel_mcp.problem import Problem
from kernel_mcp.results import CompileResult, Finding, KernelBuild
from kernel_mcp.worker.protocol import BuildRequest, RecordRequest

Step = Callable[..., "list | None"]  # runs one compile step through the runner: request -> values or None

ASM_EXCERPT_CHARS = 6000


def record(path: Path, prob: Problem, result: CompileResult, step: Step) -> list[dict]:
    """The Triton launches of one call on the problem's smallest typical test (recorded by a step host)."""
    gpu = bool(present())
    values = step(RecordRequest(candidate=str(path), problem=str(prob.path), device="cuda" if gpu else "cpu"))
    launches = [launch for launch in values or [] if isinstance(launch, dict)]
    if values is not None and not launches:  # the step ran, and saw no launch
        result.findings.append(Finding(code="no_kernel", message=(
            "custom_kernel launched no @triton.jit kernel on the problem's smallest test input")))
    return launches


def build(path: Path, prob: Problem, launches: list[dict], targets: list[Target], scratch: Path, asm: bool,
          step: Step) -> list[KernelBuild]:
    out_dir = scratch / "out"
    entries = step(BuildRequest(candidate=str(path), problem_dirs=[str(prob.folder), str(prob.folder.parent)],
                                launches=launches, targets=[t.name for t in targets], out_dir=str(out_dir))) or []
    return [_described(entry, asm, out_dir) for entry in entries if isinstance(entry, dict)]


def _described(entry: dict, asm: bool, out_dir: Path) -> KernelBuild:
    """describe(), for an entry written by a process that ran candidate code: a malformed one is a failed
    build saying so, never an exception in trusted code."""
    try:
        return describe(entry, asm, out_dir)
    except Exception as exc:  # noqa: BLE001  (any malformed field: a bad target name, a missing key...)
        return KernelBuild(kernel=str(entry.get("kernel", ""))[:200], target=str(entry.get("target", ""))[:20],
                           ok=False, error=f"malformed build entry from the build step: {type(exc).__name__}")


def describe(entry: dict, asm: bool, out_dir: Path) -> KernelBuild:
    """A KernelBuild from one build entry (written by a process that ran candidate code): resources read
    from its binaries, which must lie in ``out_dir``, occupancy, instructions."""
    build = KernelBuild(kernel=str(entry.get("kernel", "")), target=str(entry.get("target", "")),
                        ok=bool(entry.get("ok")), error=str(entry.get("error", "")), file=str(entry.get("file", "")),
                        line=int(entry.get("line") or 0), num_warps=entry.get("num_warps"),
                        num_stages=entry.get("num_stages"), signature=entry.get("signature") or {},
                        constants=entry.get("constants") or {})
    if not build.ok:
        return build
    artifacts = {k: out_dir / v for k, v in (entry.get("artifacts") or {}).items()
                 if isinstance(v, str) and v == Path(v).name and v not in ("", ".", "..")
                 and (out_dir / v).is_file() and not (out_dir / v).is_symlink()}
    build.threads_per_block = int(entry["num_warps"]) * int(entry["warp_size"])
    build.shared_bytes = int(entry.get("shared") or 0)
    if parse(build.target).vendor == "nvidia":
        _nvidia_resources(build, artifacts, asm)
    else:
        _amd_resources(build, artifacts, asm)
    return build


def _nvidia_resources(build: KernelBuild, artifacts: dict[str, Path], asm: bool) -> None:
    cubin, ptx = artifacts.get("cubin"), artifacts.get("ptx")
    if cubin is None:
        return
    usage = nvidia.resource_usage(cubin)
    build.registers, build.stack_bytes = usage.get("registers"), usage.get("stack_bytes")
    # shared_bytes stays Triton's own figure (dynamic shared memory, requested at launch): Triton declares
    # no static shared memory. cuobjdump's SHARED of an sm_90a cubin adds 1 KiB when a kernel uses shared
    # memory; on an H200 the driver reported 0 static bytes for those kernels (cuFuncGetAttribute), and its
    # occupancy equalled ours, which adds the 1 KiB per-block reservation itself (tests/test_gpu_compile.py)
    if ptx is not None:
        arch = next((ln.split()[1] for ln in ptx.read_text().splitlines() if ln.startswith(".target")), "")
        spilled = nvidia.spills(ptx, arch) if arch else {}
        if spilled:
            build.spill_bytes = spilled["spill_store_bytes"] + spilled["spill_load_bytes"]
    text = nvidia.sass(cubin)
    build.instructions = nvidia.instruction_counts(text)
    if asm:
        build.asm = nvidia.main_loop_excerpt(text)[:ASM_EXCERPT_CHARS]
    if build.registers is not None:
        build.occupancy = occupancy.nvidia(build.target, build.threads_per_block, build.registers,
                                           build.shared_bytes or 0)


def _amd_resources(build: KernelBuild, artifacts: dict[str, Path], asm: bool) -> None:
    source = artifacts.get("amdgcn")
    if source is None:
        return
    text = source.read_text(errors="replace")
    usage = amd.resource_usage(text)
    build.vgprs, build.agprs, build.sgprs = usage.get("vgprs"), usage.get("agprs"), usage.get("sgprs")
    build.spill_bytes = usage.get("scratch_bytes")
    build.shared_bytes = max(build.shared_bytes or 0, usage.get("lds_bytes", 0))
    build.instructions = amd.instruction_counts(text)
    if asm:
        build.asm = amd.main_loop_excerpt(text)[:ASM_EXCERPT_CHARS]
    if build.vgprs is not None:
        build.occupancy = occupancy.amd(build.target, build.threads_per_block, build.vgprs, build.agprs or 0,
                                        build.shared_bytes or 0)


