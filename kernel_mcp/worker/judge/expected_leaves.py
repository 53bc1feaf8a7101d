"""The expected value of each output leaf (and each input compared after the call), from the reference's
float64 run and its task-dtype run on the same inputs: the float64 one is the truth unless the two are not
the same computation (a random draw that differs between them, another code path in float64)."""
from __future__ import annotations

import math
from typing import Any

import torch

from kernel_mcp.results import Finding
from kernel_mcp.worker import tensors
from kernel_mcp.worker.judge.tolerance import CHUNK, Expected

# the task-dtype reference further than this from the float64 one (relative, norm-wise) is not the same
# computation: a random draw that differs between the two (dropout), or another code path in float64
INCONSISTENT = 0.25


def leaf(path: str, honest: torch.Tensor, ref: torch.Tensor, magnitude: torch.Tensor | None, exact: bool,
         findings: list[Finding]) -> tuple[str, Expected]:
    """One leaf's Expected: the float64 run with the task-dtype run beside it (the honest error), or, where the
    two are not the same computation, the task-dtype run alone (``exact64=False``: doubled bounds)."""
    if exact and honest.is_floating_point() and not consistent(honest, ref):
        if not any(f.code == "float64_inconsistent" for f in findings):
            findings.append(Finding(code="float64_inconsistent", severity="info", message=(
                f"the reference's float64 run differs from its own run in the task dtype (in shape, or by more "
                f"than {INCONSISTENT:.0%} norm-wise) at output{path}: it draws random numbers differently in "
                "float64, or takes another path there; the candidate is compared with the task-dtype run "
                "(same RNG seed), with doubled bounds")))
        return path, Expected(ref=honest.detach(), exact64=False)
    return path, Expected(ref=ref.detach(), honest=honest.detach() if exact else None,
                          magnitude=None if magnitude is None else magnitude.detach(), exact64=exact)


def pairs(honest: tuple[Any, list], ref: tuple[Any, list], magnitude: tuple[Any, list] | None,
          after: list[int]) -> list[tuple]:
    """(path, honest leaf, float64 leaf, magnitude leaf or None) for every output leaf, then every input
    compared after the call (path `` (input i after the call)``)."""
    def flat(tree: tuple[Any, list]) -> list[torch.Tensor]:
        return [t for _, t in tensors.leaves(tree[0])] + list(tree[1])
    paths = [p for p, _ in tensors.leaves(honest[0])] + [f" (input {i} after the call)" for i in after]
    mags = flat(magnitude) if magnitude is not None else [None] * len(paths)
    return list(zip(paths, flat(honest), flat(ref), mags))


def consistent(honest: torch.Tensor, ref: torch.Tensor) -> bool:
    """Is the task-dtype run the same computation as the float64 one (the same shape, norm-wise within INCONSISTENT)?
    In pieces, as the comparison goes: the float64 reference may wait in host memory."""
    if honest.shape != ref.shape:  # another shape is another computation (and no element-wise comparison)
        return False
    if not honest.numel():
        return True
    diff = scale = 0.0
    h_flat, r_flat = honest.detach().reshape(-1), ref.detach().reshape(-1)
    for start in range(0, h_flat.numel(), CHUNK):
        h = h_flat[start:start + CHUNK].to(torch.float64)
        r = r_flat[start:start + CHUNK].to(h.device, torch.float64)
        finite = torch.isfinite(h) & torch.isfinite(r)
        diff += torch.where(finite, h - r, 0.0).square().sum().item()
        scale += torch.where(finite, r, 0.0).square().sum().item()
    return math.sqrt(diff) <= INCONSISTENT * math.sqrt(scale)
