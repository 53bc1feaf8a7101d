"""Tallying a comparison: each piece of an output against its per-element bound (judge/tolerance.py makes the bound),
folded into running statistics kept on the device, then the decision: few enough elements outside the bound,
and the norm-wise error within its bound (an honest kernel may be HONEST_NORM_MARGIN times less accurate than
the reference's own task-dtype run). NaN or Inf never matches a finite value."""
from __future__ import annotations

import math

import torch

from kernel_mcp.results import Comparison, Mismatch
from kernel_mcp.taskspec import ToleranceSpec

MAX_REPORTED = 5
# norm-wise, an honest kernel may be this many times less accurate than the reference's own task-dtype
# run (another order of summation: 2x failed 1 check in 25 on row sums, bench/tolerance_bench.py); one
# precision step down (bf16 against TF32: 8x) still fails
HONEST_NORM_MARGIN = 4.0
SMALL_OUTPUT = 32


class _Totals:
    """Running statistics over the pieces, kept on the device (read once at the end; a piece waits for the device
    only to see whether every element is finite, and, with ``until_failed``, to count its mismatches)."""

    def __init__(self, device: torch.device):
        zero = torch.zeros((), dtype=torch.float64, device=device)
        self.max_abs, self.max_rel, self.max_ratio = zero.clone(), zero.clone(), zero.clone()
        self.ref_squares, self.diff_squares = zero.clone(), zero.clone()
        self.finite = torch.zeros((), dtype=torch.int64, device=device)
        self.considered, self.bad, self.nonfinite = self.finite.clone(), self.finite.clone(), self.finite.clone()
        self.first: list[Mismatch] = []


def tally(pieces, bound, policy: ToleranceSpec, leaf: str, norm_bound: float, note: str,
          honest_norm: float = 0.0, until_failed: bool = False) -> Comparison:
    """``pieces``: tolerance._Pieces; ``bound``: its _Bound (``of(ref, mag, start)``, the per-element bound).
    ``until_failed``: stop after the first piece that puts the mismatches past those allowed (one wait for the
    device a piece; the statistics then cover the pieces read so far, and the comparison fails)."""
    totals = _Totals(pieces.device)
    allowed = int(policy.max_mismatch_fraction * pieces.n)
    for start, out, ref, honest, mag in pieces:
        b = bound.of(ref, mag, start) if pieces.floating else None
        bad = _add_piece(totals, out, ref, b, honest) if pieces.floating else _add_exact_piece(totals, out, ref)
        if len(totals.first) < MAX_REPORTED:
            for f in torch.nonzero(bad).reshape(-1)[:MAX_REPORTED - len(totals.first)].tolist():
                totals.first.append(Mismatch(index=unravel(start + f, pieces.shape), got=float(out[f]),
                                             expected=float(ref[f]), bound=float(b[f]) if b is not None else 0.0))
        if until_failed and totals.bad.item() > allowed:
            break
    n = pieces.n
    any_finite = totals.finite.item() > 0
    max_abs = totals.max_abs.item() if any_finite else (math.inf if n else 0.0)
    max_rel = totals.max_rel.item() if any_finite else (math.inf if n else 0.0)
    ref_norm = math.sqrt(totals.ref_squares.item())
    diff_norm = math.sqrt(totals.diff_squares.item())
    if pieces.floating:
        norm_err = diff_norm / ref_norm if ref_norm > 0 else diff_norm
        max_ratio = totals.max_ratio.item() if totals.considered.item() else 0.0
        if ref_norm > 0 and honest_norm > 0:
            # over few elements the honest error's norm is itself a draw of a few errors (it may be near
            # zero by chance): the margin widens as 1/sqrt(n) below SMALL_OUTPUT elements
            margin = HONEST_NORM_MARGIN * max(1.0, math.sqrt(SMALL_OUTPUT / max(n, 1)))
            norm_bound = max(norm_bound, margin * honest_norm / ref_norm)
    else:
        norm_err, max_rel, max_ratio = 0.0, 0.0, (math.inf if max_abs else 0.0)
    mismatches = int(totals.bad.item())
    ok = mismatches <= allowed and norm_err <= norm_bound  # NaN norm error compares False: fails
    return Comparison(
        leaf=leaf, ok=ok, max_abs_error=max_abs, max_rel_error=max_rel, max_error_in_bounds=max_ratio,
        norm_error=norm_err, norm_bound=norm_bound if math.isfinite(norm_bound) else -1.0,
        mismatches=mismatches, elements=n, first_mismatches=totals.first, note=note,
        nonfinite=int(totals.nonfinite.item()))


