"""Batch invariance, a property a task may declare (issue 39): each row's result must not depend on what else
is in the batch. Inference engines need it for reproducible sampling: a request's logits must be the same
bits whether it was batched with one other request or with 63. The usual way to break it is a kernel that
picks its reduction split from the batch size (split-K for small batches to fill the device), which sums
each row in another order when the batch changes, within any tolerance and yet not the same bits.

Measured on the first listed test, once every case passed: the full batch's output is the one kept for the
determinism repeat (judge/determinism.py); then the candidate is called, in a fresh host that has seen none of
those rows (judge/repeat.py), on sub-batches cut from the same inputs along the declared dimension (the first
row alone, the last row alone, and a shuffled half), and each row compared with the same row of the full
batch, bit for bit or within the declared ``atol``. In the host that computed the full batch a memo of rows by
their bytes would answer every sub-batch (tests/cheats/bi_row_cache.py).
"""
from __future__ import annotations

import secrets
from typing import Any

import torch

from kernel_mcp.results import CheckResult, Finding
from kernel_mcp.taskspec import BatchInvariance
from kernel_mcp.worker import tensors
from kernel_mcp.worker.judge.case import Case, CaseRunner
from kernel_mcp.worker.judge.determinism import REPEATED, differing_elements


def measure(runner: CaseRunner, fresh: CaseRunner, cases: list[Case], result: CheckResult) -> None:
    """An error finding (the check fails: ``fail: batch_variant``) where a row computed in a sub-batch by
    ``fresh`` differs from the same row computed in the full batch by ``runner``; an info finding otherwise."""
    spec = runner.rt.problem.spec.batch_invariant
    case = next((c for c in cases if c.name == REPEATED), None)
    if spec is None or case is None or runner.kept is None:
        return
    full, seed = runner.kept
    data = runner.rt.case(case.params, signed=case.signed, rng_seed=seed).data
    batch = _batch_size(data, spec)
    if batch < 2:
        result.findings.append(Finding(code="batch_invariance_not_measured", severity="warning", message=(
            f"{case.name}: the batch dimension {spec.dim} has {batch} row(s): nothing to vary")))
        return
    for rows in _subsets(batch):
        out = fresh.call(_cut(data, spec, rows), seed)
        worst = _worst(out, full, spec, rows)
        if worst:
            result.findings.append(Finding(code="batch_variant", message=(
                f"{case.name}: rows {_said(rows)} computed as a batch of {len(rows)} differ from the same rows "
                f"computed in the full batch of {batch}: {worst} (the task declares batch_invariant; a reduction "
                "split chosen by the batch size sums in another order)")))
            return
    result.findings.append(Finding(code="batch_invariant", severity="info", message=(
        f"{case.name}: every row the same {'bits' if not spec.atol else f'within {spec.atol:g}'} alone, "
        f"last, and in a shuffled half as in the full batch of {batch}")))


def _batch_size(data: Any, spec: BatchInvariance) -> int:
    leaves = tensors.leaves(data)
    return min((leaves[i][1].shape[spec.dim] for i in spec.inputs if i < len(leaves)
                and leaves[i][1].dim() > spec.dim), default=0)


def _subsets(batch: int) -> list[torch.Tensor]:
    """The first row alone, the last alone, and half the rows (at least two) in a shuffled order."""
    half = torch.randperm(batch, generator=torch.Generator().manual_seed(secrets.randbits(63)))[:max(2, batch // 2)]
    return [torch.tensor([0]), torch.tensor([batch - 1]), half]


def _cut(data: Any, spec: BatchInvariance, rows: torch.Tensor) -> Any:
    """``data`` with the declared inputs cut to ``rows`` along the batch dimension (fresh tensors)."""
    index = iter(range(1 << 30))

    def cut(t: torch.Tensor) -> torch.Tensor:
        mine = next(index) in spec.inputs
        return t.index_select(spec.dim, rows.to(t.device)).contiguous() if mine else t.clone()
    return tensors.tree_map(cut, data)


def _worst(out: Any, full: Any, spec: BatchInvariance, rows: torch.Tensor) -> str:
    """'' when every output row matches; else what differs."""
    if out is None:
        return "the call gave no output"
    got, want = tensors.leaves(out), tensors.leaves(full)
    if len(got) != len(want):
        return f"{len(got)} outputs, not {len(want)}"
    for (path, g), (_, w) in zip(got, want):
        w = w.index_select(spec.dim, rows.to(w.device))
        if g.shape != w.shape or g.dtype != w.dtype:
            return f"output{path}: {tuple(g.shape)} {g.dtype}, not {tuple(w.shape)} {w.dtype}"
        if spec.atol:
            gap = (g.double() - w.to(g.device).double()).abs().max().item() if g.numel() else 0.0
            if not gap <= spec.atol:
                return f"output{path}: they differ by up to {gap:.3g} (allowed {spec.atol:g})"
        else:
            moved = differing_elements(g, w)
            if moved:
                return f"output{path}: {moved} of {g.numel()} elements differ bit for bit"
    return ""


def _said(rows: torch.Tensor) -> str:
    shown = rows.tolist()
    return ", ".join(map(str, shown[:8])) + (", ..." if len(shown) > 8 else "")
