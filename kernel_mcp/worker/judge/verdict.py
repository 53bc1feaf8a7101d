"""From samples to figures and a verdict: per-shape timings, speedups, integrity findings, the geomean."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Protocol

from kernel_mcp import expr, stats
from kernel_mcp.hardware.devices import Ceilings, fastest_peak
from kernel_mcp.results import CheckResult, Finding, ProfileResult, ProfileSettings, ShapeProfile, Timing
from kernel_mcp.worker import tensors
from kernel_mcp.worker.judge.case import at_benchmark_scale
from kernel_mcp.worker.judge.context import Reporter
from kernel_mcp.worker.judge.reference import ReferenceRuntime
from kernel_mcp.worker.judge.session import CandidateSession
from kernel_mcp.worker.overall import overall
from kernel_mcp.worker.protocol import Device

FLOOR_FRACTION = 0.8  # a time below 0.8x the physical floor is impossible (docs/verdict.md, "Timing protocol")
ESCAPE_SHARE = 0.5  # share of a contestant's calls with work outside the events that marks it untrusted
DISTURBED_FACTOR = 1.25  # interleaved reference median vs the one measured with no candidate running
SHORT_KERNEL_MS = 0.010  # below 10 us a graph replay figure is added

BUSY_SLACK = 1.10  # CUPTI's busy time may exceed the op time by clock rounding, not by more
BUSY_SLACK_MS = 0.005


@dataclass
class Contestant:
    role: str  # "reference", "candidate" or "baseline"
    session: CandidateSession | None = None  # None: the reference, timed in this process
    samples: list[float] = field(default_factory=list)
    busy_us: list[float] = field(default_factory=list)
    issue_ms: list[float] = field(default_factory=list)
    escaped: int = 0
    patched: set[str] = field(default_factory=set)
    failure: str = ""  # why it stopped: a wrong output, a crash...
    calls: int = 0


class Profiler(Protocol):
    """What the verdict reads of profile.py's Profiler, and the calls it makes on it."""
    rt: ReferenceRuntime
    settings: ProfileSettings
    reporter: Reporter
    result: ProfileResult
    device: Device
    ceilings: Ceilings | None  # the datasheet's, None on the CPU
    input_dtype: str
    solo_reference: dict

    def profile_shape(self, index: int, params: dict, contestants: list[Contestant], deadline: float) -> None: ...

    def graph_figure(self, who: Contestant, params: dict) -> float | None: ...

    def sample(self, who: Contestant, params: dict, mode: str = "op") -> float | None: ...


def summarize_timing(who: Contestant, clock: str) -> Timing | None:
    if not who.samples:
        return None
    s = stats.summarize(who.samples)
    return Timing(clock=clock, median_ms=s.median, ci_low_ms=s.lo, ci_high_ms=s.hi, samples=s.n,
                  rel_ci_half_width=s.rel_half_width if math.isfinite(s.rel_half_width) else None,
                  host_ms=stats.median(who.issue_ms) if who.issue_ms else None,
                  kernel_ms=stats.median(who.busy_us) / 1e3 if who.busy_us else None,
                  samples_ms=[float(f"{t:.6g}") for t in who.samples])


def shape_work(rt: ReferenceRuntime, params: dict) -> tuple[float | None, float | None, bool]:
    """(flops, bytes, estimated) of one call: task.yml's expressions, else torch's flop counter on the
    reference and the sizes of its inputs and outputs (the least traffic any kernel must move)."""
    spec = rt.problem.spec
    if spec.flops is not None and spec.bytes is not None:
        return expr.evaluate(spec.flops, params), expr.evaluate(spec.bytes, params), False
    from torch.utils.flop_counter import FlopCounterMode
    data = rt.generate(params)
    counter = FlopCounterMode(display=False)
    with counter:
        out = rt.ref_kernel(tensors.clone(data))
    moved = sum(t.numel() * t.element_size() for _, t in tensors.leaves(data) + tensors.leaves(out))
    flops = expr.evaluate(spec.flops, params) if spec.flops is not None else float(counter.get_total_flops())
    nbytes = expr.evaluate(spec.bytes, params) if spec.bytes is not None else float(moved)
    return flops, nbytes, True


