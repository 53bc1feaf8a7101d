"""The reference's float64 run, inside the judge: the truth a candidate is compared with, and (traced) how many
terms each of its outputs sums (judge/reduction_trace.py). A reference that cannot run in float64 gives none, and
says why in a finding."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernel_mcp.results import Finding
from kernel_mcp.worker import tensors
from kernel_mcp.worker.judge.parking import park
from kernel_mcp.worker.judge.reduction_trace import ReductionTrace, Terms


def run(ref_kernel: Callable[[Any], Any], data: Any, home: str | None, findings: list[Finding], after: list[int],
        tight_memory: bool, quiet: bool = False,
        traced: bool = False) -> tuple[tuple[Any, list[torch.Tensor]] | None, list[Terms]]:
    """((output, the inputs listed in ``after`` after the run), all in float64, or None where the reference
    cannot run so; and, ``traced``, the terms each of those sums). ``ref_kernel`` runs the reference in float64
    from the case's seed; ``tight_memory``: what it returns waits in host memory."""
    terms: list[Terms] = []
    try:
        upcast, out, terms = _traced(ref_kernel, data, home, after) if traced else _plain(ref_kernel, data, home)
        leaves = tensors.leaves(upcast)
        kept = [leaves[i][1] for i in after]
        if tight_memory:
            out, kept = tensors.tree_map(park, out), [park(t) for t in kept]
    except Exception as exc:  # noqa: BLE001  (any failure means: no float64 reference for this problem)
        why = str(exc).split("\n")[0][:300]
        if isinstance(exc, torch.OutOfMemoryError):
            torch.cuda.empty_cache()  # the failed run's blocks go back to the device for the rest
            why = "the float64 run does not fit in the device's free memory"
        if not quiet:
            findings.append(Finding(code="no_float64_reference", severity="info",
                                    message=f"ref_kernel failed on float64 inputs ({type(exc).__name__}: "
                                            f"{why}); comparing with the task-dtype reference"))
        return None, terms
    low = [p for p, t in tensors.leaves((out, kept)) if t.is_floating_point() and t.dtype != torch.float64]
    if low:
        if not quiet:
            findings.append(Finding(code="no_float64_reference", severity="info",
                                    message=f"ref_kernel returned {', '.join(low) or 'output'} below float64 "
                                            "on float64 inputs; comparing with the task-dtype reference"))
        return None, terms
    return (out, kept), terms


def _plain(ref_kernel: Callable[[Any], Any], data: Any, home: str | None) -> tuple[Any, Any, list[Terms]]:
    upcast = tensors.upcast(data, home)
    return upcast, tensors.floats_as_tensors(ref_kernel(upcast)), []


def _traced(ref_kernel: Callable[[Any], Any], data: Any, home: str | None,
            after: list[int]) -> tuple[Any, Any, list[Terms]]:
    """The float64 run under ReductionTrace: (its inputs, its output, the terms of each output leaf and of each
    input in ``after``). A reference that the dispatch mode itself upsets runs again without it, on fresh
    copies of the inputs."""
    tracer, upcast = ReductionTrace(), tensors.upcast(data, home)
    try:
        with tracer:
            out = tensors.floats_as_tensors(ref_kernel(upcast))
    except Exception:  # noqa: BLE001  (a failure of the reference's own shows in the plain run)
        del upcast
        return _plain(ref_kernel, data, home)
    inputs = tensors.leaves(upcast)
    leaves = [t for _, t in tensors.leaves(out)] + [inputs[i][1] for i in after]
    return upcast, out, [tracer.terms(t) for t in leaves]
