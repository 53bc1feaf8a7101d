"""compile: build every kernel a candidate launches for each target GPU, NVIDIA or AMD, on any machine.

Triton (today): the launches of one ``custom_kernel`` call on the problem's smallest typical test are
recorded (worker/steps/triton_record.py; under Triton's interpreter when no GPU is present), then each kernel is
compiled per target with Triton's own specialization (worker/steps/triton_build.py). Both steps run candidate
code, so both run as sandboxed subprocesses. Resources come from the binaries (backends/nvidia.py,
backends/amd.py) and give a static occupancy (occupancy.py). Results are cached by content.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import kernel_mcp
from kernel_mcp.backends import cpp, cuda, hip, triton
from kernel_mcp.errors import NoKernelFound, UsageError
from kernel_mcp.files import cache_root
from kernel_mcp.hardware.targets import DEFAULT_CROSS, Target, parse, present
from kernel_mcp.problem import Problem, load_problem
from kernel_mcp.results import CompileResult, Finding
from kernel_mcp.tools._request import resolve_candidate
from kernel_mcp.worker import Runner, default_runner, tampering_finding
from kernel_mcp.worker.protocol import BuildRequest, RecordRequest, StepRequest


def cache_dir() -> Path:
    return cache_root() / "compile"


def find_problem(candidate: Path) -> Problem:
    """A candidate inside a problem folder (e.g. problems/x/solutions/correct/a.py) needs no --problem."""
    for folder in candidate.parents:
        if (folder / "task.yml").exists() and (folder / "reference.py").exists():
            return load_problem(folder)
    raise UsageError(f"{candidate} is not inside a problem folder: pass --problem DIR (its smallest test "
                     "input is used to see which kernels the candidate launches)")


@functools.lru_cache(maxsize=1)
def _own_code_digest() -> str:
    """A digest of kernel_mcp's own source: a cached answer from older code (a fixed bug, a new parser)
    must not be served, and a development checkout's version string never changes."""
    digest = hashlib.sha256()
    package = Path(kernel_mcp.__file__).parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _binary_identity(path: str | None) -> str:
    """Where a compiler is and when it was installed: a cheap stand-in for its version (asking nvcc or
    hipcc for it takes longer than a whole cache hit may)."""
    if path is None:
        return "missing"
    try:
        return f"{os.path.realpath(path)}@{int(os.stat(path).st_mtime)}"
    except OSError:
        return "missing"


def _toolchain() -> dict[str, str]:
    versions = {"kernel_mcp": getattr(kernel_mcp, "__version__", "dev") + "+" + _own_code_digest(),
                "nvcc": _binary_identity(cuda.nvcc()), "hipcc": _binary_identity(hip.hipcc())}
    for package in ("triton",):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "missing"
    return versions


SOURCE_SUFFIXES = {".py", ".cu", ".cuh", ".hip", ".cpp", ".cc", ".h", ".hpp"}