def physical_floor_ms(ceilings: Ceilings | None, flops: float | None, nbytes: float | None) -> float | None:
    """The least time any kernel needs: datasheet bandwidth and the fastest unit's peak (never a measured
    figure, so honest code can never fall below it)."""
    if ceilings is None or flops is None or nbytes is None:
        return None
    return max(nbytes / ceilings.hbm_bytes_per_s, flops / fastest_peak(ceilings)) * 1e3


def serve_unlisted_size(profiler: Profiler, who: Contestant) -> None:
    """One call at a size near the smallest benchmark that no one listed, judged as a timed output is (its
    time unused): the check served small sizes, the timing serves the listed large ones, and a kernel exact
    on those alone (an unmasked path taken above some size) would be timed as correct."""
    params = at_benchmark_scale(profiler.rt)
    if params is None:
        return
    sizes = {name: value for name, value in params.items() if name != "seed"}
    profiler.reporter.progress(f"one call at a size near the benchmarks that no one listed: {sizes}", 0, 0)
    if profiler.sample(who, params) is None and who.failure.startswith("mismatch"):
        who.failure = (f"mismatch: at {sizes}, a size near the benchmarks that the task does not list (every "
                       f"listed shape passed): {who.failure.split(': ', 1)[-1]}")
        profiler.result.findings.append(Finding(code="listed_shapes_only", message=(
            "every listed shape passes and a size near the benchmarks that the task does not list fails: the "
            "kernel assumes sizes it was not given (a path for large sizes that only the listed ones keep "
            "exact, such as a missing mask)")))


def time_all_shapes(profiler: Profiler, shapes: list[dict], contestants: list[Contestant]) -> None:
    started = time.monotonic()
    for i, params in enumerate(shapes):
        remaining = profiler.settings.budget_s - (time.monotonic() - started)
        # 80% of a shape's share for samples: kernel-time and graph figures come after
        deadline = time.monotonic() + 0.8 * max(remaining / (len(shapes) - i), 0.0)
        profiler.reporter.progress(f"timing shape {i} {params}", i, len(shapes))
        profiler.profile_shape(i, params, contestants, deadline)
        profiler.result.shapes.append(_shape_result(profiler, i, params, contestants))
        if any(w.failure for w in contestants if w.role != "baseline"):
            break


def _clock(device: str) -> str:
    return "cuda events" if device.startswith("cuda") else "cpu wall clock"


def _shape_result(profiler: Profiler, index: int, params: dict, contestants: list[Contestant]) -> ShapeProfile:
    by_role = {w.role: w for w in contestants}
    clock = _clock(profiler.device)
    timings = {role: summarize_timing(w, clock) for role, w in by_role.items()}
    shape = ShapeProfile(params={k: ("secret" if k == "seed" else v) for k, v in params.items()},
                         candidate=timings.get("candidate"), reference=timings.get("reference"),
                         baseline=timings.get("baseline"), dtype=profiler.input_dtype)
    shape.flops, shape.bytes, shape.work_estimated = shape_work(profiler.rt, params)
    shape.floor_ms = physical_floor_ms(profiler.ceilings, shape.flops, shape.bytes)
    notes = _integrity_notes(profiler, index, by_role, shape)
    shape.credited = not notes and shape.candidate is not None and shape.reference is not None
    shape.note = "; ".join(notes)
    if shape.credited:
        ratio = stats.ratio(stats.summarize(by_role["reference"].samples),
                            stats.summarize(by_role["candidate"].samples))
        shape.speedup, shape.speedup_ci = ratio.value, [ratio.lo, ratio.hi]
        if shape.baseline is not None and not by_role["baseline"].failure:
            shape.speedup_vs_baseline = shape.baseline.median_ms / shape.candidate.median_ms
    _graph_figures(profiler, params, by_role, shape)
    return shape