def _add_piece(t: _Totals, out: torch.Tensor, ref: torch.Tensor, bound: torch.Tensor,
               honest: torch.Tensor | None) -> torch.Tensor:
    """Fold one floating piece into the totals; returns the mask of elements outside the bound. Both NaN,
    or the same infinity, match; NaN or Inf never matches a finite value (counted apart where the honest
    task-dtype run is finite there too: an overflow the reference's own run makes is no sign of cheating)."""
    err = (out - ref).abs()
    if bool(torch.isfinite(err).all()):  # out and ref both finite everywhere (Inf - Inf and NaN are not)
        return _add_finite_piece(t, err, ref, bound)
    return _add_general_piece(t, out, ref, bound, honest, err)


def _add_general_piece(t: _Totals, out: torch.Tensor, ref: torch.Tensor, bound: torch.Tensor,
                       honest: torch.Tensor | None, err: torch.Tensor) -> torch.Tensor:
    """_add_piece's rules where some element is NaN or Inf."""
    broken = ~torch.isfinite(out) & torch.isfinite(ref)
    if honest is not None and honest.shape == out.shape:
        broken &= torch.isfinite(honest)
    t.nonfinite += broken.sum()
    matched_special = (torch.isnan(out) & torch.isnan(ref)) | (torch.isinf(ref) & (out == ref))
    good = ((err <= bound) & torch.isfinite(out)) | matched_special
    finite = torch.isfinite(err)
    t.finite += finite.sum()
    t.max_abs = torch.maximum(t.max_abs, torch.where(finite, err, 0.0).amax())
    rel = torch.where(ref != 0, err / ref.abs(), err)
    t.max_rel = torch.maximum(t.max_rel, torch.where(finite, rel, 0.0).amax())
    ratio = torch.where(finite, err / torch.clamp(bound, min=1e-300), math.inf)
    t.max_ratio = torch.maximum(t.max_ratio, torch.where(matched_special, 0.0, ratio).amax())
    t.considered += (~matched_special).sum()
    t.ref_squares += torch.where(torch.isfinite(ref), ref, 0.0).square().sum()
    t.diff_squares += torch.where(matched_special, 0.0, out - ref).square().sum()
    bad = ~good
    t.bad += bad.sum()
    return bad


def _add_finite_piece(t: _Totals, err: torch.Tensor, ref: torch.Tensor, bound: torch.Tensor) -> torch.Tensor:
    """_add_piece where every element of the output and the reference is finite (nearly every piece), in a third
    of its operations: nothing non-finite to count or match, so each statistic is the general one's exactly."""
    t.finite += err.numel()
    t.considered += err.numel()
    t.max_abs = torch.maximum(t.max_abs, err.amax())
    t.max_rel = torch.maximum(t.max_rel, torch.where(ref != 0, err / ref.abs(), err).amax())
    t.max_ratio = torch.maximum(t.max_ratio, (err / torch.clamp(bound, min=1e-300)).amax())
    t.ref_squares += ref.square().sum()
    t.diff_squares += err.square().sum()
    bad = ~(err <= bound)  # not err > bound: a NaN bound passes nothing, as in _add_piece
    t.bad += bad.sum()
    return bad


def _add_exact_piece(t: _Totals, out: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Integers and bools: equal or not."""
    bad = out != ref
    t.finite += out.numel()
    t.max_abs = torch.maximum(t.max_abs, (out.to(torch.float64) - ref.to(torch.float64)).abs().amax())
    t.bad += bad.sum()
    return bad


def unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    """Row-major index of element ``flat`` (torch.unravel_index imports torch._refs: 0.3-2.5 s on first use)."""
    index = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return index[::-1]
