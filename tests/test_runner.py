"""The door into worker/ (worker/runners/local.py, protocol.py, judge/main.py): typed requests, clear usage errors, warm
processes that serve one candidate each, and isolation between candidates served one after another."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import PROBLEMS, repo_pythonpath

from kernel_mcp.errors import UsageError
from kernel_mcp.tools.check import check
from kernel_mcp.worker.isolation import proctree
from kernel_mcp.worker.launch import judge as client
from kernel_mcp.worker.launch.judge import JUDGE_BOOT, JudgeProcess, judge_env, judge_sys_path
from kernel_mcp.worker.runners.local import LocalRunner

VECTOR_ADD = PROBLEMS / "vector_add"


@pytest.fixture
def private_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(cache))
    return cache


@pytest.fixture
def warm_runner(private_cache):
    runner = LocalRunner(warm=True)
    yield runner
    runner.close()


def test_malformed_request_is_a_clear_error_not_a_traceback(private_cache):
    judge = JudgeProcess("cpu")
    try:
        ready = judge.wait_ready(120)
        assert ready.device is not None and ready.device.kind == "cpu"
        judge.send_line('{"mode": "bogus", "problem": "", "candidate": "x.py", "fresh_seeds": 0}')
        result = judge.result(120).result
    finally:
        judge.close()
    assert result["verdict"] == "error: bad request" and not result["passed"]
    message = result["findings"][0]["message"]
    assert result["findings"][0]["code"] == "bad_request"
    for field in ("mode", "problem", "fresh_seeds"):
        assert field in message, message
    assert "Traceback" not in message


def test_a_boot_line_the_judge_refuses_ends_the_hosts_it_started_early(private_cache):
    """judge_start starts hosts from the raw line; the judge's full validation refuses a bad key, exits 2
    saying which field, and leaves no host behind."""
    token = "ab" * 16
    read_fd, write_fd = os.pipe()
    line = json.dumps({"key": "not-hex", "run_token": token, "device": "cpu", "hosts": 1, "warm_profiler": False})
    try:
        done = subprocess.run([sys.executable, "-S", "-I", "-B", "-c", JUDGE_BOOT, json.dumps(judge_sys_path()),
                               str(write_fd)], input=line + "\n", capture_output=True, text=True, timeout=180,
                              pass_fds=[write_fd], env=judge_env())
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "key" in done.stderr and "Traceback" not in done.stderr
    assert proctree.kill_by_token(token) == 0, "a host started from the refused line is still running"


def test_a_judge_started_ahead_by_the_cli_is_the_one_used(private_cache):
    client.prestart("CPU ")  # as a user may type it
    early = client._PRESTARTED[("cpu", False)]
    result = check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu", runner=LocalRunner())
    assert result.passed, result.verdict
    assert early.proc.poll() is not None, "the judge started ahead was not used (or outlived its run)"
    assert client.claim("cpu", False) is None


def test_a_judge_started_ahead_and_never_used_ends_with_its_process(private_cache):
    code = ("from kernel_mcp.worker.launch import judge as client; client.prestart('cpu'); "
            "judge = client._PRESTARTED[('cpu', False)]; judge.wait_ready(120); print(judge.token)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180,
                          env=dict(os.environ, PYTHONPATH=repo_pythonpath()))
    assert done.returncode == 0, done.stderr[-2000:]
    assert proctree.kill_by_token(done.stdout.strip()) == 0, "the unused judge's hosts outlived the command"


@pytest.mark.parametrize("kwargs, words", [
    ({"device": "tpu"}, "unknown device"),
    ({"fresh_seeds": 0}, "fresh_seeds"),
    ({"fresh_seeds": 17}, "fresh_seeds"),
])
def test_bad_arguments_are_usage_errors(kwargs, words, private_cache):
    with pytest.raises(UsageError, match=words):
        check(VECTOR_ADD, VECTOR_ADD / "baseline.py", **kwargs)


def test_a_gpu_asked_for_where_there_is_none_is_a_usage_error(private_cache):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(UsageError, match="sees no CUDA/ROCm device"):
        check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cuda")


def test_warm_runner_serves_the_next_check_from_a_judge_booted_ahead(warm_runner):
    first = check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu", runner=warm_runner)
    assert first.passed, first.verdict
    spare = warm_runner.warm_processes()["judge cpu"]
    spare_process = warm_runner._judges["cpu"][0]
    spare_process.wait_ready(120)  # booted before anyone asked
    second = check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu", runner=warm_runner)
    assert second.passed, second.verdict
    assert spare_process.proc.poll() is not None, "the warm judge was not the one used (or outlived its run)"
    assert warm_runner.warm_processes()["judge cpu"] != spare, "no new warm judge after the run"


def test_a_runner_with_spares_keeps_that_many_judges_booted_and_uses_the_oldest_first(private_cache):
    """The tuner calls every few seconds while a judge boots in ~9 s on the H200: the orchestrator keeps
    several spares, topped up in a batch once half are used (their warm-ups overlap). Each judge still
    serves one call only."""
    runner = LocalRunner(warm=True, spares=2)
    try:
        assert check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu", runner=runner).passed
        waiting = list(runner._judges["cpu"])
        assert len(waiting) == 2 and len({p.proc.pid for p in waiting}) == 2, runner.warm_processes()
        assert set(runner.warm_processes()) >= {"judge cpu", "judge cpu 2"}
        assert check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu", runner=runner).passed
        assert waiting[0].proc.poll() is not None, "the oldest spare was not the one used (or outlived its run)"
        assert runner._judges["cpu"] == [waiting[1]] and waiting[1].alive, "the younger spare should wait next"
        assert check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu", runner=runner).passed
        refilled = runner._judges["cpu"]
        assert len(refilled) == 2 and waiting[1] not in refilled, "the spares were not topped up as a batch"
    finally:
        runner.close()
    with pytest.raises(ValueError):
        LocalRunner(warm=True, spares=-1)
    steps_only = LocalRunner(warm=True, spares=0)  # a pool's: step hosts kept warm, no judge
    try:
        steps_only.prewarm("cpu")
        assert set(steps_only.warm_processes()) and not any(k.startswith("judge") for k in steps_only.warm_processes())
    finally:
        steps_only.close()


PLANTER = '''
import os, sys, threading, time, torch
from pathlib import Path

def plant():
    home, tmp, cache = Path(os.environ["HOME"]), Path(os.environ["TMPDIR"]), Path(os.environ["KERNEL_MCP_CACHE"])
    (home / "PLANTED").write_text("planted")
    (tmp / "PLANTED").write_text("planted")
    (Path(os.environ["TRITON_CACHE_DIR"]) / "PLANTED_ENTRY").mkdir(parents=True, exist_ok=True)
    (Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "PLANTED_EXT").mkdir(parents=True, exist_ok=True)
    for target in [cache / "judges" / "PLANTED_ENTRY", cache / "kernels" / "PLANTED_KEY" / "triton" / "x",
                   # every scratch folder but its own (and its own build folder, bound beside them)
                   *(p / "PLANTED" for p in (cache / "scratch").iterdir() if str(p) != os.environ["HOME"]
                     and not os.path.samefile(p, os.environ["TORCH_EXTENSIONS_DIR"])),
                   *(p / "PLANTED" for p in (cache / "judges").iterdir())]:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("planted")
            print("PLANT WROTE", target, flush=True)
        except OSError as exc:
            print("PLANT REFUSED", target, exc.errno, flush=True)
    torch.Tensor.__add__ = lambda a, b: torch.zeros_like(a)   # patched torch in this process
    torch.add = lambda *a, **k: None
    threading.Thread(target=lambda: time.sleep(3600), daemon=False).start()

plant()

def custom_kernel(data):
    a, b = data
    return torch.sub(a, -b)
'''

DETECTOR = '''
import os, torch
from pathlib import Path

def planted():
    home, tmp = Path(os.environ["HOME"]), Path(os.environ["TMPDIR"])
    found = [p for p in (home / "PLANTED", tmp / "PLANTED",
                         Path(os.environ["TRITON_CACHE_DIR"]) / "PLANTED_ENTRY",
                         Path(os.environ["TORCH_EXTENSIONS_DIR"]) / "PLANTED_EXT") if p.exists()]
    x = torch.ones(3, device="cuda" if torch.cuda.is_available() else "cpu")
    if not torch.equal(x + x, torch.full_like(x, 2.0)) or torch.add(x, x) is None:
        found.append("patched torch")
    return found

FOUND = planted()
print("DETECTOR FOUND", FOUND, flush=True)

def custom_kernel(data):
    a, b = data
    return a + b if not FOUND else a * 0
'''


def test_a_candidate_cannot_plant_anything_for_the_next_candidate_or_the_judge(warm_runner, tmp_path,
                                                                               private_cache, device):
    """A candidate that patches torch, leaves a thread, writes into its home, its temporary folder, its
    kernel build caches, the judges' build caches, other candidates' cache entries and scratch folders
    (the warm host waiting for the next candidate's among them): the next candidate, served by the same
    warm runner, sees none of it, and the reference is untouched (the honest detector's output matches)."""
    planter, detector = tmp_path / "planter.py", tmp_path / "detector.py"
    planter.write_text(textwrap.dedent(PLANTER))
    detector.write_text(textwrap.dedent(DETECTOR))
    check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device=device, runner=warm_runner)  # warm processes exist now
    planted = check(VECTOR_ADD, planter, device=device, runner=warm_runner)
    assert planted.passed, planted.verdict  # planting is not what check judges; the next run is
    after = check(VECTOR_ADD, detector, device=device, runner=warm_runner)
    assert after.passed, f"{after.verdict}: {after.log_tail}"
    assert "DETECTOR FOUND []" in after.log_tail
    namespaced = not any(f.code == "no_pid_namespace" for f in planted.findings)
    if namespaced:  # kernel_mcp's cache is read-only to candidates, apart from their own scratch
        assert not any(f.code == "files_writable" for f in planted.findings), planted.findings
        assert "PLANT WROTE" not in planted.log_tail, planted.log_tail
        assert "PLANT REFUSED" in planted.log_tail
        assert not (private_cache / "judges" / "PLANTED_ENTRY").exists()


HANGS = {
    "sleeps": "import time, triton, os\nos.close(1)\ntime.sleep(3600)\n",
    # half a reply frame on the step's own socket (its fd is argv[1]), then silence: a blocking read of
    # the rest would hold the guard (and on a GPU the lease) forever
    "half_a_reply": "import os, sys, time, triton\nos.write(int(sys.argv[1]), b'\\x00\\x00\\x10\\x00{\"ok\"')\n"
                    "time.sleep(3600)\n",
}


@pytest.mark.parametrize("how", sorted(HANGS))
def test_a_hanging_compile_step_ends_at_the_tasks_timeout(tmp_path, private_cache, how):
    from kernel_mcp.tools.compile import compile as compile_candidate
    problem = tmp_path / "vector_add"
    import shutil
    shutil.copytree(VECTOR_ADD, problem, ignore=shutil.ignore_patterns("__pycache__", "solutions"))
    task = problem / "task.yml"
    task.write_text(task.read_text().rstrip("\n") + "\n  timeouts: {import: 3, call: 3, total: 60}\n")
    hang = problem / "hang.py"
    hang.write_text(HANGS[how])
    result = compile_candidate(hang, problem=problem)
    assert not result.ok
    assert [f.code for f in result.findings if f.severity == "error"] == ["timeout"], result.findings
    assert result.seconds < 30


def test_compile_runs_through_warm_step_hosts(warm_runner, private_cache):
    from kernel_mcp.tools.compile import compile as compile_candidate
    first = compile_candidate(VECTOR_ADD / "baseline.py", targets=["sm_90a"], runner=warm_runner)
    assert first.ok, first.findings
    steps = {k: v for k, v in warm_runner.warm_processes().items() if k.startswith("step")}
    assert steps, warm_runner.warm_processes()
    # the step hosts booted after the run; the next compile (a cache miss: another target) uses them
    second = compile_candidate(VECTOR_ADD / "baseline.py", targets=["gfx942"], runner=warm_runner)
    assert second.ok, second.findings
    for name, pid in steps.items():
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"{name} was not used"


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] in "ZX"


