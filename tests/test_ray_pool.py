"""RayRunner (worker/runners/ray.py) on a real local Ray instance, judging on the CPU: results identical in form to
LocalRunner's, a profile, a Ray worker killed mid-check (retried elsewhere, its result counted once), retries
that run out (a harness error saying what Ray reported), and clear errors for a bad address or no Ray."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'kernel-mcp[ray]')")

from conftest import CHEATS_STATE, PROBLEMS, repo_pythonpath  # noqa: E402

from kernel_mcp.errors import UsageError
from kernel_mcp.results import CheckResult, ProfileResult  # noqa: E402
from kernel_mcp.tools.check import check  # noqa: E402
from kernel_mcp.tools._request import settings_from  # noqa: E402
from kernel_mcp.tools.profile import profile  # noqa: E402
from kernel_mcp.worker.runners.local import LocalRunner  # noqa: E402
from kernel_mcp.worker.runners.ray import STAGE_PREFIX, RayRunner  # noqa: E402

VECTOR_ADD = PROBLEMS / "vector_add"
PASSING = VECTOR_ADD / "baseline.py"
FAILING = VECTOR_ADD / "solutions" / "wrong" / "load_mask_off_by_one.py"
WAIT_S = 300  # generous: the suite runs three workers on two cores

# prepended to a passing candidate: its first import (the first attempt) says so in a file in CHEATS_STATE (a
# place candidates may write) and sleeps, long enough to be killed there; a retry finds the file and passes
SLOW_ONCE = textwrap.dedent('''
    import os as _os, pathlib as _pathlib, time as _time
    _started = _pathlib.Path({marker!r})
    if not _started.exists():
        _started.write_text(str(_os.getpid()))
        _time.sleep(90)
''')


@pytest.fixture(scope="module")
def cluster():
    """One small local Ray instance for the module, without GPUs also where there are some (a short folder:
    Ray's socket paths have a length limit)."""
    temp = tempfile.mkdtemp(prefix="kmcp-raytest-")
    runner = RayRunner("local", num_cpus=2, num_gpus=0, include_dashboard=False, object_store_memory=100 << 20,
                       _temp_dir=temp)
    yield runner
    runner.close()
    shutil.rmtree(temp, ignore_errors=True)
    for staged in Path(tempfile.gettempdir()).glob(f"{STAGE_PREFIX}*"):  # of workers killed here (the next
        pid = staged.name.removeprefix(STAGE_PREFIX)  # task on a node removes them, but none follows)
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(staged, ignore_errors=True)


def _same_form(here: CheckResult, there: CheckResult) -> None:
    assert type(there) is CheckResult
    for field in ("passed", "verdict", "problem", "candidate", "device", "problem_degenerate"):
        assert getattr(there, field) == getattr(here, field), field
    assert [(c.name, c.passed, c.failure) for c in there.cases] == [(c.name, c.passed, c.failure) for c in here.cases]
    assert [f.code for f in there.findings] == [f.code for f in here.findings]
    assert STAGE_PREFIX not in there.model_dump_json(), "a path of the node's staging folder came back"


@pytest.mark.long
def test_checks_through_ray_give_what_local_checks_give(cluster):
    """A Triton candidate passes on the node's CPU (the harness runs it under TRITON_INTERPRET itself)."""
    local = LocalRunner()
    try:
        for candidate, verdict in ((PASSING, "pass"), (FAILING, "fail: mismatch")):
            here = check(VECTOR_ADD, candidate, device="cpu", runner=local)
            there = check(VECTOR_ADD, candidate, device="cpu", runner=cluster)
            assert (here.verdict, there.verdict) == (verdict, verdict), there.findings
            assert there.candidate == str(candidate)
            _same_form(here, there)
    finally:
        local.close()
    ran = cluster.last_attempt()
    assert ran is not None and ran.attempt == 0 and ran.pid != os.getpid()
    assert cluster.resolved("cpu") is not None and cluster.resolved("cpu").kind == "cpu"
    # as locally, "auto" falls back to a CPU where the cluster has no GPU; "cuda" cannot
    assert check(VECTOR_ADD, PASSING, device="auto", runner=cluster).passed
    assert cluster.resolved("auto").kind == "cpu" and cluster.resolved("cuda") is None
    with pytest.raises(UsageError, match="no GPU"):
        check(VECTOR_ADD, PASSING, device="cuda", runner=cluster)


@pytest.mark.long
def test_a_profile_through_ray_times_every_shape_with_its_baseline(cluster):
    baseline = VECTOR_ADD / "solutions" / "correct" / "torch_add.py"
    said: list[str] = []
    result = profile(VECTOR_ADD, PASSING, baseline=baseline, device="cpu", counters=True, runner=cluster,
                     settings=settings_from(budget_s=1, shapes="tests"), on_progress=lambda m, *_: said.append(m))
    assert type(result) is ProfileResult and result.passed, (result.verdict, result.findings)
    assert (result.candidate, result.baseline) == (str(PASSING), str(baseline))
    assert len(result.shapes) == 5 and all(s.candidate and s.reference and s.baseline for s in result.shapes)
    assert result.check is not None and result.check.passed
    assert "Ray" in result.counters.message
    assert said[0].startswith("queued on the Ray cluster") and said[-1].startswith("ran on ")


def _ancestors(pid: int) -> set[int]:
    found = set()
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat[stat.rfind(")") + 2:].split()[1])
        found.add(pid)
    return found


