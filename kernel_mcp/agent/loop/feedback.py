"""What a model agent is told of one evaluation: the panel an IDE agent reads from the MCP tools, as text
sized for a model's context (docs/orchestrator.md, "What the model sees").

* a build that failed: each kernel's error with its file and line in the candidate;
* a check that failed: the verdict's cause, the failing cases with their first mismatching elements (index,
  the candidate's value, the reference's, the bound);
* a pass: the speedup over the reference with its 95% interval, and per shape the two times, the speedup,
  % of the roof and what binds it; the device and the ceilings the roof was drawn from;
* always: the findings (integrity, precision, occupancy, spills) and each kernel's registers and occupancy.

The text is made once, when the evaluation ends, and kept in the journal's ``done`` record: a resumed run
tells the model the same thing without evaluating again. Pure functions over the typed results.
"""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.evaluation import EvaluateResult
from kernel_mcp.results import (CaseResult, CheckResult, CompileResult, Finding, Mismatch,
                                ProfileResult, RooflineResult)
from kernel_mcp.views.summaries import ShapeSummary, clip, ratio_text, summarize_profile, summarize_roofline

FEEDBACK_CHARS = 4000  # ~1,000 tokens: a turn's answer, not a report
FAILED_CASES = 3  # failing cases shown in full; the rest are counted
MISMATCHES = 4  # first mismatching elements shown per case
MESSAGE_CHARS = 500
BUILDS_SHOWN = 2  # targets whose registers and occupancy are listed


def feedback_of(result: EvaluateResult) -> str:
    """The evaluation as a model should read it (at most FEEDBACK_CHARS)."""
    lines = [f"verdict: {result.verdict}"]
    if result.compile is not None:
        lines += compile_lines(result.compile)
    if result.roofline is not None:
        lines += check_lines(result.roofline.profile.check) + run_lines(result.roofline.profile, result.roofline)
    return clip("\n".join(line for line in lines if line), FEEDBACK_CHARS)


def check_lines(check: CheckResult | None) -> list[str]:
    """A failed check: its measured cause and the failing cases with their first mismatches."""
    if check is None or check.passed:
        return []
    lines = []
    if check.cause and check.cause not in {c.failure for c in check.cases}:  # a measured cause, not the kind
        lines.append(f"cause: {check.cause}")
    return lines + _failed_cases(check.cases)


def run_lines(prof: ProfileResult, roof: RooflineResult | None = None) -> list[str]:
    """A timed run: the speedup over the reference, each shape against the reference (and the baseline it
    was timed beside, if any), the roof; the findings."""
    summary = summarize_roofline(roof) if roof is not None else summarize_profile(prof)
    lines = []
    if summary.passed:
        overall = ratio_text(summary.speedup, summary.speedup_ci, "not credited")
        lines.append(f"speedup over the reference (geometric mean over shapes): {overall}")
        beside = {str(s.params): s.speedup_vs_baseline for s in prof.shapes}
        lines += [_shape_line(s, beside.get(str(s.params))) for s in summary.shapes]
    if roof is not None:
        lines += _ceilings(roof)
    return lines + [_finding(f) for f in summary.findings if f.severity != "info" or f.code in ("precision",
                                                                                                "occupancy")]


def compile_lines(built: CompileResult) -> list[str]:
    """Each distinct build error once, with the targets it failed for; the resources of the first
    BUILDS_SHOWN targets that built (a machine with no GPU compiles for six)."""
    errors: dict[str, list[str]] = {}
    for b in built.builds:
        if not b.ok:
            where = f"{Path(b.file).name}:{b.line}: " if b.file else ""
            errors.setdefault(f"kernel {b.kernel}: {where}{clip(b.error, MESSAGE_CHARS)}", []).append(b.target)
    lines = [f"build failed ({', '.join(targets)}), {error}" for error, targets in errors.items()]
    for b in [b for b in built.builds if b.ok][:BUILDS_SHOWN]:
        use = [f"{b.registers} registers/thread" if b.registers is not None else "",
               f"{b.spill_bytes} bytes spilled" if b.spill_bytes else "",
               f"{b.shared_bytes} B shared" if b.shared_bytes else "",
               f"occupancy {b.occupancy.percent:.0f}% (limited by {b.occupancy.limited_by})" if b.occupancy else ""]
        use = [u for u in use if u]
        if use:
            lines.append(f"kernel {b.kernel} ({b.target}): {', '.join(use)}")
    return lines + [_finding(f) for f in built.findings]


def _failed_cases(cases: list[CaseResult]) -> list[str]:
    failed = [c for c in cases if not c.passed]
    lines = []
    for case in failed[:FAILED_CASES]:
        lines.append(f"failed case {case.name} {case.params}: {case.failure}: {clip(case.message, MESSAGE_CHARS)}")
        for comparison in case.comparisons:
            where = f" in {comparison.leaf}" if comparison.leaf else ""
            lines += [f"  first mismatches{where}:"] if comparison.first_mismatches else []
            lines += [f"    {_mismatch(m)}" for m in comparison.first_mismatches[:MISMATCHES]]
    if len(failed) > FAILED_CASES:
        lines.append(f"... and {len(failed) - FAILED_CASES} more failed cases")
    return lines


def _mismatch(m: Mismatch) -> str:
    return f"index {m.index}: got {m.got:.6g}, expected {m.expected:.6g} (bound {m.bound:.3g})"


def _shape_line(s: ShapeSummary, over_baseline: float | None = None) -> str:
    times = (f"{s.candidate_us:.4g} us vs the reference's {s.reference_us:.4g} us"
             if s.candidate_us is not None and s.reference_us is not None else "not timed")
    roof = f", {s.percent_of_roof:.0f}% of the roof ({s.bound}-bound)" if s.percent_of_roof is not None else ""
    dtype = f" {s.dtype}" if s.dtype else ""
    beside = f", {over_baseline:.3g}x the current best's speed" if over_baseline else ""
    speedup = ratio_text(s.speedup, s.speedup_ci, "not credited")
    return f"shape {s.params}{dtype}: {times}, speedup {speedup}{beside}{roof}"


def _ceilings(roof: RooflineResult) -> list[str]:
    if roof.bandwidth_bytes_per_s is None and roof.peak_flops_per_s is None:
        return [f"roofline: {roof.message}"] if roof.message else []
    parts = [f"{roof.bandwidth_bytes_per_s / 1e9:.0f} GB/s" if roof.bandwidth_bytes_per_s else "",
             f"{roof.peak_flops_per_s / 1e12:.0f} TFLOP/s ({roof.unit})" if roof.peak_flops_per_s else ""]
    return [f"device {roof.device_name}: ceilings {', '.join(p for p in parts if p)} ({roof.ceilings_source})"]


def _finding(f: Finding) -> str:
    return f"{f.severity} {f.code}: {clip(f.message, MESSAGE_CHARS)}"