def test_a_host_that_fails_before_its_candidate_is_the_harnesss_failure(tmp_path, monkeypatch, private_cache):
    """A candidate host that cannot even import torch (here: a broken torch ahead of the real one on the
    hosts' PYTHONPATH; the judge starts isolated and is not affected) never ran candidate code: the
    verdict is `error: harness`, not a failure of the candidate."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "torch.py").write_text("raise ImportError('this torch is broken on purpose')\n")
    monkeypatch.setenv("PYTHONPATH", str(broken))
    # hosts started as fresh interpreters: one forked from the judge has its torch already (host/factory.py)
    monkeypatch.setenv("KERNEL_MCP_FORK_HOSTS", "0")
    result = check(VECTOR_ADD, VECTOR_ADD / "baseline.py", device="cpu")
    assert result.verdict == "error: harness" and not result.passed
    assert [f.code for f in result.findings if f.severity == "error"] == ["host_boot_failed"], result.findings
    assert "broken on purpose" in result.findings[-1].message


def test_files_other_agents_save_during_a_check_are_left_alone(tmp_path, private_cache):
    """Several agents in one workspace: a candidate saved beside the problem, or inside its folder, while
    another agent's check runs is neither reported as tampering nor reverted (issue 12, 2.)."""
    import shutil
    import threading
    root = tmp_path / "ws"
    shutil.copytree(VECTOR_ADD, root / "vector_add", ignore=shutil.ignore_patterns("__pycache__", "solutions"))
    slow = root / "slow.py"
    slow.write_text("import time\ndef custom_kernel(data):\n    time.sleep(0.3)\n    a, b = data\n    return a + b\n")
    others = [root / "other_agent.py", root / "vector_add" / "other_agent_inside.py"]
    for path in others:
        path.write_text("def custom_kernel(data):\n    return data[0]\n")
    running = threading.Event()

    def other_agent_saves():
        running.wait(120)
        for path in others:
            path.write_text("def custom_kernel(data):\n    return data[0] + data[1]  # saved meanwhile\n")

    saver = threading.Thread(target=other_agent_saves)
    saver.start()
    result = check(root / "vector_add", slow, device="cpu",
                   on_progress=lambda message, *_: running.set() if message.startswith("test 0") else None,
                   runner=LocalRunner())
    saver.join()
    assert result.passed, result.verdict
    assert all("saved meanwhile" in path.read_text() for path in others)


def test_a_build_steps_files_come_back_without_links(tmp_path):
    """A build step writes into its scratch and trusted code copies the files out while the step may still
    run: a link (to one of the user's files), a fifo or a folder placed there is never followed or copied."""
    import os

    from kernel_mcp.worker.launch.step import _move_files
    source, target, secret = tmp_path / "out", tmp_path / "copied", tmp_path / "secret"
    source.mkdir()
    secret.write_text("the user's file")
    (source / "0-sm_90a-k.cubin").write_bytes(b"\x7fELF cubin")
    os.symlink(secret, source / "1-sm_90a-k.cubin")
    os.mkfifo(source / "2-sm_90a-k.ptx")
    (source / "3-sm_90a-k.ptx").mkdir()
    _move_files(source, target)
    assert sorted(p.name for p in target.iterdir()) == ["0-sm_90a-k.cubin"]
    assert (target / "0-sm_90a-k.cubin").read_bytes() == b"\x7fELF cubin"
