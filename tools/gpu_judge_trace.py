"""Trace one check's judge-side steps (developer script): this process plays the judge, with timing
wrappers around its steps; the candidate is a wrapper that times the baseline's own call.

    python3 tools/gpu_judge_trace.py [cuda|cpu] [problem ...]
"""
from __future__ import annotations

import functools
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

T0 = time.perf_counter()
LOG: list[str] = []


def mark(text: str) -> None:
    LOG.append(f"{time.perf_counter() - T0:8.3f}  {text}")


def traced(owner, name: str) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            mark(f"{owner.__name__}.{name}: {1e3 * (time.perf_counter() - started):.1f} ms")
    setattr(owner, name, wrapper)


WRAPPER = """
import sys, time
_t = time.perf_counter()
sys.path.insert(0, {folder!r})
import torch
print(f"host: import torch etc {{time.perf_counter() - _t:.3f}} s", flush=True)
_t = time.perf_counter()
import importlib.util
_spec = importlib.util.spec_from_file_location("baseline_traced", {baseline!r})
_mod = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(_mod)
print(f"host: import baseline {{time.perf_counter() - _t:.3f}} s", flush=True)

def custom_kernel(data):
    t = time.perf_counter()
    out = _mod.custom_kernel(data)
    torch.cuda.synchronize() if torch.cuda.is_available() else None
    print(f"host: call {{1e3 * (time.perf_counter() - t):.1f}} ms", flush=True)
    return out
"""


class Reporter:
    def progress(self, message: str, done: int = 0, total: int = 0) -> None:
        mark(f"progress: {message}")


def main() -> None:
    device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
    names = sys.argv[2:] or ["vector_add", "matmul_bf16"]
    mark("start")
    import torch
    mark("import torch")
    if device == "cuda":
        torch.zeros(1, device="cuda")
        mark("CUDA context")
    from kernel_mcp.worker import check_run, session
    from kernel_mcp.worker.reference_runtime import ReferenceRuntime
    mark("import check_run")
    for owner, name in [(ReferenceRuntime, "expected"), (ReferenceRuntime, "share_copy"),
                        (ReferenceRuntime, "generate"), (ReferenceRuntime, "__init__"),
                        (session.CandidateSession, "__init__"), (session.CandidateSession, "start"),
                        (session.CandidateSession, "call"), (check_run, "_probe_degenerate"),
                        (check_run, "compare_output"), (check_run, "output_integrity"),
                        (check_run, "extra_checks")]:
        traced(owner, name)
    check_run._judge_case.__globals__["compare_output"] = check_run.compare_output
    for name in names:
        folder = REPO / "problems" / name
        with tempfile.TemporaryDirectory() as scratch:
            wrapper = Path(scratch) / "traced.py"
            wrapper.write_text(WRAPPER.format(folder=str(folder), baseline=str(folder / "baseline.py")))
            mark(f"=== {name}")
            request = {"mode": "check", "problem": str(folder), "candidate": str(wrapper), "device": device,
                       "run_token": "trace"}
            result = check_run.run_check(request, Reporter())
            mark(f"verdict {result.verdict}")
            LOG.extend("      " + line for line in result.log_tail.splitlines() if line.startswith("host:"))
    print("\n".join(LOG))


if __name__ == "__main__":
    main()
