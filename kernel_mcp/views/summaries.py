"""Results sized for an LLM's context: the few numbers an agent acts on, with the full result on request.

A full ``evaluate`` result (check cases, every timing, the roofline, the compile report) runs to many
kilobytes; most iterations need only the verdict, the speedup and where each shape stands against its
roof. Each summary keeps those and carries the full result in ``detail`` only when asked for, so one
object schema serves both answers. Pure functions over the typed results, no I/O.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from kernel_mcp.evaluation import EvaluateResult
from kernel_mcp.results import (BenchmarkVerdict, CheckResult, CompileResult, Finding, ProfileResult,
                                RooflineResult)

MESSAGE_CHARS = 600  # enough for a compiler error's first lines or a mismatch report
MAX_FAILURES = 5  # failed check cases listed; the rest are counted


class ShapeSummary(BaseModel):
    """Candidate vs reference on one shape."""

    params: dict[str, Any]
    dtype: str = ""  # of the first floating-point input
    candidate_us: float | None = None  # median, microseconds
    reference_us: float | None = None
    speedup: float | None = None  # None when the shape is not credited (see findings)
    speedup_ci: list[float] | None = None  # 95%
    percent_of_roof: float | None = None  # candidate, % of the binding roof (roofline only)
    bound: str = ""  # "memory", "compute" or "latency/underutilised"


class KernelSummary(BaseModel):
    """One kernel compiled for one target."""

    kernel: str
    target: str
    ok: bool
    registers: int | None = None
    spill_bytes: int | None = None
    shared_bytes: int | None = None
    occupancy_percent: float | None = None
    limited_by: str = ""  # what caps the occupancy
    error: str = ""  # "file:line: message" when the build failed


class CompileSummary(BaseModel):
    ok: bool
    kernels: list[KernelSummary] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    detail: CompileResult | None = None  # the full result, with detail=true


class RunSummary(BaseModel):
    """What a check-and-time run concluded."""

    verdict: str
    passed: bool
    trusted: bool  # no integrity finding: the speedup can be believed
    speedup: float | None = None  # geometric mean over credited shapes
    speedup_ci: list[float] | None = None
    device: str = ""
    shapes: list[ShapeSummary] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)  # failed check cases, "name: failure: message"
    cause: str = ""  # a failed check's likeliest cause (CheckResult.cause)
    benchmark: list[BenchmarkVerdict] = Field(default_factory=list)  # its benchmark's own verdict (no description)
    findings: list[Finding] = Field(default_factory=list)
    message: str = ""


class ProfileSummary(RunSummary):
    detail: ProfileResult | None = None


class RooflineSummary(RunSummary):
    png: str = ""
    detail: RooflineResult | None = None


class EvaluateSummary(RunSummary):
    snapshot_id: str
    compile: CompileSummary | None = None
    sanitize: str = ""  # one line per Compute Sanitizer tool, when asked for (or why it did not run)
    detail: EvaluateResult | None = None


def ratio_text(value: float | None, ci: list[float] | None = None, missing: str = "-") -> str:
    """A speedup with its 95% interval as people and models read it: ``1.23x [1.1, 1.4]``."""
    if not value:
        return missing
    return f"{value:.3g}x" + (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else "")


def clip(text: str, limit: int = MESSAGE_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + f" ... ({len(text) - limit} more characters)"


def _microseconds(timing) -> float | None:
    return round(timing.median_ms * 1e3, 3) if timing is not None else None


def _failures(check: CheckResult | None) -> list[str]:
    if check is None:
        return []
    failed = [c for c in check.cases if not c.passed]
    lines = [clip(f"{c.name}: {c.failure}: {c.message}", 300) for c in failed[:MAX_FAILURES]]
    if len(failed) > MAX_FAILURES:
        lines.append(f"... and {len(failed) - MAX_FAILURES} more failed cases")
    return lines


def _roof_points(roof: RooflineResult | None) -> list[tuple[dict, Any]]:
    """(params, the candidate's point) per placed shape: the roofline skips shapes without flops/bytes."""
    if roof is None:
        return []
    return [(s.params, p) for s in roof.shapes for p in s.points if p.who == "candidate"]


def _run_fields(prof: ProfileResult, roof: RooflineResult | None = None) -> dict[str, Any]:
    points = _roof_points(roof)
    shapes = []
    for shape in prof.shapes:
        point = next((p for params, p in points if params == shape.params), None)
        shapes.append(ShapeSummary(
            params=shape.params, dtype=shape.dtype, candidate_us=_microseconds(shape.candidate),
            reference_us=_microseconds(shape.reference), speedup=shape.speedup, speedup_ci=shape.speedup_ci,
            percent_of_roof=round(point.percent_of_bound, 1) if point else None, bound=point.bound if point else ""))
    findings = [f.model_copy(update={"message": clip(f.message)}) for f in prof.findings]
    return dict(verdict=prof.verdict, passed=prof.passed, trusted=prof.trusted, speedup=prof.speedup,
                speedup_ci=prof.speedup_ci, device=prof.device_name or prof.device, shapes=shapes,
                failures=_failures(prof.check), cause=prof.check.cause if prof.check else "",
                benchmark=[b.model_copy(update={"description": ""})
                           for b in prof.check.benchmark] if prof.check else [],
                findings=findings, message=roof.message if roof else "")


def summarize_compile(result: CompileResult, detail: bool = False) -> CompileSummary:
    kernels = []
    for b in result.builds:
        where = f"{b.file}:{b.line}: " if b.file else ""
        kernels.append(KernelSummary(
            kernel=b.kernel, target=b.target, ok=b.ok, registers=b.registers, spill_bytes=b.spill_bytes,
            shared_bytes=b.shared_bytes, occupancy_percent=b.occupancy.percent if b.occupancy else None,
            limited_by=b.occupancy.limited_by if b.occupancy else "",
            error=clip(where + b.error) if b.error else ""))
    findings = [f.model_copy(update={"message": clip(f.message)}) for f in result.findings]
    return CompileSummary(ok=result.ok, kernels=kernels, findings=findings, detail=result if detail else None)


def summarize_profile(result: ProfileResult, detail: bool = False) -> ProfileSummary:
    return ProfileSummary(**_run_fields(result), detail=result if detail else None)


def summarize_roofline(result: RooflineResult, detail: bool = False) -> RooflineSummary:
    return RooflineSummary(**_run_fields(result.profile, result), png=result.png, detail=result if detail else None)


def summarize_evaluate(result: EvaluateResult, detail: bool = False) -> EvaluateSummary:
    if result.roofline is not None:
        fields = _run_fields(result.roofline.profile, result.roofline)
    else:  # the compile failed: nothing was timed
        fields = dict(verdict=result.verdict, passed=result.passed, trusted=result.trusted)
    checked = result.sanitize
    return EvaluateSummary(**fields, snapshot_id=result.snapshot.id,
                           compile=summarize_compile(result.compile) if result.compile else None,
                           sanitize=(checked.message or checked.summary) if checked else "",
                           detail=result if detail else None)
