"""profile on a real GPU (skipped elsewhere): timing cheats that need a device, honest controls that must
stay trusted, and figures only a GPU has (CUPTI kernel time, graph replay). Run these serially (-n 0):
timing tests that share a GPU with other tests disturb each other."""
import pytest
import yaml
from conftest import PROBLEMS, REPO

from kernel_mcp.tools._request import settings_from

from kernel_mcp.tools.profile import profile

pytestmark = pytest.mark.gpu
CHEATS = REPO / "tests" / "timing_cheats"
FAST = {"budget_s": 8.0}


def _with_benchmarks(problem_copy, sizes):
    folder = problem_copy("vector_add")
    task = yaml.safe_load((folder / "task.yml").read_text())
    task["benchmarks"] = [{"n": n, "itemsize": 4, "seed": 900 + i} for i, n in enumerate(sizes)]
    (folder / "task.yml").write_text(yaml.safe_dump(task))
    return folder


def _run(candidate, problem=PROBLEMS / "vector_add", **settings):
    return profile(problem, candidate, device="cuda", settings=settings_from(**{**FAST, **settings}))


def test_triton_baseline_is_trusted_with_kernel_time():
    result = _run(PROBLEMS / "vector_add" / "baseline.py")
    assert result.passed and result.trusted, result.findings
    # a Triton add against torch's add: the baseline's BLOCK 128 is a deliberately modest start (the tune's
    # headroom), 0.41x of torch's add on an H200 at the benchmark shapes (2026-12-05, 0.404-0.414)
    assert 0.2 < result.speedup < 2.0
    for shape in result.shapes:
        assert shape.candidate.clock == "cuda events" and shape.candidate.kernel_ms
        # CUPTI's busy time is at most the op time between the events
        assert shape.candidate.kernel_ms <= shape.candidate.median_ms * 1.1 + 0.005
        assert shape.floor_ms and shape.candidate.median_ms > shape.floor_ms


@pytest.mark.parametrize("name", ["honest_joined_stream.py", "honest_cuda_graph.py"])
def test_honest_controls_stay_trusted(name):
    result = _run(CHEATS / name)
    assert result.passed and result.trusted, (result.verdict, result.findings)


def test_unjoined_side_stream_is_caught():
    result = _run(CHEATS / "side_stream_unjoined.py")
    assert not result.trusted and result.speedup is None
    # which defence fires first is a race of its own: the timing's escaped-work probe (H200, 2026-12-05) or,
    # where the side stream is still writing when the check compares, the check (H100, the same day)
    caught = {"escaped_work", "check_failed"} & {f.code for f in result.findings}
    assert caught, result.findings


def test_background_thread_launch_is_caught():
    result = _run(CHEATS / "background_thread.py")
    assert not (result.passed and result.trusted), (result.verdict, result.speedup)


def test_patched_cuda_timers_change_nothing():
    result = _run(CHEATS / "patch_cuda_timers.py")
    assert not result.trusted and any(f.code == "timer_patched" for f in result.findings)
    for shape in result.shapes:  # the same work as torch's add: a 1000x shrink would show here
        assert shape.candidate.median_ms > 0.5 * shape.reference.median_ms


def test_persisting_l2_window_earns_no_speedup(problem_copy):
    folder = _with_benchmarks(problem_copy, [1 << 20, 1 << 21])  # 12 and 24 MB: fit in the set-aside
    result = _run(CHEATS / "persisting_l2.py", problem=folder)
    assert result.passed, result.verdict
    assert not result.trusted or result.speedup < 1.3, (result.speedup, result.findings)


def test_short_kernel_gets_a_graph_figure(problem_copy):
    folder = _with_benchmarks(problem_copy, [4096])
    result = _run(PROBLEMS / "vector_add" / "baseline.py", problem=folder)
    assert result.passed, result.findings
    shape = result.shapes[0]
    assert shape.candidate.median_ms < 0.010 and shape.candidate.graph_ms is not None
    assert shape.reference.graph_ms is not None


