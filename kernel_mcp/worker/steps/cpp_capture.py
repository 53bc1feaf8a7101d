"""Capture the CUDA/HIP C++ a candidate hands to ``torch.utils.cpp_extension`` (load_inline, load), without
building it: the builders are replaced by recorders before the candidate is imported, so this works with
a CPU-only torch. Runs candidate code (its import), so it runs in its own process.
Runs in a step host (worker/steps/main.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_mcp.worker.host.load import import_candidate


class _Unbuilt:
    """Stands in for the extension module: any function of it fails if called (nothing is run here)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        def missing(*_: Any, **__: Any) -> None:
            raise RuntimeError(f"{self._name}.{attr}: extension not built (compile only captures sources)")
        return missing


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def install(captured: list[dict]) -> None:
    from torch.utils import cpp_extension

    def load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cuda_cflags=None, **kwargs):
        captured.append({"name": name, "kind": "inline", "cuda_sources": _as_list(cuda_sources),
                         "cpp_sources": _as_list(cpp_sources), "extra_cuda_cflags": _as_list(extra_cuda_cflags),
                         "hip": bool(kwargs.get("with_cuda") is False)})
        return _Unbuilt(name)

    def load(name, sources, extra_cuda_cflags=None, **kwargs):
        files = [str(Path(s).resolve()) for s in _as_list(sources)]
        captured.append({"name": name, "kind": "files", "files": [f for f in files if f.endswith((".cu", ".hip"))],
                         "extra_cuda_cflags": _as_list(extra_cuda_cflags)})
        return _Unbuilt(name)

    cpp_extension.load_inline, cpp_extension.load = load_inline, load


def run(request) -> list[dict]:
    """The capture step (a CaptureRequest): the sources the candidate gives cpp_extension when imported."""
    captured: list[dict] = []
    install(captured)
    import_candidate(Path(request.candidate), request.problem_dirs)
    return captured
