"""AMD code objects: resource usage and instruction statistics from the AMDGCN assembly Triton emits.

LLVM's AMDGPU backend writes the resource summary as comments and ``.amdhsa_*`` directives in the
assembly (``; NumVgprs:``, ``; NumAgprs:``, ``; TotalNumSgprs:``, ``; ScratchSize:``, ``; Occupancy:``,
``.amdhsa_group_segment_fixed_size`` = LDS bytes). Parsed from LLVM's documented output format; the
figures have **not** been compared with an AMD GPU's runtime report.
"""
from __future__ import annotations

import re
from collections import Counter

_FIELDS = {"vgprs": r";\s*NumVgprs:\s*(\d+)", "agprs": r";\s*NumAgprs:\s*(\d+)",
           "sgprs": r";\s*TotalNumSgprs:\s*(\d+)", "scratch_bytes": r";\s*ScratchSize:\s*(\d+)",
           "lds_bytes": r"\.amdhsa_group_segment_fixed_size\s+(\d+)",
           "compiler_waves_per_simd": r";\s*Occupancy:\s*(\d+)"}


def resource_usage(amdgcn: str) -> dict[str, int]:
    out = {}
    for name, pattern in _FIELDS.items():
        found = re.search(pattern, amdgcn)
        if found:
            out[name] = int(found[1])
    return out


_CLASSES = {
    "MFMA": r"^\s*v_mfma_", "WMMA": r"^\s*v_wmma_", "FMA": r"^\s*v_(?:pk_)?fma", "global_load_dwordx4":
    r"^\s*global_load_dwordx4\b", "global_load (other)": r"^\s*global_load_(?!dwordx4)", "buffer_load":
    r"^\s*buffer_load_", "global_store": r"^\s*global_store_", "scratch (spills)": r"^\s*scratch_(?:load|store)_",
    "LDS read": r"^\s*ds_read|^\s*ds_load", "LDS write": r"^\s*ds_write|^\s*ds_store", "barrier": r"^\s*s_barrier",
}


def instruction_counts(amdgcn: str) -> dict[str, int]:
    counts = Counter()
    total = 0
    for line in amdgcn.splitlines():
        if re.match(r"^\s*[sv]_|^\s*(?:global|buffer|ds|scratch|flat)_", line):
            total += 1
        for name, pattern in _CLASSES.items():
            if re.match(pattern, line):
                counts[name] += 1
    counts["total"] = total
    return dict(counts)


def main_loop_excerpt(amdgcn: str, limit_lines: int = 60) -> str:
    """From the innermost loop's header (LLVM marks it "; =>This Inner Loop Header"), else the kernel's
    start; instructions and block labels only, no directives or comment lines."""
    lines = [ln for ln in amdgcn.splitlines() if ln.strip() and not re.match(r"\s*(;|\.(?!LBB))", ln)]
    header = next((i for i, ln in enumerate(lines) if "Inner Loop Header" in ln), None)
    if header is None:
        return "\n".join(lines[:limit_lines])
    # blocks of the loop laid out before its header say "in Loop: Header=BBx_y"
    name = re.match(r"\s*\.L(\w+):", lines[header])
    tag = f"Header={name[1]} " if name else "\0"
    start = min([header] + [i for i, ln in enumerate(lines) if tag in ln + " "])
    return "\n".join(lines[start:start + limit_lines])
