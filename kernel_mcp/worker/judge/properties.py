"""Properties a problem may declare in task.yml (``kernel_mcp.properties``), checked in the judge in
addition to the element-wise comparison. They catch what a comparison with one reference can miss."""
from __future__ import annotations

import math
from typing import Any

import torch

from kernel_mcp.taskspec import PropertySpec
from kernel_mcp.worker.judge.tolerance import unit_roundoff


def check_property(spec: PropertySpec, data: Any, output: torch.Tensor, argument: float = 0.0) -> str | None:
    """None if ``output`` has the property, else a message saying how it fails. ``argument``: the largest exp()
    argument where the task declares ``exp_argument`` (tolerance.py): a softmax row computed as exp(x - lse)
    sums to 1 within that many units of roundoff more."""
    return _CHECKS[spec.name](spec, data, output, argument)


def _finite(spec: PropertySpec, data: Any, out: torch.Tensor, argument: float) -> str | None:
    bad = int((~torch.isfinite(out)).sum())
    return f"{bad} non-finite values" if bad else None


def _nonnegative(spec: PropertySpec, data: Any, out: torch.Tensor, argument: float) -> str | None:
    bad = int((out < 0).sum())
    return f"{bad} negative values" if bad else None


def _rows_sum_to_one(spec: PropertySpec, data: Any, out: torch.Tensor, argument: float) -> str | None:
    sums = out.to(torch.float64).sum(dim=-1)
    tol = (8 * math.sqrt(out.shape[-1]) + argument) * unit_roundoff(out.dtype)
    worst = (sums - 1).abs().max().item() if sums.numel() else 0.0
    return None if worst <= tol else f"a row sums to 1 +- {worst:.3g} (allowed {tol:.3g})"


def _freivalds(spec: PropertySpec, data: Any, out: torch.Tensor, argument: float) -> str | None:
    """C = A @ B checked through a random vector: A(Br) vs Cr in float64 (Freivalds 1977)."""
    a, b = data[spec.a].to(torch.float64), data[spec.b].to(torch.float64)
    r = torch.randn(b.shape[-1], 1, dtype=torch.float64, device=b.device)
    lhs, rhs = a @ (b @ r), out.to(torch.float64) @ r
    scale = (a.abs() @ (b.abs() @ r.abs())).norm().item() or 1.0
    u = max(unit_roundoff(out.dtype), 2.0**-24)
    rel = (lhs - rhs).norm().item() / scale
    tol = 16 * (math.sqrt(a.shape[-1]) * 2.0**-24 + u)
    return None if rel <= tol else f"A@(B@r) and C@r differ by {rel:.3g} of |A||B||r| (allowed {tol:.3g})"


_CHECKS = {"finite": _finite, "nonnegative": _nonnegative, "rows_sum_to_one": _rows_sum_to_one,
           "freivalds": _freivalds}
