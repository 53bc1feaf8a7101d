"""profile on the CPU: the real judge and candidate processes, wall-clock timing, validation while timing,
and the timing cheats that can be shown without a GPU (tests/test_gpu_profile.py has the rest). They assert
verdicts, trust and findings, which hold on a loaded machine, so they run beside other tests (all but one,
the double-forked daemon's, whose stop window widens with load)."""
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import CHEATS_STATE, PROBLEMS, REPO

from kernel_mcp.errors import UsageError
from kernel_mcp.tools._request import settings_from
from kernel_mcp.tools.profile import profile

CHEATS = REPO / "tests" / "timing_cheats"
QUICK = {"shapes": "tests", "budget_s": 6.0, "min_samples": 6, "warmup": 1}
HONEST = "def custom_kernel(data):\n    a, b = data\n    return a + b\n"


@pytest.fixture
def honest(tmp_path):
    path = tmp_path / "honest.py"
    path.write_text(HONEST)
    return path


def test_honest_candidate_with_baseline_is_timed_and_trusted(honest):
    result = profile(PROBLEMS / "vector_add", honest, baseline=honest, device="cpu", settings=settings_from(**QUICK))
    assert result.passed and result.trusted, result.findings
    assert result.check.passed and len(result.shapes) == 5  # the five test shapes
    for shape in result.shapes:
        assert shape.credited and shape.candidate.clock == "cpu wall clock"
        assert shape.candidate.samples >= 6 and shape.reference.samples >= 6
        assert shape.candidate.ci_low_ms <= shape.candidate.median_ms <= shape.candidate.ci_high_ms
        assert shape.speedup_ci[0] <= shape.speedup <= shape.speedup_ci[1]
        assert shape.params["seed"] == "secret" and shape.flops is not None and shape.bytes is not None
    assert result.speedup > 0 and result.speedup_vs_baseline > 0


def test_patched_perf_counter_changes_nothing_and_is_named():
    result = profile(PROBLEMS / "vector_add", CHEATS / "patch_perf_counter.py", device="cpu",
                     settings=settings_from(**QUICK))
    assert result.passed and not result.trusted and result.speedup is None
    assert any(f.code == "timer_patched" and "time.perf_counter" in f.message for f in result.findings)
    big = result.shapes[1]  # n=4099: the 1000x shrink would put it far below the reference
    assert big.candidate.median_ms > 0.1 * big.reference.median_ms


def test_wrong_output_while_timing_fails_the_candidate():
    result = profile(PROBLEMS / "vector_add", CHEATS / "stale_after_check.py", device="cpu",
                     settings=settings_from(**QUICK))
    assert result.check.passed  # honest during the check...
    assert not result.passed and result.verdict == "fail: mismatch while timing"  # ...caught while timed
    assert any(f.code == "timing_failed" for f in result.findings)


def test_failed_check_is_not_timed():
    wrong = PROBLEMS / "vector_add" / "solutions" / "wrong"
    candidate = sorted(wrong.glob("*.py"))[0]
    result = profile(PROBLEMS / "vector_add", candidate, device="cpu", settings=settings_from(**QUICK))
    assert not result.passed and not result.shapes and result.verdict.startswith("fail")
    assert any(f.code == "check_failed" for f in result.findings)


def test_bad_settings_and_device_are_usage_errors(honest):
    with pytest.raises(UsageError, match="target_ci"):
        settings_from(target_ci=2)
    with pytest.raises(UsageError, match="shapes"):
        settings_from(shapes="all")
    with pytest.raises(UsageError, match="device"):
        profile(PROBLEMS / "vector_add", honest, device="tpu")


def test_cli_json_has_the_documented_fields(honest):
    proc = subprocess.run([sys.executable, "-m", "kernel_mcp", "profile", str(PROBLEMS / "vector_add"), str(honest),
                           "--device", "cpu", "--shapes", "tests", "--budget", "4", "--json"],
                          capture_output=True, text=True, timeout=600)
    body = json.loads(proc.stdout)
    assert proc.returncode == (0 if body["passed"] and body["trusted"] else 1), proc.stderr
    assert {"passed", "trusted", "speedup", "shapes", "findings"} <= set(body)
    shape = body["shapes"][0]
    assert {"params", "candidate", "reference", "speedup", "speedup_ci"} <= set(shape)
    assert {"median_ms", "ci_low_ms", "ci_high_ms", "samples"} <= set(shape["candidate"])


def test_work_is_estimated_when_task_yml_has_no_flops_or_bytes(problem_copy, tmp_path):
    import yaml
    folder = problem_copy("matmul_fp32")
    task = yaml.safe_load((folder / "task.yml").read_text())
    for key in ("flops", "bytes", "unit"):
        task["kernel_mcp"].pop(key, None)
    task["tests"] = task["tests"][:2]
    (folder / "task.yml").write_text(yaml.safe_dump(task))
    candidate = tmp_path / "mm.py"
    candidate.write_text("def custom_kernel(data):\n    a, b = data\n    return a @ b\n")
    result = profile(folder, candidate, device="cpu", settings=settings_from(**{**QUICK, "budget_s": 3}))
    assert result.passed, result.findings
    shape = result.shapes[0]  # m = n = k = 128: torch's flop counter gives 2*m*n*k
    assert shape.work_estimated and shape.flops == 2 * 128 ** 3
    assert shape.bytes == 4 * 3 * 128 * 128  # two inputs and the output, float32


