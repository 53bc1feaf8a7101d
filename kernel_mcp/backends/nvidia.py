"""NVIDIA binaries: resource usage (cuobjdump, ptxas -v) and SASS statistics (nvdisasm).

Triton's wheel ships ptxas, cuobjdump and nvdisasm (triton/backends/nvidia/bin), so none of this needs a
CUDA toolkit or a GPU; a system CUDA toolkit is used when Triton's copy is missing.
"""
from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

from kernel_mcp.worker import run_tool

TOOL_TIMEOUT_S = 60


def tool(name: str) -> str | None:
    try:
        import triton
        bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
        if bundled.exists():
            return str(bundled)
    except ImportError:
        pass
    return shutil.which(name)


def _run(argv: list[str]) -> str:
    """What the tool printed (stdout, stderr); the parsers find nothing in it when the tool failed."""
    return run_tool(argv, timeout_s=TOOL_TIMEOUT_S).transcript


def resource_usage(cubin: Path) -> dict[str, int]:
    """Per-kernel REG, STACK, SHARED and LOCAL bytes as ``cuobjdump --dump-resource-usage`` prints them."""
    exe = tool("cuobjdump")
    if exe is None:
        return {}
    text = _run([exe, "--dump-resource-usage", str(cubin)])
    found = re.search(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)", text)
    if not found:
        return {}
    reg, stack, shared, local = map(int, found.groups())
    return {"registers": reg, "stack_bytes": stack, "static_shared_bytes": shared, "local_bytes": local}


def ptxas_for(arch: str) -> str | None:
    """The ptxas Triton itself uses for this architecture (it ships more than one: PTX versions differ)."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas
        return get_ptxas(int("".join(ch for ch in arch if ch.isdigit()))).path
    except (ImportError, AttributeError, ValueError, RuntimeError):
        return tool("ptxas")


def spills(ptx: Path, arch: str) -> dict[str, int]:
    """Spill stores/loads in bytes from ``ptxas -v`` (the same compiler Triton used for the cubin)."""
    exe = ptxas_for(arch)
    if exe is None:
        return {}
    text = _run([exe, f"-arch={arch}", "-v", str(ptx), "-o", "/dev/null"])
    found = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    return {"spill_store_bytes": int(found[1]), "spill_load_bytes": int(found[2])} if found else {}


def sass(cubin: Path) -> str:
    exe = tool("nvdisasm")
    return _run([exe, "-c", str(cubin)]) if exe else ""


# Instruction classes an agent can act on: tensor-core use (HGMMA = Hopper warpgroup MMA, HMMA = mma.sync,
# UTC*MMA = Blackwell tcgen05), plain FMA, global load widths, local memory (spills) and shared memory.
_CLASSES = {
    "HGMMA": r"\bHGMMA\.", "HMMA": r"\bHMMA\.", "tcgen05_MMA": r"\bUTC\w*MMA", "FFMA": r"\bFFMA\b",
    "LDG.128": r"\bLDG\.E\.128\b", "LDG.64": r"\bLDG\.E\.64\b", "LDG.32": r"\bLDG\.E(?:\.(?:CONSTANT|EF|EL|LU|NA))*\s",
    "STG": r"\bSTG\.", "LDL/STL (local)": r"\b(?:LDL|STL)\b", "LDS": r"\bLDS\b|\bLDSM\b", "STS": r"\bSTS\b",
    "TMA (UTMALDG)": r"\bUTMALDG\b", "BAR": r"\bBAR\.",
}


def instruction_counts(sass_text: str) -> dict[str, int]:
    counts = Counter()
    for line in sass_text.splitlines():
        if "/*" not in line:
            continue
        for name, pattern in _CLASSES.items():
            if re.search(pattern, line):
                counts[name] += 1
    counts["total"] = sum(1 for line in sass_text.splitlines() if re.match(r"\s*/\*[0-9a-f]{4,}\*/", line))
    return dict(counts)


def main_loop_excerpt(sass_text: str, limit_lines: int = 60) -> str:
    """The loop body ending in the first backward branch (the main loop), else the kernel's start."""
    lines = sass_text.splitlines()
    labels = {ln.strip()[:-1]: i for i, ln in enumerate(lines) if re.match(r"^\.L_x_\d+:$", ln.strip())}
    for i, line in enumerate(lines):
        branch = re.search(r"\bBRA\b.*`\((\.L_x_\d+)\)", line)
        if branch and labels.get(branch[1], i + 1) < i:
            return "\n".join(lines[max(labels[branch[1]], i - limit_lines + 3):i + 3])
    body = [ln for ln in lines if re.match(r"\s*/\*[0-9a-f]{4,}\*/", ln)]
    return "\n".join(body[:limit_lines])