def _kill_worker_once_started(marker: Path) -> int:
    """SIGKILL the Ray worker (of this process's Ray instance) running a check, once its candidate started."""
    deadline = time.monotonic() + WAIT_S
    while not marker.exists():
        assert time.monotonic() < deadline, "the slow candidate never started"
        time.sleep(0.1)
    for entry in Path("/proc").iterdir():
        try:
            title = (entry / "cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        running = title.startswith((b"ray::kernel_mcp check", b"ray::_judge_on_node"))  # by task name, or function's
        if running and os.getpid() in _ancestors(int(entry.name)):
            os.kill(int(entry.name), signal.SIGKILL)
            return int(entry.name)
    raise AssertionError("no Ray worker of this test runs the check")


def _check_while_killing(runner: RayRunner, tmp_path: Path):
    """A check of a candidate slow on its first attempt, whose Ray worker is killed mid-run: the result, the
    runner's attempt record (kept per thread: taken in the checking thread), the progress said, the pid killed."""
    CHEATS_STATE.mkdir(exist_ok=True)
    marker = CHEATS_STATE / f"ray-started-{uuid.uuid4().hex}"
    candidate = tmp_path / "slow_add.py"
    candidate.write_text(SLOW_ONCE.format(marker=str(marker)) + PASSING.read_text())
    said: list[str] = []

    def run():
        result = check(VECTOR_ADD, candidate, device="cpu", runner=runner, on_progress=lambda m, *_: said.append(m))
        return result, runner.last_attempt()
    try:
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(run)
            killed = _kill_worker_once_started(marker)
            result, attempt = future.result(timeout=WAIT_S)
    finally:
        marker.unlink(missing_ok=True)
    return result, attempt, said, killed


@pytest.mark.long
def test_a_worker_killed_mid_check_is_retried_elsewhere_and_counted_once(cluster, tmp_path):
    result, attempt, said, killed = _check_while_killing(cluster, tmp_path)
    assert result.passed, (result.verdict, result.findings)
    assert attempt is not None and attempt.attempt == 1 and attempt.pid != killed
    assert [m for m in said if m.startswith("ran on")] == [said[-1]] and "retry 1" in said[-1]


@pytest.mark.long
def test_a_worker_killed_with_no_retries_left_is_a_harness_error(cluster, tmp_path):
    with pytest.raises(UsageError, match="127.0.0.1:1"):  # one process, one cluster
        RayRunner("127.0.0.1:1")
    once = RayRunner("auto", retries=0)  # joins this process's connection, which it must leave open
    try:
        result, attempt, _, _ = _check_while_killing(once, tmp_path)
    finally:
        once.close()
    assert ray.is_initialized()
    assert not result.passed and result.verdict == "error: harness" and attempt is None
    assert [f.code for f in result.findings] == ["cluster_failed"]
    assert "1 attempt" in result.findings[0].message and "Error" in result.findings[0].message
    assert result.candidate.endswith("slow_add.py")


def test_a_bad_address_or_no_ray_is_a_usage_error_saying_what_to_do():
    """In fresh interpreters: this one may hold a connection already."""
    script = textwrap.dedent('''
        import sys
        if sys.argv[1] == "no ray":
            sys.modules["ray"] = None  # as where it is not installed: import ray raises ImportError
        from kernel_mcp.errors import UsageError
        from kernel_mcp.worker.runners.ray import RayRunner
        try:
            RayRunner(sys.argv[2])
        except UsageError as exc:
            print("UsageError:", exc)
    ''')
    for case, address, expected in (("bad address", "127.0.0.1:1", "no Ray cluster reachable at 127.0.0.1:1"),
                                     ("bad address", "ray://127.0.0.1:1", "reachable at ray://127.0.0.1:1"),
                                     ("no ray", "auto", "install kernel-mcp[ray]")):
        done = subprocess.run([sys.executable, "-c", script, case, address], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": repo_pythonpath()})
        assert "UsageError: " in done.stdout and expected in done.stdout, (case, done.stdout, done.stderr[-2000:])


def test_a_ray_worker_process_keeps_one_warm_runner_whichever_gpu_it_is_given(monkeypatch):
    """Ray reuses a worker process for tasks on other GPUs (it sets CUDA_VISIBLE_DEVICES per task). Each set
    of visible devices needs its own judges (booted pinned), but a process keeping one runner per GPU would
    hold spares x GPUs judges on an 8-GPU node: the previous runner ends when the set changes."""
    from kernel_mcp.worker.runners import ray as ray_pool
    booted = []

    class Runner:  # stands in for LocalRunner: records what was booted and what was closed
        def __init__(self, **kwargs):
            self.kwargs, self.closed = kwargs, False
            booted.append(self)

        def close(self):
            self.closed = True
    monkeypatch.setattr(ray_pool, "LocalRunner", Runner)
    monkeypatch.setattr(ray_pool, "_node_runners", {})
    for visible in ("0", "0", "3", "3", "0"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        runner = ray_pool._node_runner(4)
    assert len(booted) == 3 and [r.closed for r in booted] == [True, True, False] and runner is booted[-1]
    assert booted[0].kwargs == {"warm": True, "spares": 4, "step_hosts": False}
    assert list(ray_pool._node_runners.values()) == [runner]
