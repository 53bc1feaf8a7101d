"""A profile's standing from its shapes and findings: trust, the geometric-mean speedup and the verdict, worked
out again whenever a finding is added. Pure arithmetic on results, no torch: the judge uses it for its
verdict (judge/verdict.py), and the caller after a hardware profiler's witness (runners/local.py).
"""
from __future__ import annotations

from typing import Any

from kernel_mcp import stats
from kernel_mcp.results import Finding, ProfileResult


def overall(result: ProfileResult) -> None:
    """Trust, geomean speedup and verdict from the shapes and findings (again after a later finding)."""
    credited = [s for s in result.shapes if s.credited and s.speedup]
    errors = [f for f in result.findings if f.severity == "error"]
    result.trusted = not errors and len(credited) == len(result.shapes) > 0
    result.speedup = result.speedup_ci = result.speedup_vs_baseline = None
    if credited:
        gm = stats.geometric_mean_ratio([stats.Ratio(s.speedup, *s.speedup_ci) for s in credited])
        result.speedup, result.speedup_ci = gm.value, [gm.lo, gm.hi]
        vs_base = [s.speedup_vs_baseline for s in credited if s.speedup_vs_baseline]
        if len(vs_base) == len(credited):
            result.speedup_vs_baseline = stats.geometric_mean(vs_base)
    converged = all(s.candidate and s.candidate.rel_ci_half_width is not None
                    and s.candidate.rel_ci_half_width <= result.settings.get("target_ci", 0.01)
                    for s in result.shapes)
    result.verdict = "pass" if result.trusted else "pass (timing not trusted)"
    if result.trusted and not converged and not any(f.code == "not_converged" for f in result.findings):
        result.findings.append(Finding(code="not_converged", severity="info", message=(
            "the time budget ended before every median reached the target precision; see rel_ci_half_width")))


WITNESS_FRACTION = 0.9  # events time more than the kernels alone: a median below ncu's duration is forged


def apply_witness(result: ProfileResult, report: Any) -> None:
    """A hardware profiler's duration of the candidate's kernels on shape 0 as an independent witness: a
    reported median below it is not credited."""
    timed = result.shapes[0].candidate if result.shapes else None
    durations = [k.duration_us for k in report.kernels if k.duration_us is not None]
    if timed is None or not durations:
        return
    kernels_us = sum(durations)
    if timed.median_ms * 1e3 < WITNESS_FRACTION * kernels_us:
        result.shapes[0].credited = False
        result.findings.append(Finding(code="below_profiler_witness", message=(
            f"shape 0: the reported median {timed.median_ms * 1e3:.2f} us is below the {kernels_us:.2f} us "
            f"{report.tool} measured for the candidate's own kernels")))
        overall(result)