def _integrity_notes(profiler: Profiler, index: int, by_role: dict[str, Contestant], shape: ShapeProfile) -> list[str]:
    """Each reason this shape's candidate time cannot be credited; each also becomes a finding."""
    notes = []

    def flag(code: str, message: str) -> None:
        notes.append(message)
        profiler.result.findings.append(Finding(code=code, message=f"shape {index}: {message}"))

    cand = by_role["candidate"]
    if cand.patched:
        flag("timer_patched", f"the candidate replaced {', '.join(sorted(cand.patched))} (the times reported "
             "here come from functions bound before it was imported, but such code is not trusted)")
    if cand.samples and cand.escaped >= ESCAPE_SHARE * (len(cand.samples) + profiler.settings.warmup):
        flag("escaped_work", f"in {cand.escaped} calls the device stayed busy after the candidate's end event "
             "(work on an unjoined stream, a background thread or a lazy output): its events miss that work")
    if shape.candidate and shape.candidate.kernel_ms is not None \
            and shape.candidate.kernel_ms > BUSY_SLACK * shape.candidate.median_ms + BUSY_SLACK_MS:
        flag("escaped_work", f"CUPTI saw the device busy {shape.candidate.kernel_ms * 1e3:.1f} us per call, more "
             f"than the {shape.candidate.median_ms * 1e3:.1f} us between the candidate's events")
    if shape.candidate and shape.floor_ms and shape.candidate.median_ms < FLOOR_FRACTION * shape.floor_ms:
        flag("below_physical_floor", f"median {shape.candidate.median_ms * 1e3:.2f} us is below {FLOOR_FRACTION}x "
             f"the physical floor {shape.floor_ms * 1e3:.2f} us (bytes / peak bandwidth, flops / peak rate): "
             "inputs or results must have come from somewhere other than this call's work")
    solo = profiler.solo_reference.get(index)
    # on a GPU a candidate can leave work queued that slows the reference; a stopped CPU process cannot
    if profiler.device.startswith("cuda") and solo and shape.reference \
            and shape.reference.median_ms > DISTURBED_FACTOR * solo.hi:
        flag("reference_disturbed", f"the reference took {shape.reference.median_ms * 1e3:.1f} us with the "
             f"candidate present but {solo.median * 1e3:.1f} us before it started")
    return notes


def _graph_figures(profiler: Profiler, params: dict, by_role: dict[str, Contestant], shape: ShapeProfile) -> None:
    if not profiler.device.startswith("cuda") or shape.candidate is None:
        return
    if shape.candidate.median_ms >= SHORT_KERNEL_MS:
        return
    for role, timing_ in (("candidate", shape.candidate), ("reference", shape.reference)):
        if timing_ is not None:
            timing_.graph_ms = profiler.graph_figure(by_role[role], params)


def decide(result: ProfileResult, check: CheckResult, contestants: list[Contestant]) -> None:
    cand = next(w for w in contestants if w.role == "candidate")
    base = next((w for w in contestants if w.role == "baseline"), None)
    if base is not None and base.failure:
        result.findings.append(Finding(code="baseline_failed", severity="warning",
                                       message=f"the baseline was dropped: {base.failure[:1500]}"))
    if not check.passed:
        result.verdict = check.verdict
        result.findings.append(Finding(code="check_failed", message=(
            f"not timed: the check failed ({check.verdict}); run check for the details")))
        return
    if cand.failure.startswith("too_few_samples"):  # the clock ran out, the kernel did nothing wrong
        result.passed, result.trusted = True, False
        result.verdict = "pass (not timed: too few samples)"
        result.findings.append(Finding(code="timing_incomplete", severity="warning", message=(
            f"{cand.failure[:1500]}. The kernel passed its check; to time it give a larger --budget, or time the "
            "small test shapes (--shapes tests), as on a CPU")))
        return
    if cand.failure:
        result.verdict = "fail: " + cand.failure.split(":", 1)[0] + " while timing"
        result.findings.append(Finding(code="timing_failed", message=cand.failure[:4000]))
        return
    ref = next(w for w in contestants if w.role == "reference")
    if ref.failure:
        result.verdict = "error: reference while timing"
        return
    result.passed = True
    overall(result)
