"""What a person at a terminal reads: times in the unit that fits, no GPU-only columns on a CPU run, and no
"infx" where the output holds NaN or Inf, no "None" where a build reports no figure."""
import io

import pytest
from rich.console import Console

from kernel_mcp.hardware.occupancy import Occupancy
from kernel_mcp.results import (BenchmarkVerdict, CaseResult, CheckResult, Comparison, CompileResult, Finding,
                                KernelBuild, ProfileResult, RooflinePoint, RooflineResult, RooflineShape, ShapeProfile,
                                Timing)
from kernel_mcp.views.render import duration, print_check, print_compile, print_profile, print_roofline
from kernel_mcp.worker.judge.outputs import mismatch_message
from kernel_mcp.worker.judge.tolerance import EXACT_NOTE


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


# Tables on a narrow terminal (issue 35): cells wrap or fold, a number is never cut to "…" and no column is lost.
# Realistic long values: a time of 0.008812345 ms, a 1400x speedup, a long Triton kernel, AMD's three counts.
SLOW = Timing(median_ms=0.008812345, ci_low_ms=0.0087, ci_high_ms=0.0089, samples=91, rel_ci_half_width=0.0123,
              clock="cuda events", kernel_ms=0.00712345)
FAST = Timing(median_ms=12.3456789, ci_low_ms=12.2, ci_high_ms=12.5, samples=1000, rel_ci_half_width=0.0098,
              clock="cuda events", kernel_ms=11.98765)
WIDE_SHAPE = ShapeProfile(params={"batch": 16, "seq_len": 4096, "hidden": 8192}, candidate=SLOW, reference=FAST,
                          speedup=1400.12345, speedup_ci=[1398.1234, 1402.5678],
                          note="the reference is CPU-bound: host time above device time")


def _profile() -> ProfileResult:
    return ProfileResult(passed=True, trusted=True, verdict="pass", problem="matmul_softmax_fused",
                         candidate="solutions/attempt_07_tiled.py", device="cuda", shapes=[WIDE_SHAPE],
                         speedup=1400.1, speedup_ci=[1398.1, 1402.5])


def _columns(text: str) -> list[str]:
    """Each body column's text from top to bottom with all whitespace removed, so a value folded or wrapped
    over several lines of its cell reads whole again (its pieces are in the same column, one under another)."""
    columns: dict[int, str] = {}
    for line in text.splitlines():
        for i, piece in enumerate(line.split("│")[1:-1]):
            columns[i] = columns.get(i, "") + "".join(piece.split())
    return list(columns.values())


def _shows_whole(text: str, *values: str) -> None:
    assert "…" not in text, text
    columns = _columns(text)
    for value in values:
        assert any("".join(value.split()) in column for column in columns), f"{value!r} is not whole in\n{text}"


