"""Compare a candidate's output with the float64 reference, with bounds derived from arithmetic.

Per element (DESIGN.md, after Higham & Mary 2019, probabilistic rounding-error analysis)::

    |out - ref64| <= a*sqrt(K)*u_acc*M + b*u_out*|ref64| + tiny

where u is the unit roundoff (fp32 2^-24, fp16/tf32 2^-11, bf16 2^-8, fp8 e4m3 2^-4), K the reduction
length, M the magnitude of the accumulated terms (|ref64|, or ref_kernel(|inputs|) such as |A|@|B|),
and tiny = the smallest normal number of the output dtype (flushing a subnormal to zero is no error).
In addition, norm-wise::

    ||out - ref64||_F <= (c*sqrt(K)*u_acc + u_out) * ||ref64||_F

The per-element bound also gets an absolute floor (where the output cancels, |ref64| is far below the
terms summed and any other order of summation misses it): the larger of a*sqrt(K)*u_acc*RMS(ref64), what
any honest order of summing K terms stays within a priori, and NOISE_FLOOR times the RMS of the honest
task-dtype run's error beyond its output rounding (a floor, never the ceiling), both taken per *group*
of the output (noise_floor.py), so that rows orders of magnitude smaller than others are held to their own
noise, not the large rows'. Then it is scaled as a whole, keeping its shape, until the same op computed honestly in the task dtype uses at most half of it
(the FlashAttention rule); norm-wise a candidate may be HONEST_NORM_MARGIN times less accurate than that
honest run (another order of summation is at times 2x; one precision step down is 8x or more). So a bound
too tight for an op never fails honest code, while tf32/bf16 shortcuts in an fp32 op (100-1000x the
honest error) or a bf16 running sum in a bf16 matmul still fail (bench/tolerance_bench.py, 1,000 seeds).
NaN/Inf never match a finite value, and are counted apart (``Comparison.nonfinite``: under every precision
contract they fail). Outputs are compared in pieces of CHUNK elements (memory).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kernel_mcp import noise_floor
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
CHUNK = 1 << 22  # elements compared at a time: float64 temporaries of 32 MiB each
NOISE_FLOOR = 8.0  # absolute floor, in RMS of the honest accumulation noise (bench/tolerance_bench.py)
# norm-wise, an honest kernel may be this many times less accurate than the reference's own task-dtype
# run (another order of summation: 2x failed 1 check in 25 on row sums, bench/tolerance_bench.py); one
# precision step down (bf16 against TF32: 8x) still fails
HONEST_NORM_MARGIN = 4.0
SMALL_OUTPUT = 32


def inferred_reduction_length(input_elements: int, output_elements: int) -> float:
    """K for a problem that declares none: input elements per output element. Right for reductions to
    few outputs (a row sum, a loss), where the reference's own noise is too few samples to measure; low
    for a matmul or a convolution, whose many outputs measure that noise instead (the absolute floor)."""
    return max(1.0, input_elements / max(output_elements, 1))


def unit_roundoff(dtype: torch.dtype) -> float:
    return UNIT_ROUNDOFF.get(dtype, 2.0**-24)


def accumulation_dtype(out_dtype: torch.dtype, declared: str | None) -> torch.dtype:
    if declared:
        return getattr(torch, declared)
    return torch.float32 if unit_roundoff(out_dtype) > 2.0**-24 else out_dtype


@dataclass
class Expected:
    """What the judge knows about one output leaf. All tensors are float64 (or the task dtype when the
    reference cannot run in float64, ``exact64=False``). They may live in host memory while the output is
    on the device (a large problem's float64 copies are parked there): the comparison moves them piece by
    piece."""

    ref: torch.Tensor
    honest: torch.Tensor | None = None  # the op computed by ref_kernel in the task dtype
    magnitude: torch.Tensor | None = None  # ref_kernel(|inputs|), when the task asks for it
    exact64: bool = True


@dataclass
class _Bound:
    """The per-element bound, ``scale * (on_mag*M + on_ref*|ref| + floor + groups[group])``, made for one
    piece at a time (``groups``: the absolute floor of each group of ``group_size`` elements)."""

    on_mag: float = 0.0
    on_ref: float = 0.0
    floor: float = 0.0
    scale: float = 1.0
    groups: torch.Tensor | None = None
    group_size: int = 1

    def of(self, ref: torch.Tensor, mag: torch.Tensor | None, start: int = 0) -> torch.Tensor:
        bound = self.on_ref * ref.abs() + self.floor
        if self.on_mag:
            bound = bound + self.on_mag * (ref if mag is None else mag).abs()
        if self.groups is not None:
            bound = bound + self.groups[noise_floor.group_ids(start, ref.numel(), self.group_size, ref.device)]
        return bound * self.scale if self.scale != 1.0 else bound


def compare(out: torch.Tensor, exp: Expected, policy: ToleranceSpec, K: float, leaf: str = "",
            held_to: torch.dtype | None = None, k_source: str = "") -> Comparison:
    """``out`` against ``exp`` within the policy's bound, in pieces of CHUNK elements: the float64
    temporaries stay a few hundred MiB whatever the output's size (a whole-tensor comparison needed some
    ten float64 copies of the output at once). ``held_to``: the dtype whose precision the bound assumes
    (default: the output's own; a float64 reference of lower-precision inputs holds the output to theirs)."""
    pieces = _Pieces(out, exp)
    if not out.is_floating_point() or policy.mode == "exact":
        return _tally(pieces, _Bound(), policy, leaf, 0.0, "exact match required")
    dtype = held_to or out.dtype
    bound, norm_bound, note = _bounds(dtype, exp, policy, K)
    if k_source and policy.mode != "explicit":
        note = note.replace(f"K={K:g}", f"K={K:g} ({k_source})", 1)
    honest_norm = 0.0
    if policy.mode != "explicit":
        paired = exp.honest is not None and exp.honest.shape == exp.ref.shape
        note += _set_floor(pieces, bound, policy, dtype, K, paired, 1.0 if exp.exact64 else 2.0)
        if paired:
            # Honest code must pass with a 2x margin: if the task-dtype reference itself uses more than half
            # of the bound anywhere, scale the whole bound (keeping its shape) until it uses half.
            used, honest_norm = _honest_use(pieces, bound)
            if used > 0.5:
                bound.scale = 2.0 * used
                note += f"; bound x{2 * used:.3g} (2x the honest task-dtype error)"
    if not exp.exact64:
        note += "; no float64 reference, bounds doubled"
    if held_to is not None and held_to != out.dtype:
        note += f"; held to {str(held_to).removeprefix('torch.')} (the inputs' precision)"
    return _tally(pieces, bound, policy, leaf, norm_bound, note, honest_norm)


def _set_floor(pieces: "_Pieces", bound: "_Bound", policy: ToleranceSpec, dtype: torch.dtype, K: float,
               paired: bool, widen: float) -> str:
    """The per-group absolute floor (returns its note). Where the output cancels (|ref| far below the terms
    summed) a bound proportional to |ref| is smaller than any order of summation achieves. A priori, any order
    of summing K terms (sequential, blocked, pairwise, split-K, atomics) errs by about sqrt(K)*u_acc times the
    partial sums' magnitude in RMS (sequential, terms of random sign: sqrt(K/6)*u_acc*RMS(ref)), which
    a*sqrt(K)*u_acc*RMS(ref) over the group covers some 20 times. The reference's own task-dtype error beyond
    its output rounding (``paired``) measures the noise of its order of summation on these inputs (cuBLAS and
    MKL sum more accurately than a plain loop): NOISE_FLOOR times its RMS is a floor, never the ceiling.
    ``widen``: 2 where the reference is the task-dtype run itself (no float64 run), as for the other terms."""
    u_acc = unit_roundoff(accumulation_dtype(dtype, policy.accumulate))
    size = noise_floor.group_size(pieces.shape)
    noise, rms = noise_floor.honest_noise(pieces, unit_roundoff(dtype), size, paired)
    floors = torch.maximum(NOISE_FLOOR * noise, policy.a * math.sqrt(max(K, 1.0)) * u_acc * rms)
    if not bool((floors > 0).any()):
        return ""
    bound.groups, bound.group_size = floors * widen, size
    return (f"; absolute floor per {size} elements {floors.min().item():.3g} to {floors.max().item():.3g} "
            f"(honest noise RMS up to {noise.max().item():.3g}, output RMS up to {rms.max().item():.3g})")


def _bounds(out_dtype: torch.dtype, exp: Expected, policy: ToleranceSpec, K: float) -> tuple[_Bound, float, str]:
    if policy.mode == "explicit":
        return _Bound(on_ref=policy.rtol or 0.0, floor=policy.atol or 0.0), math.inf, \
            f"explicit atol={policy.atol} rtol={policy.rtol}"
    u_out = unit_roundoff(out_dtype)
    u_acc = unit_roundoff(accumulation_dtype(out_dtype, policy.accumulate))
    tiny = torch.finfo(out_dtype).tiny  # underflow: flushing a subnormal to zero is not an error
    root_k = math.sqrt(max(K, 1.0))
    widen = 1.0 if exp.exact64 else 2.0  # the reference itself carries task-dtype error
    bound = _Bound(on_mag=widen * policy.a * root_k * u_acc, on_ref=widen * policy.b * u_out, floor=widen * tiny)
    norm_bound = widen * (policy.c * root_k * u_acc + u_out)
    return bound, norm_bound, f"derived: K={K:g}, u_out=2^{math.log2(u_out):.0f}, u_acc=2^{math.log2(u_acc):.0f}"


class _Pieces:
    """Aligned flat pieces of the output and of what is expected of it, on the output's device."""

    def __init__(self, out: torch.Tensor, exp: Expected):
        self.device, self.n, self.shape = out.device, out.numel(), tuple(exp.ref.shape)
        self.flat = [None if t is None else t.detach().reshape(-1) for t in (out, exp.ref, exp.honest, exp.magnitude)]
        self.floating = exp.ref.is_floating_point()

    def __iter__(self):
        for start in range(0, self.n, CHUNK):
            end = min(self.n, start + CHUNK)
            out, ref, honest, mag = (None if t is None else t[start:end].to(self.device) for t in self.flat)
            if self.floating:
                ref = ref.to(torch.float64)
                out = out.to(torch.float64)
                mag = None if mag is None else mag.to(torch.float64)
            else:
                out = out.to(ref.dtype)
            yield start, out, ref, honest, mag


def _honest_use(pieces: _Pieces, bound: _Bound) -> tuple[float, float]:
    """The largest share of the bound the task-dtype reference uses, and its error's norm."""
    used = torch.zeros((), dtype=torch.float64, device=pieces.device)
    squares = torch.zeros_like(used)
    for start, _, ref, honest, mag in pieces:
        error = (honest.to(torch.float64) - ref).abs()
        b = bound.of(ref, mag, start)
        finite = torch.isfinite(error) & torch.isfinite(b)
        used = torch.maximum(used, torch.where(finite, error / b, 0.0).amax())
        squares += torch.where(finite, error, 0.0).square().sum()
    return used.item(), math.sqrt(squares.item())


class _Totals:
    """Running statistics over the pieces, kept on the device (one synchronisation at the end)."""

    def __init__(self, device: torch.device):
        zero = torch.zeros((), dtype=torch.float64, device=device)
        self.max_abs, self.max_rel, self.max_ratio = zero.clone(), zero.clone(), zero.clone()
        self.ref_squares, self.diff_squares = zero.clone(), zero.clone()
        self.finite = torch.zeros((), dtype=torch.int64, device=device)
        self.considered, self.bad, self.nonfinite = self.finite.clone(), self.finite.clone(), self.finite.clone()
        self.first: list[Mismatch] = []


def _tally(pieces: _Pieces, bound: _Bound, policy: ToleranceSpec, leaf: str, norm_bound: float, note: str,
           honest_norm: float = 0.0) -> Comparison:
    totals = _Totals(pieces.device)
    for start, out, ref, honest, mag in pieces:
        b = bound.of(ref, mag, start) if pieces.floating else None
        bad = _add_piece(totals, out, ref, b, honest) if pieces.floating else _add_exact_piece(totals, out, ref)
        if len(totals.first) < MAX_REPORTED:
            for f in torch.nonzero(bad).reshape(-1)[:MAX_REPORTED - len(totals.first)].tolist():
                totals.first.append(Mismatch(index=unravel(start + f, pieces.shape), got=float(out[f]),
                                             expected=float(ref[f]), bound=float(b[f]) if b is not None else 0.0))
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
    allowed = int(policy.max_mismatch_fraction * n)
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
