"""Compare a candidate's output with the float64 reference, with bounds derived from arithmetic.

Per element (docs/verdict.md, "Tolerances", after Higham & Mary 2019, probabilistic rounding-error analysis)::

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
of the output (judge/noise_floor.py), so that rows orders of magnitude smaller than others are held to their own
noise, not the large rows'. Then it is scaled as a whole, keeping its shape, until the same op computed honestly in the
task dtype uses at most half of it (the FlashAttention rule); norm-wise a candidate may be HONEST_NORM_MARGIN times less
accurate than that honest run (another order of summation is at times 2x; one precision step down is 8x or more). So a
bound too tight for an op never fails honest code, while tf32/bf16 shortcuts in an fp32 op (100-1000x the honest error)
or a bf16 running sum in a bf16 matmul still fail (bench/tolerance_bench.py, 1,000 seeds). NaN/Inf never match a finite
value, and are counted apart (``Comparison.nonfinite``: under every precision contract they fail). Outputs are compared
in pieces of CHUNK elements (memory).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from kernel_mcp.results import Comparison
from kernel_mcp.taskspec import ToleranceSpec
from kernel_mcp.worker.judge import noise_floor
from kernel_mcp.worker.judge.tally import tally as _tally

UNIT_ROUNDOFF = {
    torch.float64: 2.0**-53, torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8,
    torch.complex128: 2.0**-53, torch.complex64: 2.0**-24,
}
for _name, _u in (("float8_e4m3fn", 2.0**-4), ("float8_e4m3fnuz", 2.0**-4), ("float8_e5m2", 2.0**-3),
                  ("float8_e5m2fnuz", 2.0**-3)):
    if hasattr(torch, _name):
        UNIT_ROUNDOFF[getattr(torch, _name)] = _u
EXACT_NOTE = "exact match required"  # integers, bools and policy "exact"
CHUNK = 1 << 22  # elements compared at a time: float64 temporaries of 32 MiB each
NOISE_FLOOR = 8.0  # absolute floor, in RMS of the honest accumulation noise (bench/tolerance_bench.py)


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
    # bounds made for this leaf, by what they depend on (never the output): a check compares one leaf with the
    # candidate's output and with up to four trivial answers (judge/degenerate.py), and on a large output each
    # bound was two passes over the float64 reference (8.7 s for 1.6G elements parked in host memory, H100,
    # bench/compare_bench.py). Kept for the case: its per-group floors (1/8 of the output's elements in bytes
    # for a 1-D output, far less for rows) stay on the device while the candidate runs
    bounds: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    # a complex leaf's real and imaginary parts as an Expected of its own (_as_real), with its own bounds
    as_real: "Expected | None" = field(default=None, init=False, repr=False, compare=False)


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
            held_to: torch.dtype | None = None, k_source: str = "", argument: float = 0.0,
            until_failed: bool = False) -> Comparison:
    """``out`` against ``exp`` within the policy's bound, in pieces of CHUNK elements: the float64
    temporaries stay a few hundred MiB whatever the output's size (a whole-tensor comparison needed some
    ten float64 copies of the output at once). ``held_to``: the dtype whose precision the bound assumes
    (default: the output's own; a float64 reference of lower-precision inputs holds the output to theirs).
    A complex output is compared as its real and imaginary parts, under the bound of the matching real dtype.
    ``argument``: the largest exp() argument's size where the task declares ``exp_argument`` (else 0).
    ``until_failed``: stop at the first piece past the mismatches allowed (only ``ok`` is then meaningful:
    the trivial answers' probe, which asks nothing else)."""
    if out.is_complex() or exp.ref.is_complex():
        out, exp, held_to = _as_real(out, exp, held_to)
    pieces = _Pieces(out, exp)
    if not out.is_floating_point() or policy.mode == "exact":
        return _tally(pieces, _Bound(), policy, leaf, 0.0, EXACT_NOTE, until_failed=until_failed)
    dtype = held_to or out.dtype
    bound, norm_bound, note, honest_norm = _bound_for(pieces, exp, dtype, policy, K, argument)
    if k_source and policy.mode != "explicit":
        note = note.replace(f"K={K:g}", f"K={K:g} ({k_source})", 1)
    if not exp.exact64:
        note += "; no float64 reference, bounds doubled"
    if held_to is not None and held_to != out.dtype:
        note += f"; held to {str(held_to).removeprefix('torch.')} (the inputs' precision)"
    return _tally(pieces, bound, policy, leaf, norm_bound, note, honest_norm, until_failed=until_failed)


def _bound_for(pieces: "_Pieces", exp: Expected, dtype: torch.dtype, policy: ToleranceSpec, K: float,
               argument: float) -> tuple["_Bound", float, str, float]:
    """(per-element bound, norm-wise bound, note, the honest run's error norm) for ``exp`` held to ``dtype``: made
    once per leaf and device (``exp.bounds``), since nothing in it depends on the output compared (the bound is not
    changed once made)."""
    key = (dtype, policy.model_dump_json(), float(K), float(argument), str(pieces.device))
    if key in exp.bounds:
        return exp.bounds[key]
    bound, norm_bound, note = _bounds(dtype, exp, policy, K, argument)
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
    exp.bounds[key] = (bound, norm_bound, note, honest_norm)
    return exp.bounds[key]


def _real(t: torch.Tensor | None) -> torch.Tensor | None:
    return torch.view_as_real(t.resolve_conj()) if t is not None and t.is_complex() else t


def _as_real(out: torch.Tensor, exp: Expected, held_to: torch.dtype | None) -> tuple:
    """A complex output and what is expected of it as real tensors with a last dimension of 2 (real,
    imaginary); a real output where a complex one is due is refused before, by its form (outputs.output_integrity:
    its dtype), and here would raise as _Pieces does on any other size. The real
    Expected is kept (``exp.as_real``), so that its own bounds are made once too."""
    real = exp.as_real
    if real is None:
        real = Expected(ref=_real(exp.ref), honest=_real(exp.honest), magnitude=_real(exp.magnitude),
                        exact64=exp.exact64)
        if real.magnitude is not None:
            real.magnitude = real.magnitude.abs()
        exp.as_real = real
    held = None if held_to is None else (held_to.to_real() if held_to.is_complex else held_to)
    return _real(out), real, held


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


def _bounds(out_dtype: torch.dtype, exp: Expected, policy: ToleranceSpec, K: float,
            argument: float = 0.0) -> tuple[_Bound, float, str]:
    """The per-element bound and the norm-wise one (relative to ||ref64||). ``argument``: exp(y) with y rounded to
    y(1 + d), |d| <= u_acc, is exp(y) * (1 + y*d): an argument as large as the inputs (softmax's x - lse, lse up
    to the logits' size) moves the output by up to |y|*u_acc relative, whatever the reduction length."""
    if policy.mode == "explicit":
        return _Bound(on_ref=policy.rtol or 0.0, floor=policy.atol or 0.0), math.inf, \
            f"explicit atol={policy.atol} rtol={policy.rtol}"
    u_out = unit_roundoff(out_dtype)
    u_acc = unit_roundoff(accumulation_dtype(out_dtype, policy.accumulate))
    tiny = torch.finfo(out_dtype).tiny  # underflow: flushing a subnormal to zero is not an error
    root_k = math.sqrt(max(K, 1.0))
    widen = 1.0 if exp.exact64 else 2.0  # the reference itself carries task-dtype error
    shifted = argument * u_acc
    bound = _Bound(on_mag=widen * policy.a * root_k * u_acc, on_ref=widen * (policy.b * u_out + shifted),
                   floor=widen * tiny)
    norm_bound = widen * (policy.c * root_k * u_acc + u_out + shifted)
    note = f"derived: K={K:g}, u_out=2^{math.log2(u_out):.0f}, u_acc=2^{math.log2(u_acc):.0f}"
    return bound, norm_bound, note + (f", exp() arguments up to {argument:.3g}" if argument else "")


class _Pieces:
    """Aligned flat pieces of the output and of what is expected of it, on the output's device."""

    def __init__(self, out: torch.Tensor, exp: Expected):
        if out.numel() != exp.ref.numel():  # the form is checked before any comparison: here it is the judge's bug
            raise ValueError(f"compared {out.numel()} elements with {exp.ref.numel()} expected")
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
