"""docs/threat-model.md, rule 5: a problem whose tests a trivial answer (zeros, a constant, an echo of an input,
whatever torch.empty holds) passes cannot tell a real kernel from a bad one; the check says so on its first test."""
from __future__ import annotations

from typing import Any

import torch

from kernel_mcp.results import CheckResult, Finding
from kernel_mcp.worker import tensors
from kernel_mcp.worker.judge.outputs import Answer, judge_values
from kernel_mcp.worker.judge.reference import CaseData, Reference, ReferenceRuntime
from kernel_mcp.worker.judge.shared_truth import fingerprint
from kernel_mcp.worker.judge.tolerance import CHUNK

TRIVIAL_OUTPUTS = ("zeros", "a constant", "an echo of the first input", "torch.empty")


def _trivial(kind: str, want: torch.Tensor, first_input: torch.Tensor | None) -> torch.Tensor | None:
    if kind == "zeros":
        return torch.zeros_like(want)
    if kind == "a constant":
        if want.numel() <= 1:  # the mean of one value is the answer itself: no test of anything (a loss)
            return None
        return torch.full_like(want, _mean(want) if want.is_floating_point() else 1)
    if kind == "torch.empty":
        fresh = torch.empty_like(want)
        # memory recycled from the judge's own reference computation says nothing about the problem
        return None if tensors.same_bytes(fresh, want) else fresh
    if first_input is not None and first_input.shape == want.shape:
        return first_input.to(want.dtype)
    return None


def _mean(t: torch.Tensor) -> float:
    """The mean in float64, a piece at a time: ``t.mean(dtype=torch.float64)`` makes a float64 copy of the
    whole tensor first (8 GiB beside a 4 GiB output: the probe was a check's peak, H200, 2026-12-02)."""
    flat = t.detach().reshape(-1)
    total = sum(piece.sum(dtype=torch.float64).item() for piece in flat.split(CHUNK))
    return total / max(flat.numel(), 1)


def _trivial_passes(kind: str, rt: ReferenceRuntime, reference: Reference, pristine: Any, params: dict) -> bool:
    """Does the trivial answer ``kind`` pass (with every input compared after the call left as it was: the
    candidate did nothing to it)? Its own function, so each answer is freed before the next is made (two
    outputs' worth at once was a large problem's peak)."""
    inputs = tensors.leaves(pristine)
    fake = tensors.tree_map(lambda t: _trivial(kind, t, inputs[0][1] if inputs else None), reference.structure)
    made = tensors.leaves(fake)  # a leaf the trivial answer has no form for is None, so not a leaf
    if len(made) != len(reference.leaves) or not (made or reference.after):
        return False
    untouched = [inputs[i][1] for i, _ in reference.after]
    # until_failed: a trivial answer fails on its first piece outside the bound, nearly always the first piece
    return not judge_values(Answer(fake, untouched), reference, rt, params, pristine, until_failed=True)[0]


def _passing(rt: ReferenceRuntime, reference: Reference, served: CaseData, params: dict) -> list[str]:
    """The trivial answers that pass the first test. In a batch (judge/shared_truth.py) they are the same for
    every candidate of the problem, who are served the same inputs: read from the batch's store where a check
    of the same inputs, truth and task-dtype run kept them (four comparisons; one that passes reads the whole
    output)."""
    shared, key = (rt.shared if reference.memo else None), ""
    if shared:
        try:
            key = shared.key(f"trivial answers|{reference.memo}|{fingerprint(reference.structure)}")
        except Exception:  # noqa: BLE001  (NotFingerprinted and the like: then measured here, as alone)
            pass
    entry = shared.recall(key) if key else None
    if entry is not None:
        shared.probe_recalled = True
        return [str(kind) for kind in entry["passing"]]
    passing = [kind for kind in TRIVIAL_OUTPUTS if _trivial_passes(kind, rt, reference, served.data, params)]
    if key:
        shared.keep(key, {"passing": passing})
    return passing


def probe(rt: ReferenceRuntime, reference: Reference, served: CaseData, params: dict,
                      result: CheckResult) -> None:
    """docs/threat-model.md, rule 5: a problem whose tests a trivial output passes cannot tell good kernels from bad."""
    passing = _passing(rt, reference, served, params)
    if passing:
        result.problem_degenerate = True
        result.findings.append(Finding(code="degenerate_problem", severity="warning", message=(
            f"{', '.join(passing)} pass{'es' if len(passing) == 1 else ''} this problem's first test: its tests "
            "cannot tell a real kernel from a trivial answer (strengthen generate_input or the tolerance)")))
