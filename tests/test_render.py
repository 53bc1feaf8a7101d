"""What a person at a terminal reads: times in the unit that fits, no GPU-only columns on a CPU run, and no
"infx" where the output holds NaN or Inf, no "None" where a build reports no figure."""
from rich.console import Console

from kernel_mcp.render import duration, print_check, print_compile, print_profile
from kernel_mcp.results import BenchmarkVerdict, CaseResult, CheckResult, Comparison, CompileResult, KernelBuild, ProfileResult, ShapeProfile, Timing
from kernel_mcp.tolerance import EXACT_NOTE
from kernel_mcp.worker.outputs import mismatch_message


def test_a_time_is_written_in_the_unit_that_fits_it():
    assert [duration(ms) for ms in (0.01234, 4.56, 32275.04827)] == ["12.3 us", "4.56 ms", "32.3 s"]


def test_a_cpu_profile_has_no_device_busy_column():
    timing = Timing(median_ms=0.05, ci_low_ms=0.049, ci_high_ms=0.051, samples=10, rel_ci_half_width=0.01,
                    clock="cpu wall clock")
    shape = ShapeProfile(params={"n": 1024}, candidate=timing, reference=timing, speedup=1.0, speedup_ci=[0.9, 1.1])
    check = CheckResult(passed=True, verdict="pass", problem="p", candidate="c.py", device="cpu")
    result = ProfileResult(passed=True, trusted=True, verdict="pass", problem="p", candidate="c.py", device="cpu",
                           check=check, shapes=[shape])
    console = Console(record=True, width=200)
    print_profile(result, console)
    text = console.export_text()
    assert "50 us" in text and "kernel" not in text and "CUPTI" not in text


def test_a_non_finite_output_is_said_in_words():
    bad = Comparison(leaf="", ok=False, max_abs_error=float("inf"), max_rel_error=float("inf"),
                     max_error_in_bounds=float("inf"), norm_error=float("nan"), norm_bound=1e-6, mismatches=3,
                     elements=3, first_mismatches=[], note="")
    text = mismatch_message([bad])
    assert "infx" not in text and "NaN or Inf" in text and "norm error not finite" in text


def test_a_build_without_figures_shows_dashes_not_none():
    failed = KernelBuild(kernel="add_kernel", target="sm_90a", ok=False, error="boom", file="c.py", line=3)
    amd = KernelBuild(kernel="add_kernel", target="gfx942", ok=True, vgprs=24, sgprs=18, spill_bytes=0, shared_bytes=0)
    result = CompileResult(ok=False, candidate="c.py", language="triton", targets=["sm_90a", "gfx942"], builds=[failed, amd])
    console = Console(record=True, width=200)
    print_compile(result, console)
    text = console.export_text()
    assert "None" not in text and "24/-/18" in text, text


def test_a_failed_check_shows_its_cause_and_what_the_benchmark_would_say():
    case = CaseResult(name="test 0", params={}, passed=False, failure="mismatch", cause="approximation",
                      message="outside the bound")
    said = BenchmarkVerdict(rule="KernelBench v0.1", description="...", passed=True, cases=1, worst=0.4,
                            why="its tolerance admits this approximation's error")
    result = CheckResult(passed=False, verdict="fail: mismatch", problem="p", candidate="c.py", cause="approximation",
                         cases=[case], benchmark=[said])
    console = Console(record=True, width=200)
    print_check(result, console)
    text = console.export_text()
    assert "cause: approximation" in text and "mismatch (approximation)" in text
    assert "KernelBench v0.1 would say: pass, up to 0.4x its tolerance" in text and said.why in text


def test_exact_outputs_that_differ_are_counted_not_called_nan():
    ints = Comparison(leaf="", ok=False, max_error_in_bounds=float("inf"), mismatches=33, elements=524160,
                      note=EXACT_NOTE)
    assert mismatch_message([ints]) == "33 of 524160 elements differ (an exact match is required)"