def _narrow(show, result, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    show(result, console)
    return console.export_text()


@pytest.mark.parametrize("width", [80, 60])
def test_a_profile_and_its_roofline_keep_every_number_on_a_narrow_terminal(width):
    points = [RooflinePoint(who=who, time_ms=12.3456789, tflops=123.456, gbytes_per_s=3345.678,
                            percent_of_bound=87.654, bound="latency/underutilised", headroom_ms=1.23456)
              for who in ("candidate", "reference")]
    roof = RooflineResult(problem="p", candidate="c.py", device_name="NVIDIA H200", profile=_profile(),
                          shapes=[RooflineShape(params={"batch": 16, "seq_len": 4096}, flops=1e12, bytes=1e9,
                                                intensity=1234.5678, points=points)])
    _shows_whole(_narrow(print_profile, _profile(), width), "8.81 us +-1.2% (n=91)", "12.3 ms +-1.0% (n=1000)",
                 "1400.123 [1398.123, 1402.568]", "7.12 us/12 ms", "seq_len=4096", "hidden=8192",
                 "the reference is CPU-bound: host time above device time")
    _shows_whole(_narrow(print_roofline, roof, width), "1234.57", "candidate", "reference", "12345.68", "123.46",
                 "3346", "87.7", "latency/underutilised", "1234.56")


@pytest.mark.parametrize("width", [80, 60])
def test_a_compile_table_keeps_its_kernel_and_register_columns_on_a_narrow_terminal(width):
    nvidia = KernelBuild(kernel="fused_attention_forward_kernel", target="sm_90a", ok=True, registers=255,
                         spill_bytes=123456, shared_bytes=232448, num_warps=8, num_stages=4,
                         occupancy=Occupancy(resident_blocks=1, resident_warps=8, max_warps=64, percent=12.5,
                                             limited_by="registers"),
                         instructions={"HMMA.16816.F32.BF16": 4096, "LDGSTS.E.BYPASS.128": 2048, "FFMA": 1024},
                         constants={"BLOCK_M": 128, "BLOCK_N": 64})
    amd = KernelBuild(kernel="add_kernel", target="gfx942", ok=True, vgprs=128, agprs=64, sgprs=104, spill_bytes=0,
                      shared_bytes=65536)
    result = CompileResult(ok=True, candidate="solutions/attempt_07.py", language="triton",
                           targets=["sm_90a", "gfx942"], builds=[nvidia, amd])
    _shows_whole(_narrow(print_compile, result, width), "fused_attention_forward_kernel BLOCK_M=128 BLOCK_N=64",
                 "add_kernel", "255", "128/64/104", "123456", "232448", "65536", "8 x 4", "12% (registers)",
                 "HMMA.16816.F32.BF16 4096", "LDGSTS.E.BYPASS.128 2048", "FFMA 1024")


@pytest.mark.parametrize("width", [80, 60])
def test_a_check_table_keeps_its_errors_on_a_narrow_terminal(width):
    case = CaseResult(name="test 2 (fresh seed)", params={}, passed=False, failure="mismatch",
                      cause="reduced_precision", comparisons=[Comparison(leaf="", ok=False,
                                                                          max_error_in_bounds=123.456789,
                                                                          norm_error=0.000123456)],
                      message="1234 of 1048576 elements differ; max error 3.0517578125e-05 at index [12, 345]")
    result = CheckResult(passed=False, verdict="fail: mismatch", problem="p", candidate="c.py", cases=[case])
    _shows_whole(_narrow(print_check, result, width), "test 2 (fresh seed)", "mismatch (reduced_precision)", "123",
                 "1.23e-04", "1234 of 1048576 elements differ; max error 3.0517578125e-05 at index [12, 345]")


@pytest.mark.parametrize("width", [80, 60])
def test_the_history_keeps_its_speedups_on_a_narrow_terminal(width):
    from kernel_mcp.cli.snapshots import _show_history
    from kernel_mcp.history.snapshots import Snapshot
    snaps = [Snapshot(id="9f" * 20, problem="vector_add", candidate="solutions/attempt_07_vectorised.py", files=[],
                      author="claude-code", note="BLOCK 2048, masked tail", verdict="pass", speedup=0.008812345,
                      speedup_ci=[0.0086512, 0.0090123], roofline_percent=12.3456),
             Snapshot(id="0a" * 20, problem="vector_add", candidate="baseline.py", files=[], author="you",
                      verdict="fail: mismatch")]
    _shows_whole(_narrow(_show_history, snaps, width), "9f9f9f9f9f", "0a0a0a0a0a", "vector_add",
                 "solutions/attempt_07_vectorised.py", "0.00881x [0.00865, 0.00901]", "12%", "claude-code",
                 "BLOCK 2048, masked tail", "fail: mismatch")


@pytest.mark.parametrize("width", [80, 60])
def test_the_demo_and_calibrate_tables_keep_their_numbers_on_a_narrow_terminal(width, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from kernel_mcp import files as assets
    from kernel_mcp.cli.main import app
    from kernel_mcp.tools import calibrate, check
    folder = tmp_path / "layernorm_backward_with_affine"
    (folder / "solutions" / "wrong").mkdir(parents=True)
    (folder / "solutions" / "wrong" / "forgets_the_bias_gradient.py").write_text("")
    comparison = Comparison(leaf="", ok=True, max_error_in_bounds=0.000123456789)
    passed = CheckResult(passed=True, verdict="pass", problem=folder.name, candidate="baseline.py", device="cuda",
                         cases=[CaseResult(name=f"test {i}", params={}, passed=True, comparisons=[comparison])
                                for i in range(12)], seconds=123.456)
    caught = CheckResult(passed=False, verdict="fail: mismatch", problem=folder.name, device="cuda",
                         candidate=f"{folder.name}/solutions/wrong/forgets_the_bias_gradient.py",
                         findings=[Finding(code="mismatch", message="1234 of 1048576 elements differ by 0.0123")])
    monkeypatch.setattr(assets, "bundled_problems", lambda: [folder])
    monkeypatch.setattr(check, "check", lambda problem, kernel, device: passed if kernel.name == "baseline.py"
                        else caught)
    demo = CliRunner().invoke(app, ["demo"], env={"COLUMNS": str(width)}).output
    _shows_whole(demo, folder.name, "12/12", "0.000123", "123.5", "forgets_the_bias_gradient.py", "fail: mismatch",
                 "1234 of 1048576 elements differ by 0.0123")
    measured = calibrate.Calibration(
        device_name="GPU A", measured_at="2026-11-30T00:00:00Z", torch_version="x",
        bandwidth_by_mix={"copy (1 read : 1 write)": 4.16e12, "triad (2 reads : 1 write)": 4.35e12},
        matmul_flops_per_s={"bf16_tensor": 7.93e14, "fp8_e4m3fn_tensor_with_fp32_accumulate": 1.58e15})
    monkeypatch.setattr(calibrate, "calibrate", lambda on_progress=None: measured)
    ceilings = CliRunner().invoke(app, ["calibrate"], env={"COLUMNS": str(width)}).output
    _shows_whole(ceilings, "bandwidth, triad (2 reads : 1 write)", "4.35 TB/s (the roof)", "793.0 TFLOP/s",
                 "matmul fp8_e4m3fn_tensor_with_fp32_accumulate", "1580.0 TFLOP/s")
