"""A batch's survey (kernel_mcp/batch/survey.py): each problem's reference measured once before its checks, so they
are admitted to the device with what they need. The measure itself with a real judge (it runs no candidate code); the
scheduling with a runner that records the measures asked of it and a lease of files (no GPU is needed for either)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from conftest import PROBLEMS

from kernel_mcp.batch.survey import Survey, default_width
from kernel_mcp.results import CheckResult
from kernel_mcp.worker import LocalRunner, lease, needs
from kernel_mcp.worker.protocol import Device, JudgeRequest
from kernel_mcp.worker.runners import local

GIB = 1 << 30
FAKE_GPU = Device(kind="cuda", index=0, vendor="nvidia", name="survey GPU", uuid="GPU-survey",
                  total_memory_bytes=80 * GIB)
NAMES = ("vector_add", "softmax", "row_sum", "rmsnorm")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


class MeasureRecorder:
    """A runner whose measures record a need as the real one does (needs.record_need); ``hold``: problems whose
    measure waits for ``go``."""
    local_builds = True
    parallel = 1

    def __init__(self, hold: tuple[str, ...] = ()):
        self.hold, self.go, self.started, self.lock = hold, threading.Event(), [], threading.Lock()

    def judge(self, request, device, on_progress, problem):
        assert request.mode == "measure"
        with self.lock:
            self.started.append(problem.name)
        if problem.name in self.hold:
            assert self.go.wait(30)
        needs.record_need(FAKE_GPU, needs.problem_key(problem), GIB)
        return CheckResult(passed=False, verdict="measured", problem=problem.name, candidate=request.candidate)


def _problems(names=NAMES) -> list[tuple[Path, Path]]:
    return [(PROBLEMS / name, PROBLEMS / name / "baseline.py") for name in names]


def _until(condition, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.02)


def test_each_problem_is_measured_once_in_order_and_known_ones_are_skipped(cache):
    needs.record_need(FAKE_GPU, needs.problem_key(_load("softmax")), GIB)  # measured before
    runner = MeasureRecorder()
    survey = Survey(_problems() + _problems(("vector_add",)), runner, "cuda", FAKE_GPU, width=1)
    _until(lambda: len(runner.started) == 3)
    survey.close()
    assert runner.started == ["vector_add", "row_sum", "rmsnorm"]
    survey = Survey(_problems(), runner, "cuda", FAKE_GPU, width=2)
    for name in NAMES:  # every one known now: a check claims each at once, and none is measured again
        assert survey.claim(PROBLEMS / name) < 5.0
    survey.close()
    assert runner.started == ["vector_add", "row_sum", "rmsnorm"]


def test_a_check_waits_for_its_problems_measure_under_way_and_takes_over_one_not_started(cache):
    """A check of a problem whose measure is running waits for it (then it is admitted with the need); one whose
    measure has not started takes it off the list and measures as it runs (nothing is measured twice)."""
    runner = MeasureRecorder(hold=("vector_add",))
    survey = Survey(_problems(), runner, "cuda", FAKE_GPU, width=1)
    try:
        _until(lambda: runner.started == ["vector_add"])
        assert survey.claim(PROBLEMS / "rmsnorm") == 0.0  # queued, not started: dropped
        waited: list[float] = []
        claimer = threading.Thread(target=lambda: waited.append(survey.claim(PROBLEMS / "vector_add")))
        claimer.start()
        time.sleep(0.5)
        assert claimer.is_alive(), "the check did not wait for its problem's measure under way"
        runner.go.set()
        claimer.join(30)
        assert waited and waited[0] > 0.3
        assert needs.measured_need(FAKE_GPU, needs.problem_key(_load("vector_add"))) is not None
    finally:
        runner.go.set()
        survey.close()
    assert "rmsnorm" not in runner.started


def _load(name: str):
    from kernel_mcp.problem import load_problem
    return load_problem(PROBLEMS / name)


def test_nothing_is_measured_off_a_gpu_or_where_the_checks_run_elsewhere(cache):
    """Needs are kept per machine, and a CPU check reserves nothing: a CPU batch, or one a Ray cluster's nodes
    judge (runner.local_builds False), measures nothing."""
    runner = MeasureRecorder()
    Survey(_problems(), runner, "cpu", Device(kind="cpu"), width=3).close()
    Survey(_problems(), runner, "cuda", None, width=3).close()
    runner.local_builds = False
    Survey(_problems(), runner, "cuda", FAKE_GPU, width=3).close()
    assert runner.started == []
    assert default_width(runner) == 3  # as many first shares as fit one device's budget


def test_a_measure_runs_the_reference_and_no_candidate(tmp_path, cache, monkeypatch):
    """A real judge: the reference is run and measured as a check's first step; the candidate the request names is
    never imported (one that raises at import would fail a check), and the judge starts no candidate host (each
    would boot torch and a device context for nothing)."""
    hosts = []
    real = local.JudgeProcess

    def recording(device, *args, **kwargs):
        hosts.append(kwargs.get("hosts", 1))
        return real(device, *args, **kwargs)
    monkeypatch.setattr(local, "JudgeProcess", recording)
    candidate = tmp_path / "raises.py"
    candidate.write_text("raise SystemExit('imported')\n")
    request = JudgeRequest(mode="measure", problem=str(PROBLEMS / "vector_add"), candidate=str(candidate))
    result = LocalRunner().judge(request, "cpu")
    assert result.verdict == "measured" and not result.passed and result.cases == [], result
    assert result.memory is not None
    assert hosts == [0]


def test_checks_of_one_new_problem_in_one_runner_wait_for_the_first_to_measure_it(cache):
    """An RL client's rollouts of a new problem come together. The first is admitted with a first share of the
    device; the others wait until its judge has measured the reference (the need is recorded then, not when its
    check ends), and are admitted with that need; if the first ends without measuring, the next becomes first."""
    runner, said, got = LocalRunner(), [], []
    need, first = runner._first_run_or_wait(FAKE_GPU, "new problem", lambda *_: None)
    assert first is not None and need == 0
    waiter = threading.Thread(target=lambda: got.append(
        runner._first_run_or_wait(FAKE_GPU, "new problem", lambda message, *_: said.append(message))))
    waiter.start()
    time.sleep(0.3)
    assert waiter.is_alive() and said, "the second check did not wait for the first to measure"
    needs.record_need(FAKE_GPU, "new problem", 2 * GIB)  # what the runner does when the judge reports the need
    first.set()
    waiter.join(10)
    assert len(got) == 1 and got[0][1] is None and got[0][0] == pytest.approx(2 * GIB, rel=1e-6), got
    # a first run that ends without a measure (a broken reference) hands the first run to the next
    _, again = runner._first_run_or_wait(FAKE_GPU, "broken", lambda *_: None)
    runner._first_runs.pop(needs.need_key(FAKE_GPU, "broken"))
    again.set()
    assert runner._first_run_or_wait(FAKE_GPU, "broken", lambda *_: None)[1] is not None


class FakeJudge:
    """Stands for a judge process in LocalRunner._admitted: reports ``need`` as a judge does once it measured the
    reference (and notes what the records said right then), and ends with a result and both peak readings."""
    on_memory_need = None

    def __init__(self, need: int, device_wide_peak: int, own_peak: int):
        self.need, self.device_wide_peak, self.own_peak, self.seen_during = need, device_wide_peak, own_peak, None

    def run(self, request, timeout, say):
        from kernel_mcp.worker.protocol import Final
        self.on_memory_need(self.need)
        self.seen_during = needs.measured_need(FAKE_GPU, "p")
        result = CheckResult(passed=True, verdict="pass", problem="p", candidate=request.candidate)
        return Final(result=result.model_dump(), peak_memory_bytes=self.device_wide_peak, own_peak_bytes=self.own_peak)


def test_a_need_is_recorded_when_measured_and_a_crowded_runs_peak_from_its_own_judge(cache, tmp_path):
    """The runner records the need the judge reports at once (a check of the problem that starts meanwhile is
    admitted with it). At the end a run alone records the device-wide peak; a run beside another records its
    judge's own estimate, since the device-wide reading counts the neighbour's allocations."""
    request = JudgeRequest(mode="check", problem=str(PROBLEMS / "vector_add"), candidate=str(tmp_path / "c.py"))
    runner, told = LocalRunner(), []
    alone = FakeJudge(need=GIB, device_wide_peak=3 * GIB, own_peak=2 * GIB)
    runner._admitted(alone, request, CheckResult, FAKE_GPU, "p", False, GIB, 60, lambda *_: None,
                     lambda: told.append(True))
    expected = needs.need_from_measure(GIB)
    assert alone.seen_during == pytest.approx(expected, rel=1e-6) and told == [True]
    assert needs.measured_need(FAKE_GPU, "p") == pytest.approx(3 * GIB * needs.NEED_MARGIN, rel=1e-6)
    neighbour_in, release = threading.Event(), threading.Event()

    def neighbour():
        with lease.hold(FAKE_GPU, False, GIB):
            neighbour_in.set()
            release.wait(30)
    beside = threading.Thread(target=neighbour)
    beside.start()
    assert neighbour_in.wait(30)
    try:
        crowded = FakeJudge(need=GIB, device_wide_peak=40 * GIB, own_peak=4 * GIB)
        runner._admitted(crowded, request, CheckResult, FAKE_GPU, "p", False, GIB, 60, lambda *_: None)
    finally:
        release.set()
        beside.join(30)
    assert needs.measured_need(FAKE_GPU, "p") == pytest.approx(4 * GIB * needs.NEED_MARGIN, rel=1e-6)