def cache_key(candidate: Path, problem: Problem, targets: list[Target], asm: bool, toolchain: dict) -> str:
    """Everything the answer depends on: the candidate and the source files beside it (.py helpers it may
    import, C++/CUDA/HIP files it may give to cpp_extension.load), the problem's task and reference, the
    targets, and the toolchain's versions."""
    digest = hashlib.sha256()
    beside = sorted(p for p in candidate.parent.iterdir() if p.suffix in SOURCE_SUFFIXES and p != candidate)
    for path in [candidate, *beside,
                 problem.path / "task.yml" if problem.kind == "gpumode" else problem.path, problem.reference_file]:
        if path.is_file():
            digest.update(str(path.name).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(json.dumps([[t.name for t in targets], asm, toolchain], sort_keys=True).encode())
    return digest.hexdigest()[:40]


def compile(candidate: str | Path, problem: str | Path | Problem | None = None, targets: list[str] | None = None,
            asm: bool = False, on_progress=None, runner: Runner | None = None) -> CompileResult:  # noqa: A001
    """Compile the candidate's kernels for each target (default: this machine's GPU, or a standard set of
    NVIDIA and AMD targets when there is none). Raises UsageError for bad input."""
    started = time.monotonic()
    path = resolve_candidate(candidate)
    language = _language(path)
    prob = load_problem(problem) if problem else find_problem(path)
    chosen, findings = _targets(targets)
    toolchain = _toolchain()
    key = cache_key(path, prob, chosen, asm, toolchain)
    cached = _load_cached(key)
    if cached is not None:
        cached.cached, cached.seconds = True, round(time.monotonic() - started, 4)
        return cached
    say = on_progress or (lambda *_: None)
    result = CompileResult(ok=False, candidate=str(path), language=language, targets=[t.name for t in chosen],
                           findings=findings, toolchain=toolchain)
    step = _stepper(runner or default_runner(), prob, result)
    with tempfile.TemporaryDirectory(prefix="kmcp-compile-") as scratch:
        if language == "cuda":
            say("capturing the C++ sources and compiling them (nvcc: NVIDIA, hipcc: AMD)", 0, 1)
            result.builds = cpp.builds(path, prob, chosen, Path(scratch), asm, result, step)
        else:
            say("recording the kernels one call launches", 0, 2)
            launches = triton.record(path, prob, result, step)
            if launches:
                say(f"compiling {len(launches)} kernel launch(es) for {len(chosen)} target(s)", 1, 2)
                result.builds = triton.build(path, prob, launches, chosen, Path(scratch), asm, step)
    tampered = any(f.code == "tampering" for f in result.findings)
    result.ok = bool(result.builds) and all(b.ok for b in result.builds) and not tampered
    result.seconds = round(time.monotonic() - started, 3)
    if not tampered and result.builds:
        _store(key, result)
    return result


def _stepper(runner: Runner, prob: Problem, result: CompileResult) -> Callable[..., list | None]:
    """Run one compile step through the runner, under the task's timeouts; its failure becomes a finding
    of ``result`` (and None), its values are returned for backends/ to parse."""
    timeouts = prob.spec.timeouts

    def step(request: StepRequest) -> list | None:
        device = None
        if isinstance(request, RecordRequest) and request.device == "cuda":
            device = runner.local_gpu()  # recording runs the candidate on the GPU: a shared lease
        seconds = timeouts.import_ + (timeouts.call if isinstance(request, RecordRequest) else 0)
        if isinstance(request, BuildRequest):
            seconds = min(timeouts.total, timeouts.import_ + BUILD_SECONDS * max(1, len(request.launches))
                          * len(request.targets))
        reply = runner.step(request, prob, seconds, device)
        result.log_tail = reply.log_tail
        if reply.tampered:
            result.findings.append(tampering_finding(reply.tampered))
        elif reply.timed_out:
            result.findings.append(Finding(code="timeout", message=reply.error))
        elif not reply.ok:
            result.findings.append(Finding(code="candidate_failed", message=(
                f"running the candidate's {request.kind} step failed:\n{reply.error[-2500:]}")))
        return reply.value if reply.ok and not reply.tampered else None
    return step


BUILD_SECONDS = 60  # per launch and target, on top of the candidate's import


def _targets(names: list[str] | None) -> tuple[list[Target], list[Finding]]:
    if names:
        return [parse(n) for n in dict.fromkeys(names)], []
    here = present()
    if here:
        return here, []
    return [parse(n) for n in DEFAULT_CROSS], [Finding(code="no_gpu", severity="info", message=(
        f"no GPU on this machine: compiled for {', '.join(DEFAULT_CROSS)} (choose with --target)"))]


def _language(path: Path) -> str:
    text = path.read_text(errors="replace")
    if "cpp_extension" in text or "load_inline" in text:
        return "cuda"
    if "triton" in text:
        return "triton"
    raise NoKernelFound(f"{path}: no kernel found (compile looks for @triton.jit kernels the candidate launches, "
                     "or CUDA/HIP C++ it passes to torch.utils.cpp_extension.load_inline / load)")


def _load_cached(key: str) -> CompileResult | None:
    try:
        return CompileResult.model_validate_json((cache_dir() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def _store(key: str, result: CompileResult) -> None:
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"{key}.{os.getpid()}.tmp"
    tmp.write_text(result.model_dump_json())
    tmp.replace(folder / f"{key}.json")  # atomic: a concurrent reader never sees half a file