ILLEGAL = '''
import torch, triton, triton.language as tl

@triton.jit
def _bad(out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) + (1 << 40)
    tl.store(out_ptr + offs, 1.0)

def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    _bad[(4,)](out, BLOCK=128)
    return out
'''


def test_illegal_memory_access_fails_and_next_profile_works(tmp_path):
    bad = tmp_path / "illegal.py"
    bad.write_text(ILLEGAL)
    result = _run(bad)
    assert not result.passed and not result.shapes
    again = _run(PROBLEMS / "vector_add" / "baseline.py")
    assert again.passed and again.trusted, again.findings


def test_counters_come_from_ncu_and_witness_the_time():
    result = profile(PROBLEMS / "vector_add", PROBLEMS / "vector_add" / "baseline.py", device="cuda",
                     settings=settings_from(**FAST), counters=True)
    report = result.counters
    if report is None or not report.available:
        pytest.skip(f"ncu not usable here: {report.message if report else 'no report'}")
    assert report.kernels and report.kernels[0].duration_us > 0, report
    assert result.trusted, result.findings


def test_calibrate_measures_plausible_ceilings(tmp_path, monkeypatch):
    """Measured ceilings sit below the datasheet (nothing beats the hardware) and not absurdly far below it;
    the roof is the best of the mixes, and the cache holds what was returned."""
    import torch

    from kernel_mcp.hardware import devices
    from kernel_mcp.tools import calibrate
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path))
    result = calibrate.calibrate()
    assert set(result.bandwidth_by_mix) == set(calibrate.STREAMS)
    assert result.bandwidth_bytes_per_s == max(result.bandwidth_by_mix.values())
    assert calibrate.load_cached(torch.cuda.get_device_name()) == result
    sheet = devices.lookup(result.device_name)
    if sheet is None:
        pytest.skip(f"{result.device_name} is not in the ceilings table")
    assert 0.5 * sheet.hbm_bytes_per_s < result.bandwidth_bytes_per_s <= 1.02 * sheet.hbm_bytes_per_s
    for unit, rate in result.matmul_flops_per_s.items():
        assert 0.2 * sheet.peak_flops[unit] < rate <= 1.02 * sheet.peak_flops[unit], unit


def test_checks_wait_for_a_timing_run_and_leave_it_undisturbed():
    """Issue 11: a profile alone, then the same profile while checks are started beside it. The checks wait
    for the device's lease (they say so), and the profile's medians stay within reach of the solo ones
    (their 95% intervals overlap, or they differ by under 3%, the spread of repeated solo runs)."""
    import threading

    from kernel_mcp.tools.check import check
    problem, candidate = PROBLEMS / "vector_add", PROBLEMS / "vector_add" / "baseline.py"
    long = {"budget_s": 16.0, "target_ci": 0.001}  # samples until the budget ends: the checks arrive meanwhile
    alone = _run(candidate, **long)
    timing_started, waited, verdicts = threading.Event(), [], []

    def on_progress(message, done, total):
        if message.startswith("timing the reference alone"):  # the profile holds the device from now on
            timing_started.set()

    def checker():
        timing_started.wait(120)
        result = check(problem, candidate, device="cuda",
                       on_progress=lambda message, *_: waited.append(message) if "waiting for" in message else None)
        verdicts.append(result.verdict)

    checkers = [threading.Thread(target=checker) for _ in range(3)]
    for thread in checkers:
        thread.start()
    beside = profile(problem, candidate, device="cuda", settings=settings_from(**long), on_progress=on_progress)
    for thread in checkers:
        thread.join(300)
    assert verdicts == ["pass"] * 3 and len(waited) >= 3, (verdicts, waited)
    assert beside.passed and beside.trusted, beside.findings
    for solo, shared in zip(alone.shapes, beside.shapes):
        a, b = solo.candidate, shared.candidate
        overlapping = a.ci_low_ms <= b.ci_high_ms and b.ci_low_ms <= a.ci_high_ms
        assert overlapping or abs(b.median_ms / a.median_ms - 1) < 0.03, (a, b)
