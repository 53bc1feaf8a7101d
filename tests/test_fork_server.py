"""Judges and step hosts forked from the caller's fork server (worker/launch/fork_server.py): what the server may
hold, that it goes with its caller, and the ways back to exec'd processes."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROBLEMS, REPO, repo_pythonpath

from kernel_mcp.worker.launch import fork_client
from kernel_mcp.worker.launch.judge import JudgeProcess
from kernel_mcp.worker.protocol import JudgeRequest

CHEAT_UTIL = Path(__file__).resolve().parent / "cheats" / "_cheat_util.py"


def _memory_of(pid: int) -> list[bytes]:
    spec = importlib.util.spec_from_file_location("_cheat_util", CHEAT_UTIL)
    util = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(util)
    return list(util.readable_regions(pid))


def _parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2:].split()[1])


@pytest.mark.skipif(os.geteuid() != 0, reason="reading a non-dumpable process's memory needs root")
def test_judges_come_from_one_server_that_never_holds_their_keys(monkeypatch, tmp_path):
    """Two judges of one caller are forked by its fork server (their parent); one runs a whole check. The
    server's memory, read whole, holds neither judge's key nor its hex, though it holds a string it must."""
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "cache"))
    judges = [JudgeProcess("cpu"), JudgeProcess("cpu")]
    try:
        for judge in judges:
            judge.wait_ready(300)
        request = JudgeRequest(mode="check", problem=str(PROBLEMS / "vector_add"),
                               candidate=str(PROBLEMS / "vector_add" / "baseline.py"), fresh_seeds=1)
        assert judges[0].run(request, 300, None).result["passed"] is True
        servers = fork_client.server_pids()
        assert len(servers) == 1, servers
        assert all(isinstance(j.proc, fork_client.Forked) for j in judges)
        assert _parent_of(judges[1].proc.pid) == servers[0]
        memory = _memory_of(servers[0])
    finally:
        for judge in judges:
            judge.close()
    assert any(b"kernel_mcp.worker.judge.start" in region for region in memory), "the scan proves nothing"
    for judge in judges:
        for secret in (judge.key, judge.key.hex().encode()):
            assert not any(secret in region for region in memory)


# a caller: checks of vector_add's baseline, each followed by what a test asks of the fork server
CALLER = """
import os, signal, sys, time
from pathlib import Path
from kernel_mcp.tools.check import check
from kernel_mcp.worker.launch import fork_client
from kernel_mcp.worker.launch.judge import JudgeProcess
problem = Path(sys.argv[1])
def checked(expect_forked):
    made = []
    original = JudgeProcess._start
    def spy(self, device, fork):
        original(self, device, fork)
        made.append(type(self.proc).__name__)
    JudgeProcess._start = spy
    try:
        result = check(problem, problem / "baseline.py", device="cpu")
    finally:
        JudgeProcess._start = original
    assert result.passed, result.verdict
    return made
"""


def run_caller(script: str, *args: str, pythonpath: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CALLER + script, str(PROBLEMS / "vector_add"), *args],
                          capture_output=True, text=True, timeout=300, cwd="/",  # not this checkout first
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath or repo_pythonpath(),
                               "KERNEL_MCP_CACHE": args[0] if args else "/tmp/kernel_mcp-test-fork-server-cache"})


FALLBACKS = """
assert checked(True) == ["Forked"]
first = fork_client.server_pids()
os.kill(first[0], signal.SIGSTOP)  # it takes the next request and never forks: killed meanwhile
def kill_later():
    time.sleep(1.0)
    os.kill(first[0], signal.SIGKILL)
import threading
threading.Thread(target=kill_later).start()
assert checked(True) == ["Forked", "Popen"]  # asked of the server, then exec'd: the check passes
assert checked(True) == ["Forked"]  # a new server
assert fork_client.server_pids() != first
os.environ["KERNEL_MCP_FORK_SERVER"] = "0"
assert checked(False) == ["Popen"]
print("ok")
"""


def test_a_fork_server_that_dies_leaves_judges_exec_d_not_failed(tmp_path):
    done = run_caller(FALLBACKS, str(tmp_path / "cache"))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr[-3000:]


EDITED = """
assert checked(True) == ["Forked"]
first = fork_client.server_pids()
module = Path(sys.argv[3])
module.write_text(module.read_text() + "\\n# edited after the server imported it\\n")
assert checked(True) == ["Forked"]
assert fork_client.server_pids() != first, "the server with the old code was used"
print("ok")
"""


def test_a_kernel_mcp_file_edited_after_the_server_imported_it_gets_a_new_server(tmp_path):
    """A developer edits kernel_mcp while a server runs: its next judge runs the new code."""
    copy = tmp_path / "src"
    shutil.copytree(REPO / "kernel_mcp", copy / "kernel_mcp", ignore=shutil.ignore_patterns("__pycache__"))
    done = run_caller(EDITED, str(tmp_path / "cache"), str(copy / "kernel_mcp" / "worker" / "judge" / "check.py"),
                      pythonpath=os.pathsep.join([str(copy), repo_pythonpath()]))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr[-3000:]


GONE_WITH_CALLER = """
assert checked(True) == ["Forked"]
spare = JudgeProcess("cpu")
print(fork_client.server_pids()[0], spare.proc.pid, flush=True)
time.sleep(600)
"""


def test_the_fork_server_and_its_judges_end_with_their_caller(tmp_path):
    caller = subprocess.Popen([sys.executable, "-c", CALLER + GONE_WITH_CALLER, str(PROBLEMS / "vector_add")],
                              stdout=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin",
                                                                      "PYTHONPATH": repo_pythonpath(),
                                                                      "KERNEL_MCP_CACHE": str(tmp_path / "c")})
    try:
        server, judge = (int(word) for word in caller.stdout.readline().split())
    finally:
        caller.kill()
        caller.wait()
    import time

    from kernel_mcp.worker.isolation import proctree
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and proctree.running([server, judge]):
        time.sleep(0.05)
    assert not proctree.running([server, judge])


STEPS = """
from kernel_mcp.tools.compile import compile as compile_candidate
from kernel_mcp.worker.launch.step import StepProcess
def compiled(target):  # each a target not built yet: a build cached before starts no step
    made = []
    original = StepProcess._start
    def spy(self, fork):
        made.append(type(proc := original(self, fork)).__name__)
        return proc
    StepProcess._start = spy
    try:
        result = compile_candidate(problem / "baseline.py", problem=problem, targets=[target])
    finally:
        StepProcess._start = original
    assert result.ok, result.findings
    return made
assert set(compiled("sm_90a")) == {"Forked"}, "compile steps were not forked"
server = fork_client.server_pids()[0]
os.kill(server, signal.SIGSTOP)  # it takes the next request and never forks: killed meanwhile
threading.Thread(target=lambda: (time.sleep(1.0), os.kill(server, signal.SIGKILL))).start()
made = compiled("gfx942")
assert made[:2] == ["Forked", "Popen"], made  # asked of the server, then exec'd: the step still runs
os.environ["KERNEL_MCP_FORK_SERVER"] = "0"
assert set(compiled("sm_80")) == {"Popen"}
print("ok")
"""


def test_compile_steps_are_forked_by_the_server_and_exec_d_without_it(tmp_path):
    done = run_caller("import threading\n" + STEPS, str(tmp_path / "cache"))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr[-3000:]
