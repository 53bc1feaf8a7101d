"""Candidate hosts forked from the judge's early copy (worker/host/factory.py): what the copy may hold, and the
way back to exec'd hosts."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CHEATS_STATE, PROBLEMS, repo_pythonpath

from kernel_mcp.worker.launch.judge import JudgeProcess
from kernel_mcp.worker.protocol import JudgeRequest

CHEAT = Path(__file__).resolve().parent / "cheats" / "key_in_own_memory.py"


@pytest.mark.parametrize("fork", ["1", "0"])
def test_a_host_holds_no_copy_of_the_judges_key(fork, monkeypatch):
    """The key reaches the judge on its stdin after the factory was forked: a host (forked or exec'd) that
    scans all of its own memory finds neither the key nor its hex, though it finds a value it made."""
    monkeypatch.setenv("KERNEL_MCP_FORK_HOSTS", fork)
    CHEATS_STATE.mkdir(parents=True, exist_ok=True)
    report = CHEATS_STATE / "own_memory.json"
    report.unlink(missing_ok=True)
    judge = JudgeProcess("cpu")
    try:
        (CHEATS_STATE / "judge_key.json").write_text(json.dumps(
            {name: (value[:8].hex(), len(value), hashlib.sha256(value).hexdigest())
             for name, value in (("key", judge.key), ("key_hex", judge.key.hex().encode()))}))
        judge.wait_ready(300)
        request = JudgeRequest(mode="check", problem=str(PROBLEMS / "vector_add"), candidate=str(CHEAT), fresh_seeds=1)
        result = judge.run(request, 300, None).result
    finally:
        judge.close()
    assert result["passed"] is True, result  # the fixture's output is honest
    found = json.loads(report.read_text())
    assert found["control"] is True, "the scan did not read the heap: it proves nothing"
    assert found["key"] is False and found["key_hex"] is False, found
    assert found["forked"] is (fork == "1"), found  # the host was made the way asked for
    assert found["dumpable"] is True, found  # as an exec leaves it (the judge is not): /proc scans see it


# a script's first lines: a process made as the judge makes itself (a non-dumpable subreaper)
AS_JUDGE = """
import os, sys, time
from kernel_mcp.worker.host import factory as host_factory
from kernel_mcp.worker.isolation import proctree, sandbox
from kernel_mcp.worker.judge.session import CandidateSession
sandbox.harden_trusted_process()
"""


def run_as_judge(script: str, *args: str) -> subprocess.CompletedProcess:
    """``script`` after AS_JUDGE in a fresh interpreter, forked hosts asked for (on a CPU too)."""
    return subprocess.run([sys.executable, "-c", AS_JUDGE + script, *args], capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": repo_pythonpath(),
                                            "KERNEL_MCP_FORK_HOSTS": "1"})


FALLBACK = """
assert host_factory.start(gpu_hosts=True), "the factory did not start"
made = lambda session: type(session.proc).__name__
forked = CandidateSession("cuda", "ab" * 16)  # a GPU host (it boots on a CPU too, warmed for "cpu")
assert made(forked) == "Adopted", made(forked)
interpreting = CandidateSession("cpu", "cd" * 16)  # Triton was imported for GPU hosts: exec'd instead
assert made(interpreting) == "Popen", made(interpreting)
proctree.kill_tree(host_factory.factory_pid())
orphaned = CandidateSession("cuda", "ef" * 16)  # the factory is gone: exec'd instead
assert made(orphaned) == "Popen", made(orphaned)
for session in (forked, interpreting, orphaned):
    session.warm("cpu")
    assert session.wait_booted() is None, session.wait_booted()
    session.close()
print("ok")
"""


def test_hosts_the_factory_cannot_make_are_exec_d_not_failed():
    """A lost factory, or a host that must run Triton's interpreter where Triton was imported for GPU
    hosts: such hosts are started as fresh interpreters, and boot."""
    done = run_as_judge(FALLBACK)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


MANY = """
fork = host_factory._fork
def slow_child_fork():  # each new process waits for a core a while, as on a loaded machine
    pid = fork()
    if pid == 0:
        time.sleep(0.05)
    return pid
host_factory._fork = slow_child_fork
assert host_factory.start(), "the factory did not start"
sessions = [CandidateSession("cpu", "ab" * 16) for _ in range(int(sys.argv[1]))]
def own_group(pid):  # the host's first step once it is the judge's child: its own process group
    stat = open(f"/proc/{pid}/stat").read()
    return int(stat[stat.rfind(")") + 2:].split()[2]) == pid
deadline = time.monotonic() + 60
stuck = [s.proc.pid for s in sessions]
while stuck and time.monotonic() < deadline:
    stuck = [pid for pid in stuck if not own_group(pid)]
    time.sleep(0.05)
for session in sessions:
    assert session.proc.pid != os.getpid() and os.getppid() != session.proc.pid
    session.close()
print("stuck", stuck)
"""


def test_a_host_slow_to_run_after_its_fork_still_goes_on():
    """The host's parent (the factory's middle process) may have exited before the host first runs: the
    host must know which process it waits to leave, not ask its parent's pid then (it once did, and waited
    forever when the judge was already its parent: 4 checks in a 2-core suite run, more on 16 cores)."""
    done = run_as_judge(MANY, "8")
    assert done.returncode == 0 and done.stdout.strip() == "stuck []", (done.stdout, done.stderr[-3000:])


SERVED = """
from pathlib import Path
import torch
from kernel_mcp.worker import needs
from kernel_mcp.worker.judge.hosts import Hosts
from kernel_mcp.worker.judge.main import _harness_failure
from kernel_mcp.worker.protocol import JudgeRequest
problem, candidate = Path(sys.argv[1]), Path(sys.argv[2])
assert host_factory.start(), "the factory did not start"
request = JudgeRequest(mode="check", problem=str(problem), candidate=str(candidate))
oom = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")
hosts = Hosts("cpu", "ab" * 16, False, 1)
hosts.warm("cpu")
session = hosts.take()
session.load(candidate, [problem, problem.parent], {})
assert session.start(120) is None, "the candidate did not import"
before = _harness_failure(request, oom, hosts.served())
reply = session.call(0, (torch.ones(1000), torch.ones(1000)), 120)
assert reply.kind == "output" and torch.equal(reply.output, torch.full((1000,), 2.0)), reply
after = _harness_failure(request, oom, hosts.served())
session.close()
print(json.dumps([[f.code for f in result.findings] + [result.verdict] for result in (before, after)]))
"""


def test_the_judge_out_of_memory_is_run_again_alone_only_before_a_candidate_is_sent_an_input():
    """The judge's own OutOfMemoryError, before any host was sent an input (the candidate imported, nothing
    served): `short_of_memory`, which the runner runs again alone (needs.ran_short); once a host has been sent
    one, the candidate could have filled the device on purpose, and the error stands (`out_of_memory`). A real
    host, loaded with vector_add's baseline and called once."""
    vector_add = PROBLEMS / "vector_add"
    done = run_as_judge("import json\n" + SERVED, str(vector_add), str(vector_add / "baseline.py"))
    assert done.returncode == 0, done.stderr[-3000:]
    before, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert before == ["short_of_memory", "error: out of memory"], before
    assert after == ["out_of_memory", "error: out of memory"], after
