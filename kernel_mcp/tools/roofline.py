"""roofline: how far candidate and reference are from the hardware limit on each benchmark shape.

Williams, Waterman & Patterson, "Roofline: an insightful visual performance model", CACM 2009: a kernel
doing F flops while moving B bytes cannot run faster than max(B / bandwidth, F / peak). The ceilings are
this device's measured ones (``kernel-mcp calibrate``) when cached, else its datasheet's (devices.py).
"""
from __future__ import annotations

from pathlib import Path

from kernel_mcp.errors import UsageError
from kernel_mcp.hardware import devices
from kernel_mcp.problem import Problem, load_problem
from kernel_mcp.results import ProfileResult, ProfileSettings, RooflinePoint, RooflineResult, RooflineShape
from kernel_mcp.tools.calibrate import load_cached
from kernel_mcp.tools.profile import profile
from kernel_mcp.views.roofline_chart import draw

UNDERUTILISED_PERCENT = 25.0  # below a quarter of the binding roof neither roof explains the time


def ceilings_for(device_name: str, unit_kind: str, dtype: str) -> tuple[float, float, str, str] | None:
    """(bandwidth B/s, peak FLOP/s, unit key, source) for this device and work, measured first."""
    table = devices.lookup(device_name)
    matmul_like = unit_kind == "tensor"
    try:
        unit = devices.dtype_unit(dtype or "float32", matmul_like, table)
    except ValueError:
        unit = "fp32"
    measured = load_cached(device_name)
    if measured and unit in measured.matmul_flops_per_s:
        return (measured.bandwidth_bytes_per_s, measured.matmul_flops_per_s[unit], unit,
                f"measured by kernel-mcp calibrate on {measured.measured_at}")
    if table and unit in table.peak_flops:
        return (table.hbm_bytes_per_s, table.peak_flops[unit], unit,
                f"datasheet ({table.name}; {table.sources.get('bandwidth', '')})")
    return None


def place(who: str, time_ms: float, flops: float, nbytes: float, bandwidth: float, peak: float) -> RooflinePoint:
    seconds = time_ms / 1e3
    minimum = max(nbytes / bandwidth, flops / peak)  # seconds, on the roof
    memory_bound = nbytes / bandwidth >= flops / peak
    percent = 100.0 * minimum / seconds
    bound = "memory" if memory_bound else "compute"
    if percent < UNDERUTILISED_PERCENT:
        bound = "latency/underutilised"
    return RooflinePoint(who=who, time_ms=time_ms, tflops=flops / seconds / 1e12, gbytes_per_s=nbytes / seconds / 1e9,
                         percent_of_bound=percent, bound=bound, headroom_ms=max(0.0, time_ms - minimum * 1e3))


def roofline_from(prof: ProfileResult, unit_kind: str, png: str | Path | None = None) -> RooflineResult:
    """Pure arithmetic over a profile's shapes (flops and bytes per call, median times)."""
    result = RooflineResult(problem=prof.problem, candidate=prof.candidate, device_name=prof.device_name, profile=prof)
    dtype = next((s.dtype for s in prof.shapes if s.dtype), "")
    found = ceilings_for(prof.device_name, unit_kind, dtype) if prof.device_name else None
    if found is None:
        result.message = (f"no ceilings for {prof.device_name or prof.device!r}: the roofline needs a known GPU "
                          "(devices.py) or a `kernel-mcp calibrate` run on it")
        return result
    bandwidth, peak, result.unit, result.ceilings_source = found
    result.bandwidth_bytes_per_s, result.peak_flops_per_s = bandwidth, peak
    for shape in prof.shapes:
        if not shape.flops or not shape.bytes:
            continue
        row = RooflineShape(params=shape.params, flops=shape.flops, bytes=shape.bytes,
                            work_estimated=shape.work_estimated, intensity=shape.flops / shape.bytes)
        for who, timing in (("reference", shape.reference), ("candidate", shape.candidate)):
            if timing is not None:
                row.points.append(place(who, timing.median_ms, shape.flops, shape.bytes, bandwidth, peak))
        result.shapes.append(row)
    if not prof.passed:
        result.message = f"the candidate did not pass ({prof.verdict}): only the reference is placed"
    if png:
        result.png = str(draw(result, Path(png)))
    return result


def roofline(problem: str | Path | Problem, candidate: str | Path, device: str = "auto",
             settings: ProfileSettings | None = None, png: str | Path | None = None, on_progress=None,
             runner=None) -> RooflineResult:
    """Profile ``candidate`` on ``problem`` and place it and the reference under the device's roofs."""
    prob = load_problem(problem)
    if png and Path(png).suffix.lower() != ".png":
        raise UsageError(f"--png wants a .png file name; got {png}")
    prof = profile(prob, candidate, device=device, settings=settings, on_progress=on_progress, runner=runner)
    return roofline_from(prof, prob.spec.unit, png)
