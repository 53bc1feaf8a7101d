"""Compact results (kernel_mcp/views/summaries.py) on hand-built typed results: pure functions, no processes."""
from kernel_mcp.hardware.occupancy import Occupancy
from kernel_mcp.history.snapshots import Snapshot
from kernel_mcp.results import (BenchmarkVerdict, CaseResult, CheckResult, CompileResult, Finding, KernelBuild,
                                ProfileResult, RooflinePoint, RooflineResult, RooflineShape, ShapeProfile, Timing)
from kernel_mcp.evaluation import EvaluateResult
from kernel_mcp.views.summaries import (MAX_FAILURES, MESSAGE_CHARS, summarize_compile, summarize_evaluate,
                                        summarize_profile, summarize_roofline)


def _timing(ms):
    return Timing(clock="cuda events", median_ms=ms, ci_low_ms=ms * 0.99, ci_high_ms=ms * 1.01, samples=50,
                  rel_ci_half_width=0.01)


def _profile(**changes):
    shapes = [ShapeProfile(params={"n": 1024}, candidate=_timing(0.002), reference=_timing(0.004), speedup=2.0,
                           speedup_ci=[1.9, 2.1], flops=1024, bytes=12288),
              ShapeProfile(params={"n": 4096}, candidate=_timing(0.01), reference=_timing(0.01), speedup=None,
                           credited=False)]  # no flops/bytes: the roofline will not place it
    base = dict(passed=True, trusted=True, verdict="pass", problem="vector_add", candidate="add.py",
                device="cuda", device_name="NVIDIA H200", speedup=2.0, speedup_ci=[1.9, 2.1], shapes=shapes,
                check=CheckResult(passed=True, verdict="pass", problem="vector_add", candidate="add.py"))
    return ProfileResult(**{**base, **changes})


def _roofline(prof):
    point = RooflinePoint(who="candidate", time_ms=0.002, tflops=0.5, gbytes_per_s=6000, percent_of_bound=42.123,
                          bound="memory", headroom_ms=0.001)
    reference = point.model_copy(update={"who": "reference", "percent_of_bound": 21.0})
    shape = RooflineShape(params={"n": 1024}, flops=1024, bytes=12288, intensity=1 / 12, points=[reference, point])
    return RooflineResult(problem="vector_add", candidate="add.py", device_name="NVIDIA H200", shapes=[shape],
                          profile=prof, png="chart.png")


def _compile(ok=True):
    good = KernelBuild(kernel="add_kernel", target="sm_90a", ok=True, registers=24, spill_bytes=0, shared_bytes=0,
                       occupancy=Occupancy(resident_blocks=16, resident_warps=64, max_warps=64, percent=100.0,
                                           limited_by="warps"), instructions={"LDG": 2}, asm="x" * 5000)
    bad = KernelBuild(kernel="add_kernel", target="gfx942", ok=False, file="add.py", line=7,
                      error="IndexError: tuple index out of range\n" + "trace line\n" * 200)
    return CompileResult(ok=ok, candidate="add.py", language="triton", targets=["sm_90a", "gfx942"],
                         builds=[good] if ok else [good, bad])


def test_profile_summary_keeps_per_shape_times_in_microseconds():
    summary = summarize_profile(_profile())
    first, second = summary.shapes
    assert (first.candidate_us, first.reference_us, first.speedup, first.speedup_ci) == (2.0, 4.0, 2.0, [1.9, 2.1])
    assert second.speedup is None and second.percent_of_roof is None  # not credited, not placed
    assert summary.passed and summary.trusted and summary.device == "NVIDIA H200" and summary.detail is None


def test_roofline_summary_places_the_candidate_by_shape_params():
    summary = summarize_roofline(_roofline(_profile()))
    assert summary.shapes[0].percent_of_roof == 42.1 and summary.shapes[0].bound == "memory"
    assert summary.shapes[1].bound == "" and summary.png == "chart.png"


def test_failed_cases_and_long_messages_are_clipped():
    cases = [CaseResult(name=f"test {i}", params={}, passed=False, failure="mismatch", message="off by one")
             for i in range(MAX_FAILURES + 3)]
    check = CheckResult(passed=False, verdict="fail: mismatch", problem="p", candidate="c", cases=cases)
    prof = _profile(passed=False, trusted=False, verdict="fail: mismatch", check=check, speedup=None,
                    findings=[Finding(code="tampering", message="y" * 5000)])
    summary = summarize_profile(prof)
    assert summary.failures[0] == "test 0: mismatch: off by one"
    assert len(summary.failures) == MAX_FAILURES + 1 and "3 more failed cases" in summary.failures[-1]
    assert len(summary.findings[0].message) < MESSAGE_CHARS + 50 and summary.findings[0].code == "tampering"
    assert prof.findings[0].message == "y" * 5000  # the full result is left as it was


def test_a_failed_checks_cause_and_the_benchmarks_own_verdict_reach_the_summary():
    said = BenchmarkVerdict(rule="KernelBench v0.1", description="torch.allclose ... " * 20, passed=True, cases=2,
                            failed=0, worst=0.4, why="its tolerance admits this approximation's error")
    check = CheckResult(passed=False, verdict="fail: mismatch", problem="p", candidate="c", cause="approximation",
                        benchmark=[said])
    summary = summarize_profile(_profile(passed=False, trusted=False, verdict="fail: mismatch", check=check))
    assert summary.cause == "approximation" and summary.benchmark[0].why == said.why
    assert summary.benchmark[0].description == "" and said.description  # the long text stays in the detail


def test_compile_summary_gives_resources_and_errors_with_file_and_line():
    summary = summarize_compile(_compile(ok=False))
    good, bad = summary.kernels
    assert (good.registers, good.spill_bytes, good.occupancy_percent, good.limited_by) == (24, 0, 100.0, "warps")
    assert bad.error.startswith("add.py:7: IndexError") and len(bad.error) < MESSAGE_CHARS + 50
    assert "x" * 100 not in summary.model_dump_json()  # the asm excerpt stays in the detail
    assert summarize_compile(_compile(), detail=True).detail.builds[0].asm == "x" * 5000


def test_evaluate_summary_is_a_fraction_of_the_full_result():
    prof = _profile()
    snap = Snapshot(id="a" * 40, problem="vector_add", candidate="add.py", files=["add.py"])
    full = EvaluateResult(verdict="pass", passed=True, trusted=True, speedup=2.0, compile=_compile(),
                          roofline=_roofline(prof), snapshot=snap)
    summary = summarize_evaluate(full)
    assert summary.snapshot_id == "a" * 40 and summary.compile.kernels[0].registers == 24
    assert summary.shapes[0].percent_of_roof == 42.1 and summary.detail is None
    assert len(summary.model_dump_json()) * 3 < len(full.model_dump_json())
    assert summarize_evaluate(full, detail=True).detail == full


def test_evaluate_summary_of_a_compile_failure():
    snap = Snapshot(id="b" * 40, problem="vector_add", candidate="add.py", files=["add.py"])
    full = EvaluateResult(verdict="compile failed", passed=False, trusted=False, compile=_compile(ok=False),
                          snapshot=snap)
    summary = summarize_evaluate(full)
    assert summary.verdict == "compile failed" and not summary.passed and summary.shapes == []
    assert summary.compile.kernels[1].error.startswith("add.py:7:")
