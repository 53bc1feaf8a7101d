"""Compare a candidate's output with the float64 reference, with bounds derived from arithmetic.

Per element (DESIGN.md, after Higham & Mary 2019, probabilistic rounding-error analysis)::

    |out - ref64| <= a*sqrt(K)*u_acc*M + b*u_out*|ref64| + tiny

where u is the unit roundoff (fp32 2^-24, fp16/tf32 2^-11, bf16 2^-8, fp8 e4m3 2^-4), K the reduction
length, M the magnitude of the accumulated terms (|ref64|, or ref_kernel(|inputs|) such as |A|@|B|),
and tiny = the smallest normal number of the output dtype (flushing a subnormal to zero is no error).
In addition, norm-wise::

    ||out - ref64||_F <= (c*sqrt(K)*u_acc + u_out) * ||ref64||_F

Both bounds are widened, where needed, so that the same op computed honestly in the task dtype uses at
most half of them (the FlashAttention rule: at most ~2x the honest error). The per-element bound is scaled
as a whole, keeping its shape, so a bound too tight for an op never fails honest code, while tf32/bf16
shortcuts in an fp32 op (100-1000x the honest error) or a bf16 running sum in a bf16 matmul still fail. NaN/Inf never match a finite value.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kernel_mcp.results import Comparison, Mismatch
from kernel_mcp.taskspec import ToleranceSpec

UNIT_ROUNDOFF = {
    torch.float64: 2.0**-53, torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8,
    torch.complex128: 2.0**-53, torch.complex64: 2.0**-24,
}
for _name, _u in (("float8_e4m3fn", 2.0**-4), ("float8_e4m3fnuz", 2.0**-4), ("float8_e5m2", 2.0**-3),
                  ("float8_e5m2fnuz", 2.0**-3)):
    if hasattr(torch, _name):
        UNIT_ROUNDOFF[getattr(torch, _name)] = _u
MAX_REPORTED = 5


def unit_roundoff(dtype: torch.dtype) -> float:
    return UNIT_ROUNDOFF.get(dtype, 2.0**-24)


def accumulation_dtype(out_dtype: torch.dtype, declared: str | None) -> torch.dtype:
    if declared:
        return getattr(torch, declared)
    return torch.float32 if unit_roundoff(out_dtype) > 2.0**-24 else out_dtype


@dataclass
class Expected:
    """What the judge knows about one output leaf. All tensors are float64 (or the task dtype when the
    reference cannot run in float64, ``exact64=False``)."""

    ref: torch.Tensor
    honest: torch.Tensor | None = None  # the op computed by ref_kernel in the task dtype
    magnitude: torch.Tensor | None = None  # ref_kernel(|inputs|), when the task asks for it
    exact64: bool = True


def compare(out: torch.Tensor, exp: Expected, policy: ToleranceSpec, K: float, leaf: str = "") -> Comparison:
    ref = exp.ref.to(torch.float64) if exp.ref.is_floating_point() else exp.ref
    if not out.is_floating_point() or policy.mode == "exact":
        return _summarise(out, ref, torch.zeros((), device=ref.device, dtype=torch.float64), policy, leaf,
                          norm_bound=0.0, note="exact match required")
    bound, norm_bound, note = _bounds(out.dtype, exp, policy, K)
    return _summarise(out, ref, bound, policy, leaf, norm_bound, note)


def _bounds(out_dtype: torch.dtype, exp: Expected, policy: ToleranceSpec, K: float):
    ref = exp.ref.to(torch.float64)
    if policy.mode == "explicit":
        return (policy.atol or 0.0) + (policy.rtol or 0.0) * ref.abs(), math.inf, \
            f"explicit atol={policy.atol} rtol={policy.rtol}"
    u_out = unit_roundoff(out_dtype)
    u_acc = unit_roundoff(accumulation_dtype(out_dtype, policy.accumulate))
    mag = (exp.magnitude if exp.magnitude is not None else ref).to(torch.float64).abs()
    tiny = torch.finfo(out_dtype).tiny  # underflow: flushing a subnormal to zero is not an error
    root_k = math.sqrt(max(K, 1.0))
    widen = 1.0 if exp.exact64 else 2.0  # the reference itself carries task-dtype error
    bound = widen * (policy.a * root_k * u_acc * mag + policy.b * u_out * ref.abs() + tiny)
    norm_bound = widen * (policy.c * root_k * u_acc + u_out)
    note = f"derived: K={K:g}, u_out=2^{math.log2(u_out):.0f}, u_acc=2^{math.log2(u_acc):.0f}"
    if exp.honest is not None and exp.honest.shape == ref.shape:
        # Honest code must pass with a 2x margin: if the task-dtype reference itself uses more than half
        # of the bound anywhere, scale the whole bound (keeping its shape) until it uses half.
        honest_err = (exp.honest.to(torch.float64) - ref).abs()
        finite = torch.isfinite(honest_err) & torch.isfinite(bound)
        if finite.any():
            used = (honest_err[finite] / bound[finite]).max().item()
            if used > 0.5:
                bound = bound * (2.0 * used)
                note += f"; bound x{2 * used:.3g} (2x the honest task-dtype error)"
            ref_norm = _norm(ref)
            if ref_norm > 0:
                norm_bound = max(norm_bound, 2.0 * honest_err[finite].norm().item() / ref_norm)
    if not exp.exact64:
        note += "; no float64 reference, bounds doubled"
    return bound, norm_bound, note


def _norm(t: torch.Tensor) -> float:
    finite = t[torch.isfinite(t)]
    return finite.norm().item() if finite.numel() else 0.0


def _summarise(out: torch.Tensor, ref: torch.Tensor, bound: torch.Tensor, policy: ToleranceSpec, leaf: str,
               norm_bound: float, note: str) -> Comparison:
    o = out.detach().to(ref.device, torch.float64 if ref.is_floating_point() else ref.dtype)
    n = ref.numel()
    if o.is_floating_point():
        err = (o - ref).abs()
        both_nan = torch.isnan(o) & torch.isnan(ref)
        same_inf = torch.isinf(ref) & (o == ref)
        within = (err <= bound) & torch.isfinite(o)
        good = within | both_nan | same_inf
        finite = torch.isfinite(err)
        ratio = torch.where(finite, err / torch.clamp(bound, min=1e-300), torch.full_like(err, math.inf))
        rel = torch.where(ref != 0, err / ref.abs(), err)
        max_abs = err[finite].max().item() if finite.any() else (math.inf if n else 0.0)
        max_rel = rel[finite].max().item() if finite.any() else (math.inf if n else 0.0)
        max_ratio = ratio[~(both_nan | same_inf)].max().item() if n and (~(both_nan | same_inf)).any() else 0.0
        ref_norm = _norm(ref)
        diff = torch.where(both_nan | same_inf, torch.zeros_like(err), o - ref)
        norm_err = (diff.norm().item() / ref_norm) if ref_norm > 0 else diff.norm().item()
    else:
        good = o == ref
        err = (o.to(torch.float64) - ref.to(torch.float64)).abs()
        max_abs = err.max().item() if n else 0.0
        max_rel, max_ratio, norm_err = 0.0, (math.inf if max_abs else 0.0), 0.0
    bad = ~good
    mismatches = int(bad.sum().item())
    allowed = int(policy.max_mismatch_fraction * n)
    ok = mismatches <= allowed and norm_err <= norm_bound  # NaN norm error compares False: fails
    return Comparison(
        leaf=leaf, ok=ok, max_abs_error=max_abs, max_rel_error=max_rel, max_error_in_bounds=max_ratio,
        norm_error=norm_err, norm_bound=norm_bound if math.isfinite(norm_bound) else -1.0,
        mismatches=mismatches, elements=n, first_mismatches=_first(bad, o, ref, bound), note=note)


def _first(bad: torch.Tensor, out: torch.Tensor, ref: torch.Tensor, bound: torch.Tensor) -> list[Mismatch]:
    flat = torch.nonzero(bad.reshape(-1)).reshape(-1)[:MAX_REPORTED].tolist()
    b = bound.expand_as(ref).reshape(-1) if bound.numel() else bound
    return [Mismatch(index=unravel(f, tuple(ref.shape)), got=float(out.reshape(-1)[f]),
                     expected=float(ref.reshape(-1)[f]), bound=float(b[f]) if b.numel() > 1 else float(b))
            for f in flat]


def unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    """Row-major index of element ``flat`` (torch.unravel_index imports torch._refs: 0.3-2.5 s on first use)."""
    index = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        index.append(i)
    return index[::-1]