def test_roofline_on_cpu_says_why_there_is_none_before_any_work(honest):
    proc = subprocess.run([sys.executable, "-m", "kernel_mcp", "roofline", str(PROBLEMS / "vector_add"), str(honest),
                           "--device", "cpu", "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no roofline on a CPU" in proc.stderr and "kernel-mcp profile" in proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr


# Cheats found by an adversarial review of the timing path (tests/timing_cheats/, each file says how it works)
@pytest.mark.parametrize("name", ["forge_figures_in_snapshot.py", "lazy_subclass.py"])
def test_output_subclass_cannot_run_code_after_the_clock(name):
    result = profile(PROBLEMS / "vector_add", CHEATS / name, device="cpu", settings=settings_from(**QUICK))
    assert not result.passed and "while timing" in result.verdict, (result.verdict, result.speedup)


@pytest.mark.parametrize("name", ["figures_overflow_crash.py", "figures_graph_ms_hang.py"])
def test_forged_figures_fail_the_candidate_not_the_judge(name):
    result = profile(PROBLEMS / "vector_add", CHEATS / name, device="cpu", settings=settings_from(**QUICK))
    assert result.verdict == "fail: forged while timing", result.findings
    assert result.seconds < 120


@pytest.mark.alone  # the stop's window (host stopped, daemon not yet) widens with the machine's load
def test_double_forked_daemon_is_stopped_while_the_reference_is_timed(monkeypatch):
    """The daemon writes the CPU time it spins while it sees the candidate's host stopped (the reference being
    timed): stopped with everything below the judge, it only gets the instants between the host's stop and
    its own. Measured on the 2-core machine (2026-12-05, 128 reference samples): 10-12 ms in all idle, 61-112
    ms beside two CPU hogs; with the judge stopping the host's tree alone (the daemon escaped) 3.5-3.7 s idle,
    2.5-2.9 s beside the hogs. A timing would not tell them apart here: beside two hogs an honest ``a @ b``
    with no daemon read 0.16-0.96x, intervals up to [0.03, 41], one shape 12.9x."""
    monkeypatch.setenv("KERNEL_MCP_PID_NAMESPACE", "0")  # the daemon escapes the host's tree to the judge
    log = CHEATS_STATE / "burner.log"
    CHEATS_STATE.mkdir(exist_ok=True)
    log.unlink(missing_ok=True)
    result = profile(PROBLEMS / "matmul_fp32", CHEATS / "double_fork_burner.py", device="cpu",
                     settings=settings_from(**QUICK))
    assert result.passed, result.findings
    spun = [float(x) for x in log.read_text().split()] if log.exists() else []
    assert sum(spun) < 0.5, f"the daemon spun {sum(spun):.2f} CPU-s in {len(spun)} stops of its host"
    assert not (result.trusted and result.speedup_ci and result.speedup_ci[0] > 1.5), result.speedup_ci


def test_flush_mode_is_read_unless_asked_and_a_bad_value_is_refused(monkeypatch):
    from kernel_mcp.worker.judge import flush
    monkeypatch.delenv("KERNEL_MCP_FLUSH", raising=False)
    assert flush.flush_mode() == "read"
    monkeypatch.setenv("KERNEL_MCP_FLUSH", "write")
    assert flush.flush_mode() == "write"
    monkeypatch.setenv("KERNEL_MCP_FLUSH", "sideways")
    with pytest.raises(ValueError, match="read, write"):
        flush.flush_mode()


def test_a_timing_budget_running_out_is_not_the_candidates_failure():
    """A kernel that passed its check but could not be sampled enough before the hard limit (a slow CPU) is
    'pass (not timed)': untrusted, no speedup, never 'fail'."""
    from kernel_mcp.results import CheckResult, ProfileResult
    from kernel_mcp.worker.judge.profile import Contestant
    from kernel_mcp.worker.judge.verdict import decide
    check = CheckResult(passed=True, verdict="pass", problem="p", candidate="c.py", device="cpu")
    result = ProfileResult(passed=False, trusted=False, verdict="", problem="p", candidate="c.py", device="cpu",
                           check=check)
    slow = Contestant(role="candidate", failure="too_few_samples: 2 usable samples in 3 calls before the hard time limit")
    decide(result, check, [Contestant(role="reference"), slow])
    assert result.passed and not result.trusted and result.speedup is None
    assert result.verdict == "pass (not timed: too few samples)" and not result.verdict.startswith("fail")
    assert [f.code for f in result.findings] == ["timing_incomplete"] and "--budget" in result.findings[0].message


def test_the_progress_ends_each_shape_with_the_sample_counts_its_table_shows(honest):
    """Issue 35: in a log, profile's progress said "1 samples" for a shape its table showed with n=91 (the first
    running count of a sampling loop, printed once per stage). The last progress line on each shape gives the
    counts the table gives."""
    proc = subprocess.run([sys.executable, "-m", "kernel_mcp", "profile", str(PROBLEMS / "vector_add"), str(honest),
                           "--device", "cpu", "--shapes", "tests", "--budget", "4"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "COLUMNS": "200"})  # one line a table row
    assert proc.returncode in (0, 1), proc.stderr
    said: dict[int, dict[str, int]] = {}
    for line in proc.stderr.splitlines():
        shape = re.match(r"\s*shape (\d+)\b", line)
        if shape:  # the last line on a shape wins
            counts = re.findall(r"(reference|candidate) (\d+) samples?", line)
            said[int(shape[1])] = {role: int(n) for role, n in counts}
    rows = [re.findall(r"\(n=(\d+)\)", line) for line in proc.stdout.splitlines() if "(n=" in line]
    assert len(rows) == 5, proc.stdout
    for i, (candidate, reference) in enumerate(rows):
        assert said.get(i) == {"reference": int(reference), "candidate": int(candidate)}, (proc.stderr, proc.stdout)
