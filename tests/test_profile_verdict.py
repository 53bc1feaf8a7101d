"""The profile verdict's integrity rules on synthetic samples (no processes): what earns a speedup."""
from types import SimpleNamespace

import pytest

from kernel_mcp.hardware import devices
from kernel_mcp.results import Finding, ProfileResult, ProfileSettings, ShapeProfile
from kernel_mcp.worker.judge.profile import Contestant
from kernel_mcp.worker.judge.verdict import _shape_result, decide
from kernel_mcp.worker.overall import overall


def _profiler(device="cuda", solo=None):
    result = ProfileResult(passed=False, trusted=False, verdict="", problem="p", candidate="c",
                           settings=ProfileSettings().model_dump())
    problem = SimpleNamespace(spec=SimpleNamespace(flops="n", bytes="12*n"))
    return SimpleNamespace(result=result, settings=ProfileSettings(), device=device, input_dtype="float32",
                           solo_reference=solo or {}, ceilings=devices.lookup("NVIDIA H200"),
                           rt=SimpleNamespace(problem=problem))


def _contestants(cand_ms, ref_ms, **cand):
    return [Contestant("reference", samples=list(ref_ms)),
            Contestant("candidate", samples=list(cand_ms), **cand)]


def _shape(profiler, contestants, n=1 << 24):
    return _shape_result(profiler, 0, {"n": n, "seed": 5}, contestants)


def test_honest_samples_are_credited_with_a_speedup_ci():
    prof = _profiler()
    shape = _shape(prof, _contestants([0.050] * 20, [0.100] * 20))
    assert shape.credited and shape.speedup == pytest.approx(2.0) and shape.params["seed"] == "secret"
    assert shape.floor_ms == pytest.approx(12 * (1 << 24) / 4.8e12 * 1e3)
    assert not prof.result.findings


def test_time_below_the_physical_floor_earns_nothing():
    prof = _profiler()
    floor = 12 * (1 << 24) / 4.8e12 * 1e3  # ms
    shape = _shape(prof, _contestants([0.5 * floor] * 20, [0.100] * 20))
    assert not shape.credited and shape.speedup is None
    assert [f.code for f in prof.result.findings] == ["below_physical_floor"]


def test_escaped_work_in_most_calls_is_flagged():
    prof = _profiler()
    shape = _shape(prof, _contestants([0.05] * 20, [0.1] * 20, escaped=15))
    assert not shape.credited and prof.result.findings[0].code == "escaped_work"


def test_cupti_busy_time_above_event_time_is_flagged():
    prof = _profiler()
    shape = _shape(prof, _contestants([0.05] * 20, [0.1] * 20, busy_us=[200.0] * 3))
    assert not shape.credited and prof.result.findings[0].code == "escaped_work"


def test_patched_timer_is_named():
    prof = _profiler()
    shape = _shape(prof, _contestants([0.05] * 20, [0.1] * 20, patched={"time.perf_counter"}))
    assert not shape.credited and "time.perf_counter" in prof.result.findings[0].message


def test_disturbed_reference_on_gpu_only():
    from kernel_mcp.stats import summarize
    solo = {0: summarize([0.100] * 20)}
    gpu = _profiler(solo=solo)
    assert not _shape(gpu, _contestants([0.05] * 20, [0.2] * 20)).credited
    assert gpu.result.findings[0].code == "reference_disturbed"
    cpu = _profiler(device="cpu", solo=solo)
    cpu.ceilings = None
    assert _shape(cpu, _contestants([0.05] * 20, [0.2] * 20)).credited


def test_decide_and_overall():
    prof = _profiler()
    contestants = _contestants([0.05] * 20, [0.1] * 20)
    prof.result.shapes = [_shape(prof, contestants), _shape(prof, contestants)]
    check = SimpleNamespace(passed=True, verdict="pass")
    decide(prof.result, check, contestants)
    assert prof.result.passed and prof.result.trusted and prof.result.verdict == "pass"
    assert prof.result.speedup == pytest.approx(2.0)
    prof.result.shapes[1].credited = False
    prof.result.findings.append(Finding(code="below_profiler_witness", message="x"))
    overall(prof.result)
    assert not prof.result.trusted and prof.result.verdict == "pass (timing not trusted)"
    assert prof.result.speedup == pytest.approx(2.0)  # from the one credited shape


def test_a_failed_candidate_is_not_a_pass():
    prof = _profiler()
    contestants = _contestants([], [0.1] * 20)
    contestants[1].failure = "mismatch: an output produced while timing does not match the reference"
    decide(prof.result, SimpleNamespace(passed=True, verdict="pass"), contestants)
    assert not prof.result.passed and prof.result.verdict == "fail: mismatch while timing"


def test_too_few_samples_give_no_ci_and_a_result_valid_against_its_schema():
    """One sample has no CI. JSON cannot hold inf (it becomes null), and an MCP client validating against
    the output schema rejected such a result, so the field is None and typed as optional."""
    import jsonschema

    from kernel_mcp.worker.judge.verdict import summarize_timing
    timing = summarize_timing(Contestant(role="candidate", samples=[0.5]), "cuda events")
    assert timing.rel_ci_half_width is None
    result = ProfileResult(passed=True, trusted=True, verdict="pass", problem="p", candidate="c")
    result.shapes = [ShapeProfile(params={"n": 1}, candidate=timing)]
    jsonschema.validate(result.model_dump(mode="json"), ProfileResult.model_json_schema(mode="serialization"))
